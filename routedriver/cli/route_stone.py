"""``route.stone.get|set|del|judge``: parse flags, call one core function, return its report
(``route.stone_report``), which ``cli._exits`` writes and turns into the exit code. No logic here.

A robot runs get and set on every turn, so these commands start without click (``cli/_plain.py``): each is
declared once, as a ``PlainCommand``; click is imported only for ``--help`` and usage errors. get answers
from ``route.select`` alone: ``route.api`` (and with it the guard's machinery) is imported by the others.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from routedriver.cli._plain import Option, PlainCommand
from routedriver.errors import Refused, UserError
from routedriver.report import Report
from routedriver.route import builtin_judges, select, stone_report

ROUTE_HELP = "The route directory (holds <name>.stone files)."
ROUTE = Option("--route", "route_option", ROUTE_HELP, "DIR")
JSON = Option("--json", "as_json", "Print one JSON object.")


def answered(as_json: bool, facts: dict[str, Any], body: Callable[[], Report]) -> Report:
    """``body``'s report; with --json a refusal or malfunction is still one JSON object on stdout (its line on
    stderr and its exit code as without --json)."""
    try:
        return body()
    except UserError as exc:
        if not as_json:
            raise
        return Report(stone_report.refusal(facts, exc), (exc.line(),), exc.exit_code)


# ---------------------------------------------------------------- route.stone.get


def run_get(route_option: str | None, selector: str, say: bool, as_json: bool) -> Report:
    facts: dict[str, Any] = {"route": route_option, "stones": []}
    return answered(
        as_json, facts, lambda: stone_report.get_report(select.get(route_option, selector), say, as_json)
    )


GET = PlainCommand(
    "route.stone.get",
    (
        ROUTE,
        Option(
            "--stone",
            "selector",
            "@next-one (first incomplete stone), @next-all (its whole tier), or a stone name or glob.",
            "SELECTOR",
            default="@next-one",
        ),
        Option("--say", "say", "Also print each stone's content (its instructions)."),
        JSON,
    ),
    run_get,
    "Which stone(s) to work on next, or the status of stones by name or glob.",
)


# ---------------------------------------------------------------- route.stone.set


def run_set(
    route_option: str | None, stone: str, as_: str, no_commit: bool, rerun: bool, as_json: bool
) -> Report:
    # route.stone.set, del and judge only: api brings the guard's machinery, never on get's path
    from routedriver.route import api

    facts = {"route": route_option, "stone": stone}
    if as_ == "approved":
        # A robot runs commands with stdin from a pipe or /dev/null; a person types them at a terminal.
        human = os.isatty(0)
        return answered(
            as_json,
            facts,
            lambda: stone_report.approved_report(
                api.set_approved(route_option, stone, human=human, commit=not no_commit), as_json
            ),
        )
    if no_commit:
        raise Refused("--no-commit applies only to --as approved", "drop it")
    return answered(
        as_json,
        facts,
        lambda: stone_report.set_report(api.set_passed(route_option, stone, rerun=rerun), as_json),
    )


SET = PlainCommand(
    "route.stone.set",
    (
        ROUTE,
        Option("--stone", "stone", "The stone's name.", "TEXT", required=True),
        Option(
            "--as",
            "as_",
            "passed: run the guard and mark the stone complete; approved: record a human's approval.",
            "[passed|approved]",
            required=True,
            choices=("passed", "approved"),
        ),
        Option(
            "--no-commit",
            "no_commit",
            "approved: write the approval marker but do not commit it (commit it yourself).",
        ),
        Option(
            "--rerun",
            "rerun",
            "passed: run every review again, even one that already ran on these artifacts.",
        ),
        JSON,
    ),
    run_set,
    "Mark a stone passed (through its guard's reviews and judges) or approved (humans only: run it in a "
    "terminal; the approval is committed with your git identity unless --no-commit).",
)


# ---------------------------------------------------------------- route.stone.del


def run_del(route_option: str | None, pattern: str, as_json: bool) -> Report:
    from routedriver.route import api  # not on route.stone.get's path: the guard's machinery comes with it

    facts = {"route": route_option, "stone": pattern}
    return answered(
        as_json, facts, lambda: stone_report.del_report(api.delete(route_option, pattern), as_json)
    )


DEL = PlainCommand(
    "route.stone.del",
    (ROUTE, Option("--stone", "pattern", "A stone name or a glob of names.", "GLOB", required=True), JSON),
    run_del,
    "Remove stones (and their guards) that have no artifact yet.",
)


# ---------------------------------------------------------------- route.stone.judge


def run_judge(mechanism: str, route_option: str | None, stone: str, **flags: int | None) -> Report:
    # the guard machinery (route.api): not on route.stone.get, which shares this module
    from routedriver.route import api

    verdict = api.judge(route_option, stone, mechanism, flags)
    return stone_report.verdict_report(stone, mechanism, verdict)


def judge_options() -> tuple[Option, ...]:
    """route.stone.judge's flags: the built-in judges and each one's flags (``route.builtin_judges``)."""
    judges = builtin_judges.BUILTINS
    names = tuple(judge.name for judge in judges)
    return (
        Option(
            "--mechanism",
            "mechanism",
            "The built-in judge to run.",
            f"[{'|'.join(names)}]",
            required=True,
            choices=names,
        ),
        ROUTE,
        Option("--stone", "stone", "The stone's name.", "TEXT", required=True),
        *(
            Option(flag.flag, flag.keyword, f"{judge.name}: {flag.help}", "INTEGER", minimum=0)
            for judge in judges
            for flag in judge.flags
        ),
    )


JUDGE = PlainCommand(
    "route.stone.judge",
    judge_options(),
    run_judge,
    "A built-in judge: prints 'passed: true|false' and 'reason: …' (exit 0 passed, 2 failed, 1 broke).",
)


# ---------------------------------------------------------------- the console scripts


def get_main() -> None:
    GET.main()


def set_main() -> None:
    SET.main()


def del_main() -> None:
    DEL.main()


def judge_main() -> None:
    JUDGE.main()
