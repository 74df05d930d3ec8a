"""The openai and anthropic providers: thin wrappers over routedriver.llm's SDK adapters.

The adapters own the wire formats, the SDK clients (built with ``max_retries=0``) and the retry policy
(429/5xx/timeouts only, exponential backoff with full jitter, Retry-After honoured); this module only picks
the key, the base URL and the model, turns a prompt into one user message, and maps failures to
``ProviderCallError``. The SDK itself is imported on the first call, never when a bundle is validated.
"""

from __future__ import annotations

import importlib
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from routedriver.behaviorci.dataset import Case
from routedriver.behaviorci.errors import ProviderConfigError
from routedriver.behaviorci.providers.base import Generation, ProviderCallError, RetryNotice
from routedriver.behaviorci.text import without_surrogates
from routedriver.llm.anthropic_chat import AnthropicChat
from routedriver.llm.env import first_env
from routedriver.llm.errors import LLMAuthError, LLMError, retry_note
from routedriver.llm.openai_chat import OpenAIChat
from routedriver.llm.retry import RetryPolicy
from routedriver.llm.types import Message

# name → (default model, key variable, base URL variable, default max_tokens)
SETTINGS: dict[str, tuple[str, str, str, int]] = {
    "openai": ("gpt-4o-mini", "OPENAI_API_KEY", "OPENAI_BASE_URL", 4096),
    "anthropic": ("claude-haiku-4-5", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", 1024),
}


class ChatProvider:
    cacheable = True

    def __init__(
        self,
        name: str,
        *,
        model: str | None,
        temperature: float,
        max_tokens: int | None,
        base_url: str | None,
        api_key_env: str | None,
        timeout_s: float,
        retries: int,
        environ: Mapping[str, str],
        on_retry: RetryNotice | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        default_model, key_var, url_var, default_max_tokens = SETTINGS[name]
        key_var = api_key_env or key_var
        found = first_env([key_var], environ)
        if found is None:
            raise ProviderConfigError(
                f"{key_var} is not set (needed by the {name} provider)",
                f"export {key_var}=… or run with --provider mock",
            )
        self.name = name
        self.model = model or default_model
        self.temperature = temperature
        self.max_tokens = max_tokens
        url = first_env([url_var], environ)
        self.base_url = base_url or (url[1] if url else None)
        self.on_retry = on_retry
        self._local = threading.local()
        adapter: Any = OpenAIChat if name == "openai" else AnthropicChat
        try:
            self.chat = adapter(
                model=self.model,
                api_key=found[1],
                base_url=self.base_url,
                name=name,
                default_max_tokens=max_tokens or default_max_tokens,
                timeout_s=timeout_s,
                retry=RetryPolicy(max_retries=retries),
                on_retry=self._announce,
                key_env=key_var,
                sleep=sleep,
            )
        except LLMError as exc:
            raise ProviderConfigError(exc.what, exc.fix) from None

    def identity(self) -> Mapping[str, Any]:
        return {
            "provider": self.name,
            "model": self.model,
            "base_url": self.base_url,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }

    def generate(self, prompt: str, case: Case, repeat_index: int) -> Generation:
        # The SDK import (0.6-1.4 s, once) happens here, outside the timing, not inside the first calls'
        # latency; concurrent first calls wait on the import lock for it.
        importlib.import_module(self.name)
        self._local.case_id = case.id
        self._local.retries = 0
        started = time.perf_counter()
        try:
            completion = self.chat.complete([Message(role="user", text=prompt)], temperature=self.temperature)
        except LLMError as exc:
            raise ProviderCallError(
                exc.what, attempts=exc.attempts, auth=isinstance(exc, LLMAuthError), fix=exc.fix
            ) from None
        latency_ms = (time.perf_counter() - started) * 1000
        # A model may answer with lone surrogates (JSON "\\ud83d"); U+FFFD keeps the paid answer writable, and
        # the report and the cache then hold the same text.
        return Generation(
            without_surrogates(completion.text),
            completion.usage,
            latency_ms,
            1 + self._local.retries,
            without_surrogates(completion.model),
        )

    def _announce(self, attempt: int, delay_s: float, exc: BaseException) -> None:
        # The adapter calls this in the thread that made the call, so the thread-local names its case.
        self._local.retries = getattr(self._local, "retries", 0) + 1
        if self.on_retry is not None:
            self.on_retry(getattr(self._local, "case_id", "?"), retry_note(attempt, delay_s, exc))
