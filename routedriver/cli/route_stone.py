"""``route.stone.get|set|del|judge``: parse flags, call one core function, return its report
(``route.stone_report``), which ``cli._exits`` writes and turns into the exit code. No logic here."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any, TypeVar

import click

from routedriver.cli._command import Command
from routedriver.errors import Refused, UserError
from routedriver.report import Report
from routedriver.route import api, stone_report

T = TypeVar("T")

ROUTE_HELP = "The route directory (holds <name>.stone files)."


def call(as_json: bool, facts: dict[str, Any], operation: Callable[[], T]) -> T:
    """Run ``operation``; with --json a refusal or malfunction still prints one JSON object on stdout."""
    try:
        return operation()
    except UserError as exc:
        if as_json:
            sys.stdout.write(stone_report.refusal(facts, exc))
            sys.stdout.flush()
        raise


# ---------------------------------------------------------------- route.stone.get


@click.command("route.stone.get", cls=Command)
@click.option("--route", "route_option", metavar="DIR", help=ROUTE_HELP)
@click.option(
    "--stone",
    "selector",
    metavar="SELECTOR",
    default="@next-one",
    show_default=True,
    help="@next-one (first incomplete stone), @next-all (its whole tier), or a stone name or glob.",
)
@click.option("--say", is_flag=True, help="Also print each stone's content (its instructions).")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def get_command(route_option: str | None, selector: str, say: bool, as_json: bool) -> Report:
    """Which stone(s) to work on next, or the status of stones by name or glob."""
    result = call(as_json, {"route": route_option, "stones": []}, lambda: api.get(route_option, selector))
    return stone_report.get_report(result, say, as_json)


# ---------------------------------------------------------------- route.stone.set


@click.command("route.stone.set", cls=Command)
@click.option("--route", "route_option", metavar="DIR", help=ROUTE_HELP)
@click.option("--stone", required=True, help="The stone's name.")
@click.option(
    "--as",
    "as_",
    required=True,
    type=click.Choice(["passed", "approved"]),
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
) -> Report:
    """Mark a stone passed (through its guard's reviews and judges) or approved (humans only: run it in a
    terminal; the approval is committed with your git identity unless --no-commit)."""
    facts = {"route": route_option, "stone": stone}
    if as_ == "approved":
        # A robot runs commands with stdin from a pipe or /dev/null; a person types them at a terminal.
        human = os.isatty(0)
        approval = call(
            as_json,
            facts,
            lambda: api.set_approved(route_option, stone, human=human, commit=not no_commit),
        )
        return stone_report.approved_report(approval, as_json)
    if no_commit:
        raise Refused("--no-commit applies only to --as approved", "drop it")
    result = call(as_json, facts, lambda: api.set_passed(route_option, stone, rerun=rerun))
    return stone_report.set_report(result, as_json)


# ---------------------------------------------------------------- route.stone.del


@click.command("route.stone.del", cls=Command)
@click.option("--route", "route_option", metavar="DIR", help=ROUTE_HELP)
@click.option("--stone", "pattern", required=True, metavar="GLOB", help="A stone name or a glob of names.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def del_command(route_option: str | None, pattern: str, as_json: bool) -> Report:
    """Remove stones (and their guards) that have no artifact yet."""
    result = call(
        as_json, {"route": route_option, "stone": pattern}, lambda: api.delete(route_option, pattern)
    )
    return stone_report.del_report(result, as_json)


# ---------------------------------------------------------------- route.stone.judge


@click.command("route.stone.judge", cls=Command)
@click.option(
    "--mechanism",
    required=True,
    type=click.Choice(["reviewed?", "approved?"]),
    help="The built-in judge to run.",
)
@click.option("--route", "route_option", metavar="DIR", help=ROUTE_HELP)
@click.option("--stone", required=True, help="The stone's name.")
@click.option("--allow-blockers", type=click.IntRange(min=0), help="reviewed?: blockers allowed (0).")
@click.option(
    "--allow-nitpicks", type=click.IntRange(min=0), help="reviewed?: nitpicks allowed (default: any number)."
)
def judge_command(
    mechanism: str,
    route_option: str | None,
    stone: str,
    allow_blockers: int | None,
    allow_nitpicks: int | None,
) -> Report:
    """A built-in judge: prints 'passed: true|false' and 'reason: …' (exit 0 passed, 2 failed, 1 broke)."""
    verdict = api.judge(route_option, stone, mechanism, allow_blockers, allow_nitpicks)
    return stone_report.verdict_report(stone, mechanism, verdict)
