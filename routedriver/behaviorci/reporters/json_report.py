"""The JSON report: BehaviorCI 0.1.0's keys and shapes, plus usage, latency, cache and per-run detail.

0.1.0's keys (kept as they were): ``bundle``, ``passed``, ``summary`` {total_cases, passed_cases,
failed_cases, pass_rate, duration_ms}, ``provider``, ``model``, ``started_at``, ``completed_at``,
``duration_ms``, ``thresholds`` {passed, metrics, results [{metric, passed, actual, expected, operator}]},
``cases`` [{id, passed, latency_ms, error} (+ output, evaluation with --verbose)]. Ours: ``usage``,
``latency``, ``cache``, ``repeat``, ``concurrency``, ``reason``, and per case ``line``, ``runs``,
``passed_runs``, ``pass_fraction``, ``min_pass_rate``, ``usage``, ``cached_runs``, ``attempts``
(provider requests sent, retries included).
"""

from __future__ import annotations

import json
from typing import Any

from routedriver.behaviorci.results import CaseResult, Evaluation, RunOutcome, RunResult


def build(result: RunResult, *, verbose: bool = False) -> dict[str, Any]:
    metrics = result.metrics
    usage = result.usage
    return {
        "bundle": result.bundle_name,
        "passed": result.passed,
        "summary": {
            "total_cases": int(metrics["total_cases"]),
            "passed_cases": int(metrics["passed_cases"]),
            "failed_cases": int(metrics["failed_cases"]),
            "pass_rate": metrics["pass_rate"],
            "duration_ms": result.duration_ms,
        },
        "provider": result.provider,
        "model": result.model,
        "started_at": result.started_at,
        "completed_at": result.completed_at,
        "duration_ms": result.duration_ms,
        "thresholds": {
            "passed": result.passed,
            "metrics": metrics,
            "results": [
                {
                    "metric": t.metric,
                    "passed": t.passed,
                    "actual": t.actual,
                    "expected": t.expected,
                    "operator": t.operator,
                    **({"implicit": True} if t.implicit else {}),
                }
                for t in result.thresholds
            ],
        },
        "cases": [_case(case, verbose) for case in result.cases],
        "reason": result.reason(),
        "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens},
        "latency": {
            "avg_ms": metrics["avg_latency_ms"],
            "p50_ms": metrics["p50_latency_ms"],
            "p95_ms": metrics["p95_latency_ms"],
            "max_ms": metrics["max_latency_ms"],
        },
        "cache": {"hits": result.cache_hits, "misses": result.cache_misses, "dir": result.cache_dir},
        "repeat": result.repeat,
        "concurrency": result.concurrency,
    }


def render(result: RunResult, *, verbose: bool = False) -> str:
    return json.dumps(build(result, verbose=verbose), indent=2, ensure_ascii=False, default=str) + "\n"


def _case(case: CaseResult, verbose: bool) -> dict[str, Any]:
    usage = case.usage
    data: dict[str, Any] = {
        "id": case.case.id,
        "passed": case.passed,
        "latency_ms": case.latency_ms,
        "error": case.error,
        "line": case.case.line,
        "runs": len(case.runs),
        "passed_runs": case.passed_runs,
        "pass_fraction": case.pass_fraction,
        "min_pass_rate": case.min_pass_rate,
        "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens},
        "cached_runs": sum(1 for run in case.runs if run.cached),
        "attempts": sum(run.attempts for run in case.runs),
    }
    if not case.passed:
        data["reason"] = case.failure_summary()
    if verbose:
        first = case.runs[0]
        data["output"] = first.output
        data["evaluation"] = _evaluation(first.evaluation)
        if len(case.runs) > 1:
            data["run_details"] = [_run(run) for run in case.runs]
    return data


def _run(run: RunOutcome) -> dict[str, Any]:
    return {
        "repeat": run.repeat_index,
        "passed": run.passed,
        "latency_ms": run.latency_ms,
        "error": run.error,
        "output": run.output,
        "cached": run.cached,
        "attempts": run.attempts,
        "evaluation": _evaluation(run.evaluation),
    }


def _evaluation(evaluation: Evaluation | None) -> dict[str, Any] | None:
    if evaluation is None:
        return None
    return {
        "passed": evaluation.passed,
        "schema_valid": evaluation.schema_valid,
        "schema_errors": list(evaluation.schema_errors),
        "invariants_passed": evaluation.invariants_passed,
        "invariant_errors": evaluation.invariant_errors,
    }
