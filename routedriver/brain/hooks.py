"""The protocol through which parts watch and steer bhrain's loop without the loop knowing them.

The permission guard and the behavior engine are both ``LoopHook``s. The loop calls, in this order:

- ``system_prompt()`` once when the session starts; non-empty sections are appended to the system prompt.
- ``on_user_message(text)`` before the agent acts on a user message; returned notes (e.g. a classifier's
  ``[BEHAVIOR DIRECTIVE …]`` block) are added to the conversation right after that message.
- ``pre_tool(event)`` before each tool call; the first hook that blocks wins: the tool does not run and the
  verdict's ``reason`` becomes the call's error result. Notes of non-blocking verdicts (warnings) are put
  in front of the tool's result.
- ``post_tool(event, outcome)`` after each call; returned notes (reminders) are added after the result.
- ``on_text(text)`` on every assistant text; notes are attached to the tool results of that response, or,
  when the response made no tool calls, sent as one user message so the model can act on them (at most one
  such nudge in a row, so a rule can never keep the loop alive by itself).
- ``close()`` when the session ends (state is freed).

Hooks never raise into the loop: the loop treats an exception in ``pre_tool`` as a block (fail closed) and
an exception elsewhere as no notes, and logs it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ToolEvent:
    """A tool call as hooks see it."""

    call_id: str
    tool: str  # the name the model used, e.g. "edit" or "filesystem.edit"
    params: Mapping[str, Any]
    iteration: int  # 1-based loop iteration of the response that made the call
    index: int  # 0-based position of the call within its response
    text_before: str = ""  # what the model wrote in the same response before its tool calls
    # The toolbox that owns the tool ("default" for the built-ins, "mcp__<server>" for an MCP server's), so a
    # permission rule can tell the built-in ``bash`` from ``mcp__fs__bash``; "" when the caller does not know.
    toolbox: str = ""
    # The real path (symlinks resolved) of each argument that names a file (``file_path``, ``path``), as the
    # loop resolved it for this check: the file tools open exactly that path and follow no symlink on the way,
    # so a check of it holds for what the tool touches even if a name changes meanwhile. Empty when unknown.
    resolved: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class ToolOutcome:
    ok: bool
    output: str
    data: Mapping[str, Any] = field(default_factory=dict)  # structured extras: exit_code, lint, …


@dataclass(frozen=True)
class HookVerdict:
    block: bool = False
    reason: str = ""  # when blocked: the error result the model reads instead of the tool's output
    notes: tuple[str, ...] = ()  # when not blocked: warnings placed before the tool's result


ALLOW = HookVerdict()


class LoopHook:
    """Base class with do-nothing defaults; a hook overrides what it needs."""

    def system_prompt(self) -> str:
        return ""

    def on_user_message(self, text: str) -> tuple[str, ...]:
        return ()

    def pre_tool(self, event: ToolEvent) -> HookVerdict:
        return ALLOW

    def post_tool(self, event: ToolEvent, outcome: ToolOutcome) -> tuple[str, ...]:
        return ()

    def on_text(self, text: str) -> tuple[str, ...]:
        return ()

    def close(self) -> None:
        return None
