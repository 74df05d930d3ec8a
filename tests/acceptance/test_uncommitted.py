"""The local gate says what CI will say (issue 21 §3): a pass that stands on files no commit holds is not
"ok" in the work tree where it was made, because CI's clone of the same commit says "not passed yet".

Decision: locally that is a failure (``uncommitted``, exit 2), not a warning. route.verify is the robot's
and the human's forecast of CI's verdict on this commit; "ok" followed by a red CI is the bug. The files are
named, with how each is not committed, so the fix is one commit. A clean checkout (CI) has no such file, so
nothing changes there."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import git, run_cli
from tests.route.routes import make_route, review, stone_set, write
from tests.route_gate.gate import approvers, commit_all, lines_of, verify

GUARD = f"reviews:\n  - {review('r1')}\njudges:\n  - reviewed?\n"


def _route(repo: Path) -> Path:
    route = make_route(repo, {"1.doc": "Write the doc.\n", "2.code": "Write it.\n"}, {"1.doc": GUARD})
    write(route / "2.code.guard", 'artifacts: ["src/**"]\n')
    commit_all(repo, "route")
    return route


def _clone(repo: Path, tmp_path: Path) -> Path:
    """What CI checks out: a fresh clone of HEAD."""
    clone = tmp_path / "ci"
    tmp_path.mkdir(parents=True, exist_ok=True)
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    return clone


def test_a_pass_that_is_not_committed_fails_locally_naming_its_files(git_repo: Path, tmp_path: Path) -> None:
    route = _route(git_repo)
    write(route / "1.doc.md", "# Doc\n")
    assert stone_set(git_repo, route, "1.doc").code == 0
    local = verify(git_repo, "--route", "route", "--allow-incomplete")
    assert local.code == 2
    line = lines_of(local)["route/1.doc"]
    assert line.startswith("uncommitted: passed here, but not committed: route/.route/1.doc.guard.judge.")
    # The judge and review files, the pass record and the artifact: four, each with how.
    assert line.count("(untracked)") == 4 and "route/1.doc.md (untracked)" in line and " more" not in line
    assert line.endswith("CI's checkout holds only commits, where this stone is not passed: commit them")
    assert "error: 1 of 2 stones failed route.verify (uncommitted)" in local.err
    # What CI says of the same commit: the stone was never passed there.
    ci = verify(_clone(git_repo, tmp_path), "--route", "route", "--allow-incomplete")
    assert lines_of(ci)["route/1.doc"] == "incomplete: not passed yet"

    # Staged is not committed either; committed, both agree.
    git(git_repo, "add", "-A")
    staged = verify(git_repo, "--route", "route", "--allow-incomplete")
    assert "(staged, not committed)" in lines_of(staged)["route/1.doc"]
    git(git_repo, "commit", "-q", "-m", "doc")
    assert verify(git_repo, "--route", "route", "--allow-incomplete").code == 0
    ci = verify(_clone(git_repo, tmp_path / "again"), "--route", "route", "--allow-incomplete")
    assert ci.code == 0 and lines_of(ci)["route/1.doc"].startswith("passed: ")

    # Edited and passed again without a commit: the artifact is modified, the new pass record untracked.
    write(route / "1.doc.md", "# Doc\nmore\n")
    assert stone_set(git_repo, route, "1.doc").code == 0
    line = lines_of(verify(git_repo, "--route", "route", "--allow-incomplete"))["route/1.doc"]
    assert "route/1.doc.md (modified)" in line and "route/.route/1.doc.passed." in line


def test_an_artifact_git_ignores_can_never_reach_ci_and_the_gate_says_so(git_repo: Path) -> None:
    route = _route(git_repo)
    write(git_repo / ".gitignore", "__pycache__/\n")
    write(git_repo / "src" / "app.py", "print('hi')\n")
    write(git_repo / "src" / "__pycache__" / "app.cpython-311.pyc", "bytecode\n")
    write(route / "1.doc.md", "# Doc\n")
    commit_all(git_repo, "work")  # everything git will take: the .pyc stays out
    for stone in ("1.doc", "2.code"):
        assert stone_set(git_repo, route, stone).code == 0
    commit_all(git_repo, "passed")
    line = lines_of(verify(git_repo, "--route", "route"))["route/2.code"]
    assert line.startswith(
        "uncommitted: passed here, but not committed: src/__pycache__/app.cpython-311.pyc (ignored by git)"
    )
    assert "git ignores some of them, so no commit will hold them: narrow the guard's artifacts:" in line


def test_an_artifact_outside_the_repository_can_never_reach_ci_and_the_gate_says_so(
    git_repo: Path, tmp_path: Path
) -> None:
    # A glob that climbs out of the work tree names a file no commit can hold: the pass stands on nothing CI
    # has, so it must not verify (it did: the committed check skipped paths outside the repository).
    outside = write(tmp_path / "elsewhere" / "notes.md", "anything\n")
    route = make_route(git_repo, {"1.task": "Write the task.\n"}, {})
    write(route / "1.task.guard", f"artifacts: [{'../' * len(git_repo.parts)}{str(outside).lstrip('/')}]\n")
    commit_all(git_repo, "route")
    assert stone_set(git_repo, route, "1.task").code == 0
    commit_all(git_repo, "passed")
    line = lines_of(verify(git_repo, "--route", "route"))["route/1.task"]
    assert line.startswith("uncommitted: passed here, but not committed: ../"), line
    assert line.endswith(
        "(outside the repository); CI's checkout holds only commits, where this stone is not passed: commit "
        "them; no commit holds a file outside the repository: make the guard's artifacts: name ones in it"
    ), line


def test_an_approval_decided_by_an_approvers_file_that_is_not_committed(git_repo: Path) -> None:
    guard = f"reviews:\n  - {review('r1')}\njudges:\n  - approved?\n"
    route = make_route(git_repo, {"1.doc": "Write the doc.\n"}, {"1.doc": guard})
    write(route / "1.doc.md", "# Doc\n")
    commit_all(git_repo, "route")
    assert stone_set(git_repo, route, "1.doc", as_="approved").code == 0
    assert stone_set(git_repo, route, "1.doc").code == 0
    approvers(git_repo, "human@example.com")
    git(git_repo, "add", "route")
    git(git_repo, "commit", "-q", "-m", "passed, but the approvers file was forgotten")
    line = lines_of(verify(git_repo, "--route", "route"))["route/1.doc"]
    assert line == (
        "uncommitted: passed here, but not committed: .route-approvers (untracked); CI's checkout holds only "
        "commits, where this stone is not passed: commit them"
    )


def test_a_clean_checkout_changes_nothing(git_repo: Path, tmp_path: Path) -> None:
    route = _route(git_repo)
    write(route / "1.doc.md", "# Doc\n")
    write(git_repo / "src" / "app.py", "print('hi')\n")
    for stone in ("1.doc", "2.code"):
        assert stone_set(git_repo, route, stone).code == 0
    commit_all(git_repo, "passed")
    clone = _clone(git_repo, tmp_path)
    here, there = verify(git_repo, "--route", "route"), verify(clone, "--route", "route")
    assert here.code == there.code == 0
    assert here.out == there.out and "uncommitted" not in here.out
    # An unrelated file left lying around is no file of a pass: it changes nothing either.
    write(git_repo / "notes.txt", "scratch\n")
    assert verify(git_repo, "--route", "route").out == here.out


def test_route_drive_names_what_a_finished_route_has_not_committed(git_repo: Path) -> None:
    route = _route(git_repo)
    write(route / "1.doc.md", "# Doc\n")
    write(git_repo / "src" / "app.py", "print('hi')\n")
    for stone in ("1.doc", "2.code"):
        assert stone_set(git_repo, route, stone).code == 0
    drive = run_cli(["route.drive", "--route", "route"], git_repo)
    assert drive.code == 0
    assert drive.out.startswith("route route: all 2 stones passed, but not committed: ")
    assert "route/.route/2.code.passed." in drive.out and "and 2 more" in drive.out  # the first four named
    assert drive.out.endswith("route.verify fails what stands on them: commit them\n")
    document = json.loads(run_cli(["route.drive", "--route", "route", "--json"], git_repo).out)
    assert document["complete"] is True
    assert {"path": "src/app.py", "how": "untracked"} in document["uncommitted"]
    commit_all(git_repo, "passed")
    done = run_cli(["route.drive", "--route", "route"], git_repo)
    assert done.out == "route route: all 2 stones passed; nothing left to do.\n"
    document = json.loads(run_cli(["route.drive", "--route", "route", "--json"], git_repo).out)
    assert document["uncommitted"] == []
