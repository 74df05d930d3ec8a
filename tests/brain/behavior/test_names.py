"""Trigger matching across bare, namespaced, double-underscore and MCP spellings, case-insensitively."""

from __future__ import annotations

import pytest

from routedriver.brain.behavior.names import ToolMatcher, split_tool


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("edit", ("", "edit")),
        ("Edit", ("", "edit")),
        ("filesystem.edit", ("filesystem", "edit")),
        ("filesystem__edit", ("filesystem", "edit")),
        ("mcp__github__create_issue", ("github", "create_issue")),
        ("Database.Execute", ("database", "execute")),
    ],
)
def test_split_tool(name: str, expected: tuple[str, str]) -> None:
    assert split_tool(name) == expected


@pytest.mark.parametrize(
    ("trigger", "tool", "matches"),
    [
        ("edit", "edit", True),
        ("edit", "Edit", True),
        ("edit", "filesystem.edit", True),
        ("edit", "filesystem__edit", True),
        ("edit", "EDIT", True),
        ("edit", "write", False),
        ("edit", "MultiEdit", False),
        ("edit", "editor", False),
        ("filesystem.edit", "filesystem.edit", True),
        ("filesystem.edit", "edit", True),
        ("filesystem.edit", "filesystem__edit", True),
        ("filesystem.edit", "other.edit", False),
        ("database.execute", "database__execute", True),
        ("database.execute", "mcp__database__execute", True),
        ("mcp__github__create_issue", "mcp__github__create_issue", True),
        ("github.create_issue", "mcp__github__create_issue", True),
        ("*", "anything_at_all", True),
        ("WebSearch", "websearch", True),
    ],
)
def test_trigger_matching(trigger: str, tool: str, matches: bool) -> None:
    assert ToolMatcher([trigger]).matches(tool) is matches


def test_lists_and_star_in_a_list() -> None:
    both = ToolMatcher(["edit", "write"])
    assert both.matches("Write") and both.matches("fs.edit") and not both.matches("read")
    assert ToolMatcher(["read", "*"]).matches("bash")
    assert not ToolMatcher([]).matches("edit") and not ToolMatcher([])
