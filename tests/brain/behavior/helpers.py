"""Shared helpers for the behavior engine's tests: engines from YAML text, a scripted classifier model,
and a tiny driver that plays tool calls through a session the way the loop would."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from routedriver.brain.behavior.engine import BehaviorEngine, Decision
from routedriver.brain.behavior.resolve import resolve_behavior
from routedriver.brain.behavior.state import SessionState
from routedriver.llm.types import Completion, Message, ToolSpec, Usage


def resolved_from(block: Mapping[str, Any] | str, *, config_path: Path | None = None) -> dict[str, Any]:
    data = yaml.safe_load(block) if isinstance(block, str) else block
    resolved, _ = resolve_behavior(data, config_path=config_path or Path("config.yaml"))
    return resolved


def engine_from(
    block: Mapping[str, Any] | str, *, cwd: Path | str | None = None, config_path: Path | None = None
) -> BehaviorEngine:
    return BehaviorEngine(
        resolved_from(block, config_path=config_path), cwd=str(cwd) if cwd else "/work/repo"
    )


@dataclass
class Session:
    """Plays calls through one engine session: ``call(tool, **params)`` = pre_tool + post_tool."""

    engine: BehaviorEngine
    state: SessionState = field(init=False)
    counter: int = 0

    def __post_init__(self) -> None:
        self.state = self.engine.new_state("test")

    def turn(self, message: str = "do the task") -> None:
        self.engine.start_turn(self.state, message)

    def pre(self, tool: str, text: str | None = "I will look.", **params: Any) -> Decision:
        self.counter += 1
        return self.engine.pre_tool(
            self.state, call_id=f"c{self.counter}", tool=tool, params=params, text_before=text
        )

    def post(
        self,
        tool: str,
        *,
        ok: bool = True,
        data: Mapping[str, Any] | None = None,
        text: str | None = "I will look.",
        **params: Any,
    ) -> tuple[str, ...]:
        return self.engine.post_tool(
            self.state,
            call_id=f"c{self.counter}",
            tool=tool,
            params=params,
            ok=ok,
            data=data,
            text_before=text,
        )

    def call(
        self,
        tool: str,
        *,
        data: Mapping[str, Any] | None = None,
        text: str | None = "I will look.",
        **params: Any,
    ) -> tuple[Decision, tuple[str, ...]]:
        decision = self.pre(tool, text=text, **params)
        if decision.block:
            return decision, ()
        return decision, self.post(tool, data=data, text=text, **params)


def fired(decision: Decision | Sequence[str]) -> list[str]:
    """Rule ids in a decision or in a list of notes."""
    if isinstance(decision, Decision):
        return list(decision.fired)
    return [note.split("] ", 1)[1].split(":", 1)[0] for note in decision]


class ScriptedChat:
    """A ChatModel answering from a list: strings, exceptions to raise, or callables of the messages."""

    name = "scripted-test"
    model = "scripted-test"
    context_window = 100_000

    def __init__(
        self, *replies: str | BaseException | Callable[[Sequence[Message]], str], delay_s: float = 0.0
    ) -> None:
        self.replies = list(replies)
        self.delay_s = delay_s
        self.calls: list[dict[str, Any]] = []
        self.released = threading.Event()

    def complete(
        self,
        messages: Sequence[Message],
        *,
        system: str | None = None,
        tools: Sequence[ToolSpec] = (),
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> Completion:
        self.calls.append(
            {
                "messages": list(messages),
                "system": system,
                "max_tokens": max_tokens,
                "temperature": temperature,
            }
        )
        if self.delay_s:
            self.released.wait(self.delay_s)
        if not self.replies:
            raise RuntimeError("ScriptedChat has no reply left")
        reply = self.replies.pop(0)
        if isinstance(reply, BaseException):
            raise reply
        text = reply(messages) if callable(reply) else reply
        return Completion(text=text, usage=Usage(10, 5))


def denial(stdout: str) -> str:
    """The reason of a ``bhrain behave`` block: Claude Code's JSON deny (exit 0), which the model reads as
    the call's result; '' when stdout is not one."""
    import json

    try:
        answer = json.loads(stdout)
        output = answer["hookSpecificOutput"]
    except (ValueError, KeyError, TypeError):
        return ""
    if output.get("hookEventName") != "PreToolUse" or output.get("permissionDecision") != "deny":
        return ""
    return str(output.get("permissionDecisionReason", ""))
