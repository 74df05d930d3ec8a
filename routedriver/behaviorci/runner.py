"""Running a loaded bundle: every case ``repeat`` times, at most ``concurrency`` calls at once.

Prompts were rendered when the bundle was loaded, so a run only calls the provider (or reads the cache),
evaluates and aggregates. Results come back in dataset order whatever order the calls finished in. An
authentication failure stops the run at once (every other call would fail the same way) and becomes a
configuration error; any other failure is that run's error and the rest go on.
"""

from __future__ import annotations

import datetime
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass

from routedriver.behaviorci.bundle import Bundle
from routedriver.behaviorci.cache import CachedAnswer, ResponseCache, cache_key
from routedriver.behaviorci.dataset import Case
from routedriver.behaviorci.errors import ProviderConfigError
from routedriver.behaviorci.evaluate import ContractEvaluator
from routedriver.behaviorci.providers.base import Provider, ProviderCallError
from routedriver.behaviorci.results import CaseResult, RunOutcome, RunResult
from routedriver.behaviorci.thresholds import check_thresholds, compute_metrics
from routedriver.llm.types import Usage

Progress = Callable[[int, int], None]  # (runs done, runs in total)


@dataclass(frozen=True)
class RunOptions:
    concurrency: int
    repeat: int
    cache: ResponseCache | None = None
    on_progress: Progress | None = None


def run_bundle(bundle: Bundle, provider: Provider, options: RunOptions) -> RunResult:
    started = _now()
    clock = time.perf_counter()
    evaluator = ContractEvaluator(bundle.schema, bundle.invariants)
    cache = options.cache if provider.cacheable else None
    identity = provider.identity()
    jobs = [(case, index) for case in bundle.cases for index in range(options.repeat)]
    outcomes: dict[tuple[str, int], RunOutcome] = {}

    def run_one(case: Case, repeat_index: int) -> RunOutcome:
        prompt = bundle.prompts[case.id]
        key = cache_key(identity, prompt, repeat_index) if cache is not None else None
        hit = cache.get(key) if cache is not None and key is not None else None
        if hit is not None:
            text, usage, latency, cached, attempts = (
                hit.text,
                Usage(hit.input_tokens, hit.output_tokens),
                hit.latency_ms,
                True,
                0,
            )
        else:
            try:
                generation = provider.generate(prompt, case, repeat_index)
            except ProviderCallError as exc:
                if exc.auth:
                    raise
                return RunOutcome(repeat_index, passed=False, error=exc.message, attempts=exc.attempts)
            text, usage, latency, cached, attempts = (
                generation.text,
                generation.usage,
                generation.latency_ms,
                False,
                generation.attempts,
            )
            if cache is not None and key is not None:
                cache.put(
                    key,
                    CachedAnswer(text, usage.input_tokens, usage.output_tokens, latency, generation.model),
                )
        evaluation = evaluator.evaluate(text, case)
        return RunOutcome(
            repeat_index, evaluation.passed, text, evaluation, None, latency, usage, cached, attempts
        )

    workers = max(1, min(options.concurrency, len(jobs)))
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="behaviorci")
    try:
        pending: dict[Future[RunOutcome], tuple[str, int]] = {
            pool.submit(run_one, case, index): (case.id, index) for case, index in jobs
        }
        done_count = 0
        while pending:
            finished, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in finished:
                slot = pending.pop(future)
                try:
                    outcomes[slot] = future.result()
                except ProviderCallError as exc:  # authentication: every other call would fail the same way
                    raise ProviderConfigError(exc.message, exc.fix) from None
                done_count += 1
                if options.on_progress is not None:
                    options.on_progress(done_count, len(jobs))
    finally:
        pool.shutdown(wait=True, cancel_futures=True)

    cases = tuple(
        CaseResult(
            case, bundle.prompts[case.id], tuple(outcomes[(case.id, i)] for i in range(options.repeat))
        )
        for case in bundle.cases
    )
    metrics = compute_metrics(cases)
    thresholds = check_thresholds(bundle.config.thresholds, metrics)
    runs = [run for case in cases for run in case.runs]
    return RunResult(
        bundle_name=bundle.config.name,
        bundle_path=bundle.shown,
        dataset_path=bundle.dataset_shown,
        provider=provider.name,
        model=provider.model,
        cases=cases,
        metrics=metrics,
        thresholds=thresholds,
        started_at=started,
        completed_at=_now(),
        duration_ms=(time.perf_counter() - clock) * 1000,
        repeat=options.repeat,
        concurrency=workers,
        cache_hits=sum(1 for run in runs if run.cached),
        cache_misses=sum(1 for run in runs if not run.cached) if cache is not None else 0,
        cache_dir=str(cache.directory) if cache is not None else None,
    )


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat()
