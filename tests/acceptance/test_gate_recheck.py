"""CI re-derives what it cannot take on faith: ``route.verify --base REF --recheck`` (issue 20).

``main`` is the base, where every stone of the route passed with the real tools and was committed. A robot
with a shell and this package works on branch ``robot``; CI is a fresh clone that checks the robot's
branch out and runs ``route.verify --all --base origin/main``, with and without ``--recheck``. The tools
are honest scripts: ``tools/review.py`` counts the lines of an artifact that say TODO as blockers,
``tools/judge.py`` rejects an artifact that says FORBIDDEN, and ``reviewer`` (a program on CI's PATH, not in
the repository) reviews like ``tools/review.py``. Every command CI runs appends a line to ``$RECHECK_LOG``
(a file outside the checkout), so the tests count what ran.

The robots forge a pass without knowing the record format: they swap a review program for one run and put
it back, swap a shell judge, or put a fake reviewer first on their PATH. Without ``--recheck`` each forged
pass verifies (the documented baseline: records are consistent); with it each is rejected, naming the stone.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.conftest import TEST_EMAIL, Ran, git, run_cli
from tests.route.routes import run_route, write
from tests.route_gate.gate import commit_all, lines_of

ROBOT_EMAIL = "robot@example.com"
ROBOT = {
    "GIT_AUTHOR_NAME": "Robot",
    "GIT_AUTHOR_EMAIL": ROBOT_EMAIL,
    "GIT_COMMITTER_NAME": "Robot",
    "GIT_COMMITTER_EMAIL": ROBOT_EMAIL,
}

REVIEW = """\
import os, pathlib, sys
route, stone = sys.argv[1], sys.argv[2]
if os.environ.get("RECHECK_LOG"):
    with open(os.environ["RECHECK_LOG"], "a") as log:
        log.write(f"{os.path.basename(sys.argv[0])} {stone}\\n")
if os.environ.get("REVIEW_SERVICE") == "down":
    sys.stderr.write("calling the review service\\n")
    sys.stderr.write("error: the review service answered 503 Service Unavailable\\n")
    sys.exit(3)
text = pathlib.Path(route, stone + ".md").read_text()
todo = [line.strip() for line in text.splitlines() if "TODO" in line]
print("## Blockers")
for line in todo:
    print(f"- unfinished: {line}")
print(f"blockers: {len(todo)}")
print("nitpicks: 0")
"""
JUDGE = """\
import os, pathlib, sys, textwrap
route, stone = sys.argv[1], sys.argv[2]
if os.environ.get("RECHECK_LOG"):
    with open(os.environ["RECHECK_LOG"], "a") as log:
        log.write(f"judge.py {stone}\\n")
if "FORBIDDEN" in pathlib.Path(route, stone + ".md").read_text():
    print("passed: false")
    print("reason: " + textwrap.shorten("the artifact says FORBIDDEN", 80))
    sys.exit(2)
print("passed: true")
print("reason: nothing forbidden")
"""
YES_REVIEW = 'print("blockers: 0")\nprint("nitpicks: 0")\n'
YES_JUDGE = 'print("passed: true")\nprint("reason: fine")\n'

RUN_REVIEW = "python3 tools/review.py $route $stone"
RUN_JUDGE = "python3 tools/judge.py $route $stone"
GUARDS = {
    "1.vision": f"reviews:\n  - {RUN_REVIEW}\njudges:\n  - reviewed?\n",
    "2.plan": f"reviews:\n  - {RUN_REVIEW}\njudges:\n  - reviewed?\n  - {RUN_JUDGE}\n",
    "3.ship": f"judges:\n  - {RUN_JUDGE}\n",
    "4.notes": "reviews:\n  - reviewer $route $stone\njudges:\n  - reviewed?\n",
}


class Up(NamedTuple):
    repo: Path  # the shared repository, on branch robot (forked from main)
    route: Path
    base: str  # main's commit: what CI's --base names
    tmp: Path
    path: str  # PATH with the honest `reviewer` on it (CI's machine, and the robot's until it cheats)
    log: Path  # $RECHECK_LOG: every command CI runs appends a line


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """main: the route, every stone passed with the honest tools and committed by the human."""
    tmp = tmp_path_factory.mktemp("recheck")
    repo = tmp / "template"
    repo.mkdir()
    git(repo, "init", "-q")
    write(repo / "README.md", "a project\n")
    write(repo / ".route-approvers", f"{TEST_EMAIL}\n")
    write(repo / "tools" / "review.py", REVIEW)
    write(repo / "tools" / "judge.py", JUDGE)
    route = repo / "route"
    for stone, guard in GUARDS.items():
        write(route / f"{stone}.stone", f"Write {stone}.\n")
        write(route / f"{stone}.guard", guard)
        write(route / f"{stone}.md", f"# {stone}\nDone.\n")
    path = honest_path(tmp)
    for stone in GUARDS:
        done = run_route(
            ["route.stone.set", "--route", "route", "--stone", stone, "--as", "passed"],
            repo,
            env={"PATH": path},
        )
        assert done.code == 0, (stone, done.out, done.err)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the route, passed")
    return repo


def honest_path(tmp: Path) -> str:
    """A PATH whose ``reviewer`` is the honest one (it lives outside any repository, as CI's tools do)."""
    bin_dir = tmp / "honest-bin"
    if not bin_dir.exists():
        write(bin_dir / "reviewer", "#!/usr/bin/env python3\n" + REVIEW).chmod(0o755)
    return f"{bin_dir}{os.pathsep}{os.environ['PATH']}"


@pytest.fixture
def up(template: Path, tmp_path: Path) -> Up:
    repo = tmp_path / "upstream"
    git(tmp_path, "clone", "-q", str(template), str(repo))
    git(repo, "checkout", "-q", "-b", "robot")
    base = git(repo, "rev-parse", "HEAD").strip()
    return Up(repo, repo / "route", base, tmp_path, honest_path(template.parent), tmp_path / "recheck.log")


def robot_set(up: Up, stone: str, path: str | None = None) -> Ran:
    done = run_route(
        ["route.stone.set", "--route", "route", "--stone", stone, "--as", "passed"],
        up.repo,
        env={"PATH": path or up.path},
    )
    assert done.code == 0, (stone, done.out, done.err)
    return done


def add_stone(up: Up, name: str, *, guard: str | None = None, artifact: str | None = None) -> None:
    """A stone added to the route (on the branch checked out): its instructions, and its guard and artifact
    when given."""
    write(up.route / f"{name}.stone", f"Write {name}.\n")
    if guard is not None:
        write(up.route / f"{name}.guard", guard)
    if artifact is not None:
        write(up.route / f"{name}.md", artifact)


def robot_commit(up: Up, message: str) -> None:
    for args in (["add", "-A"], ["commit", "-q", "-m", message]):
        done = subprocess.run(
            ["git", *args],
            cwd=up.repo,
            env={**os.environ, **ROBOT},
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr


def ci_clone(up: Up) -> Path:
    clone = up.tmp / "ci"
    if clone.exists():
        shutil.rmtree(clone)
    git(up.tmp, "clone", "-q", str(up.repo), str(clone))
    git(clone, "checkout", "-q", "--detach", "origin/robot")
    return clone


# The honest tools count what ran in $RECHECK_LOG, a file outside the checkout, which recheck's sandbox
# makes read-only: these tests, about what recheck decides, run its commands unsandboxed
# (tests/acceptance/test_gate_recheck_sandbox.py runs them in the sandbox).
UNSANDBOXED = ("--recheck-sandbox", "off")


def ci(up: Up, *extra: str, env: dict[str, str] | None = None, clone: Path | None = None) -> Ran:
    """CI: a fresh clone of the robot's branch, route.verify against main, with the honest tools."""
    where = clone or ci_clone(up)
    up.log.unlink(missing_ok=True)
    full = {"PATH": up.path, "RECHECK_LOG": str(up.log), **(env or {})}
    sandbox = UNSANDBOXED if "--recheck" in extra else ()
    return run_route(["route.verify", "--all", "--base", "origin/main", *extra, *sandbox], where, env=full)


def ran(up: Up) -> list[str]:
    """What CI ran, in order (``review.py 2.plan``, ``judge.py 2.plan``, ``reviewer 4.notes``)."""
    return up.log.read_text().splitlines() if up.log.exists() else []


def stones_json(done: Ran) -> dict[str, dict[str, object]]:
    return {f"{stone['route']}/{stone['stone']}": stone for stone in json.loads(done.out)["stones"]}


def swap(path: Path, text: str) -> str:
    """Replace the file's text; return what it held."""
    held = path.read_text()
    path.write_text(text)
    return held


# ---------------------------------------------------------------- the robots: each forgery, caught


def forge_with_swapped_review(up: Up) -> None:
    write(up.route / "1.vision.md", "# 1.vision\nTODO: decide what we build\n")
    real = swap(up.repo / "tools" / "review.py", YES_REVIEW)  # swapped for one run ...
    robot_set(up, "1.vision")
    swap(up.repo / "tools" / "review.py", real)  # ... and put back: the program is the base's again
    robot_commit(up, "vision")


def forge_with_swapped_judge(up: Up) -> None:
    write(up.route / "3.ship.md", "# 3.ship\nShip it. FORBIDDEN: skip the tests\n")
    real = swap(up.repo / "tools" / "judge.py", YES_JUDGE)
    robot_set(up, "3.ship")
    swap(up.repo / "tools" / "judge.py", real)
    robot_commit(up, "ship")


def forge_with_a_fake_reviewer_on_path(up: Up) -> None:
    fake = up.tmp / "robot-bin"
    write(fake / "reviewer", "#!/bin/sh\nprintf 'blockers: 0\\nnitpicks: 0\\n'\n").chmod(0o755)
    write(up.route / "4.notes.md", "# 4.notes\nTODO: write the notes\n")
    robot_set(up, "4.notes", path=f"{fake}{os.pathsep}{up.path}")  # the robot's own shell, its PATH
    robot_commit(up, "notes")


FORGERIES = {
    "swapped-review": (forge_with_swapped_review, "1.vision", "j1 (reviewed?)", "- unfinished: TODO"),
    "swapped-judge": (forge_with_swapped_judge, "3.ship", f"j1 ({RUN_JUDGE})", "the artifact says FORBIDDEN"),
    "fake-reviewer-on-path": (forge_with_a_fake_reviewer_on_path, "4.notes", "j1 (reviewed?)", "TODO"),
}


@pytest.mark.parametrize("forgery", FORGERIES.keys())
def test_a_forged_pass_verifies_without_recheck_and_is_rejected_with_it(up: Up, forgery: str) -> None:
    forge, stone, judge, feedback = FORGERIES[forgery]
    forge(up)
    clone = ci_clone(up)
    # The baseline, as docs/route-gate.md states it: the records are consistent, so plain verify (with
    # --base: the definitions and programs are the base's) passes the forged stone.
    plain = ci(up, clone=clone)
    assert plain.code == 0, plain.out + plain.err
    assert lines_of(plain)[f"route/{stone}"].startswith("passed")
    assert ran(up) == []  # plain verify runs nothing
    done = ci(up, "--recheck", clone=clone)
    assert done.code == 2, done.out + done.err
    line = lines_of(done)[f"route/{stone}"]
    assert line.startswith(f"rejected: failed on recheck: judge {judge} said no: "), line
    assert feedback in line
    assert line.endswith(
        "the local pass said passed, but CI's own run of the base's guard on these files does not"
    )
    # Only the new claim ran; every other pass is the base's.
    assert {entry.split()[1] for entry in ran(up)} == {stone}
    for other in set(GUARDS) - {stone}:
        assert lines_of(done)[f"route/{other}"].startswith("passed"), other
    assert "error: 1 of 4 stones failed route.verify (rejected)" in done.err


# ---------------------------------------------------------------- honest work


def test_an_honest_pull_request_passes_and_each_new_claim_runs_exactly_once(up: Up) -> None:
    write(up.route / "2.plan.md", "# 2.plan\nThree steps, each with an owner.\n")
    robot_set(up, "2.plan")
    write(up.route / "4.notes.md", "# 4.notes\nWhat we learned.\n")
    robot_set(up, "4.notes")
    # Before the commit, in the robot's own work tree: these passes are on files no commit holds, which CI
    # would never see; they are reported uncommitted, and nothing is run for them.
    local = run_route(
        ["route.verify", "--all", "--base", "main", "--recheck", *UNSANDBOXED],
        up.repo,
        env={"PATH": up.path, "RECHECK_LOG": str(up.log)},
    )
    assert local.code == 2, local.out
    assert lines_of(local)["route/2.plan"].startswith("uncommitted: ")
    assert ran(up) == []
    robot_commit(up, "plan and notes")
    done = ci(up, "--recheck")
    assert done.code == 0, done.out + done.err
    # Each command of each new claim once; the passes main holds (1.vision, 3.ship) not at all.
    assert sorted(ran(up)) == ["judge.py 2.plan", "review.py 2.plan", "reviewer 4.notes"]
    lines = lines_of(done)
    assert re.fullmatch(
        r"passed: passed and fresh \(2 judges re-checked\); 1 other pass record kept as history; "
        r"rechecked with the base's guard: 2 commands ran \((\d+ ms|\d+\.\d s)\)",
        lines["route/2.plan"],
    ), lines["route/2.plan"]
    assert lines["route/1.vision"] == "passed: passed and fresh (1 judge re-checked)"
    summary = done.out.splitlines()[-1]
    assert summary.startswith(
        "route.verify ok: 4 stones (4 passed); recheck: 2 new claims rechecked against "
        f"{up.base[:12]}: 3 commands, "
    )
    assert summary.endswith("; 2 passes held by the base")
    # --json: per stone, and what it cost.
    as_json = ci(up, "--recheck", "--json")
    document = json.loads(as_json.out)
    assert document["recheck"]["new_claims"] == 2 and document["recheck"]["held"] == 2
    assert document["recheck"]["commands"] == 3
    stones = stones_json(as_json)
    assert stones["route/1.vision"]["recheck"] == {"claim": "held"}
    plan = stones["route/2.plan"]["recheck"]
    assert isinstance(plan, dict)
    assert (plan["claim"], plan["guard"], plan["outcome"]) == ("new", "base", "passed")
    assert [(each["what"], each["command"], each["status"]) for each in plan["commands"]] == [
        ("review r1", RUN_REVIEW, "ok"),
        ("judge j2", RUN_JUDGE, "passed"),
    ]
    # Named with --route, the base is listed for that route only: the same claims are held.
    named = run_route(
        ["route.verify", "--route", "route", "--base", "origin/main", "--recheck", *UNSANDBOXED],
        up.tmp / "ci",
        env={"PATH": up.path, "RECHECK_LOG": str(up.log)},
    )
    assert named.code == 0, named.out + named.err
    assert named.out.splitlines()[-1].endswith("; 2 passes held by the base")


def test_a_base_that_holds_every_pass_runs_nothing(up: Up) -> None:
    write(up.repo / "notes.txt", "unrelated work\n")
    robot_commit(up, "unrelated")
    done = ci(up, "--recheck")
    assert done.code == 0, done.out + done.err
    assert ran(up) == []
    assert re.fullmatch(
        rf"route\.verify ok: 4 stones \(4 passed\); recheck: 0 new claims rechecked against {up.base[:12]}: "
        r"0 commands, 0 s \(wall \d+ ms\); 4 passes held by the base",
        done.out.splitlines()[-1],
    ), done.out


def test_a_forged_record_that_rode_along_as_history_is_rechecked_when_it_becomes_the_pass(up: Up) -> None:
    """A record the base holds counts only if it was the stone's pass there: the robot forges a pass of bad
    content, then passes good content honestly; both records merge, only the good one was ever checked.
    Restoring the bad content brings back a pass the base holds, but never gated."""
    forge_with_swapped_review(up)
    write(up.route / "1.vision.md", "# 1.vision\nWe build the notes app.\n")
    robot_set(up, "1.vision")
    robot_commit(up, "vision, finished")
    merged = ci(up, "--recheck")
    assert merged.code == 0, merged.out + merged.err
    git(up.repo, "checkout", "-q", "main")
    git(up.repo, "merge", "-q", "--ff-only", "robot")  # the pull request merges: main holds both records
    git(up.repo, "checkout", "-q", "robot")
    write(up.route / "1.vision.md", "# 1.vision\nTODO: decide what we build\n")  # the forged content again
    robot_commit(up, "back to the first vision")
    assert ci(up).code == 0  # plain verify: the old pass record holds again
    done = ci(up, "--recheck")
    assert done.code == 2, done.out
    assert lines_of(done)["route/1.vision"].startswith("rejected: failed on recheck: judge j1 (reviewed?)")
    assert ran(up) == ["review.py 1.vision"]


def test_a_record_the_base_holds_for_fewer_artifacts_than_the_stone_had_there_is_a_new_claim(
    tmp_path: Path,
) -> None:
    """At the base, 1.a had two artifacts and its pass covered both; a record of an earlier pass, covering
    only the first, rode along. Deleting the second brings that record back as the pass that holds: the base
    holds it byte for byte, with the same stone, guard and artifact, but it was not the pass there."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    write(repo / "route" / "1.a.stone", "Write it.\n")
    write(repo / "route" / "1.a.md", "# a\n")
    set_a = ["route.stone.set", "--route", "route", "--stone", "1.a", "--as", "passed"]
    assert run_route(set_a, repo).code == 0
    write(repo / "route" / "1.a-extra.md", "# more of a\n")
    assert run_route(set_a, repo).code == 0
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "main")
    verify = ["route.verify", "--all", "--base", "main", "--recheck", "--json"]

    def claim() -> object:
        done = run_route(verify, repo)
        assert done.code == 0, done.out + done.err
        recheck = stones_json(done)["route/1.a"]["recheck"]
        assert isinstance(recheck, dict)
        return recheck["claim"]

    git(repo, "checkout", "-q", "-b", "pull-request")
    assert claim() == "held"
    git(repo, "rm", "-q", "route/1.a-extra.md")
    git(repo, "commit", "-q", "-m", "less of a")
    assert claim() == "new"


def test_approved_is_asked_again_of_the_approvers_verify_was_given(tmp_path: Path) -> None:
    """CI names who may approve (the action passes the base's copy with --approvers); recheck's approved?
    reads the same list, not the pull request's own .route-approvers."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    write(repo / ".route-approvers", f"{TEST_EMAIL}\n")
    write(repo / "route" / "1.a.stone", "Write it.\n")
    write(repo / "route" / "1.a.guard", "judges:\n  - approved?\n")
    write(repo / "route" / "1.a.md", "# a\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "main")
    git(repo, "checkout", "-q", "-b", "pull-request")
    write(repo / "route" / "1.a.md", "# a, revised\n")
    approve = ["route.stone.set", "--route", "route", "--stone", "1.a", "--as", "approved"]
    assert run_route(approve, repo, human=True).code == 0  # the human approves the new content
    assert (
        run_route(["route.stone.set", "--route", "route", "--stone", "1.a", "--as", "passed"], repo).code == 0
    )
    write(repo / ".route-approvers", f"{ROBOT_EMAIL}\n")  # then the robot lists itself instead
    robot_commit(Up(repo, repo / "route", "", tmp_path, "", tmp_path / "log"), "passed, and approvers")
    base_copy = write(tmp_path / "approvers-at-base", f"{TEST_EMAIL}\n")
    done = run_route(
        ["route.verify", "--all", "--base", "main", "--approvers", str(base_copy), "--recheck", "--json"],
        repo,
    )
    assert done.code == 0, done.out + done.err
    recheck = stones_json(done)["route/1.a"]["recheck"]
    assert isinstance(recheck, dict) and recheck["outcome"] == "passed"


def test_a_guards_inputs_count_as_set_counts_them(tmp_path: Path) -> None:
    """2.b's guard names 1.a's artifact under inputs: (its review input covers it): a pass the base holds is
    held with its inputs as the base has them, and one passed again after the input changed is rechecked."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    log = tmp_path / "recheck.log"
    write(repo / "tools" / "judge.py", JUDGE)
    write(repo / "route" / "1.a.stone", "Write a.\n")
    write(repo / "route" / "1.a.md", "# a\n")
    write(repo / "route" / "2.b.stone", "Write b, from a.\n")
    write(repo / "route" / "2.b.guard", f"inputs:\n  - $route/1.a.md\njudges:\n  - {RUN_JUDGE}\n")
    write(repo / "route" / "2.b.md", "# b\n")

    def set_stone(stone: str) -> None:
        done = run_route(["route.stone.set", "--route", "route", "--stone", stone, "--as", "passed"], repo)
        assert done.code == 0, done.out + done.err

    def recheck() -> dict[str, object]:
        log.unlink(missing_ok=True)
        verify = ["route.verify", "--all", "--base", "main", "--recheck", "--json", *UNSANDBOXED]
        done = run_route(verify, repo, env={"RECHECK_LOG": str(log)})
        assert done.code == 0, done.out + done.err
        return {name: stone["recheck"] for name, stone in stones_json(done).items()}

    set_stone("1.a")
    set_stone("2.b")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "main")
    git(repo, "checkout", "-q", "-b", "pull-request")
    write(repo / "notes.txt", "unrelated\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "unrelated")
    assert recheck()["route/2.b"] == {"claim": "held"}
    assert not log.exists()
    write(repo / "route" / "1.a.md", "# a, revised\n")  # 2.b's input: 2.b is stale until passed again
    set_stone("1.a")
    set_stone("2.b")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a revised")
    found = recheck()["route/2.b"]
    assert isinstance(found, dict) and (found["claim"], found["outcome"]) == ("new", "passed")
    assert log.read_text().splitlines() == ["judge.py 2.b"]


# ---------------------------------------------------------------- breaks, limits, refusals


def test_a_review_that_breaks_in_ci_fails_closed_as_a_malfunction(up: Up) -> None:
    write(up.route / "2.plan.md", "# 2.plan\nThree steps.\n")
    robot_set(up, "2.plan")
    robot_commit(up, "plan")
    done = ci(up, "--recheck", env={"REVIEW_SERVICE": "down"})
    assert done.code == 1, done.out + done.err
    assert lines_of(done)["route/2.plan"] == (
        f"malfunction: recheck broke: review r1 ({RUN_REVIEW}) failed with exit 3: calling the review "
        "service / the review service answered 503 Service Unavailable; CI could not re-derive the "
        "pass, so it is not passed (fix what the command needs in CI: its program, a credential; or its "
        "guard)"
    )
    assert done.err.splitlines()[-1].startswith("error: 1 of 4 stones failed route.verify (malfunction)")
    # A missing program breaks it too (the shell's 127).
    write(up.route / "4.notes.md", "# 4.notes\nWhat we learned.\n")
    robot_set(up, "4.notes")
    robot_commit(up, "notes")
    missing = ci(up, "--recheck", env={"PATH": os.environ["PATH"]})
    assert missing.code == 1, missing.out
    assert lines_of(missing)["route/4.notes"].startswith(
        "malfunction: recheck broke: review r1 (reviewer $route $stone) failed with exit 127: "
    )
    assert "reviewer: command not found" in lines_of(missing)["route/4.notes"]
    assert lines_of(missing)["route/2.plan"].startswith("passed")
    # A rejection besides: exit 2 (there is something for the pull request to fix).
    forge_with_swapped_judge(up)
    both = ci(up, "--recheck", env={"REVIEW_SERVICE": "down"})
    assert both.code == 2, both.out
    assert lines_of(both)["route/2.plan"].startswith("malfunction: ")
    assert lines_of(both)["route/3.ship"].startswith("rejected: ")


def test_recheck_writes_nothing_into_the_checkout(up: Up) -> None:
    forge_with_swapped_judge(up)
    write(up.route / "2.plan.md", "# 2.plan\nThree steps.\n")
    robot_set(up, "2.plan")
    robot_commit(up, "plan")
    clone = ci_clone(up)

    def state() -> tuple[str, str, list[str]]:
        return (
            git(clone, "status", "--porcelain", "--ignored", "--untracked-files=all"),
            git(clone, "rev-parse", "HEAD"),
            sorted(str(path.relative_to(clone)) for path in clone.rglob("*") if ".git" not in path.parts),
        )

    before = state()
    outputs = up.tmp / "outputs"
    done = ci(up, "--recheck", "--recheck-dir", str(outputs), clone=clone)
    assert done.code == 2
    assert state() == before
    # The outputs are where they were asked for, named as the driver names them.
    written = sorted(str(path.relative_to(outputs)) for path in outputs.rglob("*.md"))
    assert len(written) == 4, written  # 2.plan: review r1, judges j1 and j2; 3.ship: judge j1
    assert any(name.startswith("route/2.plan.guard.review.i1.") for name in written)
    # A directory inside the checkout, or one holding files, is refused before anything runs.
    inside = ci(up, "--recheck", "--recheck-dir", str(clone / "out"), clone=clone)
    assert inside.code == 2 and inside.out == ""
    assert inside.err.startswith(f"error: --recheck-dir {clone / 'out'} is inside the checkout")
    assert not (clone / "out").exists() and ran(up) == []
    again = ci(up, "--recheck", "--recheck-dir", str(outputs), clone=clone)
    assert again.code == 2 and again.err.startswith(f"error: --recheck-dir {outputs} is not empty")
    assert state() == before


def test_recheck_max_refuses_too_many_new_claims_before_anything_runs(up: Up) -> None:
    for stone in ("1.vision", "2.plan", "3.ship"):
        write(up.route / f"{stone}.md", f"# {stone}\nDone, again.\n")
        robot_set(up, stone)
    robot_commit(up, "everything again")
    done = ci(up, "--recheck", "--recheck-max", "2")
    assert done.code == 2
    assert done.out == ""
    assert done.err == (
        f"error: 3 new claims to recheck (passes {up.base[:12]} does not hold), more than --recheck-max 2; "
        "recheck fewer passes in one pull request, or raise --recheck-max\n"
    )
    assert ran(up) == []
    assert ci(up, "--recheck", "--recheck-max", "3").code == 0


def test_recheck_needs_base(up: Up) -> None:
    done = run_route(["route.verify", "--all", "--recheck"], up.repo)
    assert done.code == 2 and done.out == ""
    assert done.err == (
        "error: --recheck needs --base REF (the pull request's base): a pass REF holds is not run again; "
        "add --base\n"
    )
    for flag, value in (("--recheck-dir", str(up.tmp / "o")), ("--recheck-max", "3")):
        lone = run_route(["route.verify", "--all", "--base", "main", flag, value], up.repo)
        assert (
            lone.code == 2
            and lone.err == f"error: {flag} needs --recheck; add --recheck, or leave out {flag}\n"
        )


# ---------------------------------------------------------------- which guard CI runs


def test_a_guard_weakened_in_the_pull_request_is_rechecked_with_the_base_guard(up: Up) -> None:
    path = up.route / "2.plan.guard"
    path.write_text(path.read_text().replace("  - reviewed?\n", ""))  # the robot drops the review's judge
    write(up.route / "2.plan.md", "# 2.plan\nTODO: the plan\n")
    robot_set(up, "2.plan")  # passes under the weaker guard: only judge.py is asked
    robot_commit(up, "weaker plan guard")
    done = ci(up, "--recheck", "--json")
    assert done.code == 2
    plan = stones_json(done)["route/2.plan"]
    assert plan["status"] == "policy-changed"
    recheck = plan["recheck"]
    assert isinstance(recheck, dict)
    assert (recheck["guard"], recheck["outcome"]) == ("base", "rejected")
    # j1 is the base's reviewed?, which the current guard no longer has.
    assert str(recheck["why"]).startswith("failed on recheck: judge j1 (reviewed?) said no: blockers exceed")
    assert str(plan["why"]).endswith(f"; on recheck: {recheck['why']}")
    assert sorted(ran(up)) == ["judge.py 2.plan", "review.py 2.plan"]


def test_a_stone_new_in_the_pull_request_is_rechecked_with_its_own_guard(up: Up) -> None:
    # Its commands are the base's (the same text, as $route and $stone make it): CI may run them.
    add_stone(
        up,
        "5.extra",
        guard=f"reviews:\n  - {RUN_REVIEW}\njudges:\n  - reviewed? --allow-blockers 0\n",
        artifact="# 5.extra\nTODO: everything\n",
    )
    real = swap(up.repo / "tools" / "review.py", YES_REVIEW)
    robot_set(up, "5.extra")
    swap(up.repo / "tools" / "review.py", real)
    robot_commit(up, "an extra stone")
    assert ci(up).code == 0  # a new stone needs no approval, and its records are consistent
    done = ci(up, "--recheck", "--json")
    assert done.code == 2
    extra = stones_json(done)["route/5.extra"]
    recheck = extra["recheck"]
    assert isinstance(recheck, dict)
    assert (extra["status"], recheck["guard"]) == ("rejected", "own")
    assert str(extra["why"]).startswith("failed on recheck: judge j1 (reviewed? --allow-blockers 0) said no")
    assert str(extra["why"]).endswith(
        "CI's own run of its own guard (new in the pull request) on these files does not"
    )
    assert ran(up) == ["review.py 5.extra"]


def test_a_new_stone_whose_guard_runs_what_the_base_does_not_is_not_run_without_a_human(up: Up) -> None:
    # A pull request that adds a stone chooses its guard: CI holding a reviewer's key must not run it.
    leak = up.tmp / "leaked"
    write(
        up.repo / "tools" / "extra.py", f"open({str(leak)!r}, 'w').write('the key')\nprint('passed: true')\n"
    )
    add_stone(up, "5.extra", guard="judges:\n  - python3 tools/extra.py\n", artifact="# 5.extra\n")
    robot_set(up, "5.extra")
    leak.unlink()
    robot_commit(up, "an extra stone")
    done = ci(up, "--recheck")
    assert done.code == 2
    assert lines_of(done)["route/5.extra"] == (
        "policy-changed: not rechecked: its guard is new in the pull request and runs 'python3 "
        "tools/extra.py', a command no guard of the base runs (and no policy approval covers it); CI runs "
        "only what the base or a human vouches for: write its commands and artifacts as the base's guards do "
        "(with $route and $stone), or a human runs route.policy.approve --route route"
    )
    assert not leak.exists() and ran(up) == []
    # A human reads the new guard and approves the route's definitions: then CI runs it.
    approved = run_route(["route.policy.approve", "--route", "route"], up.repo, human=True)
    assert approved.code == 0, approved.err
    done = ci(up, "--recheck", "--json")
    assert done.code == 0, done.out
    assert leak.exists()
    recheck = stones_json(done)["route/5.extra"]["recheck"]
    assert isinstance(recheck, dict) and (recheck["guard"], recheck["outcome"]) == ("approved", "passed")


def own_repo(tmp_path: Path) -> Path:
    """A repository of the test's own (not the template's route), with the human as its approver."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    write(repo / ".route-approvers", f"{TEST_EMAIL}\n")
    return repo


def set_passed(repo: Path, route: str, *stones: str) -> None:
    for stone in stones:
        done = run_route(["route.stone.set", "--route", route, "--stone", stone, "--as", "passed"], repo)
        assert done.code == 0, (stone, done.out, done.err)


def ci_of(tmp_path: Path, repo: Path, base: str, *flags: str, env: dict[str, str] | None = None) -> Ran:
    """CI: a fresh clone of the robot's branch (submodules too), route.verify --all --base --recheck."""
    clone = tmp_path / "ci"
    if clone.exists():
        shutil.rmtree(clone)
    clone_cmd = ["git", "clone", "-q", "--recurse-submodules", "--branch", "robot", str(repo), str(clone)]
    assert run_cli(clone_cmd, tmp_path, env=env).code == 0
    return run_route(["route.verify", "--all", "--base", base, "--recheck", *flags], clone)


def commit_as_base(repo: Path) -> str:
    """Commit all as main's tip (the base), then branch the robot's work off it; the base's commit."""
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the route, passed")
    base = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "checkout", "-q", "-b", "robot")
    return base


def test_a_new_stone_that_claims_the_base_program_as_its_artifact_is_not_run(tmp_path: Path) -> None:
    # The base's judge runs a program next to its route's stones ($route/check.py). A new route's stone
    # runs that command word for word but declares check.py one of its own artifacts (what a guard judges
    # is never compared with the base): the same text then runs the robot's extra/check.py in CI.
    repo = own_repo(tmp_path)
    judge = "python3 $route/check.py $route $stone"
    write(repo / "demo" / "check.py", JUDGE)
    write(repo / "demo" / "1.plan.stone", "Write the plan.\n")
    write(repo / "demo" / "1.plan.guard", f"judges:\n  - {judge}\n")
    write(repo / "demo" / "1.plan.md", "# 1.plan\n")
    set_passed(repo, "demo", "1.plan")
    base = commit_as_base(repo)
    leak = tmp_path / "leaked"
    write(repo / "extra" / "check.py", f"open({str(leak)!r}, 'w').write('the key')\n" + YES_JUDGE)
    write(repo / "extra" / "1.x.stone", "Write x.\n")
    write(
        repo / "extra" / "1.x.guard",
        f"artifacts: [$route/$stone.md, $route/check.py]\njudges:\n  - {judge}\n",
    )
    write(repo / "extra" / "1.x.md", "# 1.x\n")
    set_passed(repo, "extra", "1.x")
    leak.unlink()
    commit_all(repo, "an extra route")
    done = ci_of(tmp_path, repo, base)
    assert done.code == 2, done.out
    assert lines_of(done)["extra/1.x"].startswith(
        "policy-changed: not rechecked: its guard is new in the pull request and runs 'python3 "
        "$route/check.py $route $stone' with artifacts no guard of the base that runs it has (and no policy "
        "approval covers it)"
    )
    assert not leak.exists()


def test_a_claim_whose_files_a_command_changed_while_ci_rechecked_is_not_passed(tmp_path: Path) -> None:
    # 1.a's judge imports tools/helper.py, which its command does not name (the documented limit: such code
    # runs as the pull request has it). The robot's helper rewrites 2.b's BAD artifact to what 2.b's judge
    # wants while both stones are rechecked at once: CI's run would judge other bytes than the pass binds.
    repo = own_repo(tmp_path)
    write(repo / "tools" / "helper.py", "")
    write(repo / "tools" / "a.py", "import helper\nprint('passed: true')\n")
    good = "import sys, time\ntime.sleep(0.5)\nok = 'GOOD' in open(sys.argv[1]).read()\n"
    write(repo / "tools" / "b.py", good + "print(f'passed: {str(ok).lower()}')\nsys.exit(0 if ok else 2)\n")
    write(repo / "demo" / "1.a.stone", "Write a.\n")
    write(repo / "demo" / "1.a.guard", "judges:\n  - python3 tools/a.py\n")
    write(repo / "demo" / "1.a.md", "# a\n")
    write(repo / "demo" / "2.b.stone", "Write b.\n")
    write(repo / "demo" / "2.b.guard", "judges:\n  - python3 tools/b.py $route/$stone.md\n")
    write(repo / "demo" / "2.b.md", "GOOD\n")
    set_passed(repo, "demo", "1.a", "2.b")
    base = commit_as_base(repo)
    write(repo / "demo" / "2.b.md", "BAD\n")
    real = swap(repo / "tools" / "b.py", YES_JUDGE)  # the forged pass
    set_passed(repo, "demo", "2.b")
    swap(repo / "tools" / "b.py", real)
    write(repo / "tools" / "helper.py", "open('demo/2.b.md', 'w').write('GOOD\\n')\n")
    write(repo / "demo" / "1.a.md", "# a, again\n")  # a new claim: CI runs 1.a's judge
    set_passed(repo, "demo", "1.a")
    write(repo / "demo" / "2.b.md", "BAD\n")  # what the robot's local run of 1.a rewrote
    commit_all(repo, "work")
    # In recheck's sandbox the checkout is read-only: the helper's write fails, and 2.b is judged on its
    # own bytes.
    jailed = ci_of(tmp_path, repo, base, "--recheck-sandbox", "on")
    assert jailed.code == 2, jailed.out
    assert lines_of(jailed)["demo/2.b"].startswith("rejected: failed on recheck: judge j1 "), jailed.out
    # Without it, the before/after hashes of each stone's files catch the rewrite.
    done = ci_of(tmp_path, repo, base, *UNSANDBOXED)
    assert done.code == 2, done.out
    line = lines_of(done)["demo/2.b"]
    assert re.fullmatch(
        r"broken: its files changed (before|while) CI rechecked it: what CI's run judged is not what the "
        r"pass binds \(a command CI ran wrote into the checkout; guard programs must only read it\)",
        line,
    ), line


def test_a_program_reached_through_a_directory_the_pull_request_made_a_symlink_is_never_run(up: Up) -> None:
    # tools/ becomes a link to the robot's own directory: tools/judge.py is then no file git tracks, which
    # must not make it a program nobody compares.
    leak = up.tmp / "leaked"
    git(up.repo, "rm", "-q", "-r", "tools")
    write(up.repo / "mine" / "review.py", REVIEW)
    write(up.repo / "mine" / "judge.py", f"open({str(leak)!r}, 'w').write('the key')\n" + YES_JUDGE)
    (up.repo / "tools").symlink_to("mine")
    write(up.route / "3.ship.md", "# 3.ship\nFORBIDDEN\n")
    robot_set(up, "3.ship")
    leak.unlink()
    robot_commit(up, "tools moved")
    done = ci(up, "--recheck")
    assert done.code == 2
    line = lines_of(done)["route/3.ship"]
    assert line.endswith(
        f"; on recheck: not rechecked: tools/judge.py, a program the base's guard runs, is removed since "
        f"{up.base[:12]}; CI does not run a program the pull request wrote (a human runs "
        "route.policy.approve --route route)"
    ), line
    assert not leak.exists() and ran(up) == []


def test_a_program_inside_a_submodule_is_the_commit_the_submodule_names(tmp_path: Path) -> None:
    # git tracks a submodule as one gitlink, not its files: a pull request that moves the gitlink to a
    # commit with a checker that says yes changed the gate (CI checked it out with submodules: true).
    env = {"GIT_CONFIG_COUNT": "1", "GIT_CONFIG_KEY_0": "protocol.file.allow", "GIT_CONFIG_VALUE_0": "always"}
    checker = tmp_path / "checker"
    checker.mkdir()
    git(checker, "init", "-q")
    write(checker / "check.sh", '#!/bin/sh\ngrep -q GOOD "$1" || { echo "passed: false"; exit 2; }\n')
    (checker / "check.sh").chmod(0o755)
    git(checker, "add", "-A")
    git(checker, "commit", "-q", "-m", "the checker")
    write(checker / "check.sh", "#!/bin/sh\necho 'passed: true'\n")
    git(checker, "commit", "-q", "-a", "-m", "a kinder checker")
    kinder = git(checker, "rev-parse", "HEAD").strip()
    git(checker, "checkout", "-q", "HEAD~1")
    repo = own_repo(tmp_path)
    assert run_cli(["git", "submodule", "-q", "add", str(checker), "vendor/checker"], repo, env=env).code == 0
    write(repo / "demo" / "1.plan.stone", "Write the plan.\n")
    write(repo / "demo" / "1.plan.guard", "judges:\n  - ./vendor/checker/check.sh $route/$stone.md\n")
    write(repo / "demo" / "1.plan.md", "GOOD\n")
    set_passed(repo, "demo", "1.plan")
    base = commit_as_base(repo)
    write(repo / "demo" / "1.plan.md", "GOOD, again\n")  # an honest new claim: the checker is the base's
    set_passed(repo, "demo", "1.plan")
    commit_all(repo, "plan again")
    honest = ci_of(tmp_path, repo, base, env=env)
    assert honest.code == 0, honest.out
    write(repo / "demo" / "1.plan.md", "BAD\n")
    git(repo / "vendor" / "checker", "checkout", "-q", kinder)
    set_passed(repo, "demo", "1.plan")
    commit_all(repo, "a kinder checker")
    done = ci_of(tmp_path, repo, base, env=env)
    assert done.code == 2, done.out
    line = lines_of(done)["demo/1.plan"]
    assert line.startswith(
        f"policy-changed: policy changed: vendor/checker changed (a program demo/1.plan.guard runs) since "
        f"{base[:12]}"
    ), line
    assert "on recheck: not rechecked: vendor/checker, a program the base's guard runs, is changed" in line


def test_a_program_the_pull_request_changed_is_never_run(up: Up) -> None:
    # The robot edits tools/review.py (a guard program: policy-changed for every stone that runs it) and
    # re-passes a stone. Recheck would run the base's guard on it, but not the pull request's program.
    leak = up.tmp / "leaked"
    write(up.repo / "tools" / "review.py", f"open({str(leak)!r}, 'w').write('the key')\n" + YES_REVIEW)
    write(up.route / "2.plan.md", "# 2.plan\nTODO: the plan\n")
    robot_set(up, "2.plan")
    leak.unlink()
    robot_commit(up, "a kinder reviewer")
    done = ci(up, "--recheck")
    assert done.code == 2
    line = lines_of(done)["route/2.plan"]
    assert line.startswith("policy-changed: policy changed: tools/review.py changed (a program "), line
    assert line.endswith(
        f"; on recheck: not rechecked: tools/review.py, a program the base's guard runs, is changed since "
        f"{up.base[:12]}; CI does not run a program the pull request wrote (a human runs "
        "route.policy.approve --route route)"
    )
    assert not leak.exists() and ran(up) == []


def test_a_changed_guard_a_human_approved_is_rechecked_with_the_current_guard(up: Up) -> None:
    path = up.route / "2.plan.guard"
    path.write_text(path.read_text().replace("  - reviewed?\n", "  - reviewed? --allow-blockers 1\n"))
    write(
        up.route / "2.plan.md", "# 2.plan\nTODO: the dates, once we know them\n"
    )  # one blocker: allowed now
    robot_set(up, "2.plan")
    robot_commit(up, "the plan may leave one thing open")
    assert ci(up, "--recheck").code == 2  # not approved yet: policy-changed (and the base's guard says no)
    approved = run_route(["route.policy.approve", "--route", "route"], up.repo, human=True)
    assert approved.code == 0, approved.err
    done = ci(up, "--recheck", "--json")
    assert done.code == 0, done.out + done.err
    plan = stones_json(done)["route/2.plan"]
    recheck = plan["recheck"]
    assert isinstance(recheck, dict) and (recheck["guard"], recheck["outcome"]) == ("approved", "passed")
    assert str(plan["why"]).startswith(
        "passed and fresh (2 judges re-checked); 1 other pass record kept as history; rechecked with the "
        "guard a human approved: 2 commands ran"
    )
    assert sorted(ran(up)) == ["judge.py 2.plan", "review.py 2.plan"]


def test_junit_and_the_step_summary_say_what_recheck_cost(up: Up) -> None:
    forge_with_swapped_judge(up)
    summary = up.tmp / "summary.md"
    junit = up.tmp / "verify.xml"
    done = ci(
        up,
        "--recheck",
        "--junit",
        str(junit),
        env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)},
    )
    assert done.code == 2
    markdown = summary.read_text()
    assert f"recheck: 1 new claim rechecked against {up.base[:12]}: 1 command, " in markdown
    assert (
        "| ❌ | route | 3.ship | rejected | failed on recheck: judge j1 (python3 tools/judge.py \\$route"
        in markdown
    )
    xml = junit.read_text()
    assert '<testcase classname="route" name="3.ship" file="' in xml and 'type="rejected"' in xml
    assert (
        "::error file=route/3.ship.stone,title=route.verify rejected%3A route/3.ship::failed on recheck"
        in done.out
    )


# ---------------------------------------------------------------- --require-bound: nothing rides along

# tools/judge.py is the base's, byte for byte, and stays so; but Python puts a script's own directory first
# on sys.path, so a tools/textwrap.py the robot adds is what its `import textwrap` loads, and that module can
# do anything (here: make every file read clean). Nothing in the command line names it: it is what a program
# loads by itself.
SHADOW = """\
import pathlib

pathlib.Path.read_text = lambda self, *args, **kwargs: "clean\\n"


def shorten(text, width):
    return text
"""


def forge_with_a_module_the_judge_loads(up: Up) -> None:
    write(up.route / "3.ship.md", "# 3.ship\nShip it. FORBIDDEN: skip the tests\n")
    write(up.repo / "tools" / "textwrap.py", SHADOW)
    robot_set(up, "3.ship")
    robot_commit(up, "ship")


def test_what_a_guard_program_loads_by_itself_rides_along_unless_every_change_must_be_bound(up: Up) -> None:
    forge_with_a_module_the_judge_loads(up)
    clone = ci_clone(up)
    # The documented limit of --recheck: CI ran the base's judge, and the judge loaded the robot's module.
    rechecked = ci(up, "--recheck", clone=clone)
    assert rechecked.code == 0, rechecked.out + rechecked.err
    assert ran(up) == ["judge.py 3.ship"]
    # With --require-bound the file no pass binds fails the gate, named, whatever loads it.
    done = ci(up, "--recheck", "--require-bound", clone=clone)
    assert done.code == 2, done.out + done.err
    assert lines_of(done)["tools/textwrap.py"] == (
        f"unbound: added since {up.base[:12]} and no pass binds it: with --require-bound every file that "
        "differs from the base is an artifact of a stone that passes or a route's own file; make it one (a "
        "stone whose artifacts cover it), or leave it out (a branch behind the base: merge the base in)"
    )
    assert lines_of(done)["route/3.ship"].startswith("passed: ")  # its own claim held on CI's run
    assert done.out.splitlines()[-1].startswith(
        "route.verify FAILED: 4 stones (4 passed); 1 file changed that no pass binds (--require-bound); "
    )
    assert done.err.splitlines()[-1] == (
        "error: 1 file the pull request changes no pass binds (unbound); see each line on stdout for what "
        "to fix"
    )
    # Without --recheck too: it needs only --base.
    plain = ci(up, "--require-bound", "--json", clone=clone)
    assert plain.code == 2, plain.out + plain.err
    document = json.loads(plain.out)
    assert document["require_bound"] is True and document["ok"] is False
    assert [(s["route"], s["stone"], s["status"], s["file"]) for s in document["stones"] if not s["ok"]] == [
        ("", "tools/textwrap.py", "unbound", "tools/textwrap.py")
    ]
    annotated = ci(up, "--require-bound", env={"GITHUB_ACTIONS": "true"}, clone=clone)
    title = "route.verify unbound%3A tools/textwrap.py"
    assert f"::error file=tools/textwrap.py,title={title}::added since {up.base[:12]}" in annotated.out


def test_a_pull_request_that_changes_only_what_its_passes_bind_passes_require_bound(up: Up) -> None:
    # Artifacts of stones that pass and a new stone of the route (its stone, guard, artifact, records); the
    # base moves on meanwhile.
    write(up.route / "2.plan.md", "# 2.plan\nThree steps, each with an owner.\n")
    robot_set(up, "2.plan")
    add_stone(up, "5.more", guard=f"judges:\n  - {RUN_JUDGE}\n", artifact="# 5.more\nMore.\n")
    robot_set(up, "5.more")
    robot_commit(up, "plan and more")
    git(up.repo, "checkout", "-q", "main")
    write(up.repo / "README.md", "a project, renamed\n")
    git(up.repo, "commit", "-qam", "the base moves on")
    moved = git(up.repo, "rev-parse", "HEAD").strip()
    git(up.repo, "checkout", "-q", "robot")
    # CI on the merge of the pull request into the base (GitHub's refs/pull/N/merge): only its own changes.
    clone = ci_clone(up)
    git(
        clone,
        "-c",
        "user.name=CI",
        "-c",
        "user.email=ci@example.com",
        "merge",
        "-q",
        "--no-edit",
        "origin/main",
    )
    done = ci(up, "--recheck", "--require-bound", clone=clone)
    assert done.code == 0, done.out + done.err
    assert sorted(ran(up)) == ["judge.py 2.plan", "judge.py 5.more", "review.py 2.plan"]
    assert done.out.splitlines()[-1].startswith("route.verify ok: 5 stones (5 passed); recheck: ")
    # On the pull request's own head, behind the base, the base's newer README is not what CI has: a file a
    # program could load from the old base (a rule the base fixed since) is not the base's either.
    behind = ci(up, "--require-bound")
    assert behind.code == 2, behind.out + behind.err
    assert lines_of(behind)["README.md"].startswith(f"unbound: changed since {moved[:12]} and no pass ")
    assert lines_of(behind)["README.md"].endswith("(a branch behind the base: merge the base in)")


def test_require_bound_names_each_file_the_pull_request_deletes_or_changes_outside_its_passes(up: Up) -> None:
    (up.repo / "README.md").unlink()
    write(up.repo / "tools" / "review.py", REVIEW + "# tidied\n")  # a guard program: policy's to report
    write(up.repo / "notes.txt", "unrelated work\n")
    robot_commit(up, "tidy")
    done = ci(up, "--require-bound")
    assert done.code == 2, done.out + done.err
    lines = lines_of(done)
    assert lines["README.md"].startswith(f"unbound: deleted since {up.base[:12]} and no pass binds it")
    assert lines["notes.txt"].startswith(f"unbound: added since {up.base[:12]} and no pass binds it")
    # The changed program is reported once, where policy says what it changes (not as unbound too).
    assert "tools/review.py" not in lines
    assert lines["route/2.plan"].startswith("policy-changed: ")


def test_require_bound_needs_a_base(up: Up) -> None:
    alone = run_route(["route.verify", "--all", "--require-bound"], ci_clone(up))
    assert (alone.code, alone.out) == (2, "")
    assert alone.err == (
        "error: --require-bound needs --base REF (the pull request's base): what the pull request changes is "
        "counted from it; add --base\n"
    )


def test_a_stone_the_pull_request_adds_does_not_bind_what_the_base_would_not(up: Up) -> None:
    """The robot adds a stone with nothing to run whose `artifacts:` is the module it wants loaded: a pass of
    it would bind anything. A new stone binds files only when a human or the base's commands vouch for it;
    one with default artifacts and no command binds nothing either."""
    forge_with_a_module_the_judge_loads(up)
    add_stone(up, "6.carrier", guard="artifacts:\n  - tools/textwrap.py\njudges: []\n")
    robot_set(up, "6.carrier")
    add_stone(up, "7.empty", artifact="# 7.empty\nAnything.\n")
    robot_set(up, "7.empty")
    # A copy of 1.vision's guard without its judge: the review runs, and nothing reads what it says.
    add_stone(up, "8.copy", guard=f"reviews:\n  - {RUN_REVIEW}\n", artifact="# 8.copy\nTODO: everything\n")
    robot_set(up, "8.copy")
    robot_commit(up, "a stone that carries the helper")
    done = ci(up, "--recheck", "--require-bound")
    assert done.code == 2, done.out + done.err
    assert lines_of(done)["route/6.carrier"].startswith("passed: ")  # its pass itself holds
    assert lines_of(done)["tools/textwrap.py"] == (
        f"unbound: added since {up.base[:12]} and only route/6.carrier binds it, a stone "
        "the pull request adds that neither a human nor the base vouches for: a new stone binds files when "
        "its guard has approved?, when it is word for word the guard of a stone the base has (artifacts, "
        "reviews and judges) and its commands name $stone where its artifacts do, or when a human runs "
        "route.policy.approve --route route"
    )
    assert lines_of(done)["route/7.empty.md"].startswith(
        f"unbound: added since {up.base[:12]} and only route/7.empty binds it, "
    )
    assert lines_of(done)["route/8.copy.md"].startswith(
        f"unbound: added since {up.base[:12]} and only route/8.copy binds it, "
    )


def test_under_dot_route_only_the_drivers_own_files_are_the_routes(up: Up) -> None:
    write(up.route / "2.plan.md", "# 2.plan\nThree steps, each with an owner.\n")
    robot_set(up, "2.plan")  # its review, judge and pass records: the route's own
    write(up.route / ".route" / "plan-body.md", "anything at all\n")
    robot_commit(up, "plan, and a file among the records")
    done = ci(up, "--require-bound")
    assert done.code == 2, done.out + done.err
    unbound = {name for name, line in lines_of(done).items() if line.startswith("unbound: ")}
    assert unbound == {"route/.route/plan-body.md"}


def test_an_artifact_swapped_for_a_symlink_with_the_same_id_is_broken_not_held(up: Up) -> None:
    """git names a link by its target's text, so a file holding exactly that text has the link's id: a pass
    of the text holds for the link, whose target (here a file under .git/ that every clone has its own of)
    no pass binds. A pass takes no symlinked artifact: set refuses one, verify calls one broken."""
    write(up.route / "3.ship.md", "../.git/packed-refs")
    robot_set(up, "3.ship")
    (up.route / "3.ship.md").unlink()
    os.symlink("../.git/packed-refs", up.route / "3.ship.md")
    linked = (
        "artifact route/3.ship.md is a symlink (to ../.git/packed-refs): a pass or an approval binds what a "
        "file holds, and git stores only a link's text, so what it points at could change under them; make "
        "it the file itself, not a link to it"
    )
    refused = run_route(
        ["route.stone.set", "--route", "route", "--stone", "3.ship", "--as", "passed"], up.repo
    )
    assert (refused.code, refused.err) == (2, f"error: {linked}\n")
    robot_commit(up, "ship as a link")
    done = ci(up, "--recheck", "--require-bound")
    assert done.code == 2, done.out + done.err
    assert lines_of(done)["route/3.ship"] == f"broken: {linked}"
    assert ran(up) == []  # nothing of it runs


def test_a_replace_ref_the_robot_pushed_does_not_stand_in_for_the_base(up: Up) -> None:
    """refs/replace/<base> makes git show another commit wherever the base is named; a CI that fetches every
    ref (`git fetch origin 'refs/*:refs/*'`) takes the robot's. The gate reads the objects as they are."""
    write(up.route / "3.ship.guard", "judges: []\n")  # the judge dropped
    write(up.route / "3.ship.md", "# 3.ship\nShip it. FORBIDDEN: skip the tests\n")
    robot_set(up, "3.ship")
    robot_commit(up, "ship, unjudged")
    # A base of its own making, whose guard is the weakened one, put in the real base's place.
    tree = git(up.repo, "write-tree").strip()
    fake = git(up.repo, "commit-tree", tree, "-m", "the base, as the robot would have it").strip()
    git(up.repo, "replace", up.base, fake)
    clone = ci_clone(up)
    git(clone, "fetch", "-q", "origin", "refs/replace/*:refs/replace/*")
    assert git(clone, "rev-parse", f"{up.base}^{{tree}}").strip() == tree  # git itself is fooled
    done = ci(up, "--recheck", "--require-bound", clone=clone)
    assert done.code == 2, done.out + done.err
    assert lines_of(done)["route/3.ship"].startswith("policy-changed: "), lines_of(done)["route/3.ship"]


def test_a_copy_of_a_guard_that_names_its_stones_file_judges_nothing_of_its_own(up: Up) -> None:
    """A base guard that names its stone's file (not $stone), copied word for word under a new name, judges
    the base stone's file again: the copy's own artifact is never read. It is not the base's vouching."""
    git(up.repo, "checkout", "-q", "main")
    add_stone(
        up,
        "5.fixed",
        guard="judges:\n  - python3 tools/judge.py $route 5.fixed\n",
        artifact="# 5.fixed\nDone.\n",
    )
    robot_set(up, "5.fixed")
    commit_all(up.repo, "a stone whose guard names its own file")
    git(up.repo, "checkout", "-q", "robot")
    git(up.repo, "merge", "-q", "--ff-only", "main")
    add_stone(
        up,
        "6.copy",
        guard="judges:\n  - python3 tools/judge.py $route 5.fixed\n",
        artifact="# 6.copy\nFORBIDDEN: skip the tests\n",
    )
    robot_set(up, "6.copy")  # the judge read 5.fixed.md
    robot_commit(up, "a copy")
    done = ci(up, "--recheck", "--require-bound")
    assert done.code == 2, done.out + done.err
    lines = lines_of(done)
    assert lines["route/6.copy"].startswith(
        "policy-changed: not rechecked: its guard is new in the pull request and runs the base's commands, "
        "which do not name $stone where its artifacts do (they judge another stone's files)"
    ), lines["route/6.copy"]
    assert lines["route/6.copy.md"].startswith("unbound: added since "), lines
    assert "only route/6.copy binds it" in lines["route/6.copy.md"]
    assert ran(up) == []  # nothing of the copy ran
