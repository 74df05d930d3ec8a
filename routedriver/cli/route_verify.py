"""``route.verify``: the CI gate. Parse flags, call ``route.verify.verify``, render the report. No logic here.

Under GitHub Actions (``GITHUB_ACTIONS=true``) it also prints ``::error`` annotations and appends a Markdown
table to ``$GITHUB_STEP_SUMMARY``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

# Started as the console script (not imported by a test or another program): a short run that exits when
# the report is out. Two things help it start and end fast, and change nothing it reports.
_AS_SCRIPT = os.path.basename(sys.argv[0]) == "route.verify"


def _start() -> None:
    """Set git to work before importing click and the driver, so the index, its differences and (with
    ``--all``) the route listing are read on another core while Python imports (``--all`` is only a hint:
    verify asks git itself for anything it was not given). And no cyclic garbage collection: its passes
    over everything imported cost milliseconds, and this run makes next to no cyclic garbage."""
    import gc

    gc.disable()
    try:
        here = Path.cwd()
    except OSError:
        return  # the working directory is gone: verify says so itself
    from routedriver import gitops

    gitops.prefetch_verify(here, discover="--all" in sys.argv[1:])


def _finish() -> None:
    """About to exit: the interpreter's final collection need not walk every object (gc.freeze)."""
    import gc

    gc.freeze()


if _AS_SCRIPT:
    _start()

import click  # noqa: E402 - after the prefetch on purpose

from routedriver.cli._command import Command  # noqa: E402

if TYPE_CHECKING:
    from routedriver.route.verify import VerifyReport


@click.command("route.verify", cls=Command)
@click.option(
    "--route",
    "routes",
    multiple=True,
    metavar="DIR",
    help="A route to verify (repeatable). Default: the route bound to this branch.",
)
@click.option("--all", "all_routes", is_flag=True, help="Verify every route in the repository.")
@click.option(
    "--approvers",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="Emails allowed to approve (default: $route/.route/approvers, else .route-approvers at the top).",
)
@click.option(
    "--require-signed",
    is_flag=True,
    help="Approval commits must carry a signature git verify-commit accepts (GPG or SSH).",
)
@click.option(
    "--allowed-signers",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="SSH allowed-signers file for --require-signed (else git's gpg.ssh.allowedSignersFile).",
)
@click.option(
    "--allow-incomplete",
    is_flag=True,
    help="Stones not passed yet are fine; every claim that IS made must still be true.",
)
@click.option(
    "--junit",
    "junit_path",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="Also write JUnit XML (one testcase per stone).",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of text.")
def verify_command(
    routes: tuple[str, ...],
    all_routes: bool,
    approvers: Path | None,
    require_signed: bool,
    allowed_signers: Path | None,
    allow_incomplete: bool,
    junit_path: Path | None,
    as_json: bool,
) -> int:
    """Re-check every stone's claims from the files and git: exit 0 only when all are passed and fresh."""
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
    )
    if as_json:
        import json

        click.echo(json.dumps(verify_report.as_json(report), ensure_ascii=False, indent=2))
    else:
        click.echo(verify_report.text(report), nl=False)
    if junit_path is not None:
        from routedriver.fsutil import atomic_write

        atomic_write(junit_path, verify_report.junit(report))
    if os.environ.get("GITHUB_ACTIONS") == "true":
        _github(report)
    if _AS_SCRIPT:
        _finish()
    if report.ok:
        return 0
    failing = report.failing
    click.echo(
        f"error: {len(failing)} of {len(report.checks)} stones failed route.verify "
        f"({', '.join(sorted({check.status for check in failing}))}); "
        "see each stone's line on stdout for what to fix",
        err=True,
    )
    return 2


def _github(report: VerifyReport) -> None:
    from routedriver.route import verify_report

    for line in verify_report.github_annotations(report):
        click.echo(line)
    summary_path = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary_path:
        try:
            with open(summary_path, "a", encoding="utf-8") as handle:
                handle.write(verify_report.step_summary(report))
        except OSError as exc:
            click.echo(f"warning: cannot append to GITHUB_STEP_SUMMARY ({exc.strerror})", err=True)
