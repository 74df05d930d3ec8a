"""The mock provider: deterministic answers from the bundle's own files, and injected failures.

With ``echo: true`` the output is the rendered prompt itself, so the contract checks the prompt (a judge
of prompt templates that needs no model). Otherwise the output for a case's run is the first of:

1. the case's ``mock_output`` in the dataset;
2. ``provider.cycle[<case id>][repeat % len]`` (a flaky model: one output per repeat, cycled);
3. ``provider.responses[<case id>]``;
4. ``provider.default_response``;
5. the case's ``expected_output`` (so a dataset that states what it expects passes as written);
6. BehaviorCI 0.1.0's answer: ``{"id": "mock-<hash>", "result": "Mock response for prompt hash <hash>",
   "confidence": 0.95}`` from the prompt's sha256.

Outputs that are not strings are sent as their JSON text. Failures: ``fail_cases`` always fail,
``failure_rate`` fails that share of runs (picked by a hash of case id, repeat and ``failure_seed``, so the
same runs fail every time); ``failure_status`` says how (429/5xx/``timeout`` are retried like real ones,
other 4xx are not); ``fail_attempts: N`` fails only the first N attempts, so retries can rescue the run.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from routedriver.behaviorci.dataset import Case
from routedriver.behaviorci.models import ProviderConfig
from routedriver.behaviorci.providers.base import Generation, ProviderCallError, RetryNotice
from routedriver.behaviorci.text import without_surrogates
from routedriver.llm.retry import RetryPolicy, call_with_retries, retryable_status
from routedriver.llm.types import Usage, estimate_tokens

DEFAULT_MODEL = "mock-v1"


class MockFailure(Exception):
    def __init__(self, status: int | str, case_id: str, message: str | None = None) -> None:
        what = "timed out" if status == "timeout" else f"HTTP {status}"
        super().__init__(message or f"mock: injected failure for case '{case_id}' ({what})")
        self.status = status

    @property
    def retryable(self) -> bool:
        return self.status == "timeout" or (isinstance(self.status, int) and retryable_status(self.status))


class MockProvider:
    name = "mock"
    cacheable = False  # answers come from the bundle's files; caching them would only cost disk writes

    def __init__(
        self,
        config: ProviderConfig,
        *,
        model: str | None = None,
        retries: int = 0,
        timeout_s: float = 30.0,
        on_retry: RetryNotice | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.config = config
        self.model = model or config.model or DEFAULT_MODEL
        self.retries = retries
        self.timeout_s = timeout_s
        self.on_retry = on_retry
        self._sleep = sleep
        self._lock = threading.Lock()
        self._attempts: dict[tuple[str, int], int] = {}
        self.calls = 0  # requests "sent", for tests and the report

    def identity(self) -> Mapping[str, Any]:
        return {"provider": self.name, "model": self.model}

    def generate(self, prompt: str, case: Case, repeat_index: int) -> Generation:
        started = time.perf_counter()
        attempts = 0

        def attempt() -> str:
            nonlocal attempts
            attempts += 1
            with self._lock:
                self.calls += 1
                slot = (case.id, repeat_index)
                number = self._attempts.get(slot, 0)
                self._attempts[slot] = number + 1
            latency_s = self.config.latency_ms / 1000
            if latency_s > self.timeout_s:  # a slow mock times out the way a slow server does
                self._sleep(self.timeout_s)
                raise MockFailure(
                    "timeout",
                    case.id,
                    f"mock: case '{case.id}' timed out after {self.timeout_s:g} s"
                    f" (latency_ms {self.config.latency_ms:g} > timeout)",
                )
            if latency_s:
                self._sleep(latency_s)
            if self._fails(case.id, repeat_index, number):
                raise MockFailure(self.config.failure_status, case.id)
            return without_surrogates(self._output(prompt, case, repeat_index))

        def announce(retry: int, delay: float, exc: BaseException) -> None:
            if self.on_retry is not None:
                self.on_retry(case.id, f"{exc}; retrying in {delay:.1f} s (retry {retry})")

        try:
            text = call_with_retries(
                attempt,
                policy=RetryPolicy(max_retries=self.retries),
                classify=lambda exc: (isinstance(exc, MockFailure) and exc.retryable, None),
                sleep=self._sleep,
                on_retry=announce,
            )
        except MockFailure as exc:
            status = exc.status
            raise ProviderCallError(
                f"{exc}" + (f" after {attempts} attempts" if attempts > 1 else ""),
                attempts=attempts,
                auth=status in (401, 403),
                fix="the bundle's mock provider injects this failure (fail_cases / failure_rate)",
            ) from None
        usage = Usage(estimate_tokens(prompt), estimate_tokens(text))
        return Generation(text, usage, (time.perf_counter() - started) * 1000, attempts, self.model)

    def _fails(self, case_id: str, repeat_index: int, attempt_number: int) -> bool:
        cfg = self.config
        chosen = case_id in cfg.fail_cases
        if not chosen and cfg.failure_rate > 0:
            digest = hashlib.sha256(f"{cfg.failure_seed}\0{case_id}\0{repeat_index}".encode()).digest()
            chosen = int.from_bytes(digest[:8], "big") / 2**64 < cfg.failure_rate
        if not chosen:
            return False
        return cfg.fail_attempts is None or attempt_number < cfg.fail_attempts

    def _output(self, prompt: str, case: Case, repeat_index: int) -> str:
        cfg = self.config
        if cfg.echo:
            return prompt
        if case.has_mock_output:
            return _as_text(case.mock_output)
        if case.id in cfg.cycle and cfg.cycle[case.id]:
            outputs = cfg.cycle[case.id]
            return _as_text(outputs[repeat_index % len(outputs)])
        if case.id in cfg.responses:
            return _as_text(cfg.responses[case.id])
        if cfg.default_response is not None:
            return _as_text(cfg.default_response)
        if case.expected_output is not None:
            return _as_text(case.expected_output)
        digest = hashlib.sha256(prompt.encode("utf-8")).hexdigest()[:8]
        return json.dumps(
            {"id": f"mock-{digest}", "result": f"Mock response for prompt hash {digest}", "confidence": 0.95}
        )


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
