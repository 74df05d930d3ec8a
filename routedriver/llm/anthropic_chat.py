"""The Anthropic Messages API behind ``ChatModel``: the one place its wire format is translated.

Request: the system prompt goes in ``system``; assistant tool calls become ``tool_use`` blocks; each run of
``Message(role="tool")`` becomes ONE user message of ``tool_result`` blocks (``is_error`` carried), placed
before any text of that turn as the API requires. The API wants strictly alternating roles starting with a
non-empty user message, so consecutive same-role messages are merged and empty ones dropped instead of
failing. Response: text blocks are joined, ``tool_use`` blocks become ``ToolCall``s (a block with no id, no
name or a non-object input becomes a malformed ``ToolCall`` rather than an exception), usage and stop reason
are normalized.

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


class AnthropicChat(SDKChat):
    """A ``ChatModel`` over ``anthropic.Anthropic().messages.create`` (non-streaming). Built as ``SDKChat``
    (``base_url=None``: ``ANTHROPIC_BASE_URL``, else api.anthropic.com)."""

    sdk_name = "anthropic"
    default_key_env = "ANTHROPIC_API_KEY"
    api_name = "an Anthropic Messages API"
    default_name = "claude"
    default_context_window = 200_000

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
        return Completion(
            text="".join(texts),
            tool_calls=tuple(calls),
            usage=Usage(
                input_tokens=int(getattr(usage, "input_tokens", 0) or 0),
                output_tokens=int(getattr(usage, "output_tokens", 0) or 0),
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
