"""route.drive and its Stop hook on a broken guard (a malfunction only a human can fix) and on a pass the
robot's own edits made stale (which route.verify would reject in CI)."""

from __future__ import annotations

import json
import os
from pathlib import Path

from routedriver.route.model import Guard, Route, Stone
from tests.conftest import git
from tests.route.routes import make_route, review, run_route, steer, write
from tests.route_gate.gate import gated_route, hook, pass_all, route_set, stop_event

DRIVE_STOP = ["route.drive", "--when", "hook.onStop"]


def one_stone_route(repo: Path, guard: str) -> Path:
    route = make_route(repo, {"1.vision": "Write the vision.\n", "2.plan": "Plan.\n"}, {"1.vision": guard})
    write(route / "1.vision.md", "# Vision\n")
    git(repo, "switch", "-q", "-c", "feature/vision")
    assert run_route(["route.bind", "--set", "route"], repo).code == 0
    return route


def stop(repo: Path) -> tuple[int, str, str]:
    done = hook(DRIVE_STOP, repo, stop_event(repo, active=False))
    return done.code, done.out, done.err


def test_a_review_that_breaks_lets_the_robot_stop_and_says_what_a_human_must_fix(git_repo: Path) -> None:
    route = one_stone_route(
        git_repo, "reviews:\n  - no-such-reviewer $route/1.vision.md\njudges:\n  - reviewed?\n"
    )
    assert route_set(git_repo, route, "1.vision").code == 1  # review r1: exit 127, command not found

    code, out, err = stop(git_repo)
    assert (code, err) == (0, "")  # the robot may stop: only a human can fix the guard or install the tool
    message = json.loads(out)["systemMessage"]
    assert message.startswith(
        "route route: 1.vision cannot be checked, a command of its guard broke: review r1 "
        "(no-such-reviewer $route/1.vision.md) failed with exit 127: "
    )
    assert "no-such-reviewer: command not found (read route/.route/1.vision.guard.review.i1." in message
    assert message.endswith(
        "The robot cannot fix that (robots cannot edit guards). A human fixes the guard "
        "(route/1.vision.guard) or the tool it runs, then runs: "
        "route.stone.set --route route --stone 1.vision --as passed"
    )
    drive = run_route(["route.drive"], git_repo)
    assert drive.code == 0 and "## 1.vision (malfunction)\n" in drive.out
    assert "last result: malfunction (a command of the guard broke; not a verdict): review r1" in drive.out
    assert "do: run the guard" not in drive.out and "rejected" not in drive.out

    # New artifacts are a new input: the guard is worth running again.
    write(route / "1.vision.md", "# Vision, reworded\n")
    code, _out, err = stop(git_repo)
    assert code == 2 and "## 1.vision (ready)\n" in err


def test_a_review_that_broke_then_worked_is_not_a_malfunction(git_repo: Path) -> None:
    route = one_stone_route(git_repo, f"reviews:\n  - {review('r1')}\njudges:\n  - reviewed?\n")
    steer(git_repo, "r1", exit_code=3)
    assert route_set(git_repo, route, "1.vision").code == 1
    assert "## 1.vision (malfunction)" in run_route(["route.drive"], git_repo).out
    steer(git_repo, "r1", exit_code=0)  # a human fixed the tool and ran the guard again
    assert route_set(git_repo, route, "1.vision").code == 0
    code, _out, err = stop(git_repo)
    assert code == 2 and "## 2.plan (needs-artifact)" in err and "1.vision" not in err.split("\n")[1]


def test_a_judge_that_breaks_is_a_malfunction_not_a_rejection(git_repo: Path) -> None:
    route = one_stone_route(git_repo, 'judges:\n  - sh -c "exit 7"\n')
    assert route_set(git_repo, route, "1.vision").code == 1

    code, out, _err = stop(git_repo)
    message = json.loads(out)["systemMessage"]
    assert code == 0
    assert message.startswith(
        'route route: 1.vision cannot be checked, a command of its guard broke: judge j1 (sh -c "exit 7"): '
        "exit 7 (read route/.route/1.vision.guard.judge.i1p1."
    )
    drive = run_route(["route.drive"], git_repo).out
    assert "## 1.vision (malfunction)" in drive and "fix what the judges said" not in drive

    # A human fixes the guard: the old result no longer applies, and the robot runs the guard again.
    write(route / "1.vision.guard", 'judges:\n  - sh -c "exit 0"\n')
    code, _out, err = stop(git_repo)
    assert code == 2
    assert (
        "## 1.vision (ready)\n" in err and "do: run the guard (the guard changed since the last run):" in err
    )
    assert route_set(git_repo, route, "1.vision").code == 0


def test_a_malfunction_outranks_a_rejection_in_the_same_run(git_repo: Path) -> None:
    route = one_stone_route(git_repo, 'judges:\n  - sh -c "exit 2"\n  - sh -c "exit 9"\n')
    assert route_set(git_repo, route, "1.vision").code == 1  # as set says: malfunction
    drive = run_route(["route.drive"], git_repo).out
    assert "## 1.vision (malfunction)" in drive and 'judge j2 (sh -c "exit 9"): exit 9' in drive


def test_stop_hook_sends_the_robot_back_to_a_pass_its_edits_made_stale(git_repo: Path) -> None:
    route = gated_route(git_repo)
    git(git_repo, "switch", "-q", "-c", "feature/vision")
    assert run_route(["route.bind", "--set", "route"], git_repo).code == 0
    pass_all(git_repo, route)
    code, out, _err = stop(git_repo)
    assert (code, json.loads(out)) == (0, {"systemMessage": "route route: all 3 stones passed."})

    write(route / "2.plan.md", "# Plan, edited after it passed\n")
    code, out, err = stop(git_repo)
    assert (code, out) == (2, "")
    assert err.startswith(
        "The route is not finished; keep going.\nroute route: 2 of 3 stones passed; next: 2.plan\n"
    )
    assert "## 2.plan (stale)\n" in err
    assert (
        "it passed, but the pass no longer holds: artifacts changed since the pass: changed route/2.plan.md\n"
        in err
    )
    assert "  route.stone.set --route route --stone 2.plan --as passed\n" in err
    # route.stone.get keeps its documented meaning: a marker is a pass (route.verify judges freshness).
    assert run_route(["route.stone.get", "--stone", "*"], git_repo).code == 0
    assert route_set(git_repo, route, "2.plan").code == 0
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "the plan, passed again")
    code, out, _err = stop(git_repo)
    assert (code, json.loads(out)) == (0, {"systemMessage": "route route: all 3 stones passed."})
    # A new file its artifact glob matches changes the artifacts too; removing it again undoes that.
    notes = write(route / "2.plan.notes.md", "notes\n")
    code, _out, err = stop(git_repo)
    added = "artifacts changed since the pass: added route/2.plan.notes.md"
    assert code == 2 and f"it passed, but the pass no longer holds: {added}\n" in err
    notes.unlink()
    assert stop(git_repo)[0] == 0

    # An approved stone edited after its pass: set again finds it waits for a human, and the robot may stop.
    write(route / "1.vision.md", "# Vision, edited after approval\n")
    code, _out, err = stop(git_repo)
    assert code == 2 and "## 1.vision (stale)" in err
    assert route_set(git_repo, route, "1.vision").code == 2
    code, out, _err = stop(git_repo)
    assert code == 0 and "waiting for human approval of 1.vision" in json.loads(out)["systemMessage"]


def _by_rule(route: Route, stone: Stone, guard: Guard | None, base: Path) -> list[Path]:
    """The artifacts by brute force: every file below ``base`` (links to directories, .git and .route/ not
    entered) whose absolute path a substituted glob covers, by routedriver.globs's rule. The listing fast
    path and the walk must find exactly these."""
    from routedriver import globs
    from routedriver.route.artifacts import artifact_globs, expand_glob

    files = []
    for current, dirs, names in os.walk(base):
        dirs[:] = [name for name in dirs if name not in (".git", ".route")]
        files += [
            os.path.join(current, name) for name in names if os.path.isfile(os.path.join(current, name))
        ]

    def covered(pattern: str, of: Stone) -> set[str]:
        expanded = expand_glob(pattern, route, of)
        if not os.path.isabs(expanded):
            expanded = os.path.join(globs.escape(str(base)), expanded)
        return {path for path in files if globs.covers(expanded, path)}

    found = {
        path
        for pattern in artifact_globs(stone, guard)
        for path in covered(pattern, stone)
        if not path.endswith((".stone", ".guard"))
    }
    if guard is None:  # a file the default glob of a stone with a longer name also matches is that stone's
        for other in route.stones:
            if len(other.name) > len(stone.name):
                for pattern in artifact_globs(other, None):
                    found -= covered(pattern, other)
    return [Path(path) for path in sorted(found)]


def test_drive_finds_the_same_artifacts_as_every_other_command(git_repo: Path) -> None:
    """drive lists each directory once for all stones (one shared Listings); what it finds must be what
    the one glob rule gives for each stone (hidden names included)."""
    from routedriver.route.artifacts import Listings, find_artifacts
    from routedriver.route.load import load_route

    route = make_route(git_repo, {"1.a": "A.\n", "1.ab": "AB.\n", "2.b": "B.\n"})
    for name in ("1.a.md", "1.a.v2.md", "1.ab.md", ".1.a.hidden.md", "1.a.stone.md", "2.b.md", "2.b.txt"):
        write(route / name, "x\n")
    (route / "1.a.dir.md").mkdir()  # a directory whose name matches is not an artifact
    (route / "1.a.link.md").symlink_to(route / "2.b.txt")  # a link to a file is one
    write(route / ".route" / "1.a.md", "the driver's own\n")
    write(git_repo / "docs" / "x1.md", "x\n")
    write(git_repo / "docs" / "deep" / "y.md", "y\n")
    write(git_repo / "docs" / ".hidden" / "z.md", "z\n")
    (git_repo / "docs" / "loop").symlink_to("..")  # never entered
    loaded = load_route(route)
    shared = Listings()
    globs = [
        (),  # the default: $route/${stone}*.md
        ("$route/${stone}*.md", "$route/${stone}.md"),
        ("$route/.*.md", "$route/*.stone*"),
        ("$route/*.md", "docs/**", "docs/"),
        ("$route/?.a*.md", "$route/[12].*.txt", "$route/.route/*.md"),
        ("docs/x?.md", "docs/**/*.md", "missing/*.md", str(route / "2.*.md")),
    ]
    first = find_artifacts(loaded, loaded.stones[0], None, git_repo, shared)
    # Not 1.ab.md: the default glob of 1.ab, the longer name, matches it too.
    assert [path.name for path in first] == ["1.a.link.md", "1.a.md", "1.a.stone.md", "1.a.v2.md"]
    for patterns in globs:
        for stone in loaded.stones:
            guard = None if not patterns else Guard(route / "g", patterns, (), ())
            found = find_artifacts(loaded, stone, guard, git_repo, shared)
            assert found == _by_rule(loaded, stone, guard, git_repo), (patterns, stone)
