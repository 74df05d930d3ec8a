"""The real Codex CLI (npm ``@openai/codex``, pinned in ``clients.py``) driving a route through ``route.mcp``,
against a scripted OpenAI Responses API on 127.0.0.1 (streamed; a call's arguments cut into deltas).
Codex offers an MCP server's tools as one namespace (``mcp__route``) and hands the model a result's
structured content instead of its text when there is some: the model must read the guidance."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.e2e.clients import VENV_BIN, codex_config, run_codex
from tests.e2e.conftest import AnthropicServer, ResponsesServer, keep_stones, route_command, serving
from tests.e2e.model import ScriptedModel, Seen, Steps, codex_call, say, use
from tests.e2e.test_claude_code import ROUTE_TOOLS, SPEC, heredoc
from tests.fakes.llm_servers import Reply

ROUTE = "mcp__route"


def answered(seen: Seen, tool: str, *fragments: str) -> str:
    result = seen.last
    assert result.tool == tool, (seen.number, result)
    for fragment in fragments:
        assert fragment in result.text, (seen.number, fragment, result.text[:2000])
    return result.text


def test_the_mcp_loop_through_route_mcp(codex: Path, project: Path, tmp_path: Path) -> None:
    keep_stones(project, "1.spec")

    def first(seen: Seen) -> Reply:
        namespaces = [tool for tool in seen.body["tools"] if tool.get("type") == "namespace"]
        route = next(tool for tool in namespaces if tool["name"] == ROUTE)
        assert sorted(tool["name"] for tool in route["tools"]) == sorted(ROUTE_TOOLS)
        assert route["description"].startswith("route.mcp drives a route")  # the server's instructions
        return codex_call(ROUTE, "route_next")

    def write(seen: Seen) -> Reply:
        text = answered(seen, f"{ROUTE}.route_next", "==> routes/feature/1.spec.stone (incomplete) <==")
        assert "when 1.spec's artifact is written: call route_set_passed with stone '1.spec'" in text
        assert '"stones"' not in text  # the guidance, not route.stone.get's JSON document
        return use("exec_command", cmd=heredoc("routes/feature/1.spec.md", SPEC))

    def set_passed(seen: Seen) -> Reply:
        answered(seen, "exec_command")
        return codex_call(ROUTE, "route_set_passed", stone="1.spec")

    def status(seen: Seen) -> Reply:
        answered(seen, f"{ROUTE}.route_set_passed", "stone passed: 1.spec\n", "files:")
        return codex_call(ROUTE, "route_status")

    def done(seen: Seen) -> Reply:
        board = answered(seen, f"{ROUTE}.route_status")
        assert json.loads(board[board.index("{") :])["complete"] is True
        return say("The route is done.")

    robot = Steps([first, write, set_passed, status, done])
    model = ScriptedModel(robot, wire="responses")
    reviewer = ScriptedModel(lambda seen: say("no agent turns here"))
    with (
        serving(AnthropicServer, reviewer, tmp_path / "reviews.jsonl") as reviews,
        serving(ResponsesServer, model, tmp_path / "requests.jsonl") as server,
    ):
        mcp_env = {
            "PATH": f"{VENV_BIN}{os.pathsep}/usr/bin{os.pathsep}/bin",
            "ANTHROPIC_BASE_URL": reviews.base_url,  # route.mcp's reviews (bhrain, --atom claude)
            "ANTHROPIC_API_KEY": "sk-ant-e2e-dummy-key",
            **{
                name: os.environ[name]
                for name in ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM")
                if name in os.environ
            },
        }
        config = codex_config(server.base_url, mcp_env=mcp_env)
        run = run_codex(codex, project, tmp_path / "home", config, "Use the route tools to finish the route.")
    model.check()
    reviewer.check()
    assert run.code == 0, run.stderr
    assert robot.taken == len(robot.steps) == len(model.turns)
    assert len(reviewer.reviews) == 1
    calls = [e["item"] for e in run.of_type("item.completed") if e["item"].get("type") == "mcp_tool_call"]
    assert [(call["tool"], call["status"]) for call in calls] == [
        ("route_next", "completed"),
        ("route_set_passed", "completed"),
        ("route_status", "completed"),
    ]
    status = json.loads(route_command(project, "route.status", "--route", "routes/feature", "--json"))
    assert status["routes"][0]["complete"] is True
