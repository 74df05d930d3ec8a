"""OpenAI Chat Completions behind ``ChatModel``, for any OpenAI-compatible server.

Qwen (DashScope's compatible mode), vLLM, Ollama, OpenRouter and OpenAI itself all speak it. Request: the
system prompt is the first ``role: system`` message; assistant tool calls become ``tool_calls`` with the
arguments as a JSON string; each ``Message(role="tool")`` becomes a ``role: tool`` message. Response:
``choices[0].message`` becomes the Completion. A tool call whose ``arguments`` are not a JSON object, or that
lacks an id or a name, becomes a malformed ``ToolCall`` (never an exception) next to the valid calls. When
the request offered tools and the message has none, calls the model wrote into its text (``<tool_call>`` tags,
a server without a tool-call parser) are read by ``routedriver.llm.text_calls``.

``openai`` is imported on the first call, never at import time (it costs ~0.6 s).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any, Literal

from routedriver.llm._sdk import OnRetry, SDKChat, invalid_call_error, parse_arguments, server_error
from routedriver.llm.errors import LLMResponseError
from routedriver.llm.retry import RetryPolicy
from routedriver.llm.text_calls import has_text_calls, split_text_calls
from routedriver.llm.types import Completion, Message, ToolCall, ToolSpec, Usage

_STOP_REASONS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "length": "max_tokens",
}


class OpenAIChat(SDKChat):
    """A ``ChatModel`` over ``openai.OpenAI().chat.completions.create`` (non-streaming)."""

    sdk_name = "openai"
    default_key_env = "OPENAI_API_KEY"
    api_name = "an OpenAI-compatible Chat Completions API"
    default_name = "openai"
    default_context_window = 128_000

    def __init__(
        self,
        *,
        model: str,
        api_key: str,
        base_url: str | None = None,
        name: str | None = None,
        context_window: int | None = None,
        default_max_tokens: int = 4096,
        timeout_s: float = 600.0,
        retry: RetryPolicy | None = None,
        on_retry: OnRetry | None = None,
        key_env: str | None = None,
        sleep: Callable[[float], None] = time.sleep,
        max_tokens_param: Literal["max_tokens", "max_completion_tokens"] = "max_tokens",
        extra_body: Mapping[str, Any] | None = None,
    ) -> None:
        """As ``SDKChat`` (``base_url=None``: ``OPENAI_BASE_URL``, else api.openai.com/v1), plus:

        ``max_tokens_param``: compatible servers (Qwen, vLLM, Ollama) read ``max_tokens``; OpenAI's reasoning
        models only accept ``max_completion_tokens``. ``extra_body`` is merged into every request for
        server-specific switches (e.g. DashScope's ``{"enable_thinking": false}``).
        """
        super().__init__(
            model=model,
            api_key=api_key,
            base_url=base_url,
            name=name,
            context_window=context_window,
            default_max_tokens=default_max_tokens,
            timeout_s=timeout_s,
            retry=retry,
            on_retry=on_retry,
            key_env=key_env,
            sleep=sleep,
        )
        self.max_tokens_param = max_tokens_param
        self.extra_body = dict(extra_body or {})

    def _new_client(self, sdk: ModuleType) -> Any:
        return sdk.OpenAI(
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
            "messages": to_openai_messages(messages, system),
            self.max_tokens_param: max_tokens,
        }
        if tools:
            request["tools"] = [to_openai_tool(tool) for tool in tools]
        if temperature is not None:
            request["temperature"] = temperature
        if self.extra_body:
            request["extra_body"] = self.extra_body
        return request

    def _send(self, client: Any, request: dict[str, Any]) -> Any:
        return client.chat.completions.create(**request)

    def _completion(self, response: Any, tools: Sequence[ToolSpec]) -> Completion:
        choices = getattr(response, "choices", None)
        if not choices:
            # OpenRouter and some proxies answer 200 with an error object instead of a choice.
            extra = getattr(response, "model_extra", None) or {}
            _, said = server_error({"error": extra.get("error")} if extra.get("error") else {})
            reason = f": {self._clip(said)}" if said else ""
            raise LLMResponseError(
                f"{self.name}: the server's answer has no choices{reason}",
                f"check --model ({self.model!r}) and the base URL ({self._where()})",
                provider=self.name,
                status=200,
            )
        choice = choices[0]
        message = getattr(choice, "message", None)
        text = _content_text(getattr(message, "content", None))
        refusal = getattr(message, "refusal", None)
        finish = getattr(choice, "finish_reason", None)
        if not text and isinstance(refusal, str) and refusal:
            text, finish = refusal, "refusal"
        raw_calls = list(getattr(message, "tool_calls", None) or [])
        legacy = getattr(message, "function_call", None)
        if not raw_calls and legacy is not None:
            raw_calls = [_LegacyCall(legacy)]
        taken = {call_id for call in raw_calls if isinstance(call_id := getattr(call, "id", None), str)}
        calls = tuple(self._tool_call(call, taken) for call in raw_calls)
        if not calls and tools and has_text_calls(text):
            # A model served without a tool-call parser wrote its calls into the text (Hermes / Qwen tags).
            text, calls = split_text_calls(text, tools, lambda: self.synthetic_id(taken))
        usage = getattr(response, "usage", None)
        details = getattr(usage, "prompt_tokens_details", None)  # OpenAI caches prompt prefixes by itself
        return Completion(
            text=text,
            tool_calls=calls,
            usage=Usage(
                input_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
                output_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
                cache_read_tokens=int(getattr(details, "cached_tokens", 0) or 0),
            ),
            stop_reason=normalize_finish_reason(finish, bool(calls)),
            model=str(getattr(response, "model", None) or self.model),
        )

    def _tool_call(self, call: Any, taken: set[str]) -> ToolCall:
        function = getattr(call, "function", None)
        call_id = getattr(call, "id", None)
        name = getattr(function, "name", None)
        problems: list[str] = []
        if isinstance(call, _LegacyCall):
            call_id = self.synthetic_id(taken)  # the deprecated function_call has no id by design
        elif not isinstance(call_id, str) or not call_id:
            call_id = self.synthetic_id(taken)
            problems.append("the call had no id")
        if function is None:
            problems.append(f"the call is not a function call (type {getattr(call, 'type', None)!r})")
        if not isinstance(name, str) or not name:
            name = ""
            problems.append("the call had no function name")
        arguments, raw, error = parse_arguments(getattr(function, "arguments", None))
        if error:
            problems.append(error)
        return ToolCall(
            id=call_id,
            name=name,
            arguments=arguments,
            raw_arguments=raw,
            error=invalid_call_error(problems),
        )


class _LegacyCall:
    """The deprecated single ``function_call`` some older compatible servers still send."""

    def __init__(self, function: Any) -> None:
        self.id = None
        self.type = "function"
        self.function = function


def to_openai_tool(tool: ToolSpec) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": dict(tool.input_schema),
        },
    }


def to_openai_messages(messages: Sequence[Message], system: str | None) -> list[dict[str, Any]]:
    result: list[dict[str, Any]] = []
    if system:
        result.append({"role": "system", "content": system})
    for message in messages:
        if message.role == "tool":
            # OpenAI has no error flag on tool results; the text itself must say it failed.
            result.append(
                {"role": "tool", "tool_call_id": message.tool_call_id or "", "content": message.text}
            )
        elif message.role == "assistant":
            entry: dict[str, Any] = {"role": "assistant", "content": message.text or None}
            if message.tool_calls:
                entry["tool_calls"] = [
                    {
                        "id": call.id,
                        "type": "function",
                        "function": {
                            "name": call.name or "unknown_tool",
                            # A malformed call is replayed as "{}": compatible servers re-parse history
                            # arguments in their chat templates and fail on the invalid JSON.
                            "arguments": "{}" if call.malformed else json.dumps(dict(call.arguments)),
                        },
                    }
                    for call in message.tool_calls
                ]
            elif not message.text:
                entry["content"] = ""
            result.append(entry)
        else:
            result.append({"role": "user", "content": message.text})
    return result


def normalize_finish_reason(reason: str | None, has_calls: bool) -> str:
    normalized = _STOP_REASONS.get(reason or "stop", reason or "end_turn")
    # Ollama and some vLLM parsers report "stop" even when the message carries tool calls.
    if has_calls and normalized == "end_turn":
        return "tool_use"
    return normalized


def _content_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # a few servers answer with content parts
        return "".join(
            part.get("text", "") if isinstance(part, Mapping) else str(getattr(part, "text", "") or "")
            for part in content
        )
    return ""
