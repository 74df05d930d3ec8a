"""The built-in tools and tool sets (``files``, ``bash``, ``websearch``) and the default toolbox."""

from __future__ import annotations

from collections.abc import Iterable

from routedriver.brain.tools.base import Tool, ToolSettings
from routedriver.brain.tools.bash import bash_tool
from routedriver.brain.tools.files import files_tools
from routedriver.errors import Refused

TOOL_SETS = ("files", "bash", "websearch")
READ_ONLY_FILES = ("read", "glob", "grep")


def parse_tool_sets(spec: str | Iterable[str]) -> list[str]:
    """``"files,bash"`` → ``["files", "bash"]``; ``"none"`` or ``""`` → no tools; unknown names refused."""
    parts = spec.split(",") if isinstance(spec, str) else list(spec)
    names = [p.strip().lower() for p in parts if p and p.strip()]
    if names == ["none"]:
        return []
    unknown = [n for n in names if n not in TOOL_SETS]
    if unknown:
        raise Refused(
            f"unknown tool set {', '.join(unknown)!s}", f"choose from {', '.join(TOOL_SETS)} (or none)"
        )
    return list(dict.fromkeys(names))


def builtin_tools(sets: Iterable[str], settings: ToolSettings, *, read_only: bool = False) -> list[Tool]:
    """The tools of the given sets; ``read_only`` keeps only read/glob/grep of ``files`` (ask, review)."""
    tools: list[Tool] = []
    for name in sets:
        if name == "files":
            tools.extend(t for t in files_tools() if not read_only or t.name in READ_ONLY_FILES)
        elif name == "bash":
            tools.append(bash_tool(settings))
        elif name == "websearch":
            # websearch loads urllib.request (~18 ms): only a run given the websearch set pays for it
            from routedriver.brain.tools.websearch import websearch_tool

            tools.append(websearch_tool(settings))
    return tools
