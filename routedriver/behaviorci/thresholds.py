"""Metrics over a run's case results, and the thresholds that turn them into a verdict.

Metrics are computed over cases (a case aggregates its ``repeat`` runs), so ``pass_rate`` means "share of
cases that met their ``min_pass_rate``" whatever ``repeat`` is. With ``repeat: 1`` every metric equals
BehaviorCI 0.1.0's. Run-level rates (``schema_valid_rate``, ``error_rate``) average each case's share of
runs, so a case counts once however often it ran.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from routedriver.behaviorci.results import ThresholdResult

if TYPE_CHECKING:
    from routedriver.behaviorci.models import ThresholdConfig
    from routedriver.behaviorci.results import CaseResult, ThresholdResult

# BehaviorCI 0.1.0's metrics first, then ours.
METRICS = (
    "pass_rate",
    "schema_valid_rate",
    "error_rate",
    "total_cases",
    "passed_cases",
    "failed_cases",
    "avg_latency_ms",
    "max_latency_ms",
    "errored_cases",
    "total_runs",
    "run_pass_rate",
    "p50_latency_ms",
    "p95_latency_ms",
    "input_tokens",
    "output_tokens",
)
# 0.1.0 compares `==` with an absolute tolerance of 1e-4; kept so its bundles keep their verdicts.
EQUAL_TOLERANCE = 1e-4


def compute_metrics(cases: Sequence[CaseResult]) -> dict[str, float]:
    total = len(cases)
    runs = [run for case in cases for run in case.runs]
    latencies = sorted(run.latency_ms for run in runs if run.latency_ms is not None)
    passed = sum(1 for case in cases if case.passed)

    def share(pick: str) -> float:
        if not total:
            return 0.0
        rates = []
        for case in cases:
            hits = sum(1 for run in case.runs if getattr(run, pick))
            rates.append(hits / len(case.runs) if case.runs else 0.0)
        return sum(rates) / total

    return {
        "pass_rate": passed / total if total else 0.0,
        "schema_valid_rate": share("schema_valid"),
        "error_rate": share("errored"),
        "total_cases": float(total),
        "passed_cases": float(passed),
        "failed_cases": float(total - passed),
        "avg_latency_ms": sum(latencies) / len(latencies) if latencies else 0.0,
        "max_latency_ms": latencies[-1] if latencies else 0.0,
        "errored_cases": float(sum(1 for case in cases if case.errored)),
        "total_runs": float(len(runs)),
        "run_pass_rate": sum(1 for run in runs if run.passed) / len(runs) if runs else 0.0,
        "p50_latency_ms": _percentile(latencies, 50),
        "p95_latency_ms": _percentile(latencies, 95),
        "input_tokens": float(sum(run.usage.input_tokens for run in runs)),
        "output_tokens": float(sum(run.usage.output_tokens for run in runs)),
    }


def compare(actual: float, operator: str, expected: float) -> bool:
    if operator == ">=":
        return actual >= expected
    if operator == ">":
        return actual > expected
    if operator == "<=":
        return actual <= expected
    if operator == "<":
        return actual < expected
    if operator == "==":
        return abs(actual - expected) < EQUAL_TOLERANCE
    raise ValueError(f"unknown operator {operator!r}")


def check_thresholds(
    configs: Sequence[ThresholdConfig], metrics: dict[str, float]
) -> tuple[ThresholdResult, ...]:
    """Each threshold against the metrics. No thresholds means every case must pass (``pass_rate >= 1``)."""
    if not configs:
        actual = metrics["pass_rate"]
        return (ThresholdResult("pass_rate", ">=", 1.0, actual, compare(actual, ">=", 1.0), implicit=True),)
    return tuple(
        ThresholdResult(
            t.metric, t.operator, t.value, metrics[t.metric], compare(metrics[t.metric], t.operator, t.value)
        )
        for t in configs
    )


def _percentile(sorted_values: Sequence[float], pct: float) -> float:
    """Nearest-rank percentile (0 for no values)."""
    if not sorted_values:
        return 0.0
    rank = max(1, math.ceil(pct / 100 * len(sorted_values)))
    return sorted_values[rank - 1]
