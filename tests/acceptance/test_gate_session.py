"""Robot sessions: route.bind, and route.drive / route.bounce fed the JSON events Claude Code sends hooks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import git
from tests.route.routes import make_route, run_as_human, run_route, steer, stone_get, write
from tests.route_gate.gate import (
    approve,
    denied,
    gated_route,
    hook,
    pre_tool_event,
    route_set,
    sent_back,
    session_start_event,
    stop_event,
)

DRIVE_STOP = ["route.drive", "--when", "hook.onStop"]
DRIVE_BOOT = ["route.drive", "--when", "hook.onBoot"]
BOUNCE = ["route.bounce"]


def on_branch(repo: Path, branch: str = "feature/vision") -> None:
    git(repo, "switch", "-q", "-c", branch)


def bind(repo: Path, *args: str) -> object:
    return run_route(["route.bind", *args], repo)


# ---------------------------------------------------------------- route.bind


def test_bind_set_get_del_and_commands_use_the_bound_route(git_repo: Path) -> None:
    route = gated_route(git_repo)
    on_branch(git_repo)
    done = run_route(["route.bind", "--set", "route"], git_repo)
    assert (done.code, done.out) == (0, "bound route to branch feature/vision\n")
    flag = route / ".route" / ".bind.feature.vision.flag"
    assert "branch: feature/vision\n" in flag.read_text()
    assert run_route(["route.bind", "--get"], git_repo).out == "route\n"
    sub = git_repo / "tools"
    assert run_route(["route.bind", "--get"], sub).out == "../route\n"  # relative to where you are
    # Every route.* command without --route now works on the bound route.
    assert run_route(["route.stone.get"], git_repo).out == "1.vision\n"
    assert run_as_human(["route.stone.set", "--stone", "1.vision", "--as", "approved"], sub).code == 0
    assert run_route(["route.stone.set", "--stone", "1.vision", "--as", "passed"], sub).code == 0
    assert run_route(["route.drive"], git_repo).out.startswith("route route: 1 of 3 stones passed")
    again = run_route(["route.bind", "--set", "route"], git_repo)
    assert again.out == "route is already bound to branch feature/vision\n"
    gone = run_route(["route.bind", "--del"], git_repo)
    assert (gone.code, gone.out) == (0, "unbound route from branch feature/vision\n") and not flag.exists()
    unbound = run_route(["route.stone.get"], git_repo)
    assert (unbound.code, unbound.err) == (
        2,
        "error: no route bound to this branch; use --route or route.bind --set\n",
    )
    assert run_route(["route.bind", "--get"], git_repo).code == 2


def test_bind_refuses_main_master_and_a_detached_head(git_repo: Path) -> None:
    gated_route(git_repo)
    on_main = run_route(["route.bind", "--set", "route"], git_repo)
    assert on_main.code == 2
    assert on_main.err.startswith(
        "error: refusing to bind a route to main; bind on a work branch: git switch -c"
    )
    git(git_repo, "branch", "-m", "master")
    assert "refusing to bind a route to master" in run_route(["route.bind", "--set", "route"], git_repo).err
    git(git_repo, "switch", "-q", "--detach")
    detached = run_route(["route.bind", "--set", "route"], git_repo)
    assert (detached.code, detached.err) == (
        2,
        "error: cannot bind a route: HEAD is detached (no branch); git switch to a branch first\n",
    )
    assert not (git_repo / "route" / ".route").exists()
    flags = run_route(["route.bind", "--set", "route", "--get"], git_repo)
    assert flags.code == 2 and "exactly one of" in flags.err


def test_two_routes_bound_to_one_branch_are_named(git_repo: Path) -> None:
    first = gated_route(git_repo, "a")
    second = gated_route(git_repo, "b")
    on_branch(git_repo, "work")
    assert run_route(["route.bind", "--set", "a"], git_repo).code == 0
    replaced = run_route(["route.bind", "--set", "b"], git_repo)  # --set replaces the other binding
    assert replaced.err == "notice: unbound a from work\n"
    assert run_route(["route.bind", "--get"], git_repo).out == "b\n"
    # Two flags for one branch (e.g. two branches merged): refused, naming both.
    write(first / ".route" / ".bind.work.flag", "---\nbranch: work\nroute: a\n---\n")
    both = run_route(["route.stone.get"], git_repo)
    assert (both.code, both.err) == (
        2,
        "error: 2 routes are bound to branch work: a and b; keep one: route.bind --set R (it replaces the "
        "others), or pass --route\n",
    )
    # A flag for 'fix.x' is not one for 'fix/x', though both are named .bind.fix.x.flag.
    on_branch(git_repo, "fix/x")
    write(second / ".route" / ".bind.fix.x.flag", "---\nbranch: fix.x\nroute: b\n---\n")
    assert run_route(["route.stone.get"], git_repo).err.startswith("error: no route bound to this branch")


# ---------------------------------------------------------------- route.drive


def test_drive_tells_the_robot_where_it_is_with_exact_commands(git_repo: Path) -> None:
    route = make_route(
        git_repo, {"1.it's $(odd)": "Do the odd thing.\n", "2.next": "Next.\n"}, name="my route"
    )
    done = run_route(["route.drive", "--route", str(route)], git_repo)
    assert done.code == 0
    text = done.out
    assert text.startswith(f"route {route}: 0 of 2 stones passed; next: 1.it's $(odd)\n")
    assert "  Do the odd thing.\n" in text
    assert "do: write the artifact as the instructions say, then run:\n" in text
    quoted = f"--route '{route}' --stone '1.it'\"'\"'s $(odd)'"
    assert f"  route.stone.set {quoted} --as passed\n" in text
    assert f"re-read the instructions: route.stone.get {quoted} --say\n" in text
    assert not list(git_repo.rglob("odd"))


def test_drive_json_is_one_document_with_the_exact_commands(git_repo: Path) -> None:
    route = gated_route(git_repo)
    on_branch(git_repo)
    assert run_route(["route.bind", "--set", "route"], git_repo).code == 0

    def drive_json() -> Any:
        done = run_route(["route.drive", "--json"], git_repo)
        assert done.code == 0 and done.err == ""
        return json.loads(done.out)  # the whole of stdout is one JSON document

    head = "--route route --stone 1.vision"
    assert drive_json() == {
        "route": "route",
        "passed": 0,
        "total": 3,
        "complete": False,
        "robot_can_act": True,
        "uncommitted": [],  # looked at once the route is complete
        "next": [
            {
                "name": "1.vision",
                "state": "ready",
                "detail": "",
                "file": "route/1.vision.stone",
                "who": "robot",
                "commands": {
                    "read": f"route.stone.get {head} --say",
                    "pass": f"route.stone.set {head} --as passed",
                    "approve": f"route.stone.set {head} --as approved",
                },
            }
        ],
    }
    assert route_set(git_repo, route, "1.vision").code == 2  # reviewed; it waits for a human
    waiting = drive_json()
    assert (waiting["robot_can_act"], waiting["next"]) == (
        False,
        [
            {
                "name": "1.vision",
                "state": "waiting-for-approval",
                "detail": "every other judge passed; it waits for a human",
                "file": "route/1.vision.stone",
                "who": "human",
                "commands": {
                    "read": f"route.stone.get {head} --say",
                    "pass": f"route.stone.set {head} --as passed",
                    "approve": f"route.stone.set {head} --as approved",
                },
            }
        ],
    )
    assert approve(git_repo, route, "1.vision").code == 0
    assert route_set(git_repo, route, "1.vision").code == 0
    plan = drive_json()
    assert plan["passed"] == 1 and [stone["name"] for stone in plan["next"]] == ["2.plan"]
    assert plan["next"][0]["commands"]["approve"] is None  # no approved? in its guard
    for stone in ("2.plan", "3.ship"):
        assert route_set(git_repo, route, stone).code == 0
    done = drive_json()
    assert (done["passed"], done["complete"], done["robot_can_act"], done["next"]) == (3, True, False, [])
    # Without a route nothing reaches stdout: the usual one-line error.
    unbound = run_route(["route.drive", "--json", "--route", "nope"], git_repo)
    assert (unbound.code, unbound.out) == (2, "") and unbound.err.startswith("error: route not found: nope")


def test_stop_hook_keeps_the_robot_going_until_it_waits_on_a_human(git_repo: Path) -> None:
    route = gated_route(git_repo)
    on_branch(git_repo)
    assert run_route(["route.bind", "--set", "route"], git_repo).code == 0
    steer(git_repo, "r1", out="blockers: 1\nnitpicks: 0\n- blocker: the vision names no user\n")

    fresh = hook(DRIVE_STOP, git_repo, stop_event(git_repo, active=False))
    assert (fresh.code, fresh.err) == (0, "")  # Claude Code's JSON: the model reads the reason, no hook error
    reason = sent_back(fresh)
    assert reason.startswith("The route is not finished; keep going.\nroute route: 0 of 3 stones passed")
    assert "## 1.vision (ready)" in reason and "route.stone.set --route route --stone 1.vision" in reason

    assert route_set(git_repo, route, "1.vision").code == 2  # the robot acts: rejected by the review
    rejected = sent_back(hook(DRIVE_STOP, git_repo, stop_event(git_repo, active=True)))
    assert "## 1.vision (rejected)" in rejected
    assert "last result: rejected: j1 reviewed?: blockers exceed threshold (1 > 0)" in rejected

    steer(git_repo, "r1", out="blockers: 0\nnitpicks: 0\n")
    write(route / "1.vision.md", "# Vision, for our users\n")
    assert route_set(git_repo, route, "1.vision").code == 2  # reviewed fine; only the human is missing
    waiting = hook(DRIVE_STOP, git_repo, stop_event(git_repo, active=True))
    assert waiting.code == 0 and waiting.err == ""
    # The exact command, runnable as it stands (route and stone named).
    assert json.loads(waiting.out) == {
        "systemMessage": "route route: waiting for human approval of 1.vision; a human approves, in a "
        "terminal, with: route.stone.set --route route --stone 1.vision --as approved"
    }
    boot = hook(DRIVE_BOOT, git_repo, session_start_event(git_repo, "resume"))
    assert boot.code == 0 and "## 1.vision (waiting-for-approval)" in boot.out
    assert (
        "a human runs, in a terminal: route.stone.set --route route --stone 1.vision --as approved"
        in boot.out
    )

    assert approve(git_repo, route, "1.vision").code == 0
    approved = hook(DRIVE_STOP, git_repo, stop_event(git_repo, active=False))
    assert "a human approved it since the last run" in sent_back(approved)
    for stone in ("1.vision", "2.plan", "3.ship"):
        assert route_set(git_repo, route, stone).code == 0
    complete = hook(DRIVE_STOP, git_repo, stop_event(git_repo, active=True))
    # Done, and the robot may stop; the person is told what CI will not see until it is committed.
    assert complete.code == 0
    message = json.loads(complete.out)["systemMessage"]
    assert message.startswith("route route: all 3 stones passed, but not committed: route/.route/")
    assert message.endswith("route.verify fails what stands on them: commit them")
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "the route, passed")
    complete = hook(DRIVE_STOP, git_repo, stop_event(git_repo, active=True))
    assert (complete.code, json.loads(complete.out)) == (
        0,
        {"systemMessage": "route route: all 3 stones passed."},
    )


def test_stop_hook_lets_a_stuck_robot_stop_after_three_identical_blocks(git_repo: Path) -> None:
    route = gated_route(git_repo)
    argv = [*DRIVE_STOP, "--route", str(route)]
    kept = [bool(sent_back(hook(argv, git_repo, stop_event(git_repo, active=i > 0)))) for i in range(4)]
    assert kept == [True, True, True, False]
    released = hook(argv, git_repo, stop_event(git_repo, active=True))
    assert released.code == 0 and not sent_back(released)
    message = json.loads(released.out)["systemMessage"]
    assert message.startswith(
        "route.drive: letting the robot stop: it was sent back 3 times and nothing changed"
    )
    assert (route / ".route" / ".drive.state").is_file()
    assert ".*.state" in (route / ".route" / ".gitignore").read_text().splitlines()
    assert "?? route/.route/.drive.state" not in git(
        git_repo, "status", "--porcelain", "--untracked-files=all"
    )
    # A new prompt from the user (stop_hook_active false) starts counting again; so does any change.
    assert sent_back(hook(argv, git_repo, stop_event(git_repo, active=False)))
    assert sent_back(hook(argv, git_repo, stop_event(git_repo, active=True)))
    assert sent_back(hook(argv, git_repo, stop_event(git_repo, active=True)))
    assert route_set(git_repo, route, "1.vision").code == 2  # progress: now it waits on the human…
    write(route / "1.vision.md", "# Vision, edited\n")  # …and the robot edits again: a change
    assert sent_back(hook([*argv, "--max-blocks", "1"], git_repo, stop_event(git_repo, active=True)))


def test_drive_hooks_never_block_on_what_the_robot_cannot_fix(git_repo: Path) -> None:
    route = gated_route(git_repo)
    write(route / "1.vision.guard", "judges:\n  - sure?\n")
    broken = hook([*DRIVE_STOP, "--route", str(route)], git_repo, stop_event(git_repo, active=False))
    assert broken.code == 0
    message = json.loads(broken.out)["systemMessage"]
    assert message.startswith("route.drive: cannot drive the route (error: ")
    assert "unknown judge mechanism 'sure?'" in message and "a human must fix it" in message
    # No route bound on this branch: nothing to say, nothing blocked.
    assert hook(DRIVE_STOP, git_repo, stop_event(git_repo, active=False)) == hook(
        DRIVE_BOOT, git_repo, session_start_event(git_repo)
    )
    assert hook(DRIVE_STOP, git_repo, stop_event(git_repo, active=False)).code == 0
    # Empty stdin (run by hand) is fine; a broken event changes nothing (the answer comes from the route);
    # a broken flag is a non-blocking error (exit 1, never 2).
    assert hook([*DRIVE_BOOT, "--route", str(route)], git_repo, "").code == 0
    unreadable = hook([*DRIVE_STOP, "--route", str(route)], git_repo, "{not json")
    assert unreadable.code == 0 and "a human must fix it" in json.loads(unreadable.out)["systemMessage"]
    assert hook([*DRIVE_STOP, "--bogus"], git_repo, "{}").code == 1
    assert hook(["route.drive", "--when", "hook.onWhatever"], git_repo, "{}").code == 1


# ---------------------------------------------------------------- route.bounce


def test_bounce_blocks_protected_paths_until_their_stone_passes(git_repo: Path) -> None:
    route = gated_route(git_repo)
    write(
        route / "2.plan.guard",
        (route / "2.plan.guard").read_text() + "protect: ['src/**', '$route/2.*.md']\n",
    )
    on_branch(git_repo)
    assert run_route(["route.bind", "--set", "route"], git_repo).code == 0
    write(git_repo / "src" / "app.py", "print('hi')\n")
    for tool in ("Write", "Edit", "MultiEdit"):
        blocked = hook(BOUNCE, git_repo, pre_tool_event(git_repo, tool, str(git_repo / "src" / "app.py")))
        assert (blocked.code, blocked.err) == (0, ""), tool
        assert denied(blocked) == (
            "route.bounce: blocked src/app.py: it is protected by stone 2.plan of route route "
            "(protect: src/**) until that stone passes. Finish that stone first: read it with "
            "route.stone.get --route route --stone 2.plan --say, then run "
            "route.stone.set --route route --stone 2.plan --as passed."
        )
    relative = hook(BOUNCE, git_repo / "src", pre_tool_event(git_repo / "src", "Write", "lib/util.py"))
    assert "blocked src/lib/util.py" in denied(relative)  # relative to the event's cwd
    notebook = hook(BOUNCE, git_repo, pre_tool_event(git_repo, "NotebookEdit", "src/analysis.ipynb"))
    assert denied(notebook)
    # The stone's own artifacts stay writable, or it could never pass.
    own = hook(BOUNCE, git_repo, pre_tool_event(git_repo, "Write", str(route / "2.plan.md")))
    assert (own.code, own.err) == (0, "")
    for tool, path in (("Write", "docs/notes.md"), ("Read", "src/app.py"), ("Bash", "docs/notes.md")):
        allowed = hook(BOUNCE, git_repo, pre_tool_event(git_repo, tool, path))
        assert (allowed.code, allowed.out, allowed.err) == (0, "", ""), tool
    assert approve(git_repo, route, "1.vision").code == 0
    assert route_set(git_repo, route, "1.vision").code == 0
    assert route_set(git_repo, route, "2.plan").code == 0
    after = hook(BOUNCE, git_repo, pre_tool_event(git_repo, "Edit", "src/app.py"))
    assert (after.code, after.err) == (0, "")
    # A pass its artifacts no longer hold (stale, as route.verify would say) protects again.
    write(route / "2.plan.md", "# Plan, edited after it passed\n")
    stale = hook(BOUNCE, git_repo, pre_tool_event(git_repo, "Edit", "src/app.py"))
    assert "protected by stone 2.plan" in denied(stale)


SETTINGS = "Claude Code's settings wire the hooks that hold the robot to its route"


def test_bounce_always_blocks_templates_and_driver_files(git_repo: Path) -> None:
    route = gated_route(git_repo)
    targets = {
        "route/1.vision.stone": "stones (*.stone) are read-only templates",
        "route/4.new.stone": "stones (*.stone) are read-only templates",
        "route/2.plan.guard": "guards (*.guard) are read-only templates",
        "route/.route/1.vision.approved": "files under a route's .route/ are written by the driver only",
        "route/.route/1.vision.passed.0123456789abcdef": (
            "files under a route's .route/ are written by the driver only"
        ),
        "route/.route/approvers": "files under a route's .route/ are written by the driver only",
        ".route-approvers": "the approvers file says who may approve",
        # The hooks themselves: a robot that edits them away is held by nothing (disableAllHooks).
        ".claude/settings.json": SETTINGS,
        ".claude/settings.local.json": SETTINGS,
    }
    for path, why in targets.items():
        for tool in ("Write", "Edit"):
            blocked = hook(BOUNCE, git_repo, pre_tool_event(git_repo, tool, path))
            assert denied(blocked).startswith(f"route.bounce: blocked {path}: {why}"), (tool, blocked)
    # A symlink is not a way around it.
    (git_repo / "innocent.md").symlink_to(route / "1.vision.stone")
    assert denied(hook(BOUNCE, git_repo, pre_tool_event(git_repo, "Write", "innocent.md")))
    # A .guard file that is not part of a route is somebody else's business.
    write(git_repo / "lib" / "x.guard", "not ours\n")
    assert hook(BOUNCE, git_repo, pre_tool_event(git_repo, "Write", "lib/x.guard")).code == 0
    bad = hook(
        BOUNCE, git_repo, "[1, 2]"
    )  # an event it cannot read: blocked (tests: test_gate_session_events)
    assert bad.code == 2 and bad.err.startswith(
        "route.bounce: blocked this tool call: the hook event is a JSON array, not a JSON object, so it "
        "cannot tell what the call would write"
    )
    assert stone_get(git_repo, route).code == 0


def test_bounce_warns_about_a_broken_guard_without_blocking(git_repo: Path) -> None:
    route = gated_route(git_repo)
    write(route / "2.plan.guard", "protect: ['src/**']\nrevews: []\n")
    done = hook([*BOUNCE, "--route", "route"], git_repo, pre_tool_event(git_repo, "Write", "src/a.py"))
    assert done.code == 0
    assert done.err.startswith("warning: route/2.plan.guard: unknown key 'revews'")  # one prefix
    assert "its protect: rules are not enforced until it is fixed" in done.err


def test_bounce_says_when_it_cannot_tell_what_to_protect(git_repo: Path) -> None:
    gated_route(git_repo, "a")
    second = gated_route(git_repo, "b")
    event = pre_tool_event(git_repo, "Write", "src/app.py")
    # No route bound (here: on main): nothing to protect, nothing said.
    unbound = hook(BOUNCE, git_repo, event)
    assert (unbound.code, unbound.out, unbound.err) == (0, "", "")
    on_branch(git_repo, "work")
    assert run_route(["route.bind", "--set", "a"], git_repo).code == 0
    write(second / ".route" / ".bind.work.flag", "---\nbranch: work\nroute: b\n---\n")
    # Two routes bound: protect: rules are off; a non-blocking error (exit 1) the user sees, in one line.
    ambiguous = hook(BOUNCE, git_repo, event)
    assert (ambiguous.code, ambiguous.out) == (1, "")
    assert ambiguous.err == (
        "error: route.bounce cannot tell what to protect (protect: rules off): 2 routes are bound to branch "
        "work: a and b; keep one: route.bind --set R (it replaces the others), or pass --route\n"
    )
    wrong = hook([*BOUNCE, "--route", "nope"], git_repo, event)
    assert (wrong.code, wrong.err) == (
        1,
        "error: route.bounce cannot tell what to protect (protect: rules off): route not found: nope; "
        "check --route (a directory holding <name>.stone files)\n",
    )
    # Driver files stay blocked whatever the route lookup says.
    stone = hook(BOUNCE, git_repo, pre_tool_event(git_repo, "Edit", "a/1.vision.stone"))
    assert "stones (*.stone) are read-only templates" in denied(stone)
