"""Permission rules on MCP tools, as a table: Claude Code's names (mcp__<server>__<tool>, mcp__<server>,
mcp__<server>__*), and the spellings that must NOT reach another server's tools."""

from __future__ import annotations

from pathlib import Path

import pytest

from routedriver.brain.hooks import ToolEvent
from routedriver.brain.permissions.rules import policy_from_block
from routedriver.errors import Refused
from routedriver.mcp.client import tool_name

# (rule, tool called, whether the rule covers it)
COVERS = [
    ("mcp__route__route_set_passed", "mcp__route__route_set_passed", True),
    ("mcp__route__route_set_passed", "mcp__route__route_next", False),
    ("mcp__route", "mcp__route__route_set_passed", True),
    ("mcp__route__*", "mcp__route__route_set_passed", True),
    ("MCP__Route", "mcp__route__route_next", True),  # names match case-insensitively, as other rules do
    ("mcp__route", "mcp__router__route_next", False),  # a server whose name starts the same is another
    ("mcp__route", "mcp__other__route", False),
    ("mcp__route__*", "mcp__router__x", False),
    ("mcp__ro", "mcp__route__x", False),
    ("mcp__route", "read", False),
]


@pytest.mark.parametrize(("rule", "tool", "covered"), COVERS)
def test_a_deny_rule_covers_exactly_its_mcp_tools(rule: str, tool: str, covered: bool) -> None:
    policy = policy_from_block({"deny": [rule]}, base_dir=Path("."), workdir=Path("."), where="perms")
    decision = policy.decide(ToolEvent("c1", tool, {"stone": "1.vision"}, 1, 0))
    assert decision.action == ("deny" if covered else "allow"), (rule, tool, decision)


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
