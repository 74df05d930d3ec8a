"""Running a loaded bundle: every case ``repeat`` times, at most ``concurrency`` calls at once.

Prompts were rendered when the bundle was loaded, so a run only calls the provider (or reads the cache),
evaluates and aggregates. Results come back in dataset order whatever order the calls finished in. An
authentication failure stops the run at once (every other call would fail the same way) and becomes a
configuration error; any other failure is that run's error and the rest go on.

Stopping: when the run ends early (Ctrl-C, SIGTERM, an authentication failure) its ``Cancellation`` is set and
its ``threads.Batch`` stopped, so no worker starts another call or retry (a backoff wait ends at once), and
the workers are not waited for: a call already in flight does not hold the exit up (it was sent, and paid
for, before the stop; nothing is sent after it).
"""

from __future__ import annotations

import datetime
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from routedriver.behaviorci.bundle import Bundle
from routedriver.behaviorci.cache import CachedAnswer, ResponseCache, cache_key
from routedriver.behaviorci.dataset import Case
from routedriver.behaviorci.errors import ProviderConfigError
from routedriver.behaviorci.evaluate import ContractError, ContractEvaluator
from routedriver.behaviorci.providers.base import Provider, ProviderCallError
from routedriver.behaviorci.results import CaseResult, Evaluation, RunOutcome, RunResult
from routedriver.behaviorci.thresholds import check_thresholds, compute_metrics
from routedriver.llm.types import Usage
from routedriver.threads import Batch

Progress = Callable[[int, int], None]  # (runs done, runs in total)
Job = tuple[Case, int]  # a case and its repeat index


class RunCancelled(Exception):
    """The run was stopped: the call or wait that raises this must not go on."""


class Cancellation:
    """Shared by the runner and the provider's retry waits (give ``sleep`` to ``make_provider``)."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()  # cancel() and unless_cancelled's actions, one at a time

    def cancel(self) -> None:
        with self._lock:  # waits for an action under way: none is left to finish after the run has stopped
            self._event.set()

    def unless_cancelled(self, action: Callable[[], None]) -> None:
        """Run ``action`` (a short one: a line on stderr) unless the run has stopped, never across the
        moment it stops: a worker's retry notice cannot land after the final ``error: interrupted``."""
        with self._lock:
            if not self._event.is_set():
                action()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def check(self) -> None:
        if self._event.is_set():
            raise RunCancelled()

    def sleep(self, seconds: float) -> None:
        """A wait (retry backoff, mock latency) that ends with ``RunCancelled`` as soon as the run stops."""
        if self._event.wait(max(0.0, seconds)):
            raise RunCancelled()


@dataclass(frozen=True)
class RunOptions:
    concurrency: int
    repeat: int
    cache: ResponseCache | None = None
    on_progress: Progress | None = None
    cancel: Cancellation | None = None


def run_bundle(bundle: Bundle, provider: Provider, options: RunOptions) -> RunResult:
    """Every case of ``bundle``, ``options.repeat`` times, through ``provider`` (or the cache), checked
    against the contract, then the metrics and thresholds: the run's result."""
    started, clock = _now(), time.perf_counter()
    runner = _CaseRunner(bundle, provider, options.cache if provider.cacheable else None, options.cancel)
    jobs: list[Job] = [(case, index) for case in bundle.cases for index in range(options.repeat)]
    workers = max(1, min(options.concurrency, len(jobs)))
    outcomes = _run_all(runner, jobs, workers, options.on_progress)
    cases = tuple(
        CaseResult(
            case, bundle.prompts[case.id], tuple(outcomes[(case.id, i)] for i in range(options.repeat))
        )
        for case in bundle.cases
    )
    metrics = compute_metrics(cases)
    runs = [run for case in cases for run in case.runs]
    cache = runner.cache
    return RunResult(
        bundle_name=bundle.config.name,
        bundle_path=bundle.shown,
        dataset_path=bundle.dataset_shown,
        provider=provider.name,
        model=provider.model,
        cases=cases,
        metrics=metrics,
        thresholds=check_thresholds(bundle.config.thresholds, metrics),
        started_at=started,
        completed_at=_now(),
        duration_ms=(time.perf_counter() - clock) * 1000,
        repeat=options.repeat,
        concurrency=workers,
        cache_hits=sum(1 for run in runs if run.cached),
        cache_misses=sum(1 for run in runs if not run.cached) if cache is not None else 0,
        cache_dir=str(cache.directory) if cache is not None else None,
    )


def _run_all(
    runner: _CaseRunner, jobs: list[Job], workers: int, on_progress: Progress | None
) -> dict[tuple[str, int], RunOutcome]:
    """Each job's outcome by (case id, repeat index), run by ``workers`` threads. An authentication failure
    becomes a configuration error; it, or an interrupt, stops the run at once (see the module docstring)."""
    outcomes: dict[tuple[str, int], RunOutcome] = {}
    with Batch(lambda job: runner.run(*job), jobs, workers=workers, name="behaviorci") as batch:
        try:
            for done_count, done in enumerate(batch, start=1):
                if done.error is not None:
                    if isinstance(done.error, ProviderCallError):  # authentication: every call would fail too
                        raise ProviderConfigError(done.error.message, done.error.fix) from None
                    raise done.error
                assert done.value is not None
                outcomes[(done.job[0].id, done.job[1])] = done.value
                if on_progress is not None:
                    on_progress(done_count, len(jobs))
        finally:
            # Normally nothing is left to stop; after an error or an interrupt no worker may start another
            # call or retry (a backoff wait ends at once). They are not joined: an answer in flight must not
            # hold up the exit.
            runner.cancel.cancel()
    return outcomes


class _Answer(NamedTuple):
    text: str
    usage: Usage
    latency_ms: float
    cached: bool
    attempts: int  # calls made for it (retries included); 0 from the cache

    def outcome(
        self, repeat_index: int, *, evaluation: Evaluation | None = None, error: str | None = None
    ) -> RunOutcome:
        """The run with this answer: passed when its ``evaluation`` passed; ``error`` when it cannot say."""
        passed = evaluation is not None and evaluation.passed
        return RunOutcome(
            repeat_index,
            passed,
            output=self.text,
            evaluation=evaluation,
            error=error,
            latency_ms=self.latency_ms,
            usage=self.usage,
            cached=self.cached,
            attempts=self.attempts,
        )


class _CaseRunner:
    """One run of one case: its answer (from the cache, or the provider, then cached), then checked."""

    def __init__(
        self, bundle: Bundle, provider: Provider, cache: ResponseCache | None, cancel: Cancellation | None
    ) -> None:
        self.bundle, self.provider, self.cache = bundle, provider, cache
        self.cancel = cancel or Cancellation()
        self.evaluator = ContractEvaluator(bundle.schema, bundle.invariants)
        self.identity = provider.identity()

    def run(self, case: Case, repeat_index: int) -> RunOutcome:
        answer = self._answer(case, repeat_index)
        if isinstance(answer, RunOutcome):
            return answer  # the call failed: this run's error
        try:
            evaluation = self.evaluator.evaluate(answer.text, case)
        except Exception as exc:  # noqa: BLE001 - the answer is kept; only this run errors
            error = (
                str(exc) if isinstance(exc, ContractError) else f"cannot check the output: {_describe(exc)}"
            )
            return answer.outcome(repeat_index, error=error)
        return answer.outcome(repeat_index, evaluation=evaluation)

    def _answer(self, case: Case, repeat_index: int) -> _Answer | RunOutcome:
        """The cached answer, or the provider's (then cached); a failed call is this run's outcome. An
        authentication failure and a cancelled run raise: they end the whole run."""
        prompt = self.bundle.prompts[case.id]
        key = cache_key(self.identity, prompt, repeat_index) if self.cache is not None else None
        hit = self.cache.get(key) if self.cache is not None and key is not None else None
        if hit is not None:
            usage = Usage(hit.input_tokens, hit.output_tokens)
            return _Answer(hit.text, usage, hit.latency_ms, True, 0)
        self.cancel.check()  # no new call once the run has stopped
        try:
            generation = self.provider.generate(prompt, case, repeat_index)
        except ProviderCallError as exc:
            if exc.auth:
                raise
            return RunOutcome(repeat_index, passed=False, error=exc.message, attempts=exc.attempts)
        except RunCancelled:
            raise
        except Exception as exc:  # noqa: BLE001 - one case's surprise must not cost the others' answers
            return RunOutcome(
                repeat_index, passed=False, error=f"the call failed: {_describe(exc)}", attempts=1
            )
        usage = generation.usage
        if self.cache is not None and key is not None:
            cached = CachedAnswer(
                generation.text,
                usage.input_tokens,
                usage.output_tokens,
                generation.latency_ms,
                generation.model,
            )
            self.cache.put(key, cached)
        return _Answer(generation.text, usage, generation.latency_ms, False, generation.attempts)


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}".rstrip(": ")


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat()
