"""JUnit XML (``--format junit``): one testcase per case, for CI test-report viewers.

A case that failed its contract is a ``<failure>``; a case whose every run errored is an ``<error>``.
Thresholds are not cases: they are ``<properties>`` of the suite (``threshold.<metric>``), and the suite's
verdict is the ``behaviorci.passed`` property.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

from routedriver.behaviorci.results import CaseResult, RunResult


def render(result: RunResult, *, verbose: bool = False) -> str:
    failures = sum(1 for case in result.cases if not case.passed and not case.errored)
    errors = sum(1 for case in result.cases if case.errored)
    seconds = f"{result.duration_ms / 1000:.3f}"
    suites = ET.Element(
        "testsuites",
        name="behaviorci",
        tests=str(len(result.cases)),
        failures=str(failures),
        errors=str(errors),
        time=seconds,
    )
    suite = ET.SubElement(
        suites,
        "testsuite",
        name=result.bundle_name,
        tests=str(len(result.cases)),
        failures=str(failures),
        errors=str(errors),
        skipped="0",
        time=seconds,
        timestamp=result.started_at,
    )
    properties = ET.SubElement(suite, "properties")
    for name, value in (
        ("behaviorci.passed", str(result.passed).lower()),
        ("behaviorci.reason", result.reason()),
        ("provider", result.provider),
        ("model", result.model),
        ("bundle", result.bundle_path),
    ):
        ET.SubElement(properties, "property", name=name, value=_clean(value))
    for t in result.thresholds:
        verdict = "passed" if t.passed else "FAILED"
        ET.SubElement(
            properties,
            "property",
            name=f"threshold.{t.metric}",
            value=f"{t.operator} {t.expected:g}: actual {t.actual:.4g} {verdict}",
        )
    for case in result.cases:
        latency = case.latency_ms or 0.0
        element = ET.SubElement(
            suite,
            "testcase",
            classname=_clean(result.bundle_name),
            name=_clean(case.case.id),
            file=result.dataset_path,
            line=str(case.case.line),
            time=f"{latency / 1000:.3f}",
        )
        if case.passed:
            continue
        summary = _clean(case.failure_summary())
        tag = "error" if case.errored else "failure"
        detail = ET.SubElement(
            element, tag, message=summary, type="ProviderError" if case.errored else "ContractFailure"
        )
        detail.text = _clean("\n".join(_details(case)))
        if verbose and case.runs and case.runs[0].output:
            ET.SubElement(element, "system-out").text = _clean(case.runs[0].output)
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


def _details(case: CaseResult) -> list[str]:
    lines = []
    for run in case.runs:
        if run.passed:
            continue
        prefix = f"run {run.repeat_index + 1}: " if len(case.runs) > 1 else ""
        if run.error:
            lines.append(prefix + f"error: {run.error}")
        elif run.evaluation is not None:
            lines.extend(prefix + reason for reason in run.evaluation.reasons())
    return lines


def _clean(text: str) -> str:
    """XML 1.0 cannot carry most control characters, and model output may contain them."""
    return "".join(ch for ch in text if ch in "\t\n\r" or (ord(ch) >= 0x20 and not _forbidden(ch)))


def _forbidden(ch: str) -> bool:
    return ch in "\ufffe\uffff" or "\ud800" <= ch <= "\udfff"  # non-characters and lone surrogates
