"""``route.stone.get|set|del|judge``: parse flags, call one core function, render the result. No logic here.

``route.stone.get`` runs every robot turn: this module imports click and the get path only; the other
commands import their machinery when they run.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import click

from routedriver.cli._command import Command
from routedriver.errors import Refused, UserError

if TYPE_CHECKING:
    from routedriver.route.api import DelResult, GetResult, SetResult
    from routedriver.route.approve import ApproveResult
    from routedriver.route.model import Verdict

T = TypeVar("T")

ROUTE_HELP = "The route directory (holds <name>.stone files)."


def _json(payload: object) -> None:
    import json

    click.echo(json.dumps(payload, ensure_ascii=False, indent=2))


def _call(as_json: bool, facts: dict[str, Any], operation: Callable[[], T]) -> T:
    """Run ``operation``; with --json a refusal or malfunction still prints one JSON object on stdout."""
    try:
        return operation()
    except UserError as exc:
        if as_json:
            _json(
                {**facts, "outcome": "refused" if exc.exit_code == 2 else "malfunction", "error": exc.line()}
            )
        raise


def _error(line: str) -> None:
    click.echo(" ".join(line.split()), err=True)


# ---------------------------------------------------------------- route.stone.get


@click.command("route.stone.get", cls=Command)
@click.option("--route", "route_option", metavar="DIR", help=ROUTE_HELP)
@click.option(
    "--stone",
    "selector",
    default="@next-one",
    show_default=True,
    metavar="SELECTOR",
    help="@next-one (first incomplete stone), @next-all (its whole tier), or a stone name or glob.",
)
@click.option("--say", is_flag=True, help="Also print each stone's content (its instructions).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def get_command(route_option: str | None, selector: str, say: bool, as_json: bool) -> int:
    """Which stone(s) to work on next, or the status of stones by name or glob."""
    from routedriver.route import api

    result = _call(as_json, {"route": route_option, "stones": []}, lambda: api.get(route_option, selector))
    if as_json:
        _json(get_payload(result, say))
    else:
        sys.stdout.write(get_text(result, say))
        sys.stdout.flush()
    return 0


def _content(path: Any) -> str:
    from routedriver import userfile  # refuses what is no regular file or too big, in one line

    return userfile.read_bytes(path, what="stone").decode("utf-8", errors="replace")


def get_payload(result: GetResult, say: bool) -> dict[str, Any]:
    """What ``route.stone.get --json`` prints (also route.mcp's ``route_next``)."""
    stones = []
    for item in result.selection.stones:
        entry: dict[str, Any] = {
            "name": item.stone.name,
            "path": result.route.show(item.stone.path),
            "status": item.status,
            "prefix": ".".join(map(str, item.stone.prefix)),
        }
        if say:
            entry["content"] = _content(item.stone.path)
        stones.append(entry)
    return {"route": result.route.display, "stones": stones, "all_passed": result.selection.all_passed}


def get_text(result: GetResult, say: bool) -> str:
    """What ``route.stone.get`` prints (also route.mcp's ``route_next``)."""
    selection = result.selection
    if not selection.stones:
        return "all stones passed\n"
    by_name = not result.selector.startswith("@")
    out: list[str] = []
    for index, item in enumerate(selection.stones):
        if not say:
            out.append(f"{item.stone.name}\t{item.status}\n" if by_name else f"{item.stone.name}\n")
            continue
        if index:
            out.append("\n")
        # One header per stone, like `head` does for several files, so a robot can split the output.
        out.append(f"==> {result.route.show(item.stone.path)} ({item.status}) <==\n")
        text = _content(item.stone.path)
        out.append(text if text.endswith("\n") or not text else text + "\n")
    return "".join(out)


# ---------------------------------------------------------------- route.stone.set


@click.command("route.stone.set", cls=Command)
@click.option("--route", "route_option", metavar="DIR", help=ROUTE_HELP)
@click.option("--stone", required=True, help="The stone's name.")
@click.option(
    "--as",
    "as_",
    type=click.Choice(["passed", "approved"]),
    required=True,
    help="passed: run the guard and mark the stone complete; approved: record a human's approval.",
)
@click.option(
    "--no-commit",
    is_flag=True,
    help="approved: write the approval marker but do not commit it (commit it yourself).",
)
@click.option(
    "--rerun",
    is_flag=True,
    help="passed: run every review again, even one that already ran on these artifacts.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def set_command(
    route_option: str | None, stone: str, as_: str, no_commit: bool, rerun: bool, as_json: bool
) -> int:
    """Mark a stone passed (through its guard's reviews and judges) or approved (humans only: run it in a
    terminal; the approval is committed with your git identity unless --no-commit)."""
    import os

    from routedriver.route import api

    facts = {"route": route_option, "stone": stone}
    if as_ == "approved":
        # A robot runs commands with stdin from a pipe or /dev/null; a person types them at a terminal.
        human = os.isatty(0)
        approval = _call(
            as_json,
            facts,
            lambda: api.set_approved(route_option, stone, human=human, commit=not no_commit),
        )
        _render_approved(approval, as_json)
        for warning in approval.warnings:
            click.echo(f"warning: {warning}", err=True)
        return 0
    if no_commit:
        raise Refused("--no-commit applies only to --as approved", "drop it")
    result = _call(as_json, facts, lambda: api.set_passed(route_option, stone, rerun=rerun))
    return _render_set(result, as_json)


def _render_approved(result: ApproveResult, as_json: bool) -> None:
    show = result.route.show
    if as_json:
        _json(
            {
                "route": result.route.display,
                "stone": result.stone,
                "outcome": result.outcome,
                "marker": show(result.marker),
                "review_input_hash": result.review_input_hash,
                "approver": {"name": result.approver[0], "email": result.approver[1]},
                "commit": result.commit,
                "committed": not result.not_committed,
                "not_committed": result.not_committed or None,
                "renewed": result.renewed or None,
                "warnings": list(result.warnings),
            }
        )
        return
    who = f"{result.approver[0]} <{result.approver[1]}>"
    if result.outcome == "already-approved":
        lines = [f"already approved: {result.stone} by {who} for these artifacts (nothing changed)"]
    elif result.renewed:
        lines = [f"stone approved again: {result.stone} by {who} ({result.renewed})"]
    else:
        lines = [f"stone approved: {result.stone} by {who}"]
    lines.append(f"  marker {show(result.marker)}")
    if result.commit:
        lines.append(f"  committed {result.commit[:12]} (only the marker; other staged work is untouched)")
    elif result.not_committed:
        lines.append(f"  not committed ({result.not_committed}); commit {show(result.marker)} yourself")
    click.echo("\n".join(lines))


def set_payload(result: SetResult) -> dict[str, Any]:
    """What ``route.stone.set --as passed --json`` prints (also route.mcp's ``route_set_passed``)."""
    evaluation, show = result.evaluation, result.route.show
    return {
        "route": result.route.display,
        "stone": evaluation.stone,
        "outcome": evaluation.outcome,
        "review_input_hash": evaluation.review_input_hash,
        "judge_input_hash": evaluation.judge_input_hash,
        "artifacts": list(evaluation.artifacts),
        "reviews": [
            {
                "position": r.record.position,
                "command": r.record.command,
                "path": show(r.record.path),
                "reused": r.reused,
                "status": r.record.status,
                "exit_code": r.record.exit_code,
                "duration_s": r.record.duration_s,
            }
            for r in evaluation.reviews
        ],
        "judges": [
            {
                "position": j.record.position,
                "command": j.record.command,
                "path": show(j.record.path),
                "reused": j.reused,
                "status": j.record.status,
                "reason": j.record.reason,
                "exit_code": j.record.exit_code,
                "duration_s": j.record.duration_s,
            }
            for j in evaluation.judges
        ],
        "marker": show(evaluation.marker) if evaluation.marker else None,
        "problem": evaluation.problem or None,
    }


def _feedback(output: str) -> list[str]:
    """A failing judge's output without its verdict lines (already shown), last 40 lines."""
    lines = [
        line
        for line in output.splitlines()
        if not line.lower().startswith(("passed:", "reason:")) and line.strip()
    ]
    return lines[-40:]


def _render_set(result: SetResult, as_json: bool) -> int:
    if as_json:
        _json(set_payload(result))
    else:
        click.echo(set_text(result))
    line = set_error_line(result)
    if line is None:
        return 0
    _error(line)
    return 1 if result.evaluation.outcome == "malfunction" else 2


def set_text(result: SetResult) -> str:
    """What ``route.stone.set --as passed`` prints on stdout: the verdict, the failing judges' feedback and
    every file used."""
    evaluation, show = result.evaluation, result.route.show
    failing = evaluation.failing
    lines: list[str] = []
    if evaluation.outcome == "passed":
        lines.append(f"stone passed: {evaluation.stone}")
    elif evaluation.outcome == "rejected":
        lines.append(
            f"stone rejected: {evaluation.stone} ({len(_said_no(result))} of {_judges(result)} said no)"
        )
    elif evaluation.outcome == "waiting":
        lines.append(f"stone waiting for approval: {evaluation.stone} (every other judge passed)")
    else:
        lines.append(f"stone not evaluated: {evaluation.stone} (malfunction)")
        lines.append(f"  {evaluation.problem}")
    for judge in failing:
        lines += [
            "",
            f"j{judge.record.position} {judge.record.command}: {judge.record.status}",
            f"  reason: {judge.record.reason}",
        ]
        lines += [f"  {line}" for line in _feedback(judge.record.stdout)]
    lines += ["", "files:"]
    for review in evaluation.reviews:
        state = "reused" if review.reused else "fresh"
        lines.append(
            f"  review r{review.record.position} {state} {review.record.status}: {show(review.record.path)}"
        )
    for judge in evaluation.judges:
        state = "reused" if judge.reused else "fresh"
        lines.append(
            f"  judge j{judge.record.position} {state} {judge.record.status}: {show(judge.record.path)}"
        )
    if evaluation.marker is not None:
        lines.append(f"  pass record: {show(evaluation.marker)}")
    return "\n".join(lines)


def _said_no(result: SetResult) -> list[Any]:
    """The failing judges that are not a human gate waiting (those said no; approved? waits)."""
    return [judge for judge in result.evaluation.failing if judge.record.command.split()[0] != "approved?"]


def _judges(result: SetResult) -> str:
    count = len(result.evaluation.judges)
    return f"{count} judge{'s' if count != 1 else ''}"


def set_error_line(result: SetResult) -> str | None:
    """The one line ``route.stone.set`` writes on stderr (None when the stone passed)."""
    evaluation = result.evaluation
    if evaluation.outcome == "passed":
        return None
    if evaluation.outcome == "waiting":
        waiting = evaluation.failing[0].record
        return f"error: {evaluation.stone} waits for human approval: {waiting.reason[:300]}"
    if evaluation.outcome == "rejected":
        said_no = _said_no(result)
        reasons = "; ".join(
            f"j{judge.record.position} {judge.record.command.split()[0]}: {judge.record.reason[:160]}"
            for judge in said_no
        )
        return (
            f"error: {evaluation.stone} rejected by {len(said_no)} of {_judges(result)} ({reasons}); "
            "read the feedback on stdout, then fix and run route.stone.set again"
        )
    return f"error: {evaluation.problem}"


# ---------------------------------------------------------------- route.stone.del


@click.command("route.stone.del", cls=Command)
@click.option("--route", "route_option", metavar="DIR", help=ROUTE_HELP)
@click.option("--stone", "pattern", required=True, metavar="GLOB", help="A stone name or a glob of names.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def del_command(route_option: str | None, pattern: str, as_json: bool) -> int:
    """Remove stones (and their guards) that have no artifact yet."""
    from routedriver.route import api

    result = _call(
        as_json, {"route": route_option, "stone": pattern}, lambda: api.delete(route_option, pattern)
    )
    _render_del(result, as_json)
    return 0


def _render_del(result: DelResult, as_json: bool) -> None:
    show = result.route.show
    if as_json:
        _json(
            {
                "route": result.route.display,
                "outcome": "deleted",
                "deleted": [
                    {"stone": name, "removed": [show(path) for path in paths]}
                    for name, paths in result.deleted
                ],
                "kept": [{"stone": kept.stone, kept.kind: kept.path} for kept in result.kept],
            }
        )
    else:
        for name, _ in result.deleted:
            click.echo(name)
    for kept in result.kept:
        click.echo(kept.notice, err=True)


# ---------------------------------------------------------------- route.stone.judge


@click.command("route.stone.judge", cls=Command)
@click.option(
    "--mechanism",
    type=click.Choice(["reviewed?", "approved?"]),
    required=True,
    help="The built-in judge to run.",
)
@click.option("--route", "route_option", metavar="DIR", help=ROUTE_HELP)
@click.option("--stone", required=True, help="The stone's name.")
@click.option(
    "--allow-blockers", type=click.IntRange(min=0), default=None, help="reviewed?: blockers allowed (0)."
)
@click.option(
    "--allow-nitpicks",
    type=click.IntRange(min=0),
    default=None,
    help="reviewed?: nitpicks allowed (default: any number).",
)
def judge_command(
    mechanism: str,
    route_option: str | None,
    stone: str,
    allow_blockers: int | None,
    allow_nitpicks: int | None,
) -> int:
    """A built-in judge: prints 'passed: true|false' and 'reason: …' (exit 0 passed, 2 failed, 1 broke)."""
    from routedriver.route import api

    verdict = api.judge(route_option, stone, mechanism, allow_blockers, allow_nitpicks)
    return _render_verdict(stone, mechanism, verdict)


def _render_verdict(stone: str, mechanism: str, verdict: Verdict) -> int:
    click.echo(verdict.output, nl=False)
    line = verdict_error_line(stone, mechanism, verdict)
    if line is None:
        return 0
    _error(line)
    return 2 if verdict.status == "failed" else 1


def verdict_error_line(stone: str, mechanism: str, verdict: Verdict) -> str | None:
    """The one line ``route.stone.judge`` writes on stderr (None when the judge passed)."""
    if verdict.passed:
        return None
    if verdict.status == "failed":
        return f"error: {stone}: {mechanism} did not pass: {verdict.reason[:300]}"
    return f"error: {stone}: {mechanism} malfunctioned: {verdict.reason[:300]}"
