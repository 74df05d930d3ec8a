"""The scripted model behind the fake servers: it reads each request as a model would (the tool results the
client sent back, the hook feedback in the user turn) and decides its next answer from them.

A test writes the robot as a function ``act(seen) -> Reply``; ``ScriptedModel`` is the server's
``responder``: it sorts requests (the agent's turns; bhrain's reviews, answered as a content reviewer;
anything else the client asks on the side), keeps every agent turn it read in ``turns`` for the test to
assert on, and keeps a failed expectation inside ``act`` to raise in the test (the server thread must still
answer).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

from tests.fakes.llm_servers import Call, Recorded, Reply

REVIEW = Reply.text("The artifact does what its stone asks.\n\nblockers: 0\nnitpicks: 0")


@dataclass(frozen=True)
class Result:
    """One tool result as the model receives it."""

    tool: str
    text: str
    error: bool


@dataclass(frozen=True)
class Seen:
    """One agent request, as the model reads it."""

    number: int  # 1 for the first request of the run
    results: tuple[Result, ...]  # what the tools it called last turn answered
    said: str  # the text of the last user turn (the prompt, or a hook's feedback)
    body: dict[str, Any]  # the whole request, as logged

    @property
    def last(self) -> Result:
        assert self.results, f"request {self.number} answers no tool call: {self.said[:300]!r}"
        return self.results[-1]

    def mentions(self, text: str) -> bool:
        """Whether ``text`` is anywhere in the request (its system prompt, tools, messages)."""
        return text in json.dumps(self.body, ensure_ascii=False)


Act = Callable[[Seen], Reply]


class ScriptedModel:
    def __init__(self, act: Act, *, wire: Literal["anthropic", "responses"] = "anthropic") -> None:
        self.act, self.wire = act, wire
        self.turns: list[Seen] = []
        self.reviews: list[Recorded] = []
        self.asides: list[Recorded] = []
        self.failures: list[BaseException] = []
        self._lock = threading.Lock()

    def __call__(self, recorded: Recorded) -> Reply:
        body = recorded.json if isinstance(recorded.json, dict) else {}
        with self._lock:
            kind = self._kind(recorded, body)
            if kind == "review":
                self.reviews.append(recorded)
                return REVIEW
            if kind == "aside":
                self.asides.append(recorded)
                return Reply.text("ok")
            seen = (
                read_anthropic(body, len(self.turns) + 1)
                if self.wire == "anthropic"
                else read_responses(body, len(self.turns) + 1)
            )
            self.turns.append(seen)
            try:
                return self.act(seen)
            except BaseException as exc:  # noqa: BLE001 - raised again in the test, the server must answer
                self.failures.append(exc)
                return Reply.text("The script failed; stopping.")

    def check(self) -> None:
        if self.failures:
            raise self.failures[0]

    def _kind(self, recorded: Recorded, body: dict[str, Any]) -> str:
        if self.wire == "responses":
            return "agent"
        agent = recorded.headers.get("user-agent", "").startswith("claude-cli")
        tools = {tool.get("name") for tool in body.get("tools") or [] if isinstance(tool, dict)}
        if agent:
            return "agent" if "Bash" in tools else "aside"
        return "review"  # bhrain's reviews (the anthropic SDK) on the same server


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = []
    for block in content or []:
        if isinstance(block, dict) and block.get("type") in ("text", "input_text", "output_text"):
            parts.append(str(block.get("text", "")))
    return "\n".join(parts)


def read_anthropic(body: dict[str, Any], number: int) -> Seen:
    messages = body.get("messages") or []
    names: dict[str, str] = {}
    for message in messages:
        if message.get("role") == "assistant" and isinstance(message.get("content"), list):
            for block in message["content"]:
                if block.get("type") == "tool_use":
                    names[block["id"]] = block["name"]
    last_assistant = max((i for i, m in enumerate(messages) if m.get("role") == "assistant"), default=-1)
    results: list[Result] = []
    said: list[str] = []
    for message in messages[last_assistant + 1 :]:
        content = message.get("content")
        if message.get("role") == "user" and isinstance(content, list):
            for block in content:
                if block.get("type") == "tool_result":
                    tool = names.get(block.get("tool_use_id", ""), "?")
                    results.append(Result(tool, _text(block.get("content")), bool(block.get("is_error"))))
                elif block.get("type") == "text":
                    said.append(block["text"])
        elif message.get("role") == "user":
            said.append(_text(content))
    return Seen(number, tuple(results), "\n".join(said), body)


def read_responses(body: dict[str, Any], number: int) -> Seen:
    items = body.get("input") or []
    names: dict[str, str] = {}
    for item in items:
        if item.get("type") == "function_call":
            names[item.get("call_id", "")] = ".".join(filter(None, (item.get("namespace"), item["name"])))
    last_call = max((i for i, item in enumerate(items) if item.get("type") == "function_call"), default=-1)
    results: list[Result] = []
    said: list[str] = []
    for item in items[last_call + 1 :] if last_call >= 0 else items:
        if item.get("type") == "function_call_output":
            output = item.get("output")
            text = output if isinstance(output, str) else _text(output)
            results.append(Result(names.get(item.get("call_id", ""), "?"), text, False))
        elif item.get("role") == "user":
            said.append(_text(item.get("content")))
    return Seen(number, tuple(results), "\n".join(said), body)


# -- replies -------------------------------------------------------------------------------------------------


def bash(command: str, description: str = "run a command") -> Reply:
    return Reply.tool_calls([("Bash", {"command": command, "description": description})])


def use(tool: str, **arguments: Any) -> Reply:
    return Reply.tool_calls([(tool, arguments)])


def codex_call(namespace: str, tool: str, **arguments: Any) -> Reply:
    return Reply.tool_calls([Call(tool, arguments, namespace=namespace)])


def say(text: str) -> Reply:
    return Reply.text(text)


@dataclass
class Steps:
    """A robot that takes its steps in order, each one a function of what it just read: the usual shape of
    these conversations (look at the last result, check it, choose the next call)."""

    steps: list[Act]
    taken: int = field(default=0)

    def __call__(self, seen: Seen) -> Reply:
        if self.taken >= len(self.steps):
            raise AssertionError(f"request {seen.number} came after the script ended: {seen.said[:500]!r}")
        step = self.steps[self.taken]
        self.taken += 1
        return step(seen)
