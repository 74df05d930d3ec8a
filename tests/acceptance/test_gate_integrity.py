"""The gate holds against the robot it guards (issue 12, sections 2-6): approvals that mean what they say,
passes that cover everything they claim, hashes git would agree with, branches that merge without conflicts
under .route/, one view of "done" locally and in CI, and ways out of a bad review.

Each attack is played by a robot with the repository and a shell but without the human's terminal or signing
key, in real git repositories; CI is a fresh clone running the installed route.verify.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from tests.conftest import TEST_EMAIL, git
from tests.route.routes import (
    make_route,
    pass_records,
    review,
    runs,
    steer,
    stone_get,
    write,
)
from tests.route_gate.gate import (
    approve,
    approvers,
    commit_all,
    commit_marker,
    gated_route,
    lines_of,
    pass_all,
    route_set,
    ssh_signing,
    verify,
)

ROBOT = "Robot <robot@example.com>"


def clone(source: Path, target: Path) -> Path:
    """CI: a fresh clone of ``source``."""
    git(source.parent, "clone", "-q", source.as_uri(), str(target))
    return target


def conflicts(repo: Path) -> list[str]:
    """Paths git left unmerged."""
    return sorted(filter(None, git(repo, "diff", "--name-only", "--diff-filter=U").splitlines()))


def merge(repo: Path, branch: str) -> list[str]:
    """Merge ``branch`` into the current branch; the paths that conflict (none: merged and committed)."""
    git(repo, "merge", "-q", "--no-ff", "--no-edit", branch, check=False)
    return conflicts(repo)


# ---------------------------------------------------------------- 2. an approval is what approving commits


def test_an_approval_in_a_mixed_commit_is_forged_even_when_a_listed_approver_signed_it(
    git_repo: Path, tmp_path: Path
) -> None:
    route = gated_route(git_repo)
    approvers(git_repo, TEST_EMAIL)
    commit_all(git_repo, "the route")
    allowed = ssh_signing(git_repo, tmp_path)
    # The human approves without committing, then commits everything the robot left in the tree with it.
    assert approve(git_repo, route, "1.vision", "--no-commit").code == 0
    write(route / "2.plan.md", "# Plan, with something the human did not look at\n")
    commit_all(git_repo, "approve and more")  # signed by the listed approver: commit.gpgsign is on
    signed = ["--require-signed", "--allowed-signers", str(allowed)]
    line = lines_of(verify(git_repo, "--route", "route", "--allow-incomplete", *signed))["route/1.vision"]
    assert re.fullmatch(
        r"forged: its approval marker arrived in commit [0-9a-f]{12} together with other changes "
        r"\(route/2\.plan\.md\); an approval counts only in a commit of its own, as the approve command "
        r"makes it; a human approves again with: route\.stone\.set --route route --stone 1\.vision --as "
        r"approved",
        line,
    ), line
    # The way out it names works: approving again makes an approval commit of its own.
    again = approve(git_repo, route, "1.vision")
    assert again.code == 0, again.err
    assert again.out.startswith("stone approved again: 1.vision by ")
    assert "also changes route/2.plan.md" in again.out
    files = git(git_repo, "show", "--name-only", "--format=", "HEAD").split()
    assert files == ["route/.route/1.vision.approved"]
    assert lines_of(verify(git_repo, "--route", "route", "--allow-incomplete", *signed))[
        "route/1.vision"
    ] == ("incomplete: not passed yet")


def test_an_approval_squash_merged_from_the_robots_branch_is_forged(git_repo: Path) -> None:
    route = gated_route(git_repo)
    approvers(git_repo, TEST_EMAIL)
    commit_all(git_repo, "the route")
    git(git_repo, "switch", "-q", "-c", "robot")
    assert approve(git_repo, route, "1.vision").code == 0  # a real approval, on the branch
    for stone in ("1.vision", "2.plan", "3.ship"):
        assert route_set(git_repo, route, stone).code == 0
    commit_all(git_repo, "work", author=ROBOT)
    assert verify(git_repo, "--route", "route").code == 0  # on the branch, merged as it is: fine
    git(git_repo, "switch", "-q", "main")
    git(git_repo, "merge", "-q", "--squash", "robot")
    commit_all(git_repo, "squash the robot's branch")  # the human's own commit, holding everything
    done = verify(git_repo, "--route", "route")
    assert done.code == 2
    assert (
        lines_of(done)["route/1.vision"].startswith("forged: its approval marker arrived in commit ")
        and "together with other changes" in lines_of(done)["route/1.vision"]
    )


def test_a_file_named_like_the_start_of_a_commit_hides_nothing_a_squash_changed(git_repo: Path) -> None:
    # A second red team: git's log separated commits with \x01, a byte a path may hold. A robot's file named
    # ".gitignore\x01x" next to the marker cut what the human's signed squash commit changed down to the
    # route's .gitignore, so the commit passed as an approval commit of its own.
    route = gated_route(git_repo)
    approvers(git_repo, TEST_EMAIL)
    with (git_repo / ".git" / "info" / "exclude").open("a") as exclude:
        exclude.write(".ctl/\n")  # the fake reviewers' counters: nothing may sort before the .gitignore
    commit_all(git_repo, "the route")
    git(git_repo, "switch", "-q", "-c", "robot")
    assert approve(git_repo, route, "1.vision").code == 0
    for stone in ("1.vision", "2.plan", "3.ship"):
        assert route_set(git_repo, route, stone).code == 0
    write(route / ".route" / ".gitignore\x01x", "x\n")
    commit_all(git_repo, "work", author=ROBOT)
    git(git_repo, "switch", "-q", "main")
    git(git_repo, "merge", "-q", "--squash", "robot")
    commit_all(git_repo, "squash the robot's branch")
    done = verify(git_repo, "--route", "route")
    assert done.code == 2
    line = lines_of(done)["route/1.vision"]
    assert line.startswith("forged: its approval marker arrived in commit "), line
    assert "together with other changes (route/.route/.gitignore\\x01x, " in line, line


def test_merge_ours_cannot_resurrect_an_older_approval(git_repo: Path) -> None:
    route = gated_route(git_repo)
    approvers(git_repo, TEST_EMAIL)
    commit_all(git_repo, "the route")
    assert approve(git_repo, route, "1.vision").code == 0  # the human approves v1 ...
    git(git_repo, "branch", "robot")
    write(route / "1.vision.md", "# Vision v2\n")
    commit_all(git_repo, "v2")
    assert approve(git_repo, route, "1.vision").code == 0  # ... then v2, on main
    # The robot's branch still has v1 and its approval; it merges main keeping its own side of everything.
    git(git_repo, "switch", "-q", "robot")
    git(git_repo, "merge", "-q", "-s", "ours", "--no-edit", "main")
    assert (route / "1.vision.md").read_text() == "# Vision\n"
    assert route_set(git_repo, route, "1.vision").code == 0  # locally the v1 approval still matches v1
    commit_all(git_repo, "pass", author=ROBOT)
    line = lines_of(verify(git_repo, "--route", "route", "--allow-incomplete"))["route/1.vision"]
    assert line.startswith("forged: its approval marker arrived in commit "), line
    assert "together with other changes" in line  # the merge that discarded v2's approval set it


def test_an_approval_binds_the_bytes_on_disk_not_what_the_robot_staged(git_repo: Path) -> None:
    route = gated_route(git_repo)
    approvers(git_repo, TEST_EMAIL)
    commit_all(git_repo, "the route")
    # The robot weakens git's change detection, stages Y, and puts X back with X's old size and time.
    git(git_repo, "config", "core.trustctime", "false")
    git(git_repo, "config", "core.checkStat", "minimal")
    artifact = route / "1.vision.md"
    then = 1_600_000_000  # an old time, so git does not see the entry as racy and look at the bytes
    write(artifact, "# Visi0n\n")  # Y: same size as X
    os.utime(artifact, (then, then))
    git(git_repo, "add", str(artifact))
    write(artifact, "# Vision\n")
    os.utime(artifact, (then, then))
    assert git(git_repo, "diff", "--name-only").strip() == ""  # git itself is fooled
    assert approve(git_repo, route, "1.vision").code == 0
    marker = (route / ".route" / "1.vision.approved").read_text()
    x_id = git(git_repo, "hash-object", "--", "route/1.vision.md").strip()
    assert f"artifact: {x_id} route/1.vision.md\n" in marker  # what the human saw
    # The robot commits what it staged (Y): the approval does not cover it.
    git(git_repo, "commit", "-q", "-m", "robot", f"--author={ROBOT}")
    ci = clone(git_repo, git_repo.parent / "ci")
    assert (ci / "route" / "1.vision.md").read_text() == "# Visi0n\n"
    for stone in ("1.vision",):
        done = route_set(ci, ci / "route", stone)
        assert done.code == 2 and "an approval exists, but for older content" in done.out


def test_approving_again_renews_an_approval_whose_commit_would_not_do(git_repo: Path, tmp_path: Path) -> None:
    route = gated_route(git_repo)
    approvers(git_repo, TEST_EMAIL)
    commit_all(git_repo, "the route")
    # Committed by the robot from the human's --no-commit marker: the same content, the wrong commit.
    assert approve(git_repo, route, "1.vision", "--no-commit").code == 0
    commit_marker(git_repo, route, "1.vision", "robot commits it", author=ROBOT)
    renewed = approve(git_repo, route, "1.vision")
    assert renewed.code == 0, renewed.err
    assert re.match(
        r"stone approved again: 1\.vision by Test Human <human@example\.com> "
        r"\(commit [0-9a-f]{12} that holds "
        r"it was made by robot@example\.com\)",
        renewed.out,
    )
    assert git(git_repo, "log", "-1", "--format=%ae").strip() == TEST_EMAIL
    assert approve(git_repo, route, "1.vision").out.startswith("already approved: 1.vision")
    # Unsigned, and the approver now signs commits: approving again signs it.
    allowed = ssh_signing(git_repo, tmp_path)
    signed = ["--require-signed", "--allowed-signers", str(allowed)]
    assert route_set(git_repo, route, "1.vision").code == 0
    commit_all(git_repo, "pass")
    before = lines_of(verify(git_repo, "--route", "route", "--allow-incomplete", *signed))["route/1.vision"]
    assert before.startswith("unapproved: its approval commit ") and "has no signature" in before
    assert before.endswith("in a terminal: route.stone.set --route route --stone 1.vision --as approved")
    renewed = approve(git_repo, route, "1.vision")
    assert "is not signed, and you now sign commits" in renewed.out
    assert "\ngpgsig " in git(git_repo, "cat-file", "commit", "HEAD")  # signed, with the approver's key
    # The renewed approval changed the marker: the pass is re-run for it, and then everything holds.
    assert route_set(git_repo, route, "1.vision").code == 0
    commit_all(git_repo, "pass again")
    after = lines_of(verify(git_repo, "--route", "route", "--allow-incomplete", *signed))["route/1.vision"]
    assert after.startswith("passed"), after


def test_an_approver_missing_from_the_approvers_file_is_warned_and_unapproved_everywhere(
    git_repo: Path,
) -> None:
    route = gated_route(git_repo)
    approvers(git_repo, "boss@example.com")
    commit_all(git_repo, "the route")
    done = approve(git_repo, route, "1.vision")
    assert done.code == 0
    assert done.err == (
        "warning: human@example.com is not in .route-approvers: route.verify will not accept this approval "
        "until a listed approver approves (or the approvers file, on the base branch, lists you)\n"
    )
    # Locally the stone waits for a listed approver: set, get and drive say what CI will say.
    refused = route_set(git_repo, route, "1.vision")
    assert refused.code == 2
    assert "approved by human@example.com, who is not in .route-approvers" in refused.err
    assert stone_get(git_repo, route).out == "1.vision\n"
    drive = git_run(git_repo, ["route.drive", "--route", "route"])
    assert "## 1.vision (waiting-for-approval)" in drive
    assert "who is not in .route-approvers" in drive
    line = lines_of(verify(git_repo, "--route", "route"))["route/1.vision"]
    assert line.startswith("forged: its approval was committed by human@example.com")


def git_run(repo: Path, argv: list[str]) -> str:
    from tests.route.routes import run_route

    return run_route(argv, repo).out


def test_approval_with_no_commit_then_a_signed_commit_of_the_marker_alone_is_accepted(
    git_repo: Path, tmp_path: Path
) -> None:
    route = gated_route(git_repo)
    approvers(git_repo, TEST_EMAIL)
    commit_all(git_repo, "the route")
    allowed = ssh_signing(git_repo, tmp_path)
    assert approve(git_repo, route, "1.vision", "--no-commit").code == 0
    commit_marker(git_repo, route, "1.vision", "my approval, signed")
    for stone in ("1.vision", "2.plan", "3.ship"):
        assert route_set(git_repo, route, stone).code == 0
    commit_all(git_repo, "passes")
    ci = clone(git_repo, tmp_path / "ci")
    done = verify(ci, "--route", "route", "--require-signed", "--allowed-signers", str(allowed))
    assert done.code == 0, done.out


# ---------------------------------------------------------------- 3. what a pass covers, hashed as git would


def test_changing_a_stones_instructions_after_its_pass_makes_it_stale_everywhere(git_repo: Path) -> None:
    route = gated_route(git_repo)
    pass_all(git_repo, route)
    write(route / "3.ship.stone", "Ship it, and also delete the tests.\n")
    commit_all(git_repo, "weaker instructions", author=ROBOT)
    assert stone_get(git_repo, route).out == "3.ship\n"
    assert stone_get(git_repo, route, "--stone", "3.ship").out == "3.ship\tstale\n"
    assert lines_of(verify(git_repo, "--route", "route"))["route/3.ship"] == (
        "stale: its instructions changed since the pass (route/3.ship.stone)"
    )


def test_a_symlink_artifact_leaving_the_repository_is_refused_and_reported(
    git_repo: Path, tmp_path: Path
) -> None:
    route = make_route(git_repo, {"1.doc": "Write the doc.\n"})
    outside = write(tmp_path / "elsewhere" / "doc.md", "reviewed text, outside the repository\n")
    os.symlink(outside, route / "1.doc.md")
    refused = route_set(git_repo, route, "1.doc")
    assert (refused.code, refused.out) == (2, "")
    assert refused.err == (
        f"error: artifact route/1.doc.md is a symlink (to {outside}): a pass or an approval binds what a "
        "file holds, and git stores only a link's text, so what it points at could change under them; make "
        "it the file itself, not a link to it\n"
    )
    assert not pass_records(route, "1.doc")
    # A robot that writes the pass record itself and commits the link: verify says what is wrong.
    (route / "1.doc.md").unlink()
    write(route / "1.doc.md", "inside\n")
    assert route_set(git_repo, route, "1.doc").code == 0
    (route / "1.doc.md").unlink()
    os.symlink(outside, route / "1.doc.md")
    commit_all(git_repo, "link")
    line = lines_of(verify(git_repo, "--route", "route"))["route/1.doc"]
    assert line.startswith(f"broken: artifact route/1.doc.md is a symlink (to {outside}): "), line


def test_an_unhashable_artifact_among_uncommitted_passes_breaks_only_its_own_stone(
    git_repo: Path, tmp_path: Path
) -> None:
    """Uncommitted artifacts of many stones are hashed together; one that cannot be hashed must not take
    the others down with it, nor pass its own stone."""
    route = make_route(git_repo, {"1.a": "a\n", "2.b": "b\n", "3.c": "c\n"})
    commit_all(git_repo, "route")
    for stone in ("1.a", "2.b", "3.c"):
        write(route / f"{stone}.md", f"{stone}, not committed\n")
        assert route_set(git_repo, route, stone).code == 0
    outside = write(tmp_path / "elsewhere" / "b.md", "outside the repository\n")
    (route / "2.b.md").unlink()
    os.symlink(outside, route / "2.b.md")
    lines = lines_of(verify(git_repo, "--route", "route"))
    # The others still pass here (their files are not committed, which the local gate says as it would).
    assert lines["route/1.a"].startswith("uncommitted: passed here"), lines
    assert lines["route/3.c"].startswith("uncommitted: passed here"), lines
    broken = f"broken: artifact route/2.b.md is a symlink (to {outside}): "
    assert lines["route/2.b"].startswith(broken), lines
    assert stone_get(git_repo, route, "--stone", "@next-one").out == "2.b\n"


def test_a_symlink_inside_the_repository_is_no_artifact_a_pass_takes(git_repo: Path, tmp_path: Path) -> None:
    """git stores a link as its target's text, so a pass of a link would hold while the file it points at
    changes; and a file holding exactly that text has the link's id, so a pass of the text held for the link
    swapped in after it. Neither passes, here or in CI."""
    route = make_route(git_repo, {"1.doc": "Write the doc.\n"})
    write(git_repo / "docs" / "real.md", "the doc\n")
    os.symlink("../docs/real.md", route / "1.doc.md")
    refused = route_set(git_repo, route, "1.doc")
    assert (refused.code, refused.out) == (2, "")
    assert refused.err.startswith("error: artifact route/1.doc.md is a symlink (to ../docs/real.md): ")
    assert not pass_records(route, "1.doc")
    (route / "1.doc.md").unlink()
    (route / "1.doc.md").write_bytes(b"../docs/real.md")  # the link's text: the link's id
    assert route_set(git_repo, route, "1.doc").code == 0
    (route / "1.doc.md").unlink()
    os.symlink("../docs/real.md", route / "1.doc.md")
    commit_all(git_repo, "doc")
    line = lines_of(verify(clone(git_repo, tmp_path / "ci"), "--route", "route"))["route/1.doc"]
    assert line.startswith("broken: artifact route/1.doc.md is a symlink (to ../docs/real.md): "), line


def test_a_crlf_artifact_in_a_text_auto_repository_verifies_in_a_fresh_clone(
    git_repo: Path, tmp_path: Path
) -> None:
    write(git_repo / ".gitattributes", "* text=auto\n")
    commit_all(git_repo, "attributes")
    route = make_route(git_repo, {"1.doc": "Write the doc.\n"}, {"1.doc": f"reviews: ['{review('r1')}']\n"})
    (route / "1.doc.md").write_bytes(b"line one\r\nline two\r\n")
    assert route_set(git_repo, route, "1.doc").code == 0
    commit_all(git_repo, "doc")
    ci = clone(git_repo, tmp_path / "ci")
    assert (ci / "route" / "1.doc.md").read_bytes() == b"line one\nline two\n"
    done = verify(ci, "--route", "route")
    assert done.code == 0, done.out
    assert stone_get(ci, ci / "route").out == "all stones passed\n"


# ---------------------------------------------------------------- 4. merges without conflicts under .route/


def tiered_route(repo: Path) -> Path:
    """1.a, then a tier of two (2.1.x, 2.1.y), each with a review and reviewed?."""
    guard = f"reviews: ['{review('r1')}']\njudges: ['reviewed?']\n"
    route = make_route(
        repo,
        {"1.a": "a\n", "2.1.x": "x\n", "2.1.y": "y\n"},
        {"1.a": guard, "2.1.x": guard, "2.1.y": guard},
    )
    for stone in ("1.a", "2.1.x", "2.1.y"):
        write(route / f"{stone}.md", f"{stone} v1\n")
    write(repo / ".gitignore", ".ctl/\n")
    return route


def test_two_branches_passing_stones_of_one_tier_merge_without_conflicts(git_repo: Path) -> None:
    route = tiered_route(git_repo)
    assert route_set(git_repo, route, "1.a").code == 0
    commit_all(git_repo, "tier 1")
    git(git_repo, "switch", "-q", "-c", "x")
    assert route_set(git_repo, route, "2.1.x").code == 0
    commit_all(git_repo, "x", author=ROBOT)
    git(git_repo, "switch", "-q", "-c", "y", "main")
    assert route_set(git_repo, route, "2.1.y").code == 0
    commit_all(git_repo, "y", author=ROBOT)
    git(git_repo, "switch", "-q", "main")
    assert merge(git_repo, "x") == [] and merge(git_repo, "y") == []
    assert verify(git_repo, "--route", "route").code == 0


def test_both_branches_re_passing_one_stone_conflict_only_in_the_artifact(git_repo: Path) -> None:
    route = tiered_route(git_repo)
    for stone in ("1.a", "2.1.x", "2.1.y"):
        assert route_set(git_repo, route, stone).code == 0
    commit_all(git_repo, "all passed")
    for branch, text in (("one", "a, fixed one way\n"), ("two", "a, fixed another way\n")):
        git(git_repo, "switch", "-q", "-c", branch, "main")
        write(route / "1.a.md", text)
        assert route_set(git_repo, route, "1.a").code == 0
        commit_all(git_repo, branch, author=ROBOT)
    git(git_repo, "switch", "-q", "main")
    assert merge(git_repo, "one") == []
    assert merge(git_repo, "two") == ["route/1.a.md"]  # the user's conflict; nothing under .route/
    write(route / "1.a.md", "a, fixed both ways\n")
    commit_all(git_repo, "resolved")
    assert lines_of(verify(git_repo, "--route", "route"))["route/1.a"].startswith("stale: artifacts changed")
    assert route_set(git_repo, route, "1.a").code == 0
    commit_all(git_repo, "re-passed")
    done = verify(git_repo, "--route", "route")
    assert done.code == 0, done.out
    assert "3 other pass records kept as history" in lines_of(done)["route/1.a"]


def test_the_same_stone_passed_on_identical_content_in_two_clones_merges_cleanly(
    git_repo: Path, tmp_path: Path
) -> None:
    tiered_route(git_repo)
    commit_all(git_repo, "route")
    other = clone(git_repo, tmp_path / "other")
    for repo in (git_repo, other):
        assert route_set(repo, repo / "route", "1.a").code == 0
        commit_all(repo, "pass 1.a", author=ROBOT)
    git(git_repo, "fetch", "-q", str(other), "main:theirs")
    assert merge(git_repo, "theirs") == []
    assert lines_of(verify(git_repo, "--route", "route", "--allow-incomplete"))["route/1.a"].startswith(
        "passed"
    )


def test_a_human_approving_on_main_while_the_robot_works_merges_cleanly(git_repo: Path) -> None:
    route = gated_route(git_repo)
    approvers(git_repo, TEST_EMAIL)
    commit_all(git_repo, "the route")
    git(git_repo, "switch", "-q", "-c", "robot")
    steer(git_repo, "r1", out="blockers: 0\nnitpicks: 0\n")
    assert route_set(git_repo, route, "1.vision").code == 2  # waits for the human
    commit_all(git_repo, "robot work", author=ROBOT)
    git(git_repo, "switch", "-q", "main")
    assert approve(git_repo, route, "1.vision").code == 0
    git(git_repo, "switch", "-q", "robot")
    assert merge(git_repo, "main") == []
    for stone in ("1.vision", "2.plan", "3.ship"):
        assert route_set(git_repo, route, stone).code == 0
    commit_all(git_repo, "passes", author=ROBOT)
    git(git_repo, "switch", "-q", "main")
    assert merge(git_repo, "robot") == []
    done = verify(git_repo, "--route", "route")
    assert done.code == 0, done.out


# ---------------------------------------------------------------- 5. one view of "done"


def test_a_guard_edited_after_its_pass_is_stale_for_get_drive_and_verify_alike(git_repo: Path) -> None:
    route = gated_route(git_repo)
    pass_all(git_repo, route)
    guard = route / "2.plan.guard"
    guard.write_text(guard.read_text().replace("reviewed?", "reviewed? --allow-blockers 5"))
    assert stone_get(git_repo, route).out == "2.plan\n"
    drive = git_run(git_repo, ["route.drive", "--route", "route"])
    assert drive.startswith("route route: 2 of 3 stones passed; next: 2.plan\n")
    assert "## 2.plan (stale)" in drive and "the guard changed since the pass" in drive
    assert lines_of(verify(git_repo, "--route", "route"))["route/2.plan"] == (
        "stale: the guard changed since the pass (route/2.plan.guard)"
    )


def test_a_later_stone_cannot_pass_while_a_human_gate_below_it_waits(git_repo: Path) -> None:
    route = gated_route(git_repo)
    assert route_set(git_repo, route, "1.vision").code == 2  # waits for a human
    early = route_set(git_repo, route, "3.ship")
    assert early.code == 2
    assert early.err.startswith("error: 3.ship must wait: 1.vision, of a lower tier, is incomplete; ")
    assert not pass_records(route, "3.ship")


# ---------------------------------------------------------------- 6. ways out


def test_rerun_replaces_a_review_whose_output_misled_the_judges(git_repo: Path) -> None:
    route = make_route(
        git_repo,
        {"1.doc": "Write the doc.\n"},
        {"1.doc": f"reviews: ['{review('r1')}']\njudges: ['reviewed?']\n"},
    )
    write(route / "1.doc.md", "doc\n")
    steer(git_repo, "r1", out="the review forgot to count\n")
    broken = route_set(git_repo, route, "1.doc")
    assert broken.code == 1
    assert "(add --rerun to run reviews that already finished again)" in broken.err
    steer(git_repo, "r1", out="blockers: 0\nnitpicks: 0\n")  # the review command is fixed
    assert route_set(git_repo, route, "1.doc").code == 1  # its old output is still what the judge reads
    assert runs(git_repo, "r1") == 1
    fixed = route_set(git_repo, route, "1.doc", "--rerun")
    assert fixed.code == 0, fixed.err
    assert runs(git_repo, "r1") == 2
    commit_all(git_repo, "the doc, passed")  # what CI checks out
    assert verify(git_repo, "--route", "route").code == 0


def test_a_broken_review_command_says_what_it_printed_on_stderr(git_repo: Path) -> None:
    route = make_route(
        git_repo,
        {"1.doc": "Write the doc.\n"},
        {"1.doc": "reviews: ['no-such-reviewer $route/1.doc.md']\njudges: ['reviewed?']\n"},
    )
    write(route / "1.doc.md", "doc\n")
    done = route_set(git_repo, route, "1.doc")
    assert done.code == 1
    assert re.search(r"review r1 failed with exit 127: .*no-such-reviewer: .*not found", done.err), done.err
    assert len(done.err.splitlines()) == 1
    assert "review r1 failed with exit 127: no-such-reviewer $route/1.doc.md" in done.out  # which command
