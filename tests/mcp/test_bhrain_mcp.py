"""bhrain as an MCP client: the installed ``bhrain`` with the scripted atom calls the tools of real MCP stdio
servers (the project's ``route.mcp`` and a tiny server written with the SDK), through permission rules."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.brain.helpers import BHRAIN, bhrain, call, scripted_run, write_script
from tests.conftest import Ran
from tests.mcp.helpers import TINY_SERVER, ancestor, vision_route
from tests.route.routes import alive, pass_records, runs, state_files, steer

HERMETIC_ENV = {name: "${" + name + "}" for name in ("GIT_CONFIG_GLOBAL", "XDG_CACHE_HOME")}


def route_server() -> dict[str, Any]:
    return {"command": "route.mcp", "args": ["--route", "route"], "env": HERMETIC_ENV}


def tiny_server(tmp_path: Path, **env: str) -> dict[str, Any]:
    return {
        "command": sys.executable,
        "args": [str(TINY_SERVER)],
        "env": {"TINY_PID_FILE": str(tmp_path / "tiny.pid"), **env},
    }


def run_bhrain(
    tmp_path: Path,
    cwd: Path,
    turns: list[Any],
    config: dict[str, Any],
    *extra: str,
    env: dict[str, str] | None = None,
) -> tuple[Ran, list[dict[str, Any]], dict[str, Any]]:
    """Run the scripted ``turns`` with ``config`` (a bhrain config file); the calls and the trace."""
    script = write_script(tmp_path / "script.json", [*turns, {"text": "done"}])
    config_file = tmp_path / "bhrain.yaml"
    config_file.write_text(json.dumps(config), encoding="utf-8")  # JSON is YAML
    trace_file = tmp_path / "trace.json"
    trace_file.unlink(missing_ok=True)
    argv = [*scripted_run(script), "--input", "go", "--tools", "none", "--config", str(config_file)]
    ran = bhrain([*argv, "--trace", str(trace_file), *extra], cwd, env=env, timeout=120)
    assert trace_file.exists(), ran.err
    trace = json.loads(trace_file.read_text(encoding="utf-8"))
    calls = [record for iteration in trace["iterations"] for record in iteration["tool_calls"]]
    return ran, calls, trace


def permissions(**rules: Any) -> dict[str, Any]:
    return {"security": {"permissions": {"default": "deny", **rules}}}


def test_route_mcp_tools_are_called_by_their_mcp_names_and_permission_rules_apply(
    git_repo: Path, tmp_path: Path
) -> None:
    route = vision_route(git_repo)
    turns = [
        {"tool_calls": [call("mcp__route__route_next")]},
        {"tool_calls": [call("mcp__route__route_set_passed", stone="1.vision")]},
    ]
    config = {
        "mcpServers": {"route": route_server()},
        **permissions(allow=["mcp__route"], deny=["mcp__route__route_set_passed"]),
    }
    ran, calls, trace = run_bhrain(tmp_path, git_repo, turns, config)
    assert ran.code == 2, "the task ended right after a denied call"
    assert "stopped: the task ended after a tool call was denied (mcp__route__route_set_passed)" in ran.err
    assert [(c["name"], c["status"]) for c in calls] == [
        ("mcp__route__route_next", "ok"),
        ("mcp__route__route_set_passed", "denied"),
    ]
    assert calls[0]["output"].startswith("==> route/1.vision.stone (incomplete) <==\nWrite the vision.\n")
    assert "rule mcp__route__route_set_passed" in calls[1]["output"]
    assert runs(git_repo, "r1") == 0 and not pass_records(route, "1.vision")
    assert "mcp__route__route_set_passed" in trace["system"]

    # Allowed, the same call runs the guard; a rejection comes back as an error result with the feedback.
    steer(git_repo, "r1", out="## Blockers\n- names no user\nblockers: 1\nnitpicks: 0\n")
    config = {"mcpServers": {"route": route_server()}, **permissions(allow=["mcp__route__*"])}
    ran, calls, _ = run_bhrain(tmp_path, git_repo, turns, config)
    assert ran.code == 0, ran.err
    assert calls[1]["status"] == "error"
    assert calls[1]["output"].startswith("refused: error: 1.vision rejected by 1 of 1 judge")
    assert "- names no user" in calls[1]["output"]
    steer(git_repo, "r1", out="blockers: 0\nnitpicks: 0\n")
    (route / "1.vision.md").write_text("# Vision\nFor robots.\n", encoding="utf-8")  # new review input
    ran, calls, _ = run_bhrain(tmp_path, git_repo, turns, config)
    assert calls[1]["status"] == "ok" and calls[1]["output"].startswith("stone passed: 1.vision\n")
    assert pass_records(route, "1.vision")


def test_tool_results_text_structured_content_and_truncation(git_repo: Path, tmp_path: Path) -> None:
    turns = [
        {
            "tool_calls": [
                call("mcp__tiny__echo", text="hi"),
                call("mcp__tiny__shape", sides=3),
                call("mcp__tiny__picture"),
                call("mcp__tiny__refuse", why="no reason"),
                call("mcp__tiny__big", lines=5000),
                {"name": "mcp__tiny__env", "arguments": {"name": "GREETING"}},
                {"name": "mcp__tiny__env", "arguments": {"name": "TEST_API_TOKEN"}},
                call("mcp__tiny__echo"),
            ]
        }
    ]
    config = {
        "mcpServers": {"tiny": tiny_server(tmp_path, GREETING="${GREETING:-hello}")},
        "max_output_chars": 2000,
    }
    ran, calls, trace = run_bhrain(tmp_path, git_repo, turns, config, env={"TEST_API_TOKEN": "s3cr3t-value"})
    assert ran.code == 0, ran.err
    outputs = [c["output"] for c in calls]
    statuses = [c["status"] for c in calls]
    assert outputs[0] == "echo: hi", "a plain return value's structured twin is not repeated"
    assert json.loads(outputs[1]) == {"sides": 3, "name": "triangle"}
    assert outputs[2].startswith("[image image/png, 4 bytes: not shown]\na caption\nstructured content:\n")
    assert statuses[3] == "error" and "refused: no reason" in outputs[3]
    assert outputs[4].startswith("line 0\nline 1\n") and "[output truncated: " in outputs[4]
    assert len(outputs[4]) < 2300
    assert outputs[5] == "hello", "${GREETING:-hello} took its default"
    assert outputs[6] == "(unset)", "a secret reaches a server only when the configuration passes it"
    assert statuses[7] == "malformed" and "missing required argument: text" in outputs[7]
    assert statuses[:3] == ["ok", "ok", "ok"]
    assert "- MCP server tiny says: A tiny server for tests" in trace["system"]
    pid = int((tmp_path / "tiny.pid").read_text())
    assert not alive(pid), "the server is stopped when the run ends"


def test_a_behavior_rule_triggers_on_an_mcp_tool(git_repo: Path, tmp_path: Path) -> None:
    turns = [{"tool_calls": [call("mcp__tiny__echo", text="hi"), call("mcp__tiny__shape", sides=4)]}]
    rule = {
        "id": "no_echo",
        "trigger": ["mcp__tiny__echo"],
        "when": "pre_tool",
        "action": "block",
        "message": "echo is not allowed here",
    }
    config = {
        "mcpServers": {"tiny": tiny_server(tmp_path)},
        "security": {"behavior": {"rule_definitions": [rule]}},
    }
    ran, calls, _ = run_bhrain(tmp_path, git_repo, turns, config)
    assert [(c["name"], c["status"]) for c in calls] == [
        ("mcp__tiny__echo", "denied"),
        ("mcp__tiny__shape", "ok"),
    ], ran.err
    assert "echo is not allowed here" in calls[0]["output"]


def test_servers_that_fail_to_start_or_die_are_error_results_not_a_crash(
    git_repo: Path, tmp_path: Path
) -> None:
    turns = [
        {
            "tool_calls": [
                call("mcp__missing__anything"),
                call("mcp__broken__echo", text="x"),
                call("mcp__tiny__crash"),
            ]
        },
        {"tool_calls": [call("mcp__tiny__echo", text="still there?")]},
    ]
    config = {
        "mcpServers": {
            "missing": {"command": "no-such-mcp-server-xyz"},
            "broken": tiny_server(tmp_path, TINY_FAIL_AT_START="1"),
            "tiny": tiny_server(tmp_path),
        }
    }
    ran, calls, trace = run_bhrain(tmp_path, git_repo, turns, config)
    assert ran.code == 0, ran.err
    assert [c["status"] for c in calls] == ["error", "error", "error", "error"]
    missing, broken, crash, after = (c["output"] for c in calls)
    assert missing == (
        "mcp server missing failed to start: command not found: no-such-mcp-server-xyz; "
        "mcp__missing__anything was not run"
    )
    assert broken.startswith(
        "mcp server broken failed to start: it exited (or closed its output) before answering"
    )
    assert "(its stderr: tiny: cannot start: TINY_FAIL_AT_START is set)" in broken
    assert crash.startswith("mcp server tiny stopped: its connection closed")
    assert "(its stderr: tiny: crashing on purpose)" in crash
    assert after.startswith("mcp server tiny stopped: its connection closed") and "was not run" in after
    assert "warning" not in ran.err.lower() or "failed to start" in ran.err
    assert "bhrain: mcp server missing failed to start: command not found" in ran.err
    assert "- MCP server broken: failed to start" in trace["system"]


def test_a_server_that_never_answers_fails_after_mcp_timeout_and_is_stopped(
    git_repo: Path, tmp_path: Path
) -> None:
    silent = tmp_path / "silent.pid"
    turns = [{"tool_calls": [call("mcp__silent__anything")]}]
    config = {
        "mcpServers": {"silent": {"command": "bash", "args": ["-c", f"echo $$ > {silent}; exec sleep 60"]}}
    }
    started = time.monotonic()
    ran, calls, _ = run_bhrain(tmp_path, git_repo, turns, config, env={"MCP_TIMEOUT": "1500"})
    assert ran.code == 0, ran.err
    assert calls[0]["output"] == (
        "mcp server silent failed to start: no answer within 1.5 s (set MCP_TIMEOUT in milliseconds to wait "
        "longer); mcp__silent__anything was not run"
    )
    assert time.monotonic() - started < 40
    assert not alive(int(silent.read_text())), "the silent server was stopped"


def test_an_unset_variable_or_a_bad_block_is_refused_before_anything_starts(
    git_repo: Path, tmp_path: Path
) -> None:
    cases = [
        (
            {"tiny": {**tiny_server(tmp_path), "env": {"TOKEN": "${NOT_SET_ANYWHERE}"}}},
            "mcpServers.tiny.env.TOKEN uses ${NOT_SET_ANYWHERE}, which is not set; set NOT_SET_ANYWHERE",
        ),
        ({"tiny": {**tiny_server(tmp_path), "url": "http://x"}}, "mcpServers.tiny.url is not a known key"),
        ({"web": {"type": "http", "command": "x"}}, "mcpServers.web.type is 'http'; bhrain starts stdio"),
        ({"a.b": {"command": "x"}}, "mcpServers.a.b: the server name 'a.b' is not valid"),
        ({"a__b": {"command": "x"}}, "mcpServers.a__b: the server name 'a__b' is not valid"),
        ({"tiny": {"command": ""}}, "mcpServers.tiny.command must be a non-empty string"),
        ({"tiny": {"command": "x", "args": "--route r"}}, "mcpServers.tiny.args must be a list of strings"),
        (
            {"tiny": {"command": "x", "env": {"PORT": 8080}}},
            "mcpServers.tiny.env.PORT must be a string, not int",
        ),
        (["tiny"], "mcpServers must be a mapping of server names to servers"),
    ]
    script = write_script(tmp_path / "script.json", [{"text": "never"}])
    for block, message in cases:
        config = tmp_path / "bhrain.yaml"
        config.write_text(json.dumps({"mcpServers": block}), encoding="utf-8")
        ran = bhrain([*scripted_run(script), "--input", "go", "--config", str(config)], git_repo)
        assert ran.code == 2, (block, ran.err)
        assert ran.err.count("\n") == 1 and ran.err.startswith("error: config file "), ran.err
        assert message in ran.err, (message, ran.err)
    assert not (tmp_path / "tiny.pid").exists(), "no server started"


def test_mcp_config_flag_reads_a_dot_mcp_json_and_replaces_the_config_block(
    git_repo: Path, tmp_path: Path
) -> None:
    dot_mcp = tmp_path / ".mcp.json"
    dot_mcp.write_text(json.dumps({"mcpServers": {"tiny": tiny_server(tmp_path)}}), encoding="utf-8")
    turns = [
        {
            "tool_calls": [
                call("mcp__tiny__echo", text="from the flag"),
                call("mcp__other__echo"),
                call("mcp__tiny__no_such_tool"),
            ]
        }
    ]
    config = {"mcpServers": {"other": {"command": "no-such-mcp-server-xyz"}}}
    ran, calls, _ = run_bhrain(tmp_path, git_repo, turns, config, "--mcp-config", str(dot_mcp))
    assert ran.code == 0, ran.err
    assert calls[0]["output"] == "echo: from the flag"
    assert calls[1]["status"] == "not_found", "the config file's servers were replaced by the flag's"
    assert calls[2]["status"] == "not_found", "a running server's unknown tool is not found, as any other"
    assert calls[2]["output"].startswith("tool not found: mcp__tiny__no_such_tool; available: mcp__tiny__")
    missing = bhrain(["run", "--mcp-config", str(tmp_path / "nope.json")], git_repo)
    assert missing.code == 2 and missing.err.startswith(
        f"error: MCP config file {tmp_path / 'nope.json'} not found"
    )


def test_ctrl_c_stops_the_run_and_its_servers(git_repo: Path, tmp_path: Path) -> None:
    sleeping = tmp_path / "sleeping.pid"
    script = write_script(tmp_path / "script.json", [{"tool_calls": [call("mcp__tiny__sleep", seconds=60)]}])
    config = tmp_path / "bhrain.yaml"
    config.write_text(
        json.dumps({"mcpServers": {"tiny": tiny_server(tmp_path, TINY_SLEEP_FILE=str(sleeping))}}),
        encoding="utf-8",
    )
    argv = [BHRAIN, *scripted_run(script), "--input", "go", "--tools", "none", "--config", str(config)]
    process = subprocess.Popen(
        argv,
        cwd=git_repo,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not sleeping.exists():
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the tool never ran"
            time.sleep(0.05)
        server = int((tmp_path / "tiny.pid").read_text())
        assert alive(server)
        os.kill(process.pid, signal.SIGINT)
        out, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, err
    assert err.strip().splitlines()[-1] == "error: interrupted"
    assert not alive(server), "Ctrl-C stopped the MCP server too"


def test_ctrl_c_during_route_set_passed_leaves_no_review_and_no_server(
    git_repo: Path, tmp_path: Path
) -> None:
    from tests.route.routes import write

    vision_route(git_repo)
    write(git_repo / ".ctl" / "r1.sleep", "60")
    script = write_script(
        tmp_path / "script.json", [{"tool_calls": [call("mcp__route__route_set_passed", stone="1.vision")]}]
    )
    config = tmp_path / "bhrain.yaml"
    config.write_text(json.dumps({"mcpServers": {"route": route_server()}}), encoding="utf-8")
    argv = [BHRAIN, *scripted_run(script), "--input", "go", "--tools", "none", "--config", str(config)]
    process = subprocess.Popen(
        argv,
        cwd=git_repo,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    review_pid_file = git_repo / ".ctl" / "r1.pid"
    try:
        deadline = time.monotonic() + 60
        while not review_pid_file.exists():
            assert process.poll() is None, process.communicate()
            assert time.monotonic() < deadline, "the review never started"
            time.sleep(0.05)
        review = int(review_pid_file.read_text())
        server = ancestor(review, b"route.mcp")
        os.kill(process.pid, signal.SIGINT)
        _, err = process.communicate(timeout=30)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, err
    deadline = time.monotonic() + 10
    while alive(review) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(review), "the review route.mcp ran for the call is gone too"
    assert not alive(server), "and so is route.mcp"
    assert [n for n in state_files(git_repo / "route") if ".review." in n or n.endswith(".passed")] == []


@pytest.mark.parametrize("name", ["mcp__tiny__echo", "mcp__tiny"])
def test_permission_rules_name_mcp_tools_like_claude_code(name: str, git_repo: Path, tmp_path: Path) -> None:
    turns = [{"tool_calls": [call("mcp__tiny__echo", text="x"), call("mcp__tiny__shape", sides=3)]}]
    config = {"mcpServers": {"tiny": tiny_server(tmp_path)}, **permissions(allow=[name])}
    _, calls, _ = run_bhrain(tmp_path, git_repo, turns, config)
    expected = ["ok", "ok"] if name == "mcp__tiny" else ["ok", "denied"]
    assert [c["status"] for c in calls] == expected
