"""Permission rules on MCP tools, as a table: Claude Code's names (mcp__<server>__<tool>, mcp__<server>,
mcp__<server>__*), and the spellings that must NOT reach another server's tools."""

from __future__ import annotations

from pathlib import Path

import pytest

from routedriver.brain.hooks import ToolEvent
from routedriver.brain.permissions.rules import policy_from_block
from routedriver.errors import Refused
from routedriver.mcp.client import tool_name

# (rule, tool called, the toolbox it belongs to, whether the rule covers it), as Claude Code names tools: a
# built-in name is that built-in tool; mcp__<server> and mcp__<server>__* are that server's tools;
# mcp__<server>__<tool> is that one tool. Never a comparison of name suffixes.
COVERS = [
    ("mcp__route__route_set_passed", "mcp__route__route_set_passed", "mcp__route", True),
    ("mcp__route__route_set_passed", "mcp__route__route_next", "mcp__route", False),
    ("mcp__route", "mcp__route__route_set_passed", "mcp__route", True),
    ("mcp__route__*", "mcp__route__route_set_passed", "mcp__route", True),
    ("MCP__Route", "mcp__route__route_next", "mcp__route", True),  # case-insensitively, as other rules
    ("mcp__route", "mcp__router__route_next", "mcp__router", False),  # a server whose name starts the same
    ("mcp__route", "mcp__other__route", "mcp__other", False),
    ("mcp__route__*", "mcp__router__x", "mcp__router", False),
    ("mcp__ro", "mcp__route__x", "mcp__route", False),
    ("mcp__route", "read", "default", False),
    ("mcp__route", "mcp__route__x", "", True),  # a caller that does not know the toolbox: read from the name
    # a server's tool is never the built-in of the same name, nor the reverse (the audit's allow of bash)
    ("mcp__fs__bash", "bash", "default", False),
    ("mcp__fs__bash", "bash", "", False),
    ("mcp__fs__bash", "mcp__fs__bash", "mcp__fs", True),
    ("Bash", "mcp__fs__bash", "mcp__fs", False),
    ("Bash", "bash", "default", True),
    ("Read", "mcp__fs__read", "mcp__fs", False),
    ("Read", "grep", "default", True),  # Read rules guard the search tools too
    ("Edit", "write", "default", True),
    ("WebSearch", "mcp__search__websearch", "mcp__search", False),
    # another server cannot wear a trusted server's tool name inside its own (the audit's suffix match)
    ("mcp__github__get_issue", "mcp__evil__mcp__github__get_issue", "mcp__evil", False),
    ("mcp__github", "mcp__evil__mcp__github__get_issue", "mcp__evil", False),
    ("mcp__github__*", "mcp__evil__mcp__github__get_issue", "mcp__evil", False),
    ("mcp__github__get_issue", "mcp__evil__mcp__github__get_issue", "", False),
    ("mcp__evil", "mcp__evil__mcp__github__get_issue", "mcp__evil", True),
    # a toolbox tool: its full name, or its bare name qualified by ITS toolbox
    ("extra.lookup", "lookup", "extra", True),
    ("extra__lookup", "lookup", "extra", True),
    ("extra.lookup", "lookup", "other", False),
    ("extra.lookup", "lookup", "", False),
    ("database__execute", "database.execute", "db", True),
    ("mcp__x__lookup", "lookup", "mcp__x", False),  # a toolbox is never qualified as an MCP server
]


@pytest.mark.parametrize(("rule", "tool", "toolbox", "covered"), COVERS)
def test_a_rule_covers_exactly_the_tools_it_names(rule: str, tool: str, toolbox: str, covered: bool) -> None:
    for kind, hit in (("deny", "deny"), ("allow", "allow")):
        other = "allow" if kind == "deny" else "deny"
        policy = policy_from_block(
            {kind: [rule], "default": other}, base_dir=Path("."), workdir=Path("."), where="perms"
        )
        decision = policy.decide(ToolEvent("c1", tool, {"stone": "1.vision"}, 1, 0, toolbox=toolbox))
        assert decision.action == (hit if covered else other), (kind, rule, tool, toolbox, decision)


# A bare MCP tool name is refused like any unknown tool (a typo must not silently match nothing): name it
# with its server, as Claude Code does.
@pytest.mark.parametrize("rule", ["mcp__*", "*", "mcp__route__route_*", "Bash__*", "route_set_passed"])
def test_other_wildcards_in_a_tool_name_are_refused_not_ignored(rule: str) -> None:
    with pytest.raises(Refused) as caught:
        policy_from_block({"allow": [rule]}, base_dir=Path("."), workdir=Path("."), where="perms")
    assert caught.value.line().startswith("error: perms.allow[0] ")


def test_a_specifier_matches_an_mcp_tools_arguments() -> None:
    policy = policy_from_block(
        {"ask": ["mcp__route__route_set_passed(9.*)"]}, base_dir=Path("."), workdir=Path("."), where="perms"
    )
    ask = policy.decide(ToolEvent("c1", "mcp__route__route_set_passed", {"stone": "9.ship"}, 1, 0))
    other = policy.decide(ToolEvent("c2", "mcp__route__route_set_passed", {"stone": "1.vision"}, 1, 0))
    assert (ask.action, other.action) == ("prompt", "allow")


def test_tool_names_are_claude_codes_and_fit_the_api() -> None:
    assert tool_name("route", "route_set_passed") == "mcp__route__route_set_passed"
    assert tool_name("gh", "get issue/1") == "mcp__gh__get_issue_1"
    assert len(tool_name("s", "x" * 100)) == 64
