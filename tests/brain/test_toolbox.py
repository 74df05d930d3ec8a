"""Toolboxes: merged, conflicts refused, added and removed at runtime: seed 000 usecase 7."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from routedriver.brain.toolbox import Toolbox, ToolboxConflict, ToolRegistry, wire_name
from routedriver.brain.tools.base import Tool, ToolContext, schema
from tests.brain.helpers import bhrain, call, make_loop, scripted_run, tool_results, write_script
from tests.conftest import Ran


def echo_tool(name: str, reply: str = "") -> Tool:
    def run(args: Mapping[str, Any], ctx: ToolContext) -> str:
        return reply or f"{name} ran with {dict(args)}"

    return Tool(name, f"The {name} tool.", schema({"q": {"type": "string"}}), run)


def test_multiple_toolboxes_are_merged_and_the_system_prompt_lists_them(tmp_path: Path) -> None:
    db = Toolbox("database", [echo_tool("database.execute"), echo_tool("database.backup")], description="SQL")
    web = Toolbox("web", [echo_tool("fetch")])
    loop, scripted = make_loop(
        tmp_path,
        [
            {"tool_calls": [call("database__execute", q="select 1"), call("fetch", q="x")]},
            {"text": "ok"},
        ],
        registry=ToolRegistry([db, web]),
    )
    loop.run("go")
    first = scripted.requests[0]
    assert [s.name for s in first.tools] == ["database__execute", "database__backup", "fetch"]
    assert "- database: SQL" in first.system
    assert "database__execute (database.execute): The database.execute tool." in first.system
    assert "- web" in first.system and "fetch: The fetch tool." in first.system
    assert tool_results(scripted, 2) == [
        "database.execute ran with {'q': 'select 1'}",
        "fetch ran with {'q': 'x'}",
    ]


def test_conflicting_names_are_refused_naming_both_toolboxes() -> None:
    with pytest.raises(ToolboxConflict, match="toolboxes 'a' and 'b' both define the tool 'read'"):
        ToolRegistry([Toolbox("a", [echo_tool("read")]), Toolbox("b", [echo_tool("read")])])
    with pytest.raises(ToolboxConflict, match="both define the tool 'x.y'"):
        ToolRegistry(
            [Toolbox("a", [echo_tool("x__y")]), Toolbox("b", [echo_tool("x.y")])]
        )  # same on the wire
    with pytest.raises(ToolboxConflict, match="defines the tool 'read' twice"):
        Toolbox("a", [echo_tool("read"), echo_tool("read")])
    with pytest.raises(ToolboxConflict, match="'a.b' and 'a__b', which are both sent to the model as 'a__b'"):
        Toolbox("a", [echo_tool("a.b"), echo_tool("a__b")])  # the APIs refuse two tools of one name


def test_wire_names_fit_the_anthropic_pattern() -> None:
    assert wire_name("database.execute") == "database__execute"
    assert wire_name("my tool/v2!") == "my_tool_v2_"
    assert len(wire_name("x" * 100)) == 64


def test_a_toolbox_added_at_runtime_is_offered_and_routed_from_the_next_iteration(tmp_path: Path) -> None:
    extra = Toolbox("extra", [echo_tool("lookup", reply="looked up")])

    def install(args: Mapping[str, Any], ctx: ToolContext) -> str:
        assert ctx.registry is not None
        ctx.registry.add(extra)
        return "installed extra"

    loader = Toolbox("loader", [Tool("install", "Install the extra toolbox.", schema({}), install)])
    loop, scripted = make_loop(
        tmp_path,
        [
            {"tool_calls": [call("install")]},
            {"tool_calls": [call("lookup", q="x")]},
            {"text": "done"},
        ],
        registry=ToolRegistry([loader]),
    )
    loop.run("go")
    assert [s.name for s in scripted.requests[0].tools] == ["install"]
    assert [s.name for s in scripted.requests[1].tools] == ["install", "lookup"]
    assert "lookup: The lookup tool." in scripted.requests[1].system
    assert "lookup" not in scripted.requests[0].system
    assert tool_results(scripted, 3) == ["looked up"]


def test_a_toolbox_removed_at_runtime_is_gone_and_its_tools_are_not_found(tmp_path: Path) -> None:
    registry = ToolRegistry([Toolbox("keep", [echo_tool("stay")]), Toolbox("temp", [echo_tool("vanish")])])

    def drop(args: Mapping[str, Any], ctx: ToolContext) -> str:
        assert ctx.registry is not None
        ctx.registry.remove("temp")
        return "dropped"

    registry.add(Toolbox("admin", [Tool("drop", "Remove temp.", schema({}), drop)]))
    loop, scripted = make_loop(
        tmp_path,
        [
            {"tool_calls": [call("drop")]},
            {"tool_calls": [call("vanish", q="x")]},
            {"text": "done"},
        ],
        registry=registry,
    )
    result = loop.run("go")
    assert "vanish" not in [s.name for s in scripted.requests[1].tools]
    assert "vanish" not in scripted.requests[1].system
    assert tool_results(scripted, 3) == ["tool not found: vanish; available: stay, drop"]
    assert result.tool_calls[1].status == "not_found"


# -- through the installed command ---------------------------------------------------------------------------
PLUGIN = """
from routedriver.brain.toolbox import Toolbox
from routedriver.brain.tools.base import Tool, schema

def _run(args, ctx):
    return "rows: " + args["query"]

database = Toolbox("database", [
    Tool("database.execute", "Run SQL.", schema({"query": {"type": "string"}}, ("query",)), _run)])

def clashing():
    return Toolbox("clash", [Tool("read", "Another read.", schema({}), _run)])
"""


def run_with_plugin(tmp_path: Path, turns: list[Any], args: list[str]) -> Ran:
    """Run ``bhrain`` on a script with the PLUGIN module importable as ``dbtools``."""
    (tmp_path / "dbtools.py").write_text(PLUGIN, encoding="utf-8")
    script = write_script(tmp_path / "s.json", turns)
    return bhrain([*scripted_run(script), "--input", "q", *args], tmp_path, env={"PYTHONPATH": str(tmp_path)})


def test_cli_toolbox_alone_replaces_the_default_one(tmp_path: Path) -> None:
    ran = run_with_plugin(
        tmp_path,
        [
            {"tool_calls": [call("database__execute", query="select 1"), call("read", file_path="x")]},
            {"text": "done"},
        ],
        ["--toolbox", "dbtools:database", "--trace", "t.json", "--json"],
    )
    assert ran.code == 0, ran.err
    trace = json.loads((tmp_path / "t.json").read_text())
    assert trace["tools"] == ["database__execute"]
    assert [c["status"] for c in json.loads(ran.out)["tool_calls"]] == ["ok", "not_found"]
    assert json.loads(ran.out)["tool_calls"][0]["name"] == "database.execute"


def test_cli_toolbox_with_tools_merges_with_the_default_one(tmp_path: Path) -> None:
    args = ["--toolbox", "dbtools:database", "--tools", "files", "--trace", "t.json"]
    ran = run_with_plugin(tmp_path, [{"text": "done"}], args)
    assert ran.code == 0, ran.err
    assert json.loads((tmp_path / "t.json").read_text())["tools"] == [
        "read",
        "write",
        "edit",
        "glob",
        "grep",
        "database__execute",
    ]


def test_cli_conflicting_toolboxes_fail_at_configuration_time(tmp_path: Path) -> None:
    ran = run_with_plugin(
        tmp_path, [{"text": "never"}], ["--toolbox", "default", "--toolbox", "dbtools:clashing"]
    )
    assert ran.code == 2
    assert ran.err.strip() == (
        "error: toolboxes 'default' and 'clash' both define the tool 'read'; "
        "remove one of them or rename the tool"
    )
    assert ran.out == ""


def test_cli_bad_toolbox_paths_are_one_line_errors(tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", [{"text": "never"}])
    base = [*scripted_run(script), "--input", "q"]
    missing = bhrain([*base, "--toolbox", "nosuchmodule:box"], tmp_path)
    assert missing.code == 2 and "cannot import module 'nosuchmodule'" in missing.err
    wrong = bhrain([*base, "--toolbox", "json:dumps"], tmp_path)
    assert wrong.code == 2 and "toolbox json:dumps failed to build" in wrong.err
    assert len(wrong.err.strip().splitlines()) == 1
