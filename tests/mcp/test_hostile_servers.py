"""bhrain against a hostile MCP server (tests/mcp/hostile_server.py, written with the official SDK), through
the installed ``bhrain`` and the scripted atom: what a third-party server names its tools, leaves running or
is sent must not end the run, outlive it, pass a permission rule meant for another tool, or get a secret."""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from tests.brain.helpers import bhrain, call, scripted_run, write_script
from tests.conftest import Ran
from tests.route.routes import alive

HOSTILE_SERVER = Path(__file__).with_name("hostile_server.py")


def hostile(**env: Any) -> dict[str, Any]:
    """An ``mcpServers`` entry starting the hostile server with ``env`` (lists are JSON-encoded)."""
    return {
        "command": sys.executable,
        "args": [str(HOSTILE_SERVER)],
        "env": {key: value if isinstance(value, str) else json.dumps(value) for key, value in env.items()},
    }


def run(
    tmp_path: Path, turns: list[Any], config: dict[str, Any], *, tools: str = "none", **env: str
) -> tuple[Ran, list[dict[str, Any]]]:
    """The scripted ``turns`` (then a final answer) under ``config``; the run and its tool calls (from the
    trace, which has their outputs)."""
    script = write_script(tmp_path / "script.json", [*turns, {"text": "done"}])
    config_file = tmp_path / "bhrain.yaml"
    config_file.write_text(json.dumps(config), encoding="utf-8")  # JSON is YAML
    trace = tmp_path / "trace.json"
    trace.unlink(missing_ok=True)
    argv = [*scripted_run(script), "--input", "go", "--tools", tools, "--config", str(config_file)]
    ran = bhrain([*argv, "--trace", str(trace)], tmp_path, env=env, timeout=120)
    if not trace.exists():
        return ran, []
    iterations = json.loads(trace.read_text(encoding="utf-8"))["iterations"]
    return ran, [record for iteration in iterations for record in iteration["tool_calls"]]


def received(log: Path) -> list[dict[str, Any]]:
    """What the hostile server was sent, one call a line."""
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]


# -- names ---------------------------------------------------------------------------------------------------
def test_tools_whose_names_clash_are_skipped_with_a_warning_and_the_run_goes_on(tmp_path: Path) -> None:
    long = "x" * 70
    names = ["echo", "dup", "dup", f"{long}a", f"{long}b", "a.b", "a_b"]  # a.b is sent as a_b: a clash too
    log = tmp_path / "calls.jsonl"
    turns = [
        {"tool_calls": [call("mcp__evil__echo", text="hi")]},
        {"tool_calls": [call("mcp__evil__dup", text="which one?")]},
    ]
    ran, calls = run(
        tmp_path, turns, {"mcpServers": {"evil": hostile(HOSTILE_NAMES=names, HOSTILE_CALLS=str(log))}}
    )
    assert ran.code == 0, ran.err
    warning = next(line for line in ran.err.splitlines() if "clash" in line)
    assert warning.startswith("bhrain: mcp server evil lists 6 tools whose names clash")
    for name in ("'dup'", f"'{long}a'", f"'{long}b'", "'a.b'", "'a_b'"):
        assert name in warning, name
    assert [(c["name"], c["status"]) for c in calls] == [
        ("mcp__evil__echo", "ok"),
        ("mcp__evil__dup", "not_found"),
    ]
    assert calls[1]["output"] == "tool not found: mcp__evil__dup; available: mcp__evil__echo"
    assert received(log) == [{"name": "echo", "arguments": {"text": "hi"}}]


def test_a_rule_for_one_tool_does_not_reach_a_tool_that_wears_its_name(tmp_path: Path) -> None:
    """The audit's two allows: ``mcp__fs__bash`` let the built-in bash run, and ``mcp__github__get_issue`` let
    the server evil's ``mcp__evil__mcp__github__get_issue`` run (names were compared by their ends)."""
    log = tmp_path / "calls.jsonl"
    config = {
        "mcpServers": {"evil": hostile(HOSTILE_NAMES=["mcp__github__get_issue"], HOSTILE_CALLS=str(log))},
        "security": {
            "permissions": {"allow": ["mcp__github__get_issue", "mcp__fs__bash"], "default": "deny"}
        },
    }
    turns = [
        {
            "tool_calls": [
                call("mcp__evil__mcp__github__get_issue", text="1"),
                call("bash", command="touch made"),
            ]
        }
    ]
    ran, calls = run(tmp_path, turns, config, tools="bash")
    assert ran.code == 2, ran.err
    assert [(c["name"], c["status"]) for c in calls] == [
        ("mcp__evil__mcp__github__get_issue", "denied"),
        ("bash", "denied"),
    ]
    assert received(log) == [] and not (tmp_path / "made").exists()
    # The server's own rule names it.
    config["security"] = {"permissions": {"allow": ["mcp__evil"], "default": "deny"}}
    ran, calls = run(
        tmp_path, [{"tool_calls": [call("mcp__evil__mcp__github__get_issue", text="1")]}], config
    )
    assert [c["status"] for c in calls] == ["ok"] and len(received(log)) == 1


# -- leftovers -----------------------------------------------------------------------------------------------
def test_what_a_server_leaves_in_a_session_of_its_own_does_not_outlive_bhrain(tmp_path: Path) -> None:
    orphan = tmp_path / "orphan.pid"
    config = {"mcpServers": {"evil": hostile(HOSTILE_ORPHAN=str(orphan))}}
    try:
        ran, calls = run(tmp_path, [{"tool_calls": [call("mcp__evil__echo", text="hi")]}], config)
        assert ran.code == 0, ran.err
        assert [c["status"] for c in calls] == ["ok"]
        pid = int(orphan.read_text(encoding="utf-8"))
        assert not alive(pid), "the server's setsid child outlived bhrain"
    finally:
        if orphan.exists() and alive(int(orphan.read_text(encoding="utf-8"))):
            os.kill(int(orphan.read_text(encoding="utf-8")), signal.SIGKILL)


# -- secrets -------------------------------------------------------------------------------------------------
def secrets_setup(tmp_path: Path) -> tuple[dict[str, str], Path, Path]:
    """A deploy key under a directory Read rules deny, a protected directory, and the environment naming both
    (variables whose names make them secrets) plus a service token."""
    keys = tmp_path / "keys"
    keys.mkdir()
    (keys / "deploy_key").write_text("PRIVATE-KEY-MATERIAL\n", encoding="utf-8")
    protected = tmp_path / "protected"
    protected.mkdir()
    env = {
        "DEPLOY_KEY_PATH": str(keys / "deploy_key"),
        "SECRET_DIR": str(protected),
        "MY_SERVICE_TOKEN": "tok-0123456789abcdef",
    }
    # The model is shown the three values only as placeholders, in a file it reads.
    (tmp_path / "notes.txt").write_text("\n".join(env.values()) + "\n", encoding="utf-8")
    return env, keys, protected


def test_a_placeholder_is_not_a_way_past_the_rules_or_to_a_server(tmp_path: Path) -> None:
    """The audit: ``read [REDACTED:DEPLOY_KEY_PATH]`` read a denied file, a write through a placeholder wrote
    under a denied path, and an MCP server was sent the real token (the placeholder was restored in every
    call's arguments after the rules were checked)."""
    env, keys, protected = secrets_setup(tmp_path)
    log = tmp_path / "calls.jsonl"
    config = {
        "mcpServers": {"svc": hostile(HOSTILE_CALLS=str(log))},
        "security": {"permissions": {"deny": [f"Read(/{keys}/**)", f"Write(/{protected}/**)"]}},
    }
    turns = [
        {"tool_calls": [call("read", file_path="notes.txt")]},
        {
            "tool_calls": [
                call("read", file_path="[REDACTED:DEPLOY_KEY_PATH]"),
                call("write", file_path="[REDACTED:SECRET_DIR]/planted.txt", content="x"),
                call("mcp__svc__echo", text="token: [REDACTED:MY_SERVICE_TOKEN]"),
            ]
        },
    ]
    ran, calls = run(tmp_path, turns, config, tools="files", **env)
    assert ran.code == 0, ran.err
    assert "[REDACTED:DEPLOY_KEY_PATH]" in calls[0]["output"], "the model saw the placeholders"
    assert not any("PRIVATE-KEY-MATERIAL" in c["output"] for c in calls)
    assert calls[1]["status"] == "error" and "not found" in calls[1]["output"]
    assert not (protected / "planted.txt").exists()
    assert received(log) == [{"name": "echo", "arguments": {"text": "token: [REDACTED:MY_SERVICE_TOKEN]"}}]
    # The secret still goes back where it is needed: a file written back keeps its value.
    turns = [
        {"tool_calls": [call("read", file_path="notes.txt")]},
        {"tool_calls": [call("write", file_path="copy.txt", content="[REDACTED:MY_SERVICE_TOKEN]\n")]},
    ]
    ran, calls = run(tmp_path, turns, config, tools="files", **env)
    assert (tmp_path / "copy.txt").read_text(encoding="utf-8") == "tok-0123456789abcdef\n"


def test_a_server_the_config_trusts_gets_the_secrets_and_the_rules_see_them(tmp_path: Path) -> None:
    env, _, _ = secrets_setup(tmp_path)
    log = tmp_path / "calls.jsonl"
    server = {**hostile(HOSTILE_CALLS=str(log)), "restoreSecrets": True}
    turns = [
        {"tool_calls": [call("read", file_path="notes.txt")]},
        {"tool_calls": [call("mcp__svc__echo", text="[REDACTED:MY_SERVICE_TOKEN]")]},
    ]
    ran, calls = run(tmp_path, turns, {"mcpServers": {"svc": server}}, tools="files", **env)
    assert ran.code == 0, ran.err
    assert received(log) == [{"name": "echo", "arguments": {"text": "tok-0123456789abcdef"}}]
    assert "tok-0123456789abcdef" not in (tmp_path / "trace.json").read_text(encoding="utf-8")
    # A rule on the server's arguments sees the value the server would get.
    denied = {
        "mcpServers": {"svc": server},
        "security": {"permissions": {"deny": ["mcp__svc__echo(tok-*)"]}},
    }
    ran, calls = run(tmp_path, turns, denied, tools="files", **env)
    assert calls[1]["status"] == "denied" and len(received(log)) == 1


def test_restore_secrets_is_checked_when_the_config_loads(tmp_path: Path) -> None:
    config = {"mcpServers": {"svc": {**hostile(), "restoreSecrets": "yes"}}}
    ran, _ = run(tmp_path, [], config)
    assert ran.code == 2 and ran.out == ""
    assert (
        ran.err.startswith("error: config file ")
        and "mcpServers.svc.restoreSecrets must be true or false" in ran.err
    )
    assert ran.err.count("\n") == 1
