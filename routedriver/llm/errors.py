"""The errors every LLM call can end in, one class per thing a caller may want to treat differently.

All are ``Malfunction``s (exit 1): from the route driver's point of view a review that could not reach its
model did not judge the artifact, so it must never read as "failed" (exit 2). The message is one line that
names the provider, the HTTP status and the server's own words (with the API key scrubbed), and the fix is a
hint where one exists (``check ANTHROPIC_API_KEY``, ``check --model``).
"""

from __future__ import annotations

from routedriver.errors import Malfunction


class LLMError(Malfunction):
    """A call to a model provider failed.

    ``provider`` is the adapter's name (``claude``, ``qwen``, ``openai`` …); ``status`` the last HTTP status
    (None for timeouts, connection failures and unreadable answers); ``retryable`` whether the failure is
    transient in kind (429, 5xx, timeout, connection), so a caller may try again later even though this
    call's own retries ran out; ``attempts`` how many requests were sent.
    """

    def __init__(
        self,
        what: str,
        fix: str | None = None,
        *,
        provider: str,
        status: int | None = None,
        retryable: bool = False,
        attempts: int = 1,
    ) -> None:
        super().__init__(what, fix)
        self.provider = provider
        self.status = status
        self.retryable = retryable
        self.attempts = attempts


class LLMAuthError(LLMError):
    """401/403: the key is missing, wrong, or lacks permission. Never retried."""


class LLMBadRequest(LLMError):
    """400/404/413/422 and other 4xx: the request was refused (e.g. an unknown model). Not retried."""


class LLMRateLimited(LLMError):
    """429 after the retries ran out, or with a Retry-After longer than the policy is willing to wait."""


class LLMUnavailable(LLMError):
    """5xx, a timeout or a connection failure after the retries ran out."""


class LLMResponseError(LLMError):
    """The provider answered 200 with something that cannot be read as a completion."""


def retry_note(attempt: int, delay_s: float, exc: BaseException) -> str:
    """A line for an ``on_retry`` callback to log: ``claude: HTTP 429 …; retrying in 1.2 s (retry 1)``.

    The adapters hand ``on_retry`` an ``LLMError`` describing the failed attempt; its ``what`` (without the
    fix, which is advice for when retrying is over) is what the line quotes.
    """
    what = exc.what if isinstance(exc, LLMError) else " ".join(str(exc).split())
    return f"{what}; retrying in {delay_s:.1f} s (retry {attempt})"
