"""How a ``route.verify`` report is shown: text, JSON, JUnit XML, GitHub annotations and step summary.

Pure functions from a ``VerifyReport`` to strings, and ``outcome``: what the command prints and its exit code.
Every route, stone, path and reason is the repository's text: each format shows it through ``shown``, so no
line starts with it and nothing it holds is read as a workflow command, markup or XML.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from routedriver.errors import ExitCode
from routedriver.report import Report
from routedriver.route import shown
from routedriver.route.checks import STATUSES, UNBOUND, StoneCheck
from routedriver.route.verify import VerifyReport
from routedriver.route.words import count

if TYPE_CHECKING:
    from routedriver.route.policy import PolicyReport
    from routedriver.route.recheck import RecheckReport, StoneRecheck

_WIDTH = max(len("unapproved"), len("incomplete"))


def name_of(check: StoneCheck) -> str:
    return check.stone if check.route in ("", ".") else f"{check.route}/{check.stone}"


def text(report: VerifyReport) -> str:
    """One line per stone, ``<status> <route>/<stone>: <why>``, then a summary line."""
    lines = [
        f"{check.status:<{_WIDTH}} {shown.line(name_of(check))}: {shown.line(check.why)}"
        for check in report.checks
    ]
    lines.append(summary(report))
    return "\n".join(lines) + "\n"


def summary(report: VerifyReport) -> str:
    counts = report.counts()
    files = counts.pop(UNBOUND, 0)  # files, not stones: said apart
    parts = ", ".join(f"{counts[status]} {status}" for status in sorted(counts, key=_order))
    verdict = "ok" if report.ok else "FAILED"
    stones = len(report.checks) - files
    line = f"route.verify {verdict}: {count(stones, 'stone')} ({parts})"
    if files:
        line += f"; {count(files, 'file')} changed that no pass binds (--require-bound)"
    if report.recheck is not None:  # what CI's own runs cost: a team sees the price of --recheck
        line += f"; {report.recheck.summary()}"
    return line


def _order(status: str) -> int:
    return STATUSES.index(status) if status in STATUSES else len(STATUSES)


def as_json(report: VerifyReport) -> dict[str, Any]:
    rechecked = _rechecked(report.recheck)
    document: dict[str, Any] = {
        "ok": report.ok,
        "allow_incomplete": report.allow_incomplete,
        "require_signed": report.require_signed,
        "require_bound": report.require_bound,
        "policy": _policy_json(report.policy),
        "recheck": _recheck_json(report.recheck),
        "counts": report.counts(),
        "stones": [
            {
                "route": check.route,
                "stone": check.stone,
                "status": check.status,
                "ok": check.ok(report.allow_incomplete),
                "why": check.why,
                "file": check.file,
                "recheck": _stone_recheck_json(rechecked.get((check.route, check.stone))),
            }
            for check in report.checks
        ],
    }
    return document


def _rechecked(recheck: RecheckReport | None) -> dict[tuple[str, str], StoneRecheck]:
    return {} if recheck is None else {(stone.route, stone.stone): stone for stone in recheck.stones}


def _recheck_json(recheck: RecheckReport | None) -> dict[str, Any] | None:
    """With --recheck: what it cost (None without it)."""
    if recheck is None:
        return None
    return {
        "base": recheck.base,
        "commit": recheck.commit,
        "new_claims": recheck.new,
        "held": recheck.held,
        "rechecked": recheck.rechecked,
        "commands": recheck.commands,
        "command_seconds": round(recheck.command_seconds, 3),
        "seconds": round(recheck.seconds, 3),
        "directory": None if recheck.directory is None else str(recheck.directory),
    }


def _stone_recheck_json(stone: StoneRecheck | None) -> dict[str, Any] | None:
    """A passed stone's recheck: held by the base, or what CI ran for it and what that came to."""
    if stone is None:
        return None
    if stone.claim == "held":
        return {"claim": "held"}
    return {
        "claim": "new",
        "guard": stone.guard,
        "outcome": stone.outcome,
        "why": stone.why,
        "seconds": round(stone.seconds, 3),
        "commands": [
            {
                "what": ran.what,
                "command": ran.command,
                "status": ran.status,
                "exit_code": ran.exit_code,
                "seconds": round(ran.seconds, 3),
                "file": ran.file,
            }
            for ran in stone.ran
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


def _look_alike(name: str) -> str:
    """For a name that is not ASCII, its ASCII spelling: ``2.plаn`` with a Cyrillic ``а`` reads as the
    stone ``2.plan`` it may sit beside (a red team's new stone, holding what the gated one does not)."""
    if name.isascii():
        return ""
    return "; not ASCII, spelled " + name.encode("ascii", "backslashreplace").decode("ascii")


def notices(report: VerifyReport) -> list[str]:
    """The ``notice:`` lines for stderr: where the definitions were trusted from, and what --base let pass
    without a human (stones and routes added, stones pruned) or with one (an approved policy change)."""
    policy = report.policy
    if policy is None:
        return [TRUSTED_CHECKOUT]
    unjailed = [report.recheck.notice] if report.recheck is not None and report.recheck.notice else []
    since = f"since {policy.short}"
    lines = []
    for route in policy.routes:
        name = shown.line(route.route)
        if route.state == "added":
            lines.append(f"notice: policy: route {name} added {since} (a new route needs no approval)")
            continue
        named = "" if route.route in ("", ".") else name + "/"
        lines += [
            f"notice: policy: {named}{shown.line(stone)} added {since} (a new stone needs no approval"
            f"{_look_alike(stone)})"
            for stone in route.added
        ]
        lines += [
            f"notice: policy: {named}{shown.line(stone)} pruned {since} (it had no guard, artifact or marker "
            "there)"
            for stone in route.pruned
        ]
        if route.changes and route.accepted and route.approval is not None:
            lines.append(f"notice: policy: {name} changed {since}; {shown.line(route.approval.why)}")
    return [*lines, *unjailed]


def junit(report: VerifyReport) -> str:
    """JUnit XML: a testsuite per route, a testcase per stone; failure message = why. ElementTree escapes
    XML's own characters; ``shown.line`` leaves none XML cannot hold (and no line a log would obey)."""
    # xml.etree (~3 ms, ~2% of route.verify): only with --junit
    import xml.etree.ElementTree as ET

    root = ET.Element("testsuites", name="route.verify")
    suites: dict[str, ET.Element] = {}
    totals = {"tests": 0, "failures": 0, "skipped": 0}
    rechecked = _rechecked(report.recheck)
    for check in report.checks:
        route, why, file = shown.line(check.route or "."), shown.line(check.why), shown.line(check.file)
        suite = suites.get(check.route)
        if suite is None:
            suite = ET.SubElement(root, "testsuite", name=route)
            suite.attrib.update(tests="0", failures="0", skipped="0", errors="0")
            suites[check.route] = suite
        case = ET.SubElement(suite, "testcase", classname=route, name=shown.line(check.stone), file=file)
        stone = rechecked.get((check.route, check.stone))
        if stone is not None and stone.claim == "new":  # the time CI spent running its commands
            case.set("time", f"{sum(ran.seconds for ran in stone.ran):.3f}")
        suite.set("tests", str(int(suite.get("tests", "0")) + 1))
        totals["tests"] += 1
        if check.status == "passed":
            ET.SubElement(case, "system-out").text = why
        elif check.ok(report.allow_incomplete):
            ET.SubElement(case, "skipped", message=why)
            suite.set("skipped", str(int(suite.get("skipped", "0")) + 1))
            totals["skipped"] += 1
        else:
            failure = ET.SubElement(case, "failure", message=why, type=check.status)
            failure.text = f"{check.status}: {why}\nfile: {file}"
            suite.set("failures", str(int(suite.get("failures", "0")) + 1))
            totals["failures"] += 1
    root.attrib.update({key: str(value) for key, value in totals.items()})
    root.set("errors", "0")
    if report.recheck is not None:
        root.set("time", f"{report.recheck.command_seconds:.3f}")
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def github_annotations(report: VerifyReport) -> list[str]:
    """``::error file=…,title=…::why`` for each failing stone (GitHub workflow commands), each part shown as
    the text line shows it, then escaped as the runner reads a command: no raw control character reaches
    the log (a path that holds one is refused, so GitHub has no file to point at anyway)."""
    lines = []
    for check in report.failing:
        file = shown.command_property(shown.line(check.file))
        title = shown.command_property(f"route.verify {check.status}: {shown.line(name_of(check))}")
        lines.append(f"::error file={file},title={title}::{shown.command_data(shown.line(check.why))}")
    return lines


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
            f"| {icon} | {shown.markdown(check.route)} | {shown.markdown(check.stone)} | {check.status} "
            f"| {shown.markdown(check.why)} |"
        )
    return "\n".join(lines) + "\n\n"


def outcome(report: VerifyReport, *, json: bool, github: bool) -> Report:
    """What route.verify prints and how it exits: the text (or one JSON document) on stdout; under GitHub
    Actions (``github``) an annotation per failing stone (on stderr with ``json``, so stdout stays one
    document: the runner reads workflow commands on both); the notices; then, when a claim fails, one
    ``error:`` line, last. Exit 0 only when every claim holds; 1 when what failed is only commands that broke
    in CI (``--recheck``); else 2."""
    stdout = shown.json_text(as_json(report)) if json else text(report)
    annotations = github_annotations(report) if github else []
    stderr = list(annotations) if json else []
    if annotations and not json:
        stdout += "".join(line + "\n" for line in annotations)
    stderr += notices(report)  # before the verdict's error line, which stays the last
    if report.ok:
        return Report(stdout, tuple(stderr))
    failing = report.failing
    files = sum(1 for check in failing if check.status == UNBOUND)
    stones = len(report.checks) - sum(1 for check in report.checks if check.status == UNBOUND)
    what = []
    if len(failing) > files:
        what.append(f"{len(failing) - files} of {count(stones, 'stone')} failed route.verify")
    if files:
        what.append(f"{count(files, 'file')} the pull request changes no pass binds")
    stderr.append(
        f"error: {' and '.join(what)} ({', '.join(sorted({check.status for check in failing}))}); "
        "see each line on stdout for what to fix"
    )
    # A review or judge that broke in CI (--recheck) is a malfunction: exit 1, unless a claim was also found
    # wanting (then 2: there is something for the pull request to fix).
    broke = all(check.status == "malfunction" for check in failing)
    return Report(stdout, tuple(stderr), ExitCode.MALFUNCTION if broke else ExitCode.REFUSED)
