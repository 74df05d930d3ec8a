"""What the Anthropic and OpenAI adapters share: lazy SDK clients, the retry loop, error mapping.

Both official SDKs are generated from the same template, so their exception families line up
(``APIStatusError`` with ``status_code``/``response``/``body``, ``APIConnectionError`` and its subclass
``APITimeoutError``, ``APIResponseValidationError``). This module leans on exactly those names and nothing
else, so the adapters stay thin: they translate messages, this module does the rest.
"""

from __future__ import annotations

import importlib
import itertools
import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any

from routedriver.llm.errors import (
    LLMAuthError,
    LLMBadRequest,
    LLMError,
    LLMRateLimited,
    LLMResponseError,
    LLMUnavailable,
)
from routedriver.llm.retry import (
    Classification,
    RetryPolicy,
    call_with_retries,
    parse_retry_after,
    retryable_status,
)
from routedriver.llm.types import Completion, Message, ToolSpec
from routedriver.userfile import json_problem

OnRetry = Callable[[int, float, BaseException], None]
_MESSAGE_LIMIT = 300


class SDKChat:
    """The shared half of an SDK adapter; subclasses say how to build a client, a request and a Completion."""

    sdk_name: str = ""  # the importable SDK module: "anthropic" or "openai"
    default_key_env: str = ""  # named in hints when the caller did not say where the key came from
    api_name: str = ""  # what the base URL should point at, for hints: "an Anthropic Messages API"
    default_name: str = ""  # the adapter's name when the caller gives none: "claude", "openai"
    default_context_window: int = 0  # in tokens, when the caller gives none

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
    ) -> None:
        """``base_url=None`` lets the SDK decide (its ``*_BASE_URL`` variable, else the provider's API).
        ``key_env`` names where the key came from, for hints such as ``check ANTHROPIC_API_KEY``; ``sleep``
        is the wait between retries (tests inject one that records instead of waiting)."""
        name = self.default_name if name is None else name
        self.name = name
        self.model = model
        self.context_window = self.default_context_window if context_window is None else context_window
        self.default_max_tokens = default_max_tokens
        self.base_url = base_url
        self.timeout_s = timeout_s
        self.retry = retry or RetryPolicy()
        self.on_retry = on_retry
        self.key_env = key_env or self.default_key_env
        self._api_key = api_key.strip() if isinstance(api_key, str) else ""
        self._sleep = sleep
        self._client: Any = None
        self._client_lock = threading.Lock()
        self._synthetic_ids = itertools.count(1)
        self._synthetic_lock = threading.Lock()
        if not self._api_key:
            raise LLMAuthError(f"{name}: no API key was given", f"set {self.key_env}", provider=name)
        if not model or not model.strip():
            raise LLMBadRequest(f"{name}: no model was given", "pass --model", provider=name)

    def __repr__(self) -> str:  # never show the key, even in a debugger or a log of the object
        return f"{type(self).__name__}(name={self.name!r}, model={self.model!r}, base_url={self.base_url!r})"

    # -- what subclasses provide

    def _new_client(self, sdk: ModuleType) -> Any:
        raise NotImplementedError

    def _request(
        self,
        messages: Sequence[Message],
        system: str | None,
        tools: Sequence[ToolSpec],
        max_tokens: int,
        temperature: float | None,
    ) -> dict[str, Any]:
        raise NotImplementedError

    def _send(self, client: Any, request: dict[str, Any]) -> Any:
        raise NotImplementedError

    def _completion(self, response: Any, tools: Sequence[ToolSpec]) -> Completion:
        """The Completion of a response to a request that offered ``tools``."""
        raise NotImplementedError

    # -- the shared call

    def complete(
        self,
        messages: Sequence[Message],
        *,
        system: str | None = None,
        tools: Sequence[ToolSpec] = (),
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> Completion:
        """One model turn: translate, send (with retries), translate back. Raises only ``LLMError``s."""
        request = self._request(messages, system, tools, max_tokens or self.default_max_tokens, temperature)
        sdk = self._sdk()
        client = self._ensure_client(sdk)
        attempts = 0

        def send() -> Any:
            nonlocal attempts
            attempts += 1
            return self._send(client, request)

        def classify(exc: BaseException) -> Classification:
            if isinstance(exc, sdk.APIStatusError):
                return retryable_status(exc.status_code), parse_retry_after(exc.response.headers)
            if isinstance(exc, sdk.APIConnectionError):  # includes APITimeoutError
                return True, None
            return False, None

        def announce(attempt: int, delay: float, exc: BaseException) -> None:
            if self.on_retry is not None:
                self.on_retry(attempt, delay, self._map_error(sdk, exc, attempts) or exc)

        try:
            response = call_with_retries(
                send, policy=self.retry, classify=classify, sleep=self._sleep, on_retry=announce
            )
        except Exception as exc:  # every SDK failure becomes an LLMError; others propagate
            mapped = self._map_error(sdk, exc, attempts)
            if mapped is None:
                raise
            raise mapped from None  # the SDK exception carries request headers (the key); do not chain it
        if isinstance(response, str | bytes) or response is None:
            # The SDK hands back raw text when the server did not answer with JSON.
            raise self._unreadable(
                f"the server answered without JSON: {self._clip(str(response))!r}", attempts=attempts
            )
        try:
            return self._completion(response, tools)
        except (AttributeError, TypeError, ValueError, KeyError, IndexError) as exc:
            raise self._unreadable(
                f"cannot read the server's answer ({type(exc).__name__}: {self._clip(str(exc))})",
                attempts=attempts,
            ) from None

    # -- helpers for subclasses

    def synthetic_id(self, taken: set[str]) -> str:
        """A tool-call id for a call that came without one, unique in this adapter's conversation.

        The id is added to ``taken`` (the ids of the response being read), so a second call without an id
        in the same response gets another one.
        """
        with self._synthetic_lock:
            while True:
                candidate = f"call_{next(self._synthetic_ids)}"
                if candidate not in taken:
                    taken.add(candidate)
                    return candidate

    def _sdk(self) -> ModuleType:
        return importlib.import_module(self.sdk_name)  # 0.6-1.4 s the first time: only on a real call

    def _ensure_client(self, sdk: ModuleType) -> Any:
        with self._client_lock:  # concurrent first calls build one client, not twenty
            if self._client is None:
                self._client = self._new_client(sdk)
            return self._client

    def _where(self) -> str:
        return self.base_url or "the SDK default"

    def _unreadable(self, what: str, *, attempts: int, status: int | None = 200) -> LLMResponseError:
        """The error for an answer that is not the API's; the usual cause is a base URL pointing elsewhere."""
        return LLMResponseError(
            f"{self.name}: {what}",
            f"check that the base URL ({self._where()}) points at {self.api_name}",
            provider=self.name,
            status=status,
            attempts=attempts,
        )

    def _clip(self, text: str) -> str:
        return redact(one_line(text, _MESSAGE_LIMIT), self._api_key)

    def _map_error(self, sdk: ModuleType, exc: BaseException, attempts: int) -> LLMError | None:
        """The ``LLMError`` for an SDK failure, or None for an exception that is not the SDK's."""
        after = f" (after {attempts} attempts)" if attempts > 1 else ""
        common: dict[str, Any] = {"provider": self.name, "attempts": attempts}
        if isinstance(exc, sdk.APITimeoutError):
            return LLMUnavailable(
                f"{self.name}: the request timed out after {self.timeout_s:g} s{after}",
                "check the network or the server's health, or allow a longer timeout",
                retryable=True,
                **common,
            )
        if isinstance(exc, sdk.APIConnectionError):
            cause = exc.__cause__ or exc.__context__
            detail = f": {self._clip(str(cause))}" if cause is not None and str(cause) else ""
            return LLMUnavailable(
                f"{self.name}: cannot reach {self._where()}{detail}{after}",
                "check the base URL and the network",
                retryable=True,
                **common,
            )
        if isinstance(exc, sdk.APIResponseValidationError):
            return self._unreadable(
                f"the server's answer does not fit the API schema: {self._clip(exc.message)}",
                attempts=attempts,
                status=exc.status_code,
            )
        if isinstance(exc, sdk.APIStatusError):
            return self._status_error(exc, attempts, after, common)
        if isinstance(exc, ValueError):  # a 200 whose JSON body does not parse (json.JSONDecodeError)
            return self._unreadable(
                f"the server's answer is not valid JSON: {self._clip(str(exc))}", attempts=attempts
            )
        if isinstance(exc, RecursionError):  # a body nested deeper than Python's JSON parser goes
            return self._unreadable(
                "the server's answer is JSON nested too deeply to read", attempts=attempts
            )
        if isinstance(exc, sdk.APIError):
            return LLMError(f"{self.name}: {self._clip(str(exc))}{after}", **common)
        return None

    def _status_error(self, exc: Any, attempts: int, after: str, common: dict[str, Any]) -> LLMError:
        status: int = exc.status_code
        kind, message = server_error(exc.body)
        said = (
            f"HTTP {status}" + (f" {kind}" if kind else "") + (f": {self._clip(message)}" if message else "")
        )
        what = f"{self.name}: {said}"
        common = {**common, "status": status}
        if status in (401, 403):
            fix = (
                f"check {self.key_env}"
                if status == 401
                else f"check that {self.key_env} may use {self.model!r}"
            )
            return LLMAuthError(what, fix, **common)
        if status == 429:
            wait = parse_retry_after(exc.response.headers)
            if wait is not None and wait > self.retry.max_retry_after_s:
                return LLMRateLimited(
                    f"{what}; the server asks to wait {wait:.0f} s,"
                    f" longer than the {self.retry.max_retry_after_s:g} s"
                    " this client waits",
                    "try again later or lower the request rate",
                    retryable=True,
                    **common,
                )
            return LLMRateLimited(
                f"{what}{after}", "try again later or lower the request rate", retryable=True, **common
            )
        if retryable_status(status):
            return LLMUnavailable(f"{what}{after}", "try again later", retryable=True, **common)
        if status == 404:
            return LLMBadRequest(
                what, f"check --model ({self.model!r}) and the base URL ({self._where()})", **common
            )
        return LLMBadRequest(what, None, **common)


def server_error(body: object) -> tuple[str, str]:
    """``(error type, message)`` from an error body in any of the shapes providers use.

    Anthropic: ``{"type": "error", "error": {"type": …, "message": …}}``; OpenAI (the SDK already unwrapped
    ``error``): ``{"message": …, "type": …, "code": …}``; Ollama and some proxies: ``{"error": "…"}`` or plain
    text, e.g. an HTML page from a gateway.
    """
    if isinstance(body, Mapping):
        inner = body.get("error")
        if isinstance(inner, Mapping):
            body = inner
        elif isinstance(inner, str):
            return "", inner
        code = body.get("code")  # OpenAI's code ("rate_limit_exceeded") says more than its type ("requests")
        kind = code if isinstance(code, str) and code else body.get("type") or ""
        message = body.get("message") or body.get("detail") or ""
        if not message and not kind:
            return "", json.dumps(body, sort_keys=True)
        return str(kind), str(message)
    if isinstance(body, str | bytes):
        return "", body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    return "", ""


def one_line(text: str, limit: int = _MESSAGE_LIMIT) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def redact(text: str, secret: str) -> str:
    """``text`` with every occurrence of ``secret`` (an API key) replaced; servers do echo keys back."""
    if secret and len(secret) >= 4 and secret in text:
        text = text.replace(secret, "***")
    return text


def invalid_call_error(problems: Sequence[str]) -> str | None:
    """``ToolCall.error`` for a call read from a response: what is wrong with it, or None when nothing is."""
    return "invalid tool call: " + "; ".join(problems) if problems else None


def parse_arguments(raw: object) -> tuple[dict[str, Any], str | None, str | None]:
    """``(arguments, raw_arguments, error)`` for tool-call arguments sent as a JSON string.

    A mapping is taken as is (some OpenAI-compatible servers send an object); an empty string means no
    arguments (a common encoding of a call to a tool without parameters). Anything else that is not a JSON
    object is an error that quotes what arrived, so the model can be told what to fix.
    """
    if isinstance(raw, Mapping):
        return dict(raw), None, None
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return {}, None, None
    if not isinstance(raw, str):
        text = json.dumps(raw, default=str)
        return {}, text, f"the arguments must be a JSON object, not {type(raw).__name__}"
    value, problem = read_json(raw)
    if problem is not None:
        return {}, raw, f"the arguments are {problem}"
    if not isinstance(value, dict):
        return {}, raw, f"the arguments must be a JSON object, not a JSON {_json_kind(value)}"
    return value, None, None


def read_json(text: str) -> tuple[Any, str | None]:
    """``(value, None)`` for JSON text a model sent in a tool call, or ``(None, what is wrong)`` to tell it:
    the text is not JSON, or it nests deeper than Python's parser goes (which raises RecursionError, not
    JSONDecodeError). Every reading of a model's call goes through here, so neither ends the run."""
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        return None, f"not valid JSON ({json_problem(exc)})"
    except RecursionError:
        return None, "not readable JSON (nested too deeply)"


def _json_kind(value: object) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    return "null"
