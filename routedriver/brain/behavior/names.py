"""Tool names as rules see them: one tool, many spellings.

The same tool reaches the engine as ``edit`` (bhrain), ``Edit`` (Claude Code), ``filesystem.edit`` (a
toolbox), ``filesystem__edit`` (a toolbox name on the Anthropic wire) or ``mcp__filesystem__edit`` (an MCP
tool in Claude Code). All of them split into a namespace and a bare name, lower-cased:
``("filesystem", "edit")`` or ``("", "edit")``. A trigger without a namespace matches the bare name in any
namespace; a trigger with one matches that namespace, or a tool that arrives without any.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

ANY = "*"


@lru_cache(maxsize=512)
def split_tool(name: str) -> tuple[str, str]:
    """``"mcp__Server__Tool"`` → ``("server", "tool")``; ``"Edit"`` → ``("", "edit")``."""
    lowered = name.strip().lower().replace("__", ".")
    if lowered.startswith("mcp."):
        lowered = lowered[4:]
    namespace, _, bare = lowered.rpartition(".")
    return namespace, bare


def bare_name(name: str) -> str:
    return split_tool(name)[1]


class ToolMatcher:
    """A compiled list of tool names (or ``*``) that answers "does this tool match?" in O(1)."""

    __slots__ = ("any", "_namespaces", "names")

    def __init__(self, names: Iterable[str]) -> None:
        self.names = tuple(names)
        self.any = any(name.strip() == ANY for name in self.names)
        # bare name -> the namespaces allowed for it; None means "any namespace".
        self._namespaces: dict[str, set[str] | None] = {}
        for name in self.names:
            if name.strip() == ANY:
                continue
            namespace, bare = split_tool(name)
            if not namespace:
                self._namespaces[bare] = None
            elif bare not in self._namespaces:
                self._namespaces[bare] = {namespace}
            else:
                allowed = self._namespaces[bare]
                if allowed is not None:
                    allowed.add(namespace)

    def matches(self, tool: str) -> bool:
        if self.any:
            return True
        namespace, bare = split_tool(tool)
        if bare not in self._namespaces:
            return False
        allowed = self._namespaces[bare]
        return allowed is None or not namespace or namespace in allowed

    def __bool__(self) -> bool:
        return self.any or bool(self._namespaces)
