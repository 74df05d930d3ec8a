"""``route.policy.approve``: a human approves the route's definitions. Parse flags, call
``routedriver.route.policy.approve``, render the result. No logic here."""

from __future__ import annotations

import os

import click

from routedriver.cli._command import Command
from routedriver.cli.route_stone import ROUTE_HELP, answered
from routedriver.report import Report
from routedriver.report import as_json as json_document
from routedriver.route import policy
from routedriver.route.policy import PolicyApproveResult


@click.command("route.policy.approve", cls=Command)
@click.option("--route", "route_option", metavar="DIR", help=ROUTE_HELP)
@click.option(
    "--no-commit", is_flag=True, help="Write the policy approval but do not commit it (commit it yourself)."
)
@click.option(
    "--base",
    "base_ref",
    metavar="REF",
    help="The base the change is for (as route.verify --base): approve again when its history already holds "
    "this approval.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def approve_command(route_option: str | None, no_commit: bool, base_ref: str | None, as_json: bool) -> Report:
    """Approve the route's definitions as they are now (its stones, guards, approvers file and the repository
    files its guards run): humans only, in a terminal. Writes $route/.route/policy.approved and commits it
    alone with your git identity (and signing) unless --no-commit; route.verify --base then accepts the
    changes since the base."""
    # A robot runs commands with stdin from a pipe or /dev/null; a person types them at a terminal.
    human = os.isatty(0)
    return answered(
        as_json,
        {"route": route_option},
        lambda: _report(
            policy.approve(route_option, human=human, commit=not no_commit, base_ref=base_ref), as_json
        ),
    )


def _report(result: PolicyApproveResult, as_json: bool) -> Report:
    show = result.route.show
    if as_json:
        return Report(
            json_document(
                {
                    "route": result.route.display,
                    "outcome": result.outcome,
                    "marker": show(result.marker),
                    "definitions_hash": result.definitions_hash,
                    "files": [{"path": path, "blob": blob} for path, blob in sorted(result.files.items())],
                    "approver": {"name": result.approver[0], "email": result.approver[1]},
                    "since": result.since or None,
                    "again": result.again or None,
                    "commit": result.commit,
                    "committed": not result.not_committed,
                    "not_committed": result.not_committed or None,
                    "commit_with": result.commit_with or None,
                }
            )
        )
    who = f"{result.approver[0]} <{result.approver[1]}>"
    count = f"{len(result.files)} definition file{'s' if len(result.files) != 1 else ''}"
    if result.outcome == "already-approved":
        lines = [f"already approved: the policy of {result.route.display} by {who} (nothing changed)"]
    else:
        lines = [f"policy approved: {result.route.display} by {who}"]
    since = f"; since the last policy approval: {result.since}" if result.since else ""
    lines.append(f"  covers {count} (definitions hash {result.definitions_hash[:12]}){since}")
    if result.again:
        lines.append(
            f"  approved again: {result.again} (an approval approves the difference from the base it is made "
            "against)"
        )
    lines.append(f"  marker {show(result.marker)}")
    if result.commit:
        lines.append(f"  committed {result.commit[:12]} (only the marker; other staged work is untouched)")
    elif result.commit_with:
        lines.append(f"  not committed ({result.not_committed}); commit it alone, with hooks off:")
        lines.append(f"  {result.commit_with}")
    elif result.not_committed:
        lines.append(f"  not committed ({result.not_committed}); commit {show(result.marker)} yourself")
    return Report("\n".join(lines) + "\n")
