"""What a run produces: per-run outcomes, per-case results (repeats aggregated) and the whole run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from routedriver.behaviorci.dataset import Case
from routedriver.llm.types import Usage

# Pass fractions are compared with a little slack so 2 of 3 repeats meet `min_pass_rate: 0.6667`.
_EPSILON = 1e-9


@dataclass(frozen=True)
class Evaluation:
    """One output checked against the output contract."""

    passed: bool
    schema_valid: bool = True
    schema_errors: tuple[str, ...] = ()
    invariants_passed: dict[str, bool] = field(default_factory=dict)
    invariant_errors: dict[str, str] = field(default_factory=dict)
    output_parsed: Any = None
    is_json: bool = False

    def reasons(self) -> list[str]:
        """Why it failed, one short phrase per problem."""
        out = [f"schema: {error}" for error in self.schema_errors]
        for invariant, ok in self.invariants_passed.items():
            if not ok:
                detail = self.invariant_errors.get(invariant)
                out.append(f"invariant `{invariant}` " + (f"errored: {detail}" if detail else "is false"))
        return out


@dataclass(frozen=True)
class RunOutcome:
    """One run of one case (one of its ``repeat`` runs)."""

    repeat_index: int
    passed: bool
    output: str = ""
    evaluation: Evaluation | None = None
    error: str | None = None
    latency_ms: float | None = None  # the provider's latency (a cache hit keeps the recorded one)
    usage: Usage = Usage()
    cached: bool = False
    attempts: int = 0  # provider calls made for this run (0 on a cache hit)

    @property
    def errored(self) -> bool:
        return self.error is not None

    @property
    def schema_valid(self) -> bool:
        return self.evaluation is not None and self.evaluation.schema_valid


@dataclass(frozen=True)
class CaseResult:
    case: Case
    prompt: str
    runs: tuple[RunOutcome, ...]

    @property
    def min_pass_rate(self) -> float:
        return self.case.min_pass_rate

    @property
    def passed_runs(self) -> int:
        return sum(1 for run in self.runs if run.passed)

    @property
    def pass_fraction(self) -> float:
        return self.passed_runs / len(self.runs) if self.runs else 0.0

    @property
    def passed(self) -> bool:
        return bool(self.runs) and self.pass_fraction + _EPSILON >= self.min_pass_rate

    @property
    def errored(self) -> bool:
        """Every run of this case errored: nothing was learned about its behaviour."""
        return bool(self.runs) and all(run.errored for run in self.runs)

    @property
    def error(self) -> str | None:
        return next((run.error for run in self.runs if run.error), None)

    @property
    def usage(self) -> Usage:
        return sum((run.usage for run in self.runs), Usage())

    @property
    def latency_ms(self) -> float | None:
        values = [run.latency_ms for run in self.runs if run.latency_ms is not None]
        return sum(values) / len(values) if values else None

    def failure_summary(self) -> str:
        """One line on why the case failed, for reports and annotations."""
        if self.passed:
            return ""
        prefix = ""
        if len(self.runs) > 1:
            prefix = f"{self.passed_runs}/{len(self.runs)} runs passed (needs {self.min_pass_rate:g}); "
        first_bad = next(run for run in self.runs if not run.passed)
        if first_bad.error:
            return prefix + f"error: {first_bad.error}"
        reasons = first_bad.evaluation.reasons() if first_bad.evaluation else []
        return prefix + ("; ".join(reasons) if reasons else "failed")


@dataclass(frozen=True)
class ThresholdResult:
    metric: str
    operator: str
    expected: float
    actual: float
    passed: bool
    implicit: bool = False  # the default `pass_rate >= 1.0` of a bundle without thresholds

    def describe(self) -> str:
        verb = "meets" if self.passed else "fails"
        actual, expected = format_number(self.actual), format_number(self.expected)
        return f"{self.metric} {actual} {verb} {self.operator} {expected}"


@dataclass(frozen=True)
class RunResult:
    bundle_name: str
    bundle_path: str
    dataset_path: str
    provider: str
    model: str
    cases: tuple[CaseResult, ...]
    metrics: dict[str, float]
    thresholds: tuple[ThresholdResult, ...]
    started_at: str
    completed_at: str
    duration_ms: float
    repeat: int = 1
    concurrency: int = 1
    cache_hits: int = 0
    cache_misses: int = 0
    cache_dir: str | None = None

    @property
    def passed(self) -> bool:
        return all(threshold.passed for threshold in self.thresholds)

    @property
    def failed_cases(self) -> list[CaseResult]:
        return [case for case in self.cases if not case.passed]

    @property
    def usage(self) -> Usage:
        return sum((case.usage for case in self.cases), Usage())

    @property
    def all_errored(self) -> bool:
        return bool(self.cases) and all(case.errored for case in self.cases)

    def reason(self) -> str:
        """One line for the verdict: which thresholds failed (or that all passed) and which cases."""
        failed = [t for t in self.thresholds if not t.passed]
        total = len(self.cases)
        passed_cases = total - len(self.failed_cases)
        if not failed:
            met = "; ".join(t.describe() for t in self.thresholds)
            return f"{passed_cases}/{total} cases passed; thresholds met: {met}"
        text = f"{passed_cases}/{total} cases passed; threshold failed: " + "; ".join(
            t.describe() for t in failed
        )
        names = [case.case.id for case in self.failed_cases]
        if names:
            shown = ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")
            text += f"; failing cases: {shown}"
        return text


def format_number(value: float) -> str:
    """``1``, ``0.5``, ``0.6667``: whole numbers without decimals, others to four significant digits."""
    return f"{value:.4g}" if isinstance(value, float) and not value.is_integer() else f"{value:g}"
