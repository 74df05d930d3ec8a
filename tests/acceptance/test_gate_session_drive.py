"""route.drive and its Stop hook on a broken guard (a malfunction only a human can fix), on a pass the
robot's own edits made stale (which route.verify would reject in CI), and on a definition the robot broke
itself (issue 19 §4: it is sent back to put it back)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from routedriver.errors import Refused
from routedriver.route.model import Guard, Route, Stone
from tests.conftest import TEST_EMAIL, git
from tests.route.routes import make_route, review, run_route, steer, write
from tests.route_gate.gate import (
    approve,
    gated_route,
    hook,
    hook_event,
    pass_all,
    route_set,
    sent_back,
    session_start_event,
    stop_event,
)

DRIVE_STOP = ["route.drive", "--when", "hook.onStop"]
DRIVE_BOOT = ["route.drive", "--when", "hook.onBoot"]


def one_stone_route(repo: Path, guard: str) -> Path:
    route = make_route(repo, {"1.vision": "Write the vision.\n", "2.plan": "Plan.\n"}, {"1.vision": guard})
    write(route / "1.vision.md", "# Vision\n")
    git(repo, "switch", "-q", "-c", "feature/vision")
    assert run_route(["route.bind", "--set", "route"], repo).code == 0
    return route


def stop(repo: Path) -> tuple[int, str, str]:
    """The Stop hook's exit code, its stdout, and the reason it sends the robot back with ('' when it lets
    it stop)."""
    done = hook(DRIVE_STOP, repo, stop_event(repo, active=False))
    assert done.code == 0 and done.err == "", done  # answers in Claude Code's JSON, never a hook error
    return done.code, done.out, sent_back(done)


def test_a_review_that_breaks_lets_the_robot_stop_and_says_what_a_human_must_fix(git_repo: Path) -> None:
    route = one_stone_route(
        git_repo, "reviews:\n  - no-such-reviewer $route/1.vision.md\njudges:\n  - reviewed?\n"
    )
    assert route_set(git_repo, route, "1.vision").code == 1  # review r1: exit 127, command not found

    code, out, back = stop(git_repo)
    assert (code, back) == (0, "")  # the robot may stop: only a human can fix the guard or install the tool
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
    _code, _out, back = stop(git_repo)
    assert "## 1.vision (ready)\n" in back


def test_a_review_that_broke_then_worked_is_not_a_malfunction(git_repo: Path) -> None:
    route = one_stone_route(git_repo, f"reviews:\n  - {review('r1')}\njudges:\n  - reviewed?\n")
    steer(git_repo, "r1", exit_code=3)
    assert route_set(git_repo, route, "1.vision").code == 1
    assert "## 1.vision (malfunction)" in run_route(["route.drive"], git_repo).out
    steer(git_repo, "r1", exit_code=0)  # a human fixed the tool and ran the guard again
    assert route_set(git_repo, route, "1.vision").code == 0
    _code, _out, back = stop(git_repo)
    assert "## 2.plan (needs-artifact)" in back and "1.vision" not in back.split("\n")[1]


def test_a_judge_that_breaks_is_a_malfunction_not_a_rejection(git_repo: Path) -> None:
    route = one_stone_route(git_repo, 'judges:\n  - sh -c "exit 7"\n')
    assert route_set(git_repo, route, "1.vision").code == 1

    code, out, back = stop(git_repo)
    message = json.loads(out)["systemMessage"]
    assert (code, back) == (0, "")
    assert message.startswith(
        'route route: 1.vision cannot be checked, a command of its guard broke: judge j1 (sh -c "exit 7"): '
        "exit 7 (read route/.route/1.vision.guard.judge.i1p1."
    )
    drive = run_route(["route.drive"], git_repo).out
    assert "## 1.vision (malfunction)" in drive and "fix what the judges said" not in drive

    # A human fixes the guard: the old result no longer applies, and the robot runs the guard again.
    write(route / "1.vision.guard", 'judges:\n  - sh -c "exit 0"\n')
    _code, _out, back = stop(git_repo)
    assert "## 1.vision (ready)\n" in back
    assert "do: run the guard (the guard changed since the last run):" in back
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
    _code, _out, err = stop(git_repo)
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
    assert f"it passed, but the pass no longer holds: {added}\n" in err
    notes.unlink()
    assert stop(git_repo)[2] == ""

    # An approved stone edited after its pass: set again finds it waits for a human, and the robot may stop.
    write(route / "1.vision.md", "# Vision, edited after approval\n")
    _code, _out, err = stop(git_repo)
    assert "## 1.vision (stale)" in err
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
    (git_repo / "docs" / "loop").symlink_to("..")  # never entered: a wildcard that would is refused
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
        walks_into_the_loop = bool({"docs/**", "docs/", "docs/**/*.md"} & set(patterns))
        for stone in loaded.stones:
            guard = None if not patterns else Guard(route / "g", patterns, (), ())
            if walks_into_the_loop:
                with pytest.raises(Refused, match=r"^docs/loop is a symlink to a directory \(\.\.\)"):
                    find_artifacts(loaded, stone, guard, git_repo, shared)
                continue
            found = find_artifacts(loaded, stone, guard, git_repo, shared)
            assert found == _by_rule(loaded, stone, guard, git_repo), (patterns, stone)
    # Without the loop, every glob finds by the one rule.
    (git_repo / "docs" / "loop").unlink()
    shared = Listings()
    for patterns in globs:
        for stone in loaded.stones:
            guard = None if not patterns else Guard(route / "g", patterns, (), ())
            found = find_artifacts(loaded, stone, guard, git_repo, shared)
            assert found == _by_rule(loaded, stone, guard, git_repo), (patterns, stone)


# ---------------------------------------------------------------- breaking a definition is no way to stop
# (issue 19 §4): whatever the robot does to a stone, a guard or an approvers file, in the work tree or in a
# commit of its own session, sends it back to put the definition back; only a definition broken in a commit
# nobody in this session made is a human's to fix.

ROBOT_ENV = {
    "GIT_AUTHOR_NAME": "Robot",
    "GIT_AUTHOR_EMAIL": "robot@example.com",
    "GIT_COMMITTER_NAME": "Robot",
    "GIT_COMMITTER_EMAIL": "robot@example.com",
}
SHELL_JUDGE = "judges:\n  - test -s $route/1.vision.md\n"


def robot_shell(repo: Path, command: str) -> None:
    """What the robot types over Bash."""
    done = subprocess.run(
        ["bash", "-c", command], cwd=repo, env={**os.environ, **ROBOT_ENV}, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr


def committed_route(repo: Path) -> Path:
    """1.vision (a shell judge the robot can satisfy), 2.plan (a human gate), 3.ship; committed on main,
    then bound on the robot's branch and committed there: the work tree is clean."""
    route = make_route(
        repo,
        {"1.vision": "Write the vision.\n", "2.plan": "Write the plan.\n", "3.ship": "Ship it.\n"},
        {"1.vision": SHELL_JUDGE, "2.plan": "judges:\n  - approved?\n"},
    )
    write(route / "1.vision.md", "# Vision\n")
    write(route / "2.plan.md", "# Plan\n")
    write(repo / ".route-approvers", f"{TEST_EMAIL}\n")
    write(repo / ".gitignore", ".ctl/\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the route")
    git(repo, "switch", "-q", "-c", "feature/vision")
    assert run_route(["route.bind", "--set", "route"], repo).code == 0
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "bind")
    return route


def restore_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("- ")]


# (what the robot does over Bash, the line the Stop hook sends back, the command in it that puts it back)
BREAKS = [
    (
        "echo x > route/1.vision.guard",
        "- route/1.vision.guard: edited in the work tree; restore it: git checkout -- route/1.vision.guard",
    ),
    (
        "echo x > route/1.vision.guard && git add route/1.vision.guard",
        "- route/1.vision.guard: edited in the work tree; restore it: git checkout HEAD -- "
        "route/1.vision.guard",
    ),
    (
        "rm route/1.vision.guard && mkfifo route/1.vision.guard",
        "- route/1.vision.guard: not a file any more; restore it: rm -rf -- route/1.vision.guard && git "
        "checkout -- route/1.vision.guard",
    ),
    (
        "printf 'nothing to do\\n' > route/notes.stone",
        "- route/notes.stone: added since the last commit; remove it: rm -rf -- route/notes.stone",
    ),
    (  # a stone that is a directory is no stone: the route loses it
        "rm route/1.vision.stone && mkdir route/1.vision.stone",
        "- route/1.vision.stone: not a file any more; restore it: rm -rf -- route/1.vision.stone && git "
        "checkout -- route/1.vision.stone",
    ),
    (  # a valid guard, but now a human must approve: a wait the robot made
        "printf 'judges:\\n  - approved?\\n' > route/1.vision.guard && route.stone.set --route route "
        "--stone 1.vision --as passed < /dev/null || true",
        "- route/1.vision.guard: edited in the work tree; restore it: git checkout -- route/1.vision.guard",
    ),
    (  # the only approver is no longer listed, so the approval below stops counting
        "echo someone@example.com > .route-approvers && route.stone.set --route route --stone 2.plan "
        "--as passed < /dev/null || true",
        "- .route-approvers: edited in the work tree; restore it: git checkout -- .route-approvers",
    ),
    (  # the whole route gone: the binding is still in git's index, so the route is still looked for
        "rm -rf route/*.stone route/*.guard",
        "- route/1.vision.guard: deleted; restore it: git checkout -- route/1.vision.guard",
    ),
]


@pytest.mark.parametrize(("breaking", "told"), BREAKS, ids=[f"break{i}" for i in range(len(BREAKS))])
def test_a_definition_the_robot_breaks_in_the_work_tree_keeps_it_going(
    git_repo: Path, breaking: str, told: str
) -> None:
    route = committed_route(git_repo)
    assert route_set(git_repo, route, "1.vision").code == 0
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "1.vision passed")
    if ".route-approvers" in breaking:  # a human approval the robot must now use
        assert approve(git_repo, route, "2.plan").code == 0
    else:  # 2.plan waits for its approval: until the robot breaks something, it may stop
        assert route_set(git_repo, route, "2.plan").code == 2
        assert stop(git_repo)[0] == 0
    robot_shell(git_repo, breaking)

    _code, out, err = stop(git_repo)
    assert err, out  # sent back
    assert err.startswith(
        "The route is not finished; keep going.\nroute route: its definitions differ from what git has "
        "committed, and the route is what git has committed (route.verify checks that); put them back:\n"
    )
    assert told in restore_lines(err)
    assert err.endswith("then run: route.drive --route route\n")
    # Each line's command puts its file back; then the route is what it was.
    for line in restore_lines(err):
        robot_shell(git_repo, line.split("; ", 1)[1].split(": ", 1)[1])
    assert (
        git(git_repo, "status", "--porcelain", "--", "route/*.stone", "route/*.guard", ".route-approvers")
        == ""
    )
    code, out, err = stop(git_repo)
    assert "its definitions differ" not in out + err
    assert err or "waiting for human approval" in json.loads(out)["systemMessage"]


def test_a_definition_broken_in_a_commit_of_this_session_is_the_robots_to_restore(git_repo: Path) -> None:
    committed_route(git_repo)
    boot = hook(DRIVE_BOOT, git_repo, session_start_event(git_repo, "startup"))
    assert boot.code == 0
    began = git(git_repo, "rev-parse", "HEAD").strip()
    robot_shell(git_repo, "echo x > route/1.vision.guard && git commit -q -am 'simplify the guard'")
    # A resumed (or compacted) session is the same session: it still began where it began.
    assert hook(DRIVE_BOOT, git_repo, session_start_event(git_repo, "resume")).code == 0

    _code, out, err = stop(git_repo)
    assert err, out  # sent back
    assert restore_lines(err) == [
        f"- route/1.vision.guard: changed by a commit made in this session (since {began[:12]}, where it "
        f"began); restore it: git checkout {began[:12]} -- route/1.vision.guard, then commit it"
    ]
    robot_shell(git_repo, f"git checkout {began[:12]} -- route/1.vision.guard && git commit -q -m 'put back'")
    _code, _out, err = stop(git_repo)
    assert "## 1.vision (ready)" in err  # back to work


def test_a_definition_broken_in_a_commit_nobody_in_this_session_made_waits_for_a_human(
    git_repo: Path,
) -> None:
    route = committed_route(git_repo)
    # Broken on main by someone else; the robot merges main during its session.
    assert hook(DRIVE_BOOT, git_repo, session_start_event(git_repo, "startup")).code == 0
    git(git_repo, "switch", "-q", "main")
    write(route / "1.vision.guard", "judges:\n  - sure?\n")
    git(git_repo, "commit", "-q", "-am", "a guard from the future")
    git(git_repo, "switch", "-q", "feature/vision")
    robot_shell(git_repo, "git merge -q --no-edit main")
    code, out, err = stop(git_repo)
    assert (code, err) == (0, "")
    message = json.loads(out)["systemMessage"]
    assert "unknown judge mechanism 'sure?'" in message and "a human must fix it" in message

    # A new session that starts on the broken commit did not make it either.
    other = hook_event("SessionStart", git_repo, source="startup", session_id="another-session")
    assert hook(DRIVE_BOOT, git_repo, other).code == 0
    assert stop(git_repo)[0] == 0


def test_without_a_session_start_a_broken_commit_is_a_humans_and_the_stop_says_so(git_repo: Path) -> None:
    """No SessionStart hook wired (or its record gone): who made HEAD's commit cannot be told from git,
    so the robot may stop, as before; the work tree is still checked (the first test above)."""
    route = committed_route(git_repo)
    robot_shell(git_repo, "echo x > route/1.vision.guard && git commit -q -am 'break it'")
    assert not (route / ".route" / ".session.state").exists()
    code, out, _err = stop(git_repo)
    assert code == 0 and "a human must fix it" in json.loads(out)["systemMessage"]


def test_a_route_not_committed_yet_is_not_compared(git_repo: Path) -> None:
    """A human still writing the route (nothing of it in HEAD): a broken guard there is theirs to fix."""
    route = gated_route(git_repo)
    git(git_repo, "switch", "-q", "-c", "feature/new")
    assert run_route(["route.bind", "--set", "route"], git_repo).code == 0
    write(route / "1.vision.guard", "x\n")
    code, out, _err = stop(git_repo)
    assert code == 0 and "a human must fix it" in json.loads(out)["systemMessage"]


def test_a_robot_that_cannot_put_a_definition_back_is_let_go_after_max_blocks(git_repo: Path) -> None:
    committed_route(git_repo)
    robot_shell(git_repo, "echo x > route/1.vision.guard")
    event = stop_event(git_repo, active=True)
    for _ in range(3):
        assert sent_back(hook(DRIVE_STOP, git_repo, event))
    last = hook(DRIVE_STOP, git_repo, event)
    assert last.code == 0
    message = json.loads(last.out)["systemMessage"]
    assert message.startswith("route.drive: letting the robot stop: it was sent back 3 times and nothing")
    assert message.endswith("Next on route route: put back route/1.vision.guard")
