"""When and how long to wait before sending an LLM request again.

The SDK clients are built with ``max_retries=0``; this module does the retrying so the rules are ours,
the same for every provider, and testable with an injected ``sleep``:

- retry only what may succeed later: 429, 408, every 5xx (500, 502, 503, 504, 529 …), timeouts and
  connection failures; never 400/401/403/404/422 (the same request would fail the same way);
- wait what the server asks for (``retry-after-ms``, ``Retry-After`` in seconds or as an HTTP date), but
  give up at once when that is longer than ``max_retry_after_s`` (a caller in CI is better served by an
  error than by an hour's silence);
- otherwise back off exponentially with full jitter (``uniform(0, min(max_delay, base * 2**attempt))``),
  which spreads the retries of many concurrent callers instead of having them return in lockstep.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import random

T = TypeVar("T")

# (retry?, seconds the server asked us to wait or None)
Classification = tuple[bool, float | None]


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 4  # retries after the first attempt
    base_delay_s: float = 0.5  # exponential: base * 2**attempt, capped, with full jitter
    max_delay_s: float = 20.0
    max_retry_after_s: float = 60.0  # a Retry-After longer than this is not waited for: the error surfaces

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError("RetryPolicy.max_retries must be >= 0")
        if self.base_delay_s < 0 or self.max_delay_s < 0 or self.max_retry_after_s < 0:
            raise ValueError("RetryPolicy delays must be >= 0")

    def backoff_s(self, attempt: int, rng: random.Random | None = None) -> float:
        """The jittered wait before retry number ``attempt + 1`` (``attempt`` counts from 0)."""
        # min() before pow() overflow matters only for absurd attempt counts; cap the exponent anyway.
        ceiling = min(self.max_delay_s, self.base_delay_s * 2.0 ** min(attempt, 64))
        return (rng or random).uniform(0.0, ceiling)

    def delay_s(self, attempt: int, retry_after_s: float | None, rng: random.Random | None = None) -> float:
        """What to wait: the server's ``Retry-After`` when it gave one, otherwise the jittered backoff."""
        if retry_after_s is not None:
            return max(0.0, retry_after_s)
        return self.backoff_s(attempt, rng)


def retryable_status(status: int) -> bool:
    """Whether an HTTP status is worth another attempt: 408, 429 and every 5xx."""
    return status in (408, 429) or status >= 500


def parse_retry_after(headers: Mapping[str, str] | None, *, now: float | None = None) -> float | None:
    """Seconds to wait from ``retry-after-ms`` or ``Retry-After`` (seconds or an HTTP date), else None.

    A date in the past means "now" (0.0); a header that is neither a number nor a date is ignored.
    """
    if not headers:
        return None
    millis = _header(headers, "retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    value = _header(headers, "retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    import email.utils  # ~10 ms of imports, paid only when a server sends a date

    parsed = email.utils.parsedate_tz(value)
    if parsed is None:
        return None
    when = email.utils.mktime_tz(parsed)
    return max(0.0, when - (time.time() if now is None else now))


def call_with_retries(
    fn: Callable[[], T],
    *,
    policy: RetryPolicy,
    classify: Callable[[BaseException], Classification],
    sleep: Callable[[float], None] = time.sleep,
    on_retry: Callable[[int, float, BaseException], None] | None = None,
) -> T:
    """Call ``fn`` until it returns, retrying the failures ``classify`` calls retryable.

    The last failure is re-raised unchanged when it is not retryable, when the retries ran out, or when the
    server asked for a wait above ``policy.max_retry_after_s``. ``on_retry(attempt, delay_s, exc)`` is called
    before each wait, ``attempt`` being the number of the retry about to happen (1 for the first).
    """
    attempt = 0
    while True:
        try:
            return fn()
        except Exception as exc:  # classify decides; anything it rejects is re-raised as is
            retry, retry_after = classify(exc)
            if not retry or attempt >= policy.max_retries:
                raise
            if retry_after is not None and retry_after > policy.max_retry_after_s:
                raise
            delay = policy.delay_s(attempt, retry_after)
            attempt += 1
            if on_retry is not None:
                on_retry(attempt, delay, exc)
            sleep(delay)


def _header(headers: Mapping[str, str], name: str) -> str | None:
    value = headers.get(name)
    if value is None:
        # A plain dict is case-sensitive; httpx's Headers is not. Accept both.
        for key, candidate in headers.items():
            if key.lower() == name:
                return candidate.strip()
        return None
    return value.strip()
