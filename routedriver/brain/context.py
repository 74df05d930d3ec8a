"""Conversation bookkeeping the loop and the memory managers share: token estimates and validity checks.

A conversation is valid when it starts with a user message and every assistant message that made tool calls
is followed immediately by exactly one result per call, in call order. Memory managers must return valid
conversations; the loop checks with ``conversation_problem`` before applying a replacement.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from routedriver.llm.types import Message, ToolSpec, estimate_tokens

# Per-message framing the providers add (role markers, ids); small but keeps estimates from undercounting.
MESSAGE_OVERHEAD_TOKENS = 4


def message_tokens(message: Message) -> int:
    tokens = MESSAGE_OVERHEAD_TOKENS + estimate_tokens(message.text)
    for call in message.tool_calls:
        raw = call.raw_arguments if call.raw_arguments is not None else _dump(call.arguments)
        tokens += MESSAGE_OVERHEAD_TOKENS + estimate_tokens(call.name) + estimate_tokens(raw)
    return tokens


def tools_tokens(tools: Sequence[ToolSpec]) -> int:
    return sum(
        estimate_tokens(spec.name)
        + estimate_tokens(spec.description)
        + estimate_tokens(_dump(spec.input_schema))
        for spec in tools
    )


def _dump(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, default=str)


class Context:
    """The live message list with a running token estimate (so each iteration costs O(new messages))."""

    def __init__(self, messages: Sequence[Message] = ()) -> None:
        self.messages: list[Message] = []
        self._tokens: list[int] = []
        self.extend(messages)

    def append(self, message: Message) -> None:
        self.messages.append(message)
        self._tokens.append(message_tokens(message))

    def extend(self, messages: Sequence[Message]) -> None:
        for message in messages:
            self.append(message)

    def replace(self, messages: Sequence[Message]) -> None:
        self.messages = []
        self._tokens = []
        self.extend(messages)

    @property
    def tokens(self) -> int:
        return sum(self._tokens)

    def __len__(self) -> int:
        return len(self.messages)


@dataclass(frozen=True)
class Exchange:
    """One unit that must stay whole: a user message, or an assistant message with its tool results."""

    start: int
    end: int  # exclusive

    def slice(self, messages: Sequence[Message]) -> Sequence[Message]:
        return messages[self.start : self.end]


def exchanges(messages: Sequence[Message]) -> Iterator[Exchange]:
    """Split a conversation into exchanges; cutting only at exchange borders never orphans a tool result."""
    index = 0
    while index < len(messages):
        end = index + 1
        if messages[index].role == "assistant":
            while end < len(messages) and messages[end].role == "tool":
                end += 1
        yield Exchange(index, end)
        index = end


def conversation_problem(messages: Sequence[Message]) -> str | None:
    """Why ``messages`` is not a conversation a provider accepts, or None when it is fine."""
    if not messages:
        return "the conversation is empty"
    if messages[0].role != "user":
        return f"the first message is from {messages[0].role!r}, not the user"
    index = 0
    while index < len(messages):
        message = messages[index]
        if message.role == "tool":
            return f"message {index + 1} is a tool result that follows no tool call"
        if message.role == "assistant" and message.tool_calls:
            expected = [call.id for call in message.tool_calls]
            followers = messages[index + 1 : index + 1 + len(expected)]
            if [m.tool_call_id if m.role == "tool" else None for m in followers] != expected:
                return (
                    f"the tool calls of message {index + 1} are not each followed by their result, in order"
                )
            index += len(expected)
        index += 1
    return None
