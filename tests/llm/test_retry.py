"""RetryPolicy and call_with_retries on their own: which failures retry, how long each wait is."""

from __future__ import annotations

import email.utils
import random

import pytest

from routedriver.llm.retry import RetryPolicy, call_with_retries, parse_retry_after, retryable_status


class Flaky:
    """Fails with the given exceptions in order, then returns "ok"."""

    def __init__(self, *failures: BaseException) -> None:
        self.failures = list(failures)
        self.calls = 0

    def __call__(self) -> str:
        self.calls += 1
        if self.failures:
            raise self.failures.pop(0)
        return "ok"


class Transient(Exception):
    def __init__(self, retry_after: float | None = None) -> None:
        super().__init__("transient")
        self.retry_after = retry_after


class Permanent(Exception):
    pass


def classify(exc: BaseException) -> tuple[bool, float | None]:
    if isinstance(exc, Transient):
        return True, exc.retry_after
    return False, None


def test_jitter_stays_within_the_exponential_ceiling() -> None:
    policy = RetryPolicy(base_delay_s=0.5, max_delay_s=20.0)
    rng = random.Random(1234)
    for attempt, ceiling in enumerate([0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 20.0, 20.0]):
        samples = [policy.backoff_s(attempt, rng) for _ in range(400)]
        assert all(0.0 <= s <= ceiling for s in samples)
        # full jitter: the whole range is used, not a narrow band near the ceiling
        assert min(samples) < ceiling * 0.1 and max(samples) > ceiling * 0.9


def test_backoff_is_capped_even_for_huge_attempt_numbers() -> None:
    policy = RetryPolicy(base_delay_s=1.0, max_delay_s=3.0)
    assert all(policy.backoff_s(10_000) <= 3.0 for _ in range(50))


def test_server_wait_wins_over_backoff() -> None:
    policy = RetryPolicy(base_delay_s=100.0, max_delay_s=100.0)
    assert policy.delay_s(3, 1.5) == 1.5
    assert policy.delay_s(0, -4.0) == 0.0


def test_invalid_policies_are_rejected() -> None:
    with pytest.raises(ValueError):
        RetryPolicy(max_retries=-1)
    with pytest.raises(ValueError):
        RetryPolicy(base_delay_s=-0.1)


@pytest.mark.parametrize(
    "status, retry",
    [
        (400, False),
        (401, False),
        (403, False),
        (404, False),
        (422, False),
        (408, True),
        (429, True),
        (500, True),
        (502, True),
        (503, True),
        (504, True),
        (529, True),
    ],
)
def test_retryable_statuses(status: int, retry: bool) -> None:
    assert retryable_status(status) is retry


def test_retry_after_forms() -> None:
    now = 1_700_000_000.0
    in_90s = email.utils.formatdate(now + 90, usegmt=True)
    long_ago = email.utils.formatdate(now - 3600, usegmt=True)
    assert parse_retry_after({"retry-after": "12"}, now=now) == 12.0
    assert parse_retry_after({"Retry-After": "1.5"}, now=now) == 1.5  # case-insensitive on plain dicts
    assert parse_retry_after({"retry-after": in_90s}, now=now) == pytest.approx(90.0)
    assert parse_retry_after({"retry-after": long_ago}, now=now) == 0.0
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}, now=now) == 0.25
    assert parse_retry_after({"retry-after-ms": "soon", "retry-after": "9"}, now=now) == 9.0
    assert parse_retry_after({"retry-after": "whenever"}, now=now) is None
    assert parse_retry_after({}, now=now) is None
    assert parse_retry_after(None) is None


def test_retries_transient_failures_then_returns() -> None:
    sleeps: list[float] = []
    notes: list[tuple[int, float, str]] = []
    fn = Flaky(Transient(), Transient(2.0))

    result = call_with_retries(
        fn,
        policy=RetryPolicy(base_delay_s=0.5),
        classify=classify,
        sleep=sleeps.append,
        on_retry=lambda attempt, delay, exc: notes.append((attempt, delay, str(exc))),
    )

    assert result == "ok" and fn.calls == 3
    assert 0.0 <= sleeps[0] <= 0.5 and sleeps[1] == 2.0
    assert [(a, d) for a, d, _ in notes] == list(zip([1, 2], sleeps, strict=True))
    assert notes[0][2] == "transient"


def test_permanent_failure_is_raised_at_once() -> None:
    sleeps: list[float] = []
    fn = Flaky(Permanent("no"))
    with pytest.raises(Permanent):
        call_with_retries(fn, policy=RetryPolicy(), classify=classify, sleep=sleeps.append)
    assert fn.calls == 1 and sleeps == []


def test_gives_up_after_max_retries_with_the_last_error() -> None:
    sleeps: list[float] = []
    last = Transient()
    fn = Flaky(Transient(), Transient(), last, Transient())
    with pytest.raises(Transient) as caught:
        call_with_retries(fn, policy=RetryPolicy(max_retries=2), classify=classify, sleep=sleeps.append)
    assert caught.value is last and fn.calls == 3 and len(sleeps) == 2


def test_retry_after_above_the_cap_is_not_waited_for() -> None:
    sleeps: list[float] = []
    fn = Flaky(Transient(61.0))
    with pytest.raises(Transient):
        call_with_retries(
            fn, policy=RetryPolicy(max_retry_after_s=60.0), classify=classify, sleep=sleeps.append
        )
    assert fn.calls == 1 and sleeps == []


def test_retry_after_at_the_cap_is_waited_for() -> None:
    sleeps: list[float] = []
    fn = Flaky(Transient(60.0))
    assert (
        call_with_retries(
            fn, policy=RetryPolicy(max_retry_after_s=60.0), classify=classify, sleep=sleeps.append
        )
        == "ok"
    )
    assert sleeps == [60.0]


def test_zero_retries_means_one_attempt() -> None:
    fn = Flaky(Transient())
    with pytest.raises(Transient):
        call_with_retries(fn, policy=RetryPolicy(max_retries=0), classify=classify, sleep=lambda s: None)
    assert fn.calls == 1
