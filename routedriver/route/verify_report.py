"""How a ``route.verify`` report is shown: text, JSON, JUnit XML, GitHub annotations and step summary.

Pure functions from a ``VerifyReport`` to strings, and ``outcome``: what the command prints and its exit code.
"""

from __future__ import annotations

import json as json_module
import xml.etree.ElementTree as ET
from typing import TYPE_CHECKING, Any

from routedriver.errors import ExitCode
from routedriver.report import Report
from routedriver.route.verify import STATUSES, StoneCheck, VerifyReport

if TYPE_CHECKING:
    from routedriver.route.policy import PolicyReport

_WIDTH = max(len("unapproved"), len("incomplete"))


def name_of(check: StoneCheck) -> str:
    return check.stone if check.route in ("", ".") else f"{check.route}/{check.stone}"


def text(report: VerifyReport) -> str:
    """One line per stone, ``<status> <route>/<stone>: <why>``, then a summary line."""
    lines = [f"{check.status:<{_WIDTH}} {name_of(check)}: {check.why}" for check in report.checks]
    lines.append(summary(report))
    return "\n".join(lines) + "\n"


def summary(report: VerifyReport) -> str:
    counts = report.counts()
    parts = ", ".join(f"{counts[status]} {status}" for status in sorted(counts, key=_order))
    verdict = "ok" if report.ok else "FAILED"
    stones = f"{len(report.checks)} stone" + ("s" if len(report.checks) != 1 else "")
    return f"route.verify {verdict}: {stones} ({parts})"


def _order(status: str) -> int:
    return STATUSES.index(status) if status in STATUSES else len(STATUSES)


def as_json(report: VerifyReport) -> dict[str, Any]:
    return {
        "ok": report.ok,
        "allow_incomplete": report.allow_incomplete,
        "require_signed": report.require_signed,
        "policy": _policy_json(report.policy),
        "counts": report.counts(),
        "stones": [
            {
                "route": check.route,
                "stone": check.stone,
                "status": check.status,
                "ok": check.ok(report.allow_incomplete),
                "why": check.why,
                "file": check.file,
            }
            for check in report.checks
        ],
    }


def _policy_json(policy: PolicyReport | None) -> dict[str, Any] | None:
    """With --base: what each route's definitions came to against it (None without --base)."""
    if policy is None:
        return None
    return {
        "base": policy.ref,
        "commit": policy.commit,
        "routes": [
            {
                "route": route.route,
                "state": route.state,
                "accepted": route.accepted,
                "added": list(route.added),
                "pruned": list(route.pruned),
                "changes": [
                    {"file": change.path, "change": change.kind, "stone": change.stone}
                    for change in route.changes
                ],
                "approval": None
                if route.approval is None
                else {"ok": route.approval.ok, "status": route.approval.status, "why": route.approval.why},
                "problem": route.problem or None,
            }
            for route in policy.routes
        ],
    }


TRUSTED_CHECKOUT = (
    "notice: the route definitions (*.stone, *.guard, approvers) were trusted from the checkout; give "
    "--base REF (the pull request's base) to check that they are the base's or approved by a human"
)


def notices(report: VerifyReport) -> list[str]:
    """The ``notice:`` lines for stderr: where the definitions were trusted from, and what --base let pass
    without a human (stones and routes added, stones pruned) or with one (an approved policy change)."""
    policy = report.policy
    if policy is None:
        return [TRUSTED_CHECKOUT]
    since = f"since {policy.short}"
    lines = []
    for route in policy.routes:
        if route.state == "added":
            lines.append(f"notice: policy: route {route.route} added {since} (a new route needs no approval)")
            continue
        named = "" if route.route in ("", ".") else route.route + "/"
        lines += [
            f"notice: policy: {named}{stone} added {since} (a new stone needs no approval)"
            for stone in route.added
        ]
        lines += [
            f"notice: policy: {named}{stone} pruned {since} (it had no guard, artifact or marker there)"
            for stone in route.pruned
        ]
        if route.changes and route.accepted and route.approval is not None:
            lines.append(f"notice: policy: {route.route} changed {since}; {route.approval.why}")
    return lines


def junit(report: VerifyReport) -> str:
    """JUnit XML: a testsuite per route, a testcase per stone; failure message = why."""
    root = ET.Element("testsuites", name="route.verify")
    suites: dict[str, ET.Element] = {}
    totals = {"tests": 0, "failures": 0, "skipped": 0}
    for check in report.checks:
        suite = suites.get(check.route)
        if suite is None:
            suite = ET.SubElement(root, "testsuite", name=check.route or ".")
            suite.attrib.update(tests="0", failures="0", skipped="0", errors="0")
            suites[check.route] = suite
        case = ET.SubElement(
            suite, "testcase", classname=check.route or ".", name=check.stone, file=check.file
        )
        suite.set("tests", str(int(suite.get("tests", "0")) + 1))
        totals["tests"] += 1
        if check.status == "passed":
            ET.SubElement(case, "system-out").text = check.why
        elif check.ok(report.allow_incomplete):
            ET.SubElement(case, "skipped", message=check.why)
            suite.set("skipped", str(int(suite.get("skipped", "0")) + 1))
            totals["skipped"] += 1
        else:
            failure = ET.SubElement(case, "failure", message=check.why, type=check.status)
            failure.text = f"{check.status}: {check.why}\nfile: {check.file}"
            suite.set("failures", str(int(suite.get("failures", "0")) + 1))
            totals["failures"] += 1
    root.attrib.update({key: str(value) for key, value in totals.items()})
    root.set("errors", "0")
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(value: str) -> str:
    return _escape_data(value).replace(":", "%3A").replace(",", "%2C")


def github_annotations(report: VerifyReport) -> list[str]:
    """``::error file=…,title=…::why`` for each failing stone (GitHub workflow commands)."""
    lines = []
    for check in report.failing:
        title = f"route.verify {check.status}: {name_of(check)}"
        lines.append(
            f"::error file={_escape_property(check.file)},title={_escape_property(title)}::"
            f"{_escape_data(check.why)}"
        )
    return lines


def _cell(value: str) -> str:
    return value.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def step_summary(report: VerifyReport) -> str:
    """A Markdown section for ``$GITHUB_STEP_SUMMARY``: the verdict and one table row per stone."""
    lines = [
        f"### {summary(report)}",
        "",
        "| | route | stone | status | why |",
        "| --- | --- | --- | --- | --- |",
    ]
    for check in report.checks:
        icon = "✅" if check.status == "passed" else "⏳" if check.ok(report.allow_incomplete) else "❌"
        lines.append(
            f"| {icon} | {_cell(check.route)} | {_cell(check.stone)} | {check.status} | {_cell(check.why)} |"
        )
    return "\n".join(lines) + "\n\n"


def outcome(report: VerifyReport, *, json: bool, github: bool) -> Report:
    """What route.verify prints and how it exits: the text (or one JSON document) on stdout; under GitHub
    Actions (``github``) an annotation per failing stone (on stderr with ``json``, so stdout stays one
    document: the runner reads workflow commands on both); the notices; then, when a claim fails, one
    ``error:`` line, last. Exit 0 only when every claim holds, else 2."""
    stdout = json_module.dumps(as_json(report), ensure_ascii=False, indent=2) + "\n" if json else text(report)
    annotations = github_annotations(report) if github else []
    stderr = list(annotations) if json else []
    if annotations and not json:
        stdout += "".join(line + "\n" for line in annotations)
    stderr += notices(report)  # before the verdict's error line, which stays the last
    if report.ok:
        return Report(stdout, tuple(stderr))
    failing = report.failing
    stderr.append(
        f"error: {len(failing)} of {len(report.checks)} stones failed route.verify "
        f"({', '.join(sorted({check.status for check in failing}))}); "
        "see each stone's line on stdout for what to fix"
    )
    return Report(stdout, tuple(stderr), ExitCode.REFUSED)
