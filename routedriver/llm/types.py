"""One provider-neutral model of a conversation with tools, shared by every LLM caller in routedriver.

bhrain's atoms, behaviorci's providers and the behavior engine's classifier all speak this model; the
adapters in ``routedriver.llm`` translate it to and from the Anthropic Messages API and OpenAI-compatible
Chat Completions, so a loop written against it behaves identically on either.

Conversation shape:
- ``Message(role="user", text=...)``                         a user (or injected) message
- ``Message(role="assistant", text=..., tool_calls=(...))``  what the model said and the tools it called
- ``Message(role="tool", tool_call_id=..., text=..., is_error=...)``  one result per call, in call order,
  right after the assistant message that made the calls
The system prompt is passed separately (``system=``), never as a message.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

Role = Literal["user", "assistant", "tool"]


@dataclass(frozen=True)
class ToolSpec:
    """A tool as the model sees it: a name, what it does, and a JSON schema of its arguments."""

    name: str
    description: str
    input_schema: Mapping[str, Any]


@dataclass(frozen=True)
class ToolCall:
    """A tool call the model made.

    ``error`` is set when the call is malformed (arguments that are not a JSON object, a missing id or name);
    ``raw_arguments`` then keeps what the model sent so the error fed back to it can quote it. A malformed
    call is never executed; the loop answers it with an error result so the model can correct itself.
    """

    id: str
    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    raw_arguments: str | None = None
    error: str | None = None

    @property
    def malformed(self) -> bool:
        return self.error is not None


@dataclass(frozen=True)
class Message:
    role: Role
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None  # role == "tool": the call this result answers
    is_error: bool = False  # role == "tool": the tool failed, was denied or was not found


@dataclass(frozen=True)
class Usage:
    """Tokens of one or more model calls. ``input_tokens`` counts every input token, cached ones included
    (OpenAI's ``prompt_tokens``; Anthropic reports the cache apart and its adapter adds it in);
    ``cache_read_tokens`` and ``cache_write_tokens`` are the parts read from and written to a prompt cache."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
        )

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True)
class Completion:
    """One model response, normalized."""

    text: str
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = Usage()
    stop_reason: str = "end_turn"  # "end_turn", "tool_use", "max_tokens", or the provider's own word
    model: str = ""


@runtime_checkable
class ChatModel(Protocol):
    """Anything that can complete a conversation: an SDK adapter, a scripted model, a mock."""

    name: str  # e.g. "claude", "qwen", "scripted"
    model: str  # the concrete model id sent to the provider
    context_window: int  # in tokens; inputs estimated above it are refused before any call

    def complete(
        self,
        messages: Sequence[Message],
        *,
        system: str | None = None,
        tools: Sequence[ToolSpec] = (),
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> Completion: ...


def estimate_tokens(text: str) -> int:
    """A provider-free token estimate (about four characters a token), used for budgets, never for billing."""
    return (len(text) + 3) // 4
