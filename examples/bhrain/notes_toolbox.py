"""An example toolbox: `bhrain run --toolbox notes_toolbox:notes …` (with this directory on PYTHONPATH).

Tools are plain functions taking ``(arguments, context)``; they return text (or a ``ToolOutcome``) and may
raise: the loop turns exceptions into error results. Names with a dot (``notes.add``) are sent to the model
as ``notes__add`` and mapped back.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from routedriver.brain.toolbox import Toolbox
from routedriver.brain.tools.base import ToolContext, schema

notes = Toolbox("notes", description="a scratch pad kept in NOTES.md")


@notes.tool("notes.add", "Append one line to NOTES.md.", schema({"line": {"type": "string"}}, ("line",)))
def add(args: Mapping[str, Any], ctx: ToolContext) -> str:
    with (ctx.workdir / "NOTES.md").open("a", encoding="utf-8") as handle:
        handle.write(args["line"].rstrip("\n") + "\n")
    return "noted"


@notes.tool("notes.list", "Show NOTES.md.", schema({}), read_only=True)
def list_notes(args: Mapping[str, Any], ctx: ToolContext) -> str:
    path = ctx.workdir / "NOTES.md"
    return path.read_text(encoding="utf-8") if path.exists() else "(no notes yet)"
