"""The two wire formats the fake servers speak: rendering replies and checking requests like the real APIs.

Kept apart from the server machinery in ``llm_servers.py``; field names, ids, ``type`` tags, stop reasons,
usage and error bodies follow the real APIs closely enough that the official SDKs parse them unchanged.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.fakes.llm_servers import Reply

Rendered = tuple[int, list[tuple[str, str]], bytes]

_ANTHROPIC_ERRORS = {
    400: ("invalid_request_error", "Invalid request"),
    401: ("authentication_error", "invalid x-api-key"),
    402: ("billing_error", "Your credit balance is too low to access the Anthropic API."),
    403: ("permission_error", "Your API key does not have permission to use the specified resource."),
    404: ("not_found_error", "Not found"),
    413: ("request_too_large", "Request exceeds the maximum allowed number of bytes."),
    429: ("rate_limit_error", "Number of request tokens has exceeded your per-minute rate limit"),
    500: ("api_error", "Internal server error"),
    504: ("timeout_error", "Request timed out"),
    529: ("overloaded_error", "Overloaded"),
}

_OPENAI_ERRORS = {  # status: (type, code, message)
    400: ("invalid_request_error", None, "Invalid request"),
    401: ("invalid_request_error", "invalid_api_key", "Incorrect API key provided."),
    403: (
        "invalid_request_error",
        "unsupported_country_region_territory",
        "Country, region, or territory not supported",
    ),
    404: (
        "invalid_request_error",
        "model_not_found",
        "The model does not exist or you do not have access to it.",
    ),
    429: ("requests", "rate_limit_exceeded", "Rate limit reached for requests. Please try again later."),
    500: ("server_error", None, "The server had an error while processing your request. Sorry about that!"),
    503: ("server_error", None, "The engine is currently overloaded, please try again later"),
}

_NON_EMPTY = "all messages must have non-empty content except for the optional final assistant message"
_FINISH_REASONS = {"end_turn": "stop", "tool_use": "tool_calls", "max_tokens": "length"}


class Dialect:
    name = ""
    streams = False  # answers ``"stream": true`` with server-sent events (``render_stream``)

    def presented_key(self, headers: Mapping[str, str]) -> str | None:
        auth = headers.get("authorization", "")
        if auth.lower().startswith("bearer "):
            return auth[7:].strip()
        return headers.get("x-api-key")

    def validate(self, body: dict[str, Any]) -> str | None:
        raise NotImplementedError

    def render(self, reply: Reply, request: Any, number: int) -> Rendered:
        if reply.kind == "raw":
            return reply.status, [("content-type", reply.content_type), *reply.headers], reply.body
        if reply.kind == "error":
            return self.render_error(reply, request, number)
        return (
            200,
            [("content-type", "application/json"), *self.id_headers(number)],
            _json(self.render_message(reply, request, number)),
        )

    def render_error(self, reply: Reply, request: Any, number: int) -> Rendered:
        raise NotImplementedError

    def render_stream(self, reply: Reply, request: Any, number: int) -> list[bytes]:
        """A message reply as the server-sent events of a streamed response, one ``bytes`` per event."""
        raise NotImplementedError

    def render_message(self, reply: Reply, request: Any, number: int) -> dict[str, Any]:
        raise NotImplementedError

    def id_headers(self, number: int) -> list[tuple[str, str]]:
        raise NotImplementedError


class AnthropicDialect(Dialect):
    name = "anthropic"
    streams = True

    def presented_key(self, headers: Mapping[str, str]) -> str | None:
        return headers.get("x-api-key") or super().presented_key(headers)

    def id_headers(self, number: int) -> list[tuple[str, str]]:
        return [("request-id", f"req_fake{number:06d}")]

    def render_message(self, reply: Reply, request: Any, number: int) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        if reply.said:
            content.append({"type": "text", "text": reply.said})
        for index, call in enumerate(reply.calls):
            block: dict[str, Any] = {"type": "tool_use"}
            if not call.omit_id:
                block["id"] = call.id or f"toolu_fake{number:04d}x{index:02d}"
            if call.name is not None:
                block["name"] = call.name
            block["input"] = call.arguments
            content.append(block)
        return {
            "id": f"msg_fake{number:06d}",
            "type": "message",
            "role": "assistant",
            "model": reply.model or _requested_model(request, "claude-fake"),
            "content": content,
            "stop_reason": reply.stop_reason or ("tool_use" if reply.calls else "end_turn"),
            "stop_sequence": None,
            "usage": {
                "input_tokens": reply.input_tokens,
                "output_tokens": reply.output_tokens,
                "cache_creation_input_tokens": reply.cache_write_tokens,
                "cache_read_input_tokens": reply.cache_read_tokens,
            },
        }

    def render_stream(self, reply: Reply, request: Any, number: int) -> list[bytes]:
        """The Messages API's stream: ``message_start``, per block ``content_block_start``, its deltas
        (``text_delta``; a tool's input as ``input_json_delta`` chunks that are only JSON together) and
        ``content_block_stop``, then ``message_delta`` (stop reason, output tokens) and ``message_stop``."""
        whole = self.render_message(reply, request, number)
        usage = whole["usage"]
        start = {**whole, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
        events = [
            _sse("message_start", {"type": "message_start", "message": start}),
            _sse("ping", {"type": "ping"}),
        ]
        for index, block in enumerate(whole["content"]):
            if block["type"] == "text":
                opened: dict[str, Any] = {"type": "text", "text": ""}
                deltas = [{"type": "text_delta", "text": piece} for piece in _pieces(block["text"], 24)]
            else:
                opened = {**block, "input": {}}
                raw = block["input"] if isinstance(block["input"], str) else json.dumps(block["input"])
                deltas = [{"type": "input_json_delta", "partial_json": piece} for piece in _pieces(raw, 9)]
            started = {"type": "content_block_start", "index": index, "content_block": opened}
            events.append(_sse("content_block_start", started))
            for delta in deltas:
                moved = {"type": "content_block_delta", "index": index, "delta": delta}
                events.append(_sse("content_block_delta", moved))
            events.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
        events.append(
            _sse(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {"stop_reason": whole["stop_reason"], "stop_sequence": None},
                    "usage": {"output_tokens": usage["output_tokens"]},
                },
            )
        )
        events.append(_sse("message_stop", {"type": "message_stop"}))
        return events

    def render_error(self, reply: Reply, request: Any, number: int) -> Rendered:
        default_type, default_message = _ANTHROPIC_ERRORS.get(
            reply.status, ("api_error" if reply.status >= 500 else "invalid_request_error", "Error")
        )
        message = reply.message or default_message
        if reply.status == 404 and reply.message is None:
            message = f"model: {_requested_model(request, '?')}"
        body = {
            "type": "error",
            "error": {"type": reply.error_type or default_type, "message": message},
            "request_id": f"req_fake{number:06d}",
        }
        headers = [("content-type", "application/json"), *self.id_headers(number), *reply.headers]
        return reply.status, headers, _json(body)

    def validate(self, body: dict[str, Any]) -> str | None:
        if not isinstance(body.get("model"), str) or not body["model"]:
            return "model: Field required"
        if not isinstance(body.get("max_tokens"), int) or body["max_tokens"] < 1:
            return "max_tokens: Field required (an integer >= 1)"
        problem = _anthropic_tools(body.get("tools"))
        if problem:
            return problem
        system = body.get("system")
        if system is not None and not isinstance(system, str | list):
            return "system: Input should be a valid string or a list of text blocks"
        for index, block in enumerate(system if isinstance(system, list) else []):
            if not isinstance(block, dict) or block.get("type") != "text" or not block.get("text"):
                return f"system.{index}: Input should be a non-empty text block"
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return "messages: at least one message is required"
        for index, message in enumerate(messages):
            problem = _anthropic_message(messages, index, message)
            if problem:
                return problem
        return _cache_breakpoints(body)


def _cache_breakpoints(body: dict[str, Any]) -> str | None:
    marks = [unit[1] for unit in _prefix_units(body) if unit[1] is not None]
    for mark in marks:
        if (
            not isinstance(mark, dict)
            or mark.get("type") != "ephemeral"
            or mark.get("ttl", "5m")
            not in (
                "5m",
                "1h",
            )
        ):
            return (
                f"cache_control: Input should be {{'type': 'ephemeral'}} (with an optional ttl), not {mark!r}"
            )
    if len(marks) > 4:
        return f"A maximum of 4 blocks with cache_control may be provided. Found {len(marks)}."
    return None


def _prefix_units(body: dict[str, Any]) -> list[tuple[str, Any]]:
    """The request as the prompt cache sees it, in its order (tools, system, message blocks): each unit's
    canonical text without its marker, and its ``cache_control`` (None when it has none)."""
    system = body.get("system")
    blocks: list[tuple[str, Any]] = [("tool", tool) for tool in body.get("tools") or []]
    if isinstance(system, str):
        blocks.append(("system", {"type": "text", "text": system}))
    else:
        blocks.extend(("system", block) for block in system or [])
    for message in body.get("messages") or []:
        content = message.get("content")
        parts = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        blocks.extend((message.get("role", "?"), part) for part in parts)
    units = []
    for where, block in blocks:
        plain = {k: v for k, v in block.items() if k != "cache_control"} if isinstance(block, dict) else block
        mark = block.get("cache_control") if isinstance(block, dict) else None
        units.append((json.dumps([where, plain], sort_keys=True), mark))
    return units


class PromptCache:
    """The Messages API's prompt cache, played: which part of a request's input is read from the cache,
    written to it, or neither. A prefix is remembered up to each breakpoint; a request reads the longest
    remembered prefix that ends at one of its own breakpoints and writes the rest up to its last one."""

    def __init__(self) -> None:
        self._remembered: set[str] = set()
        self._lock = threading.Lock()

    def account(self, body: Any) -> tuple[int, int, int]:
        """``(uncached, read, written)`` input tokens of ``body`` (about four characters a token)."""
        units = _prefix_units(body) if isinstance(body, dict) else []
        tokens = [max(1, len(text) // 4) for text, _ in units]
        digest, keys = hashlib.sha256(), []
        for text, _ in units:
            digest.update(text.encode("utf-8") + b"\0")
            keys.append(digest.copy().hexdigest())
        ends = [i + 1 for i, (_, mark) in enumerate(units) if mark is not None]
        with self._lock:
            read_to = max((end for end in ends if keys[end - 1] in self._remembered), default=0)
            self._remembered.update(keys[end - 1] for end in ends)
        written_to = max([read_to, *ends])
        return sum(tokens[written_to:]), sum(tokens[:read_to]), sum(tokens[read_to:written_to])


def _anthropic_tools(tools: Any) -> str | None:
    if tools is None:
        return None
    if not isinstance(tools, list):
        return "tools: Input should be a valid list"
    for index, tool in enumerate(tools):
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str) or not tool["name"]:
            return f"tools.{index}.name: Field required"
        schema = tool.get("input_schema")
        if not isinstance(schema, dict) or schema.get("type") != "object":
            return f"tools.{index}.input_schema: Input should be a JSON schema of type object"
    return None


def _anthropic_message(messages: list[Any], index: int, message: Any) -> str | None:
    where = f"messages.{index}"
    if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
        return f"{where}.role: Input should be 'user' or 'assistant'"
    role = message["role"]
    if index == 0 and role != "user":
        return 'messages: first message must use the "user" role'
    if index > 0 and messages[index - 1].get("role") == role:
        return (
            'messages: roles must alternate between "user" and "assistant", '
            f'but found multiple "{role}" roles in a row'
        )
    content = message.get("content")
    if isinstance(content, str):
        if not content and not (role == "assistant" and index == len(messages) - 1):
            return f"{where}: {_NON_EMPTY}"
        return None
    if not isinstance(content, list) or (not content and index != len(messages) - 1):
        return f"{where}: {_NON_EMPTY}"
    for position, block in enumerate(content):
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            if not isinstance(block.get("text"), str) or not block["text"]:
                return f"{where}.content.{position}.text: text content blocks must be non-empty"
        elif kind == "tool_use":
            if role != "assistant":
                return f"{where}.content.{position}: tool_use blocks are only allowed in assistant messages"
            if not isinstance(block.get("input"), dict):
                return f"{where}.content.{position}.tool_use.input: Input should be a valid dictionary"
        elif kind == "tool_result":
            if role != "user":
                return f"{where}.content.{position}: tool_result blocks are only allowed in user messages"
            previous = _tool_use_ids(messages[index - 1]) if index > 0 else set()
            if block.get("tool_use_id") not in previous:
                return (
                    f"{where}.content.{position}: unexpected `tool_use_id` found in `tool_result` blocks: "
                    f"{block.get('tool_use_id')}. Each `tool_result` block must have a corresponding "
                    "`tool_use` block in the previous message."
                )
        elif kind not in ("image", "document", "thinking", "redacted_thinking"):
            return f"{where}.content.{position}.type: unknown content block type {kind!r}"
    if role == "assistant" and index + 1 < len(messages):
        answered = _tool_result_ids(messages[index + 1])
        missing = sorted(_tool_use_ids(message) - answered)
        if missing:
            return (
                f"messages.{index + 1}: `tool_use` ids were found without `tool_result` blocks immediately "
                f"after: {', '.join(missing)}. Each `tool_use` block must have a corresponding "
                "`tool_result` block in the next message."
            )
    return None


def _tool_use_ids(message: Any) -> set[str]:
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return set()
    return {str(b.get("id")) for b in content if isinstance(b, dict) and b.get("type") == "tool_use"}


def _tool_result_ids(message: Any) -> set[str]:
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return set()
    return {
        str(b.get("tool_use_id")) for b in content if isinstance(b, dict) and b.get("type") == "tool_result"
    }


class OpenAIDialect(Dialect):
    name = "openai"

    def id_headers(self, number: int) -> list[tuple[str, str]]:
        return [("x-request-id", f"req_fake{number:06d}")]

    def render_message(self, reply: Reply, request: Any, number: int) -> dict[str, Any]:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": reply.said or None,
            "refusal": None,
            "annotations": [],
        }
        if reply.calls:
            calls = []
            for index, call in enumerate(reply.calls):
                function: dict[str, Any] = {}
                if call.name is not None:
                    function["name"] = call.name
                arguments = call.arguments
                function["arguments"] = arguments if isinstance(arguments, str) else json.dumps(arguments)
                entry: dict[str, Any] = {"type": "function", "function": function}
                if not call.omit_id:
                    entry["id"] = call.id or f"call_fake{number:04d}x{index:02d}"
                calls.append(entry)
            message["tool_calls"] = calls
        stop = reply.stop_reason or ("tool_use" if reply.calls else "end_turn")
        prompt = (
            reply.input_tokens + reply.cache_read_tokens + reply.cache_write_tokens
        )  # cached ones included
        return {
            "id": f"chatcmpl-fake{number:06d}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": reply.model or _requested_model(request, "gpt-fake"),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": _FINISH_REASONS.get(stop, stop),
                }
            ],
            "usage": {
                "prompt_tokens": prompt,
                "completion_tokens": reply.output_tokens,
                "total_tokens": prompt + reply.output_tokens,
                "prompt_tokens_details": {"cached_tokens": reply.cache_read_tokens, "audio_tokens": 0},
            },
            "system_fingerprint": "fp_fake",
        }

    def render_error(self, reply: Reply, request: Any, number: int) -> Rendered:
        default_type, code, default_message = _OPENAI_ERRORS.get(
            reply.status, ("server_error" if reply.status >= 500 else "invalid_request_error", None, "Error")
        )
        message = reply.message or default_message
        if reply.status == 404 and reply.message is None:
            message = (
                f"The model `{_requested_model(request, '?')}` does not exist or you do not have "
                "access to it."
            )
        body = {
            "error": {
                "message": message,
                "type": reply.error_type or default_type,
                "param": None,
                "code": code,
            }
        }
        headers = [("content-type", "application/json"), *self.id_headers(number), *reply.headers]
        return reply.status, headers, _json(body)

    def validate(self, body: dict[str, Any]) -> str | None:
        if not isinstance(body.get("model"), str) or not body["model"]:
            return "you must provide a model parameter"
        problem = _openai_tools(body.get("tools"))
        if problem:
            return problem
        messages = body.get("messages")
        if not isinstance(messages, list) or not messages:
            return "[] is too short - 'messages'"
        open_calls: list[str] = []  # ids of the last assistant tool calls not yet answered
        answered: set[str] = set()
        for index, message in enumerate(messages):
            role = message.get("role") if isinstance(message, dict) else None
            if role not in ("system", "developer", "user", "assistant", "tool"):
                return f"Invalid value for 'messages[{index}].role'"
            if role == "tool":
                call_id = message.get("tool_call_id")
                if call_id not in open_calls:
                    return (
                        f"Invalid parameter: messages[{index}] with role 'tool' must be a response to a "
                        "preceeding message with 'tool_calls'."
                    )
                if not isinstance(message.get("content"), str | list):
                    return f"Invalid type for 'messages[{index}].content': expected a string"
                answered.add(call_id)
                continue
            problem = _unanswered(open_calls, answered)
            if problem:
                return problem
            open_calls, answered = [], set()
            if role == "assistant" and message.get("tool_calls"):
                for position, call in enumerate(message["tool_calls"]):
                    function = call.get("function") if isinstance(call, dict) else None
                    if not isinstance(call.get("id"), str) or not isinstance(function, dict):
                        return f"Missing required parameter: 'messages[{index}].tool_calls[{position}].id'"
                    if not isinstance(function.get("arguments"), str):
                        return (
                            f"Invalid type for 'messages[{index}].tool_calls[{position}].function.arguments'"
                        )
                    open_calls.append(call["id"])
            elif role != "assistant" and not isinstance(message.get("content"), str | list):
                return f"Invalid type for 'messages[{index}].content': expected a string"
        return _unanswered(open_calls, answered)  # calls still open at the end are unanswered too


class ResponsesDialect(Dialect):
    """OpenAI's Responses API (``POST /v1/responses``), which the Codex CLI speaks: ``input`` items in,
    ``output`` items out; streamed as ``response.created``, per item ``response.output_item.added``, its
    deltas (``response.output_text.delta``; a call's arguments as ``response.function_call_arguments.delta``
    chunks) and ``response.output_item.done``, then ``response.completed`` with the whole response."""

    name = "responses"
    streams = True

    def id_headers(self, number: int) -> list[tuple[str, str]]:
        return [("x-request-id", f"req_fake{number:06d}")]

    def _items(self, reply: Reply, number: int) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        if reply.said:
            text = {"type": "output_text", "text": reply.said, "annotations": []}
            items.append(
                {
                    "id": f"msg_fake{number:04d}",
                    "type": "message",
                    "status": "completed",
                    "role": "assistant",
                    "content": [text],
                }
            )
        for index, call in enumerate(reply.calls):
            arguments = call.arguments if isinstance(call.arguments, str) else json.dumps(call.arguments)
            item: dict[str, Any] = {
                "id": f"fc_fake{number:04d}x{index:02d}",
                "type": "function_call",
                "status": "completed",
                "name": call.name,
                "arguments": arguments,
            }
            if call.namespace is not None:
                item["namespace"] = call.namespace
            if not call.omit_id:
                item["call_id"] = call.id or f"call_fake{number:04d}x{index:02d}"
            items.append(item)
        return items

    def render_message(self, reply: Reply, request: Any, number: int) -> dict[str, Any]:
        return {
            "id": f"resp_fake{number:06d}",
            "object": "response",
            "created_at": int(time.time()),
            "status": "completed",
            "model": reply.model or _requested_model(request, "gpt-fake"),
            "output": self._items(reply, number),
            "usage": {
                "input_tokens": reply.input_tokens + reply.cache_read_tokens,
                "input_tokens_details": {"cached_tokens": reply.cache_read_tokens},
                "output_tokens": reply.output_tokens,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": reply.input_tokens + reply.cache_read_tokens + reply.output_tokens,
            },
        }

    def render_stream(self, reply: Reply, request: Any, number: int) -> list[bytes]:
        whole = self.render_message(reply, request, number)
        sequence = iter(range(1_000_000))

        def event(kind: str, **fields: Any) -> bytes:
            return _sse(kind, {"type": kind, "sequence_number": next(sequence), **fields})

        opened = {**whole, "status": "in_progress", "output": [], "usage": None}
        events = [event("response.created", response=opened), event("response.in_progress", response=opened)]
        for index, item in enumerate(whole["output"]):
            if item["type"] == "message":
                text = item["content"][0]["text"]
                events.append(
                    event(
                        "response.output_item.added",
                        output_index=index,
                        item={**item, "status": "in_progress", "content": []},
                    )
                )
                part = {"type": "output_text", "text": "", "annotations": []}
                events.append(
                    event(
                        "response.content_part.added",
                        item_id=item["id"],
                        output_index=index,
                        content_index=0,
                        part=part,
                    )
                )
                for piece in _pieces(text, 24):
                    events.append(
                        event(
                            "response.output_text.delta",
                            item_id=item["id"],
                            output_index=index,
                            content_index=0,
                            delta=piece,
                        )
                    )
                events.append(
                    event(
                        "response.output_text.done",
                        item_id=item["id"],
                        output_index=index,
                        content_index=0,
                        text=text,
                    )
                )
                events.append(
                    event(
                        "response.content_part.done",
                        item_id=item["id"],
                        output_index=index,
                        content_index=0,
                        part={**part, "text": text},
                    )
                )
            else:
                started = {**item, "status": "in_progress", "arguments": ""}
                events.append(event("response.output_item.added", output_index=index, item=started))
                for piece in _pieces(item["arguments"], 9):
                    events.append(
                        event(
                            "response.function_call_arguments.delta",
                            item_id=item["id"],
                            output_index=index,
                            delta=piece,
                        )
                    )
                events.append(
                    event(
                        "response.function_call_arguments.done",
                        item_id=item["id"],
                        output_index=index,
                        arguments=item["arguments"],
                    )
                )
            events.append(event("response.output_item.done", output_index=index, item=item))
        events.append(event("response.completed", response=whole))
        return events

    def render_error(self, reply: Reply, request: Any, number: int) -> Rendered:
        return OPENAI.render_error(reply, request, number)

    def validate(self, body: dict[str, Any]) -> str | None:
        if not isinstance(body.get("model"), str) or not body["model"]:
            return "Missing required parameter: 'model'."
        items = body.get("input")
        if not isinstance(items, list | str) or not items:
            return "Missing required parameter: 'input'."
        calls: set[str] = set()
        for index, item in enumerate(items if isinstance(items, list) else []):
            kind = item.get("type", "message") if isinstance(item, dict) else None
            if kind == "function_call":
                calls.add(str(item.get("call_id")))
            elif kind == "function_call_output" and str(item.get("call_id")) not in calls:
                return f"No tool call found for function call output with call_id {item.get('call_id')}."
            elif kind is None:
                return f"Invalid type for 'input[{index}]': expected an object."
        return None


def _unanswered(open_calls: list[str], answered: set[str]) -> str | None:
    missing = [call_id for call_id in open_calls if call_id not in answered]
    if not missing:
        return None
    return (
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
        "'tool_call_id'. The following tool_call_ids did not have response messages: " + ", ".join(missing)
    )


def _openai_tools(tools: Any) -> str | None:
    if tools is None:
        return None
    if not isinstance(tools, list):
        return "Invalid type for 'tools': expected an array"
    for index, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(tool, dict) or tool.get("type") != "function" or not isinstance(function, dict):
            return f"Missing required parameter: 'tools[{index}].function'"
        if not isinstance(function.get("name"), str) or not function["name"]:
            return f"Missing required parameter: 'tools[{index}].function.name'"
        if "parameters" in function and not isinstance(function["parameters"], dict):
            return f"Invalid type for 'tools[{index}].function.parameters': expected an object"
    return None


def _requested_model(request: Any, default: str) -> str:
    model = request.get("model") if isinstance(request, dict) else None
    return model if isinstance(model, str) and model else default


def _json(value: Any) -> bytes:
    return json.dumps(value).encode("utf-8")


def _sse(event: str, data: Mapping[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()


def _pieces(text: str, size: int) -> list[str]:
    """``text`` cut every ``size`` characters (at least one piece, so an empty text still has its delta);
    the cuts fall anywhere, inside a JSON string or a number, as a real stream's do."""
    return [text[start : start + size] for start in range(0, len(text), size)] or [""]


ANTHROPIC = AnthropicDialect()
OPENAI = OpenAIDialect()
RESPONSES = ResponsesDialect()
