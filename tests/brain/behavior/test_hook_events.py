"""`bhrain behave` fed the events it has no rules for, and PreToolUse events it cannot read, through the
installed ``bhrain`` with exactly these bytes on stdin.

A PreToolUse gate that cannot read its event fails closed (exit 2, the reason on stderr); an event behave
has no rules for (SessionStart, Stop, …) is answered with exit 0 and nothing else; input that is not a
tool call about to run stays a non-blocking error (exit 1).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.brain.behavior.helpers import denial
from tests.brain.behavior.test_hook_mode import CONFIG, SESSION, Hook
from tests.conftest import Ran

DROP = object()
UNREADABLE = "[BEHAVIOR BLOCKED] unreadable event: "
PRE = ["--hook", "pre_tool"]


def event(hook: Hook, name: Any = "PreToolUse", **fields: Any) -> bytes:
    payload = {key: value for key, value in hook.payload(name, **fields).items() if value is not DROP}
    return json.dumps(payload).encode("utf-8")


def call(hook: Hook, tool: Any = "Read", tool_input: Any = None, **fields: Any) -> bytes:
    inputs = {"file_path": str(hook.project / "a.py")} if tool_input is None else tool_input
    return event(hook, tool_name=tool, tool_input=inputs, tool_use_id="toolu_01", **fields)


def behave(hook: Hook, data: bytes, *args: str) -> Ran:
    argv = ["bhrain", "behave", "--config", str(hook.config), "--state-dir", str(hook.state_dir), *args]
    done = subprocess.run(argv, cwd=hook.project, input=data, capture_output=True, timeout=120, check=False)
    return Ran(
        done.returncode, done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace")
    )


@pytest.fixture
def hook(tmp_path: Path) -> Hook:
    return Hook(tmp_path)


Build = Callable[[Hook], bytes]

# (what, the event's bytes, the flags, exit code, what stderr says)
EVENTS: list[tuple[str, Build, list[str], int, str]] = [
    # a PreToolUse event that is not one JSON object: blocked, wired as documented (--hook pre_tool) or not
    *(
        (f"{what}{' (no --hook)' if not args else ''}", build, args, 2, UNREADABLE + says)
        for args in (PRE, [])
        for what, build, says in (
            ("empty stdin", lambda h: b"", "the hook event is empty"),
            (
                "not UTF-8",
                lambda h: b'{"tool_name": "Bash", "tool_input": {"command": "rm -rf \xff"}}',
                "the hook event is not UTF-8 (byte 56)",
            ),
            (
                "truncated",
                lambda h: call(h, "Bash", {"command": "rm -rf build"})[:-30],
                "the hook event is not JSON",
            ),
            (
                "a JSON array",
                lambda h: b"[" + call(h) + b"]",
                "the hook event is a JSON array, not a JSON object",
            ),
            ("null", lambda h: b"null", "the hook event is null"),
            ("a number", lambda h: b"1", "the hook event is a number"),
            (
                "tool_name twice",
                lambda h: b'{"tool_name": "Read", "tool_name": "Bash"}',
                "the hook event is ambiguous: the key 'tool_name' appears twice in one object",
            ),
            (
                "nested too deep",
                lambda h: b"{" + b'"a":{' * 100_000,
                "the hook event is nested too deeply to read",
            ),
        )
    ),
    # a JSON object that does not say which call is about to run
    ("no tool_name", lambda h: call(h, DROP), PRE, 2, UNREADABLE + "tool_name is missing"),
    (
        "tool_name a number",
        lambda h: call(h, 5),
        PRE,
        2,
        UNREADABLE + "tool_name is a number, not a tool's name",
    ),
    ("tool_name empty", lambda h: call(h, ""), PRE, 2, UNREADABLE + "tool_name is empty"),
    ("tool_input missing", lambda h: call(h, "Bash", DROP), PRE, 2, UNREADABLE + "tool_input is missing"),
    (
        "tool_input a string",
        lambda h: call(h, "Bash", "rm -rf /"),
        PRE,
        2,
        UNREADABLE + "tool_input is a string, not an object (a Bash call)",
    ),
    ("tool_input null", lambda h: call(h, "Write", None), PRE, 0, ""),  # None: call() fills in a file_path
    ("tool_input a list", lambda h: call(h, "Write", []), PRE, 2, UNREADABLE + "tool_input is a JSON array"),
    (
        "Bash: command a list",
        lambda h: call(h, "Bash", {"command": ["rm", "-rf", "/"]}),
        PRE,
        2,
        UNREADABLE + "tool_input.command is a JSON array, not a command line",
    ),
    (
        "Bash: command missing",
        lambda h: call(h, "Bash", {}),
        PRE,
        2,
        UNREADABLE + "tool_input.command is missing",
    ),
    (
        "Write: file_path a list",
        lambda h: call(h, "Write", {"file_path": ["db/migrations/0007.py"], "content": "x"}),
        PRE,
        2,
        UNREADABLE + "tool_input.file_path is a JSON array, not a path",
    ),
    (
        "Edit: NUL in file_path",
        lambda h: call(h, "Edit", {"file_path": "a.py\0", "old_string": "a", "new_string": "b"}),
        PRE,
        2,
        UNREADABLE + "tool_input.file_path holds a NUL character",
    ),
    (
        "NotebookEdit: notebook_path missing",
        lambda h: call(h, "NotebookEdit", {"file_path": "a.ipynb"}),
        PRE,
        2,
        UNREADABLE + "tool_input.notebook_path is missing",
    ),
    ("cwd a number", lambda h: call(h, cwd=7), PRE, 2, UNREADABLE + "cwd is a number, not a path"),
    (
        "hook_event_name a list",
        lambda h: call(h, hook_event_name=["PreToolUse"]),
        PRE,
        2,
        "hook_event_name is",
    ),
    (
        "hook_event_name missing, no --hook",
        lambda h: call(h, hook_event_name=DROP),
        [],
        0,
        "",
    ),  # a Read: judged
    (
        "hook_event_name missing, a destructive command",
        lambda h: call(h, "Bash", {"command": "rm -rf build"}, hook_event_name=DROP),
        [],
        0,
        "deny: [BEHAVIOR BLOCKED] confirm_destructive",
    ),
    # well-formed tool calls are judged as before
    ("Read", lambda h: call(h), PRE, 0, ""),
    ("an MCP tool with any input", lambda h: call(h, "mcp__db__query", {"sql": ["x"]}), PRE, 0, ""),
    (
        "Bash rm -rf",
        lambda h: call(h, "Bash", {"command": "rm -rf build"}),
        PRE,
        0,
        "deny: confirm_destructive",
    ),
    # events behave has no rules for: exit 0, nothing said, even wired with --hook pre_tool
    *(
        (f"{name}{' with --hook pre_tool' if args else ''}", build, args, 0, "")
        for args in (PRE, [])
        for name, build in (
            ("SessionStart", lambda h: event(h, "SessionStart", source="startup")),
            ("Stop", lambda h: event(h, "Stop", stop_hook_active=False)),
            ("SubagentStop", lambda h: event(h, "SubagentStop", stop_hook_active=True)),
            ("Notification", lambda h: event(h, "Notification", message="Claude needs your permission")),
            ("PreCompact", lambda h: event(h, "PreCompact", trigger="auto", custom_instructions="")),
            ("SessionEnd", lambda h: event(h, "SessionEnd", reason="prompt_input_exit")),
            ("an event from a newer Claude Code", lambda h: event(h, "TeammateIdle")),
        )
    ),
    # not a tool call about to run (--hook says so): nothing to gate, a non-blocking error
    (
        "not JSON, --hook post_tool",
        lambda h: b"{",
        ["--hook", "post_tool"],
        1,
        "error: the hook event is not JSON",
    ),
    (
        "empty, --hook user_prompt",
        lambda h: b"",
        ["--hook", "user_prompt"],
        1,
        "error: the hook event is empty",
    ),
    (
        "an array, --hook session_end",
        lambda h: b"[]",
        ["--hook", "session_end"],
        1,
        "error: the hook event is a",
    ),
    (
        "PostToolUse without tool_name",
        lambda h: event(h, "PostToolUse", tool_input={}),
        [],
        1,
        "error: PostToolUse input has no tool_name",
    ),
]


@pytest.mark.parametrize(("what", "build", "args", "code", "says"), EVENTS, ids=[row[0] for row in EVENTS])
def test_behave_answers_every_event(
    hook: Hook, what: str, build: Build, args: list[str], code: int, says: str
) -> None:
    done = behave(hook, build(hook), *args)
    if says.startswith("deny: "):  # a block it could judge: Claude Code's JSON deny, the reason in it
        assert (done.code, done.err) == (0, "") and says[6:] in denial(done.out), (what, done)
        return
    assert (done.code, done.out) == (code, ""), (what, done)
    assert says in done.err if says else done.err == "", (what, done.err)
    if code == 2 and says.startswith(UNREADABLE):  # one line: what it could not read, then why it blocks
        assert done.err.startswith(UNREADABLE) and done.err.count("\n") == 1
        assert done.err.endswith(
            "; bhrain behave blocks a tool call it cannot read (if this repeats, a human checks the "
            "bhrain behave hook)\n"
        )


def test_events_without_rules_need_no_config(hook: Hook) -> None:
    hook.config.write_text("security:\n  behavior:\n    profile: paranoid\n", encoding="utf-8")  # broken
    assert behave(hook, event(hook, "Stop", stop_hook_active=True), *PRE) == Ran(0, "", "")
    broken = behave(hook, call(hook), *PRE)
    assert broken.code == 1 and "unknown behavior profile 'paranoid'" in broken.err  # as documented


def test_no_event_at_a_terminal_is_blocked(hook: Hook) -> None:
    import os
    import pty

    controller, terminal = pty.openpty()
    try:
        argv = ["bhrain", "behave", "--config", str(hook.config), "--state-dir", str(hook.state_dir), *PRE]
        done = subprocess.run(
            argv, cwd=hook.project, stdin=terminal, capture_output=True, text=True, check=False
        )
    finally:
        os.close(controller)
        os.close(terminal)
    assert done.returncode == 2
    assert done.stderr.startswith(UNREADABLE + "there is no hook event (stdin is a terminal)")


def test_a_block_stands_when_the_state_cannot_be_saved(hook: Hook) -> None:
    (hook.state_dir / f"{SESSION}.json").mkdir(parents=True)  # the state file's place is taken
    blocked = behave(hook, call(hook, "Bash", {"command": "rm -rf build"}), *PRE)
    assert blocked.code == 0 and "[BEHAVIOR BLOCKED] confirm_destructive" in denial(blocked.out)
    assert "cannot save the session's state" in blocked.err and "the block stands" in blocked.err
    allowed = behave(hook, call(hook), *PRE)  # nothing to block: the documented non-blocking error
    assert allowed.code == 1 and f"error: cannot keep behavior state in {hook.state_dir}" in allowed.err


def test_a_state_file_that_breaks_the_engine_is_started_afresh(hook: Hook) -> None:
    assert behave(hook, call(hook), *PRE).code == 0
    state_file = hook.state_dir / f"{SESSION}.json"
    state = json.loads(state_file.read_text(encoding="utf-8"))
    state["tool_calls_this_turn"] = "many"  # parses, then fails in the engine (a robot with a shell did it)
    state_file.write_text(json.dumps(state), encoding="utf-8")
    blocked = behave(hook, call(hook, "Bash", {"command": "rm -rf build"}), *PRE)
    assert blocked.code == 0 and "confirm_destructive" in denial(blocked.out)
    assert f"state file {state_file} is unusable (TypeError: " in blocked.err
    assert hook.state()["tool_calls_this_turn"] == 0  # nothing recorded for a blocked call; a fresh state
    assert behave(hook, call(hook), *PRE).code == 0 and hook.state()["tool_calls_this_turn"] == 1


def test_a_call_the_engine_cannot_judge_is_blocked(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure inside the engine blocks the call (with a crash log) instead of the old non-blocking
    internal error. The failure is injected into the standard library, for one path only: the
    ``os.path.exists`` a ``target_exists_on_disk`` condition asks."""
    import os

    from routedriver.cli.bhrain import bhrain_group

    rule = (
        "      - id: no_overwrite\n        trigger: [write]\n        action: warn\n"
        "        condition: { target_exists_on_disk: true }\n        message: '{target} exists'\n"
    )
    hook = Hook(tmp_path, CONFIG + rule)
    target = str(hook.project / "engine-breaks-here.py")
    real_exists = os.path.exists

    def exists(path: Any) -> bool:
        if str(path) == target:
            raise RuntimeError("the disk would not say")
        return real_exists(path)

    monkeypatch.chdir(hook.project)
    monkeypatch.setattr(os.path, "exists", exists)
    argv = ["behave", "--config", str(hook.config), "--state-dir", str(hook.state_dir), *PRE]
    runner = CliRunner()
    fine = runner.invoke(bhrain_group, argv, input=call(hook, "Write", {"file_path": "a.py", "content": "x"}))
    assert fine.exit_code == 0, fine.output
    done = runner.invoke(bhrain_group, argv, input=call(hook, "Write", {"file_path": target, "content": "x"}))
    assert done.exit_code == 2, done.output
    assert (
        "[BEHAVIOR BLOCKED] checking this call failed (internal error: RuntimeError: the disk would not say; "
        "details in " in done.output
    )
