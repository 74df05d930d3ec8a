"""``route.verify``: the CI gate. Parse flags, call ``route.verify.verify``, render the report. No logic here.

Under GitHub Actions (``GITHUB_ACTIONS=true``) it also prints ``::error`` annotations (on stderr with
``--json``, so that stdout stays one JSON document) and appends a Markdown table to ``$GITHUB_STEP_SUMMARY``.

It starts without click (``cli/_plain.py``), as ``route.stone.*`` do. ``OPTIONS`` describes each flag once,
for the plain reading and for click's.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import cast

from routedriver.cli._plain import Option, PlainCommand
from routedriver.errors import Refused
from routedriver.fsutil import atomic_write, real_path
from routedriver.report import Report
from routedriver.route import verify_report
from routedriver.route.verify import verify

PROG = "route.verify"
HELP = "Re-check every stone's claims from the files and git: exit 0 only when all are passed and fresh."


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
    Option(
        "--recheck",
        "recheck",
        "With --base: run each new claim's reviews and shell judges in CI (the base's guard, or one a human "
        "approved) and decide from their output; passes the base holds are not run again.",
    ),
    Option(
        "--recheck-dir",
        "recheck_dir",
        "Write recheck's review and judge files here (outside the checkout, new or empty), e.g. to upload "
        "them; default: a temporary directory, removed afterwards.",
        "DIR",
    ),
    Option(
        "--recheck-max",
        "recheck_max",
        "Refuse, before anything runs, more than N new claims to recheck.",
        "N",
        minimum=0,
    ),
    Option(
        "--recheck-sandbox",
        "recheck_sandbox",
        "Run recheck's commands under bubblewrap: on (refuse without it), auto (without it, say so), off.",
        "MODE",
        default="auto",
        choices=("on", "off", "auto"),
    ),
    Option(
        "--require-bound",
        "require_bound",
        "With --base: every file the pull request changes must be an artifact of a stone that passes or a "
        "route's own file (what guard programs load from the checkout is then the base's).",
    ),
    Option("--junit", "junit_path", "Also write JUnit XML (one testcase per stone).", "FILE", path=True),
    Option("--json", "as_json", "Print one JSON object instead of text."),
)


def main() -> None:
    """The console script."""
    VERIFY.main()


def run_verify(
    routes: tuple[str, ...],
    all_routes: bool,
    base: str | None,
    approvers: Path | None,
    require_signed: bool,
    allowed_signers: Path | None,
    allow_incomplete: bool,
    recheck: bool,
    recheck_dir: str | None,
    recheck_max: int | None,
    recheck_sandbox: str,
    require_bound: bool,
    junit_path: Path | None,
    as_json: bool,
) -> Report:
    """Verify; the report (written by ``_exits``), after the JUnit file and GitHub's step summary."""
    for given, flag in ((approvers, "--approvers"), (allowed_signers, "--allowed-signers")):
        if given is not None and not os.path.isfile(given):
            raise Refused(f"{flag} {given}: no such file", "check the path")
    options = None
    if recheck:
        # only with --recheck: recheck and what runs a guard (~30 ms) stay off a plain CI run
        from routedriver.route.recheck import Options
        from routedriver.route.recheck_sandbox import Mode

        sandbox = cast("Mode", recheck_sandbox)  # one of the option's choices
        options = Options(Path(recheck_dir) if recheck_dir else None, recheck_max, sandbox)
    else:
        for given_flag, flag in ((recheck_dir, "--recheck-dir"), (recheck_max, "--recheck-max")):
            if given_flag is not None:
                raise Refused(f"{flag} needs --recheck", f"add --recheck, or leave out {flag}")
    report = verify(
        routes,
        all_routes=all_routes,
        approvers=approvers,
        require_signed=require_signed,
        allow_incomplete=allow_incomplete,
        allowed_signers=real_path(allowed_signers) if allowed_signers else None,
        base_ref=base,
        recheck=options,
        require_bound=require_bound,
    )
    if junit_path is not None:  # first: a path it cannot write is refused before any report is shown
        _write_junit(junit_path, verify_report.junit(report))
    github = os.environ.get("GITHUB_ACTIONS") == "true"
    unsummarized = _append_summary(verify_report.step_summary(report)) if github else ()
    outcome = verify_report.outcome(report, json=as_json, github=github)
    return outcome._replace(stderr=(*unsummarized, *outcome.stderr))


VERIFY = PlainCommand(PROG, OPTIONS, run_verify, HELP)


def _write_junit(path: Path, xml: str) -> None:
    try:
        atomic_write(path, xml)  # parent directories are made as needed; nothing half-written on failure
    except OSError as exc:
        raise Refused(
            f"cannot write --junit {path}: {exc.strerror or exc}", "give a path in a directory you can write"
        ) from None


def _append_summary(markdown: str) -> tuple[str, ...]:
    """The step summary GitHub shows for the job (``$GITHUB_STEP_SUMMARY``), appended to; the warning when it
    cannot be (the gate's verdict does not depend on it)."""
    summary_path = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary_path:
        try:
            with open(summary_path, "a", encoding="utf-8") as handle:
                handle.write(markdown)
        except OSError as exc:
            return (f"warning: cannot append to GITHUB_STEP_SUMMARY ({exc.strerror})",)
    return ()
