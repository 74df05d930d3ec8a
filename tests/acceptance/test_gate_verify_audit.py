"""route.verify after the audit: shallow clones, the routes' own repository, clean machine-readable output,
approvers files that exist but cannot be used, and approval markers git no longer tracks or that hold a
merge conflict."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

from tests.conftest import TEST_EMAIL, git
from tests.route.routes import write
from tests.route_gate.gate import (
    approve,
    approvers,
    commit_all,
    gated_route,
    lines_of,
    pass_all,
    route_set,
    ssh_signing,
    verify,
)

SHALLOW_HINT = (
    "; but this clone is shallow, which can hide the approval commit: fetch the whole history "
    "(actions/checkout with fetch-depth: 0)"
)


def passed_repo(git_repo: Path) -> Path:
    """The gated route committed on its own, then approved and passed: history is initial, route, approval,
    passes."""
    route = gated_route(git_repo)
    commit_all(git_repo, "the route")
    pass_all(git_repo, route)
    return route


def shallow_clone(source: Path, target: Path, depth: int) -> Path:
    git(source.parent, "clone", "-q", f"--depth={depth}", source.as_uri(), str(target))
    assert git(target, "rev-parse", "--is-shallow-repository").strip() == "true"
    return target


def test_a_shallow_clone_never_vouches_for_an_approval_where_its_history_is_cut(
    git_repo: Path, tmp_path: Path
) -> None:
    passed_repo(git_repo)
    # The approver's next commit (signed, and touching nothing of the route) becomes a depth-1 clone's only
    # commit; git then shows it as adding every file, the approval marker included.
    keys = tmp_path / "keys"
    keys.mkdir()
    allowed = ssh_signing(git_repo, keys)
    write(git_repo / "unrelated.txt", "x\n")
    commit_all(git_repo, "an unrelated signed commit")
    signed = ["--require-signed", "--allowed-signers", str(allowed)]
    full = verify(git_repo, "--route", "route", *signed)
    assert full.code == 2
    assert re.fullmatch(
        r"unapproved: its approval commit [0-9a-f]{12} has no signature; the approver turns on commit "
        r"signing \(git config commit\.gpgsign true\) and approves again, in a terminal: route\.stone\.set "
        r"--route route --stone 1\.vision --as approved",
        lines_of(full)["route/1.vision"],
    )

    cut = shallow_clone(git_repo, tmp_path / "depth1", 1)
    tip = git(cut, "rev-parse", "HEAD").strip()
    for extra in (signed, []):  # the boundary commit is signed by, and authored by, a listed approver
        done = verify(cut, "--route", "route", *extra)
        assert done.code == 2, done.out
        assert lines_of(done)["route/1.vision"] == (
            f"unapproved: its approval marker comes from commit {tip[:12]}, where this shallow clone's "
            "history is cut off, so who committed it cannot be checked; fetch the whole history "
            "(actions/checkout with fetch-depth: 0)"
        )
        assert lines_of(done)["route/2.plan"].startswith("passed")

    # Deep enough to hold the commit that really made the approval: it is vouched for as in a full clone,
    # and any failure still says the clone is shallow.
    deep = shallow_clone(git_repo, tmp_path / "depth4", 4)
    assert verify(deep, "--route", "route").code == 0
    unsigned = verify(deep, "--route", "route", *signed)
    assert unsigned.code == 2
    assert lines_of(unsigned)["route/1.vision"].endswith(
        "--route route --stone 1.vision --as approved" + SHALLOW_HINT
    )


def test_an_approval_naming_someone_else_in_a_shallow_clone_carries_the_hint(
    git_repo: Path, tmp_path: Path
) -> None:
    route = passed_repo(git_repo)
    marker = route / ".route" / "1.vision.approved"
    marker.write_text(marker.read_text().replace(TEST_EMAIL, "ghost@example.com"))
    commit_all(git_repo, "reword the approval")
    clone = shallow_clone(git_repo, tmp_path / "clone", 2)
    line = lines_of(verify(clone, "--route", "route"))["route/1.vision"]
    assert line.startswith("forged: its approval marker names ghost@example.com but commit ")
    assert line.endswith(SHALLOW_HINT)
    # A full clone gives the same verdict without the hint.
    assert not lines_of(verify(git_repo, "--route", "route"))["route/1.vision"].endswith(SHALLOW_HINT)


def test_the_routes_own_repository_is_used_wherever_verify_runs(git_repo: Path, tmp_path: Path) -> None:
    passed_repo(git_repo)
    inside = verify(git_repo, "--route", "route")
    assert inside.code == 0, inside.out
    # From the directory above (a CI workspace holding `actions/checkout` with `path: repo`).
    above = verify(tmp_path, "--route", "repo/route")
    assert (above.code, above.out) == (0, inside.out), above.out + above.err
    # From inside another repository.
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    elsewhere = verify(other, "--route", str(git_repo / "route"))
    assert (elsewhere.code, elsewhere.out) == (0, inside.out), elsewhere.out
    # A clone nested inside another repository's work tree is its own repository.
    nested = other / "sub"
    git(other, "clone", "-q", str(git_repo), str(nested))
    from_outer = verify(other, "--route", "sub/route")
    assert (from_outer.code, from_outer.out) == (0, inside.out), from_outer.out
    # Routes in two repositories: each has its own history, so one run per repository.
    both = verify(tmp_path, "--route", "repo/route", "--route", "other/sub/route")
    assert both.code == 2 and both.out == ""
    assert both.err == (
        f"error: the routes are in different git repositories ({git_repo.resolve()}, {nested.resolve()}); "
        "run route.verify once per repository\n"
    )


def test_the_same_route_named_twice_is_checked_once(git_repo: Path) -> None:
    route = passed_repo(git_repo)
    done = verify(git_repo, "--route", "route", "--route", str(route), "--route", "./route/")
    assert done.code == 0
    assert done.out.endswith("route.verify ok: 3 stones (3 passed)\n")


def test_json_stays_one_document_under_github_actions(git_repo: Path, tmp_path: Path) -> None:
    route = passed_repo(git_repo)
    write(route / "2.plan.md", "# Plan, changed\n")
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md")}
    done = verify(git_repo, "--route", "route", "--json", env=env)
    assert done.code == 2
    assert json.loads(done.out)["counts"] == {"passed": 2, "stale": 1}
    annotation = (
        "::error file=route/2.plan.md,title=route.verify stale%3A route/2.plan::"
        "artifacts changed since the pass: changed route/2.plan.md\n"
    )
    assert done.err.startswith(annotation)  # the runner reads workflow commands on stderr too
    assert "| ❌ | route | 2.plan | stale |" in (tmp_path / "summary.md").read_text()
    text = verify(git_repo, "--route", "route", env=env)  # without --json they stay on stdout
    assert annotation in text.out and "::error" not in text.err


def test_a_junit_path_that_cannot_be_written_is_one_line_and_nothing_else(git_repo: Path) -> None:
    passed_repo(git_repo)
    done = verify(git_repo, "--route", "route", "--junit", "README.md/report.xml")
    assert (done.code, done.out) == (2, "")
    assert done.err == (  # a file where a directory must be: said as such (mkdir would say "File exists")
        "error: cannot write --junit README.md/report.xml: Not a directory; give a path in a directory you "
        "can write\n"
    )
    assert (git_repo / "README.md").read_text() == "test repo\n"
    # A named pipe (standing in for /dev/full, which as root was replaced by a regular file) stays one.
    os.mkfifo(git_repo / "pipe")
    piped = verify(git_repo, "--route", "route", "--junit", "pipe")
    assert (piped.code, piped.out) == (2, "") and piped.err == (
        "error: cannot write --junit pipe: it is a named pipe (FIFO), not a regular file; give a path in a "
        "directory you can write\n"
    )
    assert stat.S_ISFIFO(os.lstat(git_repo / "pipe").st_mode)
    made = verify(git_repo, "--route", "route", "--junit", "new/dir/report.xml")  # missing parents are made
    assert made.code == 0 and (git_repo / "new" / "dir" / "report.xml").read_text().startswith("<?xml")


def test_approvers_files_that_exist_are_read_or_refused_never_skipped(git_repo: Path) -> None:
    route = passed_repo(git_repo)
    listed = git_repo / ".route-approvers"

    def vision() -> str:
        return lines_of(verify(git_repo, "--route", "route"))["route/1.vision"]

    listed.write_bytes(b"\xef\xbb\xbf" + f"{TEST_EMAIL}\r\n# a comment\r\n".encode())  # BOM, CRLF
    git(git_repo, "commit", "-q", "-am", "the approvers file, saved by another editor")  # what CI would see
    assert vision().startswith("passed")
    listed.write_bytes(b"caf\xe9@example.com\n" + TEST_EMAIL.encode() + b"\n")  # Latin-1
    assert vision() == (
        "unapproved: the approvers file .route-approvers is not UTF-8 text; save it as UTF-8, one approver "
        "email a line"
    )
    listed.write_text("# nobody yet\n\n")
    assert vision() == (
        "unapproved: the approvers file .route-approvers lists nobody: add the emails of the people who may "
        "approve, one a line"
    )
    # A route's own file that cannot be read is not passed over for the repository's.
    approvers(git_repo, TEST_EMAIL)
    (route / ".route" / "approvers").write_bytes(b"\xff\xfe" + TEST_EMAIL.encode("utf-16-le"))
    assert vision() == (
        "unapproved: the approvers file route/.route/approvers is not UTF-8 text; save it as UTF-8, one "
        "approver email a line"
    )


def test_an_approval_marker_removed_from_git_or_left_in_conflict_says_so(git_repo: Path) -> None:
    route = passed_repo(git_repo)
    marker = route / ".route" / "1.vision.approved"
    original = marker.read_text()
    git(git_repo, "rm", "-q", "--cached", str(marker))
    git(git_repo, "commit", "-q", "-m", "stop tracking the approval")  # the file stays in the work tree
    removed = git(git_repo, "rev-parse", "HEAD").strip()
    hint = "route.stone.set --route route --stone 1.vision --as approved"
    assert lines_of(verify(git_repo, "--route", "route"))["route/1.vision"] == (
        f"forged: its approval marker is not tracked by git: commit {removed[:12]} removed it from git; a "
        f"human approves with: {hint}"
    )
    git(git_repo, "add", str(marker))
    commit_all(git_repo, "track it again")
    assert verify(git_repo, "--route", "route").code == 0

    theirs = original.replace("approved_at: ", "approved_at: 1")
    marker.write_text(f"<<<<<<< HEAD\n{original}=======\n{theirs}>>>>>>> other\n")
    conflicted = verify(git_repo, "--route", "route")
    assert lines_of(conflicted)["route/1.vision"] == (
        "broken: its approval marker does not parse (a merge conflict: it holds <<<<<<< and >>>>>>> lines); "
        f"a human approves again with: {hint}"
    )
    marker.write_text("not a marker\n")  # other unparsable content is still a forgery
    assert lines_of(verify(git_repo, "--route", "route"))["route/1.vision"] == (
        "forged: its approval marker does not parse (not written by the driver)"
    )


def test_a_wildcard_allowed_signer_must_cover_the_approvals_author(git_repo: Path, tmp_path: Path) -> None:
    route = gated_route(git_repo)
    commit_all(git_repo, "the route")
    ssh_signing(git_repo, tmp_path)
    assert approve(git_repo, route, "1.vision").code == 0  # a signed approval commit
    for stone in ("1.vision", "2.plan", "3.ship"):
        assert route_set(git_repo, route, stone).code == 0
    approvers(git_repo, TEST_EMAIL)
    commit_all(git_repo, "route passed")
    public = (tmp_path / "signing_key.pub").read_text().strip()

    def with_signers(principals: str) -> str:
        signers = write(tmp_path / "signers", f"{principals} {public}\n")
        done = verify(git_repo, "--route", "route", "--require-signed", "--allowed-signers", str(signers))
        return lines_of(done)["route/1.vision"]

    domain = "*@" + TEST_EMAIL.split("@")[1]
    assert with_signers(domain).startswith("passed")
    assert re.fullmatch(
        rf"unapproved: its approval commit [0-9a-f]{{12}} is signed by a key trusted for \*@elsewhere\.org, "
        rf"which does not cover its author {re.escape(TEST_EMAIL)}; the approver approves again with their "
        r"own key, in a terminal: route\.stone\.set --route route --stone 1\.vision --as approved",
        with_signers("*@elsewhere.org"),
    )
    assert re.fullmatch(  # a plain principal is a person, who must be an approver
        r"unapproved: its approval commit [0-9a-f]{12} is signed by boss@example\.com, who is not in "
        r"\.route-approvers; a listed approver approves again, in a terminal: route\.stone\.set .*",
        with_signers("boss@example.com"),
    )
