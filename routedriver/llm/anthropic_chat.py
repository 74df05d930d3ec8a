"""The Anthropic Messages API behind ``ChatModel``: the one place its wire format is translated.

Request: the system prompt goes in ``system``; assistant tool calls become ``tool_use`` blocks; each run of
``Message(role="tool")`` becomes ONE user message of ``tool_result`` blocks (``is_error`` carried), placed
before any text of that turn as the API requires. The API wants strictly alternating roles starting with a
non-empty user message, so consecutive same-role messages are merged and empty ones dropped instead of
failing. Response: text blocks are joined, ``tool_use`` blocks become ``ToolCall``s (a block with no id, no
name or a non-object input becomes a malformed ``ToolCall`` rather than an exception), usage and stop reason
are normalized.

Prompt caching (on unless ``prompt_caching=False``): the request carries ``cache_control`` breakpoints, at
most the four the API allows: on the last tool definition, on the system prompt (sent as one text block),
on the last block of the conversation, and on the last block of the user turn before the latest answer,
which is where the previous request of an agent loop ended, so each call reads what the one before wrote.
Usage reports the cache: ``input_tokens`` is the whole input (the API counts cached tokens apart; they are
added in), ``cache_read_tokens`` / ``cache_write_tokens`` its cached parts.

``anthropic`` is imported on the first call, never at import time (it costs ~1.4 s).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from types import ModuleType
from typing import Any

from routedriver.llm._sdk import SDKChat, invalid_call_error
from routedriver.llm.types import Completion, Message, ToolCall, ToolSpec, Usage

# Said in place of an empty first user turn: the API rejects a conversation that starts without one.
CONVERSATION_START = "(conversation start)"
_STOP_REASONS = {"model_context_window_exceeded": "max_tokens"}
CACHE_BREAKPOINT = {"type": "ephemeral"}  # the default five-minute cache
MAX_CACHE_BREAKPOINTS = 4  # the API refuses a request with more


class AnthropicChat(SDKChat):
    """A ``ChatModel`` over ``anthropic.Anthropic().messages.create`` (non-streaming). Built as ``SDKChat``
    (``base_url=None``: ``ANTHROPIC_BASE_URL``, else api.anthropic.com)."""

    sdk_name = "anthropic"
    default_key_env = "ANTHROPIC_API_KEY"
    api_name = "an Anthropic Messages API"
    default_name = "claude"
    default_context_window = 200_000

    def __init__(self, *, prompt_caching: bool = True, **options: Any) -> None:
        """As ``SDKChat`` (``base_url=None``: ``ANTHROPIC_BASE_URL``, else api.anthropic.com), plus
        ``prompt_caching``: mark ``cache_control`` breakpoints (see the module docstring)."""
        super().__init__(**options)
        self.prompt_caching = prompt_caching

    def _new_client(self, sdk: ModuleType) -> Any:
        return sdk.Anthropic(
            api_key=self._api_key, base_url=self.base_url, timeout=self.timeout_s, max_retries=0
        )

    def _request(
        self,
        messages: Sequence[Message],
        system: str | None,
        tools: Sequence[ToolSpec],
        max_tokens: int,
        temperature: float | None,
    ) -> dict[str, Any]:
        request: dict[str, Any] = {
            "model": self.model,
            "max_tokens": max_tokens,
            "messages": to_anthropic_messages(messages),
        }
        if system:
            request["system"] = system
        if tools:
            request["tools"] = [to_anthropic_tool(tool) for tool in tools]
        if self.prompt_caching:
            mark_cache_breakpoints(request)
        # ``temperature`` is accepted for the ChatModel protocol but not sent: the Messages API version the
        # installed SDK speaks (anthropic 2.x, 2026-10-21) has no sampling parameters and rejects unknown
        # ones.
        return request

    def _send(self, client: Any, request: dict[str, Any]) -> Any:
        return client.messages.create(**request)

    def _completion(self, response: Any, tools: Sequence[ToolSpec]) -> Completion:
        blocks = getattr(response, "content", None)
        if getattr(response, "type", None) != "message" or not isinstance(blocks, list):
            raise self._unreadable(
                f"the server's answer is not a Messages API message: {self._clip(repr(response))}",
                attempts=1,
            )
        texts: list[str] = []
        calls: list[ToolCall] = []
        taken = {block_id for block in blocks if isinstance(block_id := getattr(block, "id", None), str)}
        for block in blocks:
            kind = getattr(block, "type", None)
            if kind == "text":
                texts.append(getattr(block, "text", None) or "")
            elif kind == "tool_use":
                calls.append(self._tool_call(block, taken))
            # thinking, redacted_thinking and server-side tool blocks carry nothing the loop acts on
        usage = getattr(response, "usage", None)
        read, written = _count(usage, "cache_read_input_tokens"), _count(usage, "cache_creation_input_tokens")
        return Completion(
            text="".join(texts),
            tool_calls=tuple(calls),
            usage=Usage(
                input_tokens=_count(usage, "input_tokens") + read + written,
                output_tokens=_count(usage, "output_tokens"),
                cache_read_tokens=read,
                cache_write_tokens=written,
            ),
            stop_reason=normalize_stop_reason(getattr(response, "stop_reason", None), bool(calls)),
            model=str(getattr(response, "model", None) or self.model),
        )

    def _tool_call(self, block: Any, taken: set[str]) -> ToolCall:
        call_id, name, value = (
            getattr(block, "id", None),
            getattr(block, "name", None),
            getattr(block, "input", None),
        )
        problems: list[str] = []
        if not isinstance(call_id, str) or not call_id:
            call_id = self.synthetic_id(taken)
            problems.append("the call had no id")
        if not isinstance(name, str) or not name:
            name = ""
            problems.append("the call had no tool name")
        arguments: dict[str, Any] = {}
        raw: str | None = None
        if isinstance(value, Mapping):
            arguments = dict(value)
        elif value is None:
            problems.append("the call had no input")
        else:
            raw = value if isinstance(value, str) else json.dumps(value, default=str)
            problems.append(f"the input must be a JSON object, not {type(value).__name__}")
        return ToolCall(
            id=call_id,
            name=name,
            arguments=arguments,
            raw_arguments=raw,
            error=invalid_call_error(problems),
        )


def _count(usage: Any, field: str) -> int:
    return int(getattr(usage, field, 0) or 0)


def mark_cache_breakpoints(request: dict[str, Any]) -> None:
    """Put ``cache_control`` on the stable prefix of ``request`` (in place); at most four breakpoints.

    The cache is a prefix in the order tools, system, messages. The tools and the system prompt change
    rarely; the conversation grows at its end, so its last block is marked for the next call to read, and
    the end of the previous call's conversation (the user turn before the latest assistant answer) is marked
    so that this call reads it even when the new turns are many blocks long.
    """
    marks: list[dict[str, Any]] = []
    if request.get("tools"):
        marks.append(request["tools"][-1])
    system = request.get("system")
    if isinstance(system, str) and system:
        block: dict[str, Any] = {"type": "text", "text": system}
        request["system"] = [block]
        marks.append(block)
    messages = request["messages"]
    ends = [len(messages) - 1]
    previous_user = len(messages) - 3  # roles alternate: user (previous end), assistant (the answer), user
    if previous_user >= 0 and messages[previous_user]["role"] == "user":
        ends.insert(0, previous_user)
    marks.extend(messages[i]["content"][-1] for i in ends if messages[i]["content"])
    for block in marks[-MAX_CACHE_BREAKPOINTS:]:
        block["cache_control"] = dict(CACHE_BREAKPOINT)


def to_anthropic_tool(tool: ToolSpec) -> dict[str, Any]:
    return {"name": tool.name, "description": tool.description, "input_schema": dict(tool.input_schema)}


def to_anthropic_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The ``messages`` array: alternating roles, user first, tool results as user ``tool_result`` blocks."""
    turns: list[tuple[str, list[dict[str, Any]]]] = []
    for message in messages:
        role, blocks = _blocks(message)
        if not blocks:
            continue  # an empty turn is rejected by the API; dropping it lets its neighbours merge
        if turns and turns[-1][0] == role:
            turns[-1][1].extend(blocks)
        else:
            turns.append((role, blocks))
    if not turns or turns[0][0] != "user":
        turns.insert(0, ("user", [{"type": "text", "text": CONVERSATION_START}]))
    result = []
    for role, blocks in turns:
        if role == "user":
            # tool_result blocks must open the user turn that answers the tool calls
            blocks = [b for b in blocks if b["type"] == "tool_result"] + [
                b for b in blocks if b["type"] != "tool_result"
            ]
        result.append({"role": role, "content": blocks})
    return result


def _blocks(message: Message) -> tuple[str, list[dict[str, Any]]]:
    if message.role == "tool":
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": message.tool_call_id or ""}
        if message.text:
            block["content"] = message.text
        if message.is_error:
            block["is_error"] = True
        return "user", [block]
    blocks: list[dict[str, Any]] = []
    if message.text:
        blocks.append({"type": "text", "text": message.text})
    if message.role == "assistant":
        for call in message.tool_calls:
            # A malformed call is replayed with empty input: what the model actually sent is quoted in the
            # error result that answers it, and the API would reject a non-object input.
            blocks.append(
                {
                    "type": "tool_use",
                    "id": call.id,
                    "name": call.name or "unknown_tool",
                    "input": {} if call.malformed else dict(call.arguments),
                }
            )
    return message.role, blocks


def normalize_stop_reason(reason: str | None, has_calls: bool) -> str:
    if reason in (None, "", "end_turn", "stop_sequence"):
        return "tool_use" if has_calls else "end_turn"
    return _STOP_REASONS.get(reason, reason)
