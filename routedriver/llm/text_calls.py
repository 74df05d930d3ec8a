"""Tool calls a model wrote into its text instead of the API's tool-call field: the one place they are read.

Qwen, Hermes and other open models call tools with tags in their output, and a server started without a
tool-call parser (vLLM without ``--tool-call-parser``, some Ollama templates, proxies) passes the tags on as
plain content. Two forms are read:

- Hermes / Qwen2.5 / Qwen3: ``<tool_call>{"name": "read", "arguments": {"file_path": "a"}}</tool_call>``
  (``arguments`` may also be a JSON string, or be called ``parameters``; a JSON array holds several calls);
- Qwen3-Coder: ``<tool_call><function=read><parameter=file_path>a</parameter></function></tool_call>``
  (values are text; one whose schema type is not ``string`` is read as JSON when it parses).

Each block becomes a ``ToolCall``; a block that cannot be read becomes a malformed one quoting the block, so
the loop answers it with an error and the model can correct itself: a call written as text is never taken
for the final answer. The tags leave the text; what the model said around them stays. A closing tag the
model left out is tolerated (the block runs to the next ``<tool_call>`` or the end).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from routedriver.llm._sdk import invalid_call_error, read_json
from routedriver.llm.types import ToolCall, ToolSpec

OPEN, CLOSE = "<tool_call>", "</tool_call>"
SHAPE = '<tool_call>{"name": "TOOL", "arguments": {…}}</tool_call>'  # said to a model that wrote one wrong
_FUNCTION = re.compile(r"<function=([^>\s]*)>(.*?)(?:</function>|$)", re.DOTALL)
_PARAMETER = re.compile(r"<parameter=([^>\s]*)>(.*?)(?:</parameter>|(?=<parameter=)|$)", re.DOTALL)
_FENCE = re.compile(r"^```[\w-]*\s*\n?(.*?)\n?```$", re.DOTALL)


def has_text_calls(text: str) -> bool:
    return OPEN in text


def split_text_calls(
    text: str, tools: Sequence[ToolSpec], new_id: Callable[[], str]
) -> tuple[str, tuple[ToolCall, ...]]:
    """``(text without the call blocks, the calls)``; ``new_id()`` names each call (the text has no ids)."""
    schemas = {tool.name: tool.input_schema for tool in tools}
    kept: list[str] = []
    calls: list[ToolCall] = []
    rest = text
    while (start := rest.find(OPEN)) >= 0:
        kept.append(rest[:start])
        body_start = start + len(OPEN)
        ends = [i for i in (rest.find(CLOSE, body_start), rest.find(OPEN, body_start)) if i >= 0]
        end = min(ends) if ends else len(rest)
        calls.extend(_read_block(rest[body_start:end].strip(), schemas, new_id))
        rest = rest[end + len(CLOSE) :] if rest.startswith(CLOSE, end) else rest[end:]
    kept.append(rest)
    said = "".join(kept).replace(CLOSE, "")
    return re.sub(r"\n{3,}", "\n\n", said).strip(), tuple(calls)


def _read_block(
    body: str, schemas: Mapping[str, Mapping[str, Any]], new_id: Callable[[], str]
) -> list[ToolCall]:
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1).strip()
    if body.startswith("<function="):
        return [_xml_call(body, schemas, new_id())]
    value, problem = read_json(body)
    if problem is not None:
        return [_malformed(new_id(), "", body, f"the <tool_call> text is {problem}; write {SHAPE}")]
    items = value if isinstance(value, list) and value else [value]
    return [_json_call(item, body, new_id()) for item in items]


def _json_call(item: Any, body: str, call_id: str) -> ToolCall:
    if not isinstance(item, Mapping):
        return _malformed(call_id, "", body, f"a <tool_call> must hold a JSON object: {SHAPE}")
    name = item.get("name")
    if not isinstance(name, str) or not name:
        return _malformed(call_id, "", body, "the <tool_call> has no tool name")
    arguments = item.get("arguments", item.get("parameters", {}))
    if isinstance(arguments, str):  # some templates encode the arguments once more, as OpenAI's API does
        arguments, problem = read_json(arguments) if arguments.strip() else ({}, None)
        if problem is not None:
            return _malformed(call_id, name, body, f"its arguments are {problem}")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, Mapping):
        return _malformed(call_id, name, body, "its arguments must be a JSON object")
    return ToolCall(id=call_id, name=name, arguments=dict(arguments))


def _xml_call(body: str, schemas: Mapping[str, Mapping[str, Any]], call_id: str) -> ToolCall:
    function = _FUNCTION.match(body)
    name = function.group(1) if function else ""
    if function is None or not name:
        return _malformed(call_id, "", body, "the <tool_call> has no <function=NAME>")
    properties = schemas.get(name, {}).get("properties", {})
    arguments: dict[str, Any] = {}
    for parameter in _PARAMETER.finditer(function.group(2)):
        key, raw = parameter.group(1), _trim_newline(parameter.group(2))
        kind = properties.get(key, {}).get("type") if isinstance(properties, Mapping) else None
        arguments[key] = raw if kind in (None, "string") else _json_or_text(raw)
    return ToolCall(id=call_id, name=name, arguments=arguments)


def _trim_newline(value: str) -> str:
    """The value between the tags, without the one line break the format puts on each side."""
    value = value[1:] if value.startswith("\n") else value
    return value[:-1] if value.endswith("\n") else value


def _json_or_text(raw: str) -> Any:
    value, problem = read_json(raw)
    return raw if problem is not None else value  # the loop's schema check reports a wrong type to the model


def _malformed(call_id: str, name: str, body: str, problem: str) -> ToolCall:
    return ToolCall(id=call_id, name=name, raw_arguments=body, error=invalid_call_error([problem]))
