"""Metrics over case results, every metric and operator, and the exit code they decide."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from routedriver.behaviorci.dataset import Case
from routedriver.behaviorci.models import ThresholdConfig
from routedriver.behaviorci.results import CaseResult, Evaluation, RunOutcome, Usage
from routedriver.behaviorci.thresholds import METRICS, check_thresholds, compare, compute_metrics
from tests.behaviorci.helpers import answer, invoke, write_bundle


def _run(
    passed: bool,
    *,
    latency: float | None = 100.0,
    error: str | None = None,
    schema_valid: bool = True,
    index: int = 0,
    tokens: tuple[int, int] = (10, 5),
) -> RunOutcome:
    evaluation = None if error else Evaluation(passed=passed, schema_valid=schema_valid)
    return RunOutcome(index, passed, "out", evaluation, error, latency, Usage(*tokens))


def _case(name: str, *runs: RunOutcome, min_pass_rate: float = 1.0) -> CaseResult:
    return CaseResult(Case(name, 1, {}, min_pass_rate=min_pass_rate), "prompt", runs)


CASES = (
    _case("ok", _run(True, latency=100.0)),
    _case("bad-schema", _run(False, latency=300.0, schema_valid=False)),
    _case("errored", _run(False, latency=None, error="HTTP 500", tokens=(0, 0))),
    _case(
        "flaky", _run(True, latency=200.0, index=0), _run(False, latency=400.0, index=1), min_pass_rate=0.5
    ),
)


def test_every_metric() -> None:
    metrics = compute_metrics(CASES)
    assert set(metrics) == set(METRICS)
    assert metrics == {
        "pass_rate": 0.5,  # ok and flaky (1/2 runs meets 0.5)
        "schema_valid_rate": (1 + 0 + 0 + 1) / 4,
        "error_rate": (0 + 0 + 1 + 0) / 4,
        "total_cases": 4.0,
        "passed_cases": 2.0,
        "failed_cases": 2.0,
        "avg_latency_ms": 250.0,
        "max_latency_ms": 400.0,
        "errored_cases": 1.0,
        "total_runs": 5.0,
        "run_pass_rate": 2 / 5,
        "p50_latency_ms": 200.0,
        "p95_latency_ms": 400.0,
        "input_tokens": 40.0,
        "output_tokens": 20.0,
    }


@pytest.mark.parametrize(
    ("actual", "operator", "expected", "outcome"),
    [
        (0.8, ">=", 0.8, True),
        (0.79, ">=", 0.8, False),
        (0.81, ">", 0.8, True),
        (0.8, ">", 0.8, False),
        (0.8, "<=", 0.8, True),
        (0.81, "<=", 0.8, False),
        (0.79, "<", 0.8, True),
        (0.8, "<", 0.8, False),
        (0.80005, "==", 0.8, True),
        (0.81, "==", 0.8, False),
    ],
)
def test_every_operator(actual: float, operator: str, expected: float, outcome: bool) -> None:
    assert compare(actual, operator, expected) is outcome


def test_no_thresholds_means_every_case_must_pass() -> None:
    metrics = compute_metrics(CASES)
    (implicit,) = check_thresholds([], metrics)
    assert (implicit.metric, implicit.operator, implicit.expected, implicit.passed, implicit.implicit) == (
        "pass_rate",
        ">=",
        1.0,
        False,
        True,
    )
    results = check_thresholds([ThresholdConfig(metric="error_rate", operator="<=", value=0.25)], metrics)
    assert [r.passed for r in results] == [True]


@pytest.mark.parametrize("metric", METRICS)
def test_every_metric_can_be_a_threshold_in_a_bundle(tmp_path: Path, metric: str) -> None:
    bundle = write_bundle(tmp_path / "b", {"thresholds": [{"metric": metric, "operator": ">=", "value": 0}]})
    result = invoke(["run", str(bundle), "--format", "json"])
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["thresholds"]["results"][0]["metric"] == metric
    assert report["thresholds"]["results"][0]["actual"] == report["thresholds"]["metrics"][metric]


def test_failed_threshold_exits_1_and_says_why(tmp_path: Path) -> None:
    cases = [
        {"id": "good", "input": {"question": "a"}, "mock_output": answer("yes")},
        {"id": "bad", "input": {"question": "b"}, "mock_output": "not json"},
    ]
    bundle = write_bundle(
        tmp_path / "b",
        {
            "thresholds": [
                {"metric": "pass_rate", "operator": ">=", "value": 0.9},
                {"metric": "error_rate", "operator": "==", "value": 0},
            ]
        },
        cases=cases,
    )
    result = invoke(["run", str(bundle)])
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[-2] == "passed: false"
    assert lines[-1] == (
        "reason: 1/2 cases passed; threshold failed: pass_rate 0.5 fails >= 0.9; failing cases: bad"
    )
    assert "✗ bad (" in result.stdout and "schema: output is not JSON" in result.stdout


def test_thresholds_can_pass_while_some_cases_fail(tmp_path: Path) -> None:
    cases = [{"input": {"question": str(i)}, "mock_output": answer("x") if i else "nope"} for i in range(4)]
    bundle = write_bundle(
        tmp_path / "b",
        {"thresholds": [{"metric": "pass_rate", "operator": ">=", "value": 0.75}]},
        cases=cases,
    )
    result = invoke(["run", str(bundle)])
    assert result.exit_code == 0
    assert result.stdout.splitlines()[-2:] == [
        "passed: true",
        "reason: 3/4 cases passed; thresholds met: pass_rate 0.75 meets >= 0.75",
    ]
