"""``route.verify``: the CI gate. Parse flags, call ``route.verify.verify``, render the report. No logic here.

Under GitHub Actions (``GITHUB_ACTIONS=true``) it also prints ``::error`` annotations (on stderr with
``--json``, so that stdout stays one JSON document) and appends a Markdown table to ``$GITHUB_STEP_SUMMARY``.

It is the one command that does not import click to start: a CI gate runs on every push, and importing click
costs more than checking a route. ``OPTIONS`` describes each flag once. The console script (``main``) reads
an argument list made only of those flags itself; anything else (``--help``, a typo, a flag without its
value) goes to the click command built from the same table (``click_command``), which says what is wrong
the way every other command does. Both end in ``_exits.run``, the shared error contract.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    import click

    from routedriver.report import Report

PROG = "route.verify"
HELP = "Re-check every stone's claims from the files and git: exit 0 only when all are passed and fresh."


class Option(NamedTuple):
    flag: str
    dest: str  # the keyword ``run_verify`` takes
    help: str
    metavar: str = ""  # "" for a flag; else the option takes a value
    multiple: bool = False
    path: bool = False  # a file path (click.Path(dir_okay=False))


OPTIONS = (
    Option(
        "--route",
        "routes",
        "A route to verify (repeatable). Default: the route bound to this branch.",
        "DIR",
        multiple=True,
    ),
    Option("--all", "all_routes", "Verify every route in the repository."),
    Option(
        "--base",
        "base",
        "Compare every route's definitions (stones, guards, approvers) with this commit, the pull request's "
        "base: a change fails unless a human approved it with route.policy.approve.",
        "REF",
    ),
    Option(
        "--approvers",
        "approvers",
        "Emails allowed to approve (default: $route/.route/approvers, else .route-approvers at the top).",
        "FILE",
        path=True,
    ),
    Option(
        "--require-signed",
        "require_signed",
        "Approval commits must carry a signature git verify-commit accepts (GPG or SSH).",
    ),
    Option(
        "--allowed-signers",
        "allowed_signers",
        "SSH allowed-signers file for --require-signed (else git's gpg.ssh.allowedSignersFile).",
        "FILE",
        path=True,
    ),
    Option(
        "--allow-incomplete",
        "allow_incomplete",
        "Stones not passed yet are fine; every claim that IS made must still be true.",
    ),
    Option("--junit", "junit_path", "Also write JUnit XML (one testcase per stone).", "FILE", path=True),
    Option("--json", "as_json", "Print one JSON object instead of text."),
)


def parse_simple(argv: list[str]) -> dict[str, Any] | None:
    """``run_verify``'s keywords when ``argv`` holds only ``OPTIONS`` in a plain form (``--flag``,
    ``--opt VALUE``, ``--opt=VALUE``); None for anything else, which click then reads and judges."""
    by_flag = {option.flag: option for option in OPTIONS}
    found: dict[str, Any] = {
        option.dest: [] if option.multiple else (None if option.metavar else False) for option in OPTIONS
    }
    rest = iter(argv)
    for token in rest:
        flag, equals, inline = token.partition("=")
        option = by_flag.get(flag)
        if option is None or (equals and not option.metavar):
            return None
        if not option.metavar:
            found[option.dest] = True
            continue
        value = inline if equals else next(rest, None)
        if not value or value.startswith("-") or (option.path and os.path.isdir(value)):
            return None  # missing, flag-like or a directory: click says what is wrong
        if option.multiple:
            found[option.dest].append(value)
        else:
            found[option.dest] = Path(value) if option.path else value
    return {dest: tuple(value) if isinstance(value, list) else value for dest, value in found.items()}


def main() -> None:
    """The console script."""
    _start()
    args = sys.argv[1:]
    parsed = parse_simple(args)
    if parsed is None:
        sys.exit(click_command().main(args, prog_name=PROG, standalone_mode=False))
    from routedriver.cli import _exits

    keywords = parsed
    code = _exits.run(PROG, lambda: run_verify(**keywords))
    _finish()
    sys.exit(code)


def click_command() -> click.Command:
    """The same command as click sees it: ``--help``, and usage errors in the words of every other command."""
    import click

    from routedriver.cli._command import Command

    params: list[click.Parameter] = [
        click.Option([option.flag, option.dest], is_flag=True, help=option.help)
        if not option.metavar
        else click.Option(
            [option.flag, option.dest],
            multiple=option.multiple,
            metavar=option.metavar,
            type=click.Path(dir_okay=False, path_type=Path) if option.path else click.STRING,
            help=option.help,
        )
        for option in OPTIONS
    ]
    return Command(PROG, params=params, callback=run_verify, help=HELP)


def _start() -> None:
    """Set git to work before importing the driver, so the index, its differences and (with ``--all``) the
    route listing are read on another core while Python imports (``--all`` is only a hint: verify asks git
    itself for anything it was not given). And no cyclic garbage collection: its passes over everything
    imported cost milliseconds, and this short run makes next to no cyclic garbage."""
    import gc

    gc.disable()
    try:
        here = Path.cwd()
    except OSError:
        return  # the working directory is gone: _exits.run says so
    from routedriver import gitops

    gitops.prefetch_verify(here, discover="--all" in sys.argv[1:])


def _finish() -> None:
    """About to exit: the interpreter's final collection need not walk every object (gc.freeze)."""
    import gc

    gc.freeze()


def run_verify(
    routes: tuple[str, ...],
    all_routes: bool,
    base: str | None,
    approvers: Path | None,
    require_signed: bool,
    allowed_signers: Path | None,
    allow_incomplete: bool,
    junit_path: Path | None,
    as_json: bool,
) -> Report:
    """Verify; the report (written by ``_exits``), after the JUnit file and GitHub's step summary."""
    from routedriver.errors import Refused
    from routedriver.route import verify_report
    from routedriver.route.verify import verify

    for given, flag in ((approvers, "--approvers"), (allowed_signers, "--allowed-signers")):
        if given is not None and not given.is_file():
            raise Refused(f"{flag} {given}: no such file", "check the path")
    report = verify(
        routes,
        all_routes=all_routes,
        approvers=approvers,
        require_signed=require_signed,
        allow_incomplete=allow_incomplete,
        allowed_signers=allowed_signers.resolve() if allowed_signers else None,
        base_ref=base,
    )
    if junit_path is not None:  # first: a path it cannot write is refused before any report is shown
        _write_junit(junit_path, verify_report.junit(report))
    github = os.environ.get("GITHUB_ACTIONS") == "true"
    if github:
        _append_summary(verify_report.step_summary(report))
    return verify_report.outcome(report, json=as_json, github=github)


def _write_junit(path: Path, xml: str) -> None:
    from routedriver.errors import Refused
    from routedriver.fsutil import atomic_write

    try:
        atomic_write(path, xml)  # parent directories are made as needed; nothing half-written on failure
    except OSError as exc:
        raise Refused(
            f"cannot write --junit {path}: {exc.strerror or exc}", "give a path in a directory you can write"
        ) from None


def _append_summary(markdown: str) -> None:
    """The step summary GitHub shows for the job (``$GITHUB_STEP_SUMMARY``), appended to."""
    summary_path = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary_path:
        try:
            with open(summary_path, "a", encoding="utf-8") as handle:
                handle.write(markdown)
        except OSError as exc:
            sys.stderr.write(f"warning: cannot append to GITHUB_STEP_SUMMARY ({exc.strerror})\n")
