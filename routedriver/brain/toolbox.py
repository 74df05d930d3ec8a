"""Toolboxes (named groups of tools) and the registry that merges them for one session.

The registry can change while the loop runs (a tool, a hook or another thread may add or remove a toolbox);
the loop reads ``snapshot()`` at the start of every iteration, so the next request's tool list and system
prompt always match what will actually run. A name that two toolboxes both define is refused when the second
is added, naming both.

Tool names on the wire: Anthropic accepts ``^[a-zA-Z0-9_-]{1,64}$``, so ``database.execute`` is sent as
``database__execute`` (other characters become ``_``) and mapped back when the model calls it.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from routedriver.brain.tools.base import Tool, ToolFunction
from routedriver.errors import Refused
from routedriver.llm.types import ToolSpec

_WIRE_UNSAFE = re.compile(r"[^a-zA-Z0-9_-]")


def wire_name(name: str) -> str:
    return _WIRE_UNSAFE.sub("_", name.replace(".", "__"))[:64] or "_"


class ToolboxConflict(Refused):
    """Two toolboxes define the same tool name (or the same toolbox twice)."""


class Toolbox:
    """A named set of tools, e.g. the built-in ``default`` toolbox or a user's ``database`` toolbox."""

    def __init__(self, name: str, tools: Iterable[Tool] = (), *, description: str = "") -> None:
        self.name = name
        self.description = description
        self.tools: dict[str, Tool] = {}
        self._wire: dict[str, str] = {}  # wire name → tool name: adding a tool is one lookup, not a scan
        self._wire_of: dict[str, str] = {}  # tool name → wire name, computed once
        # Asked for a name no toolbox defines (e.g. an MCP server's tool while the server is down): a Tool
        # that answers for it, or None. Lets a toolbox say why a name it owns cannot run.
        self.fallback: Callable[[str], Tool | None] | None = None
        for tool in tools:
            self.add(tool)

    def add(self, tool: Tool) -> Tool:
        if tool.name in self.tools:
            raise ToolboxConflict(f"toolbox {self.name!r} defines the tool {tool.name!r} twice", "rename one")
        wire = wire_name(tool.name)
        same = self._wire.get(wire)  # a.b and a__b
        if same is not None:
            raise ToolboxConflict(
                f"toolbox {self.name!r} defines the tools {same!r} and {tool.name!r}, which are both sent "
                f"to the model as {wire!r}",
                "rename one",
            )
        self.tools[tool.name] = tool
        self._wire[wire] = tool.name
        self._wire_of[tool.name] = wire
        return tool

    def wire_of(self, name: str) -> str:
        """The name the tool ``name`` of this toolbox is sent to the model as."""
        return self._wire_of.get(name) or wire_name(name)

    def tool(
        self, name: str, description: str, input_schema: Mapping[str, Any], *, read_only: bool = False
    ) -> Callable[[ToolFunction], ToolFunction]:
        """Decorator: ``@box.tool("db.query", "Run a query", schema(...))`` registers the function."""

        def register(fn: ToolFunction) -> ToolFunction:
            self.add(Tool(name, description, input_schema, fn, read_only=read_only))
            return fn

        return register

    def __repr__(self) -> str:
        return f"Toolbox({self.name!r}, tools={list(self.tools)})"


@dataclass(frozen=True)
class RegistrySnapshot:
    version: int
    specs: tuple[ToolSpec, ...]
    names: tuple[str, ...]
    prompt: str


class ToolRegistry:
    """The merged, thread-safe set of toolboxes one session uses."""

    def __init__(self, toolboxes: Iterable[Toolbox] = ()) -> None:
        self._lock = threading.RLock()
        self._toolboxes: dict[str, Toolbox] = {}
        self._owner: dict[str, str] = {}  # tool name → toolbox name
        self._by_wire: dict[str, str] = {}  # wire name → tool name
        self.version = 0
        for toolbox in toolboxes:
            self.add(toolbox)

    def add(self, toolbox: Toolbox) -> None:
        with self._lock:
            if toolbox.name in self._toolboxes:
                raise ToolboxConflict(
                    f"a toolbox named {toolbox.name!r} is already loaded", "rename one of them"
                )
            for name in toolbox.tools:
                other = self._owner.get(name) or self._owner.get(self._by_wire.get(toolbox.wire_of(name), ""))
                if other is not None:
                    raise ToolboxConflict(
                        f"toolboxes {other!r} and {toolbox.name!r} both define the tool {name!r}",
                        "remove one of them or rename the tool",
                    )
            self._toolboxes[toolbox.name] = toolbox
            for name in toolbox.tools:
                self._owner[name] = toolbox.name
                self._by_wire[toolbox.wire_of(name)] = name
            self.version += 1

    def remove(self, toolbox_name: str) -> Toolbox:
        with self._lock:
            toolbox = self._toolboxes.pop(toolbox_name, None)
            if toolbox is None:
                raise Refused(
                    f"no toolbox named {toolbox_name!r} is loaded", f"loaded: {', '.join(self._toolboxes)}"
                )
            for name in toolbox.tools:
                self._owner.pop(name, None)
                self._by_wire.pop(toolbox.wire_of(name), None)
            self.version += 1
            return toolbox

    def toolbox_names(self) -> list[str]:
        with self._lock:
            return list(self._toolboxes)

    def lookup(self, name: str) -> Tool | None:
        """The tool called ``name``, given as its own name or its wire name."""
        found = self.find(name)
        return found[0] if found is not None else None

    def find(self, name: str) -> tuple[Tool, str] | None:
        """The tool called ``name`` (its own name or its wire name) and the name of the toolbox that answers
        for it: permission rules tell the built-in ``bash`` (toolbox ``default``) from an MCP server's."""
        with self._lock:
            owner = self._owner.get(name)
            if owner is None and name in self._by_wire:
                name = self._by_wire[name]
                owner = self._owner.get(name)
            if owner is not None:
                return self._toolboxes[owner].tools[name], owner
            for box in self._toolboxes.values():
                found = box.fallback(name) if box.fallback is not None else None
                if found is not None:
                    return found, box.name
            return None

    def names(self) -> list[str]:
        with self._lock:
            return [name for box in self._toolboxes.values() for name in box.tools]

    def snapshot(self) -> RegistrySnapshot:
        with self._lock:
            specs = tuple(
                tool.spec(box.wire_of(name))
                for box in self._toolboxes.values()
                for name, tool in box.tools.items()
            )
            return RegistrySnapshot(self.version, specs, tuple(self.names()), self._prompt())

    def _prompt(self) -> str:
        if not self._owner:
            return "## Tools\nNo tools are available in this session: answer from what you know."
        lines = ["## Tools", "You can call these tools (grouped by toolbox):"]
        for box in self._toolboxes.values():
            if not box.tools:
                continue
            lines.append(f"- {box.name}" + (f": {box.description}" if box.description else ""))
            for name, tool in box.tools.items():
                summary = tool.description.strip().splitlines()[0] if tool.description.strip() else ""
                wire = box.wire_of(name)
                shown = wire if wire == tool.name else f"{wire} ({tool.name})"
                lines.append(f"  - {shown}: {summary}")
        return "\n".join(lines)
