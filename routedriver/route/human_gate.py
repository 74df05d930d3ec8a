"""``approved?``, the human gate: does a stone's approval hold for its artifacts as they are now, given by
someone the approvers file lists? (The marker's text is read by ``judges.approved``; who committed it is
``route.verify``'s question, through ``provenance``.)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from routedriver.route import hashing, judges
from routedriver.route.context import ApprovalState, StoneContext
from routedriver.route.model import Marker, Verdict

if TYPE_CHECKING:  # the approvers file (and git) only when a judge needs them and was not given them
    from routedriver.route.provenance import Approvers


def verdict(
    context: StoneContext,
    approval: ApprovalState,
    review_input_hash: str,
    artifacts: Mapping[str, str],
    approvers: Approvers | None = None,
) -> Verdict:
    """``approved?`` for this stone: does ``approval`` hold for the artifacts as they are now, given by
    someone the approvers file lists (``approvers``; looked up when not given)? (A symlinked artifact never
    reaches it: hashing refuses one, see ``hashing.symlink_problem``.)"""
    said = judges.approved(
        approval.marker,
        approval.exists,
        review_input_hash,
        context.show,
        context.command_hint("set", portable=True) + " --as approved",
        current_artifacts=artifacts,
    )
    if approvers is None:
        # provenance (~2.5 ms): only when the caller has no approvers yet, off a cached route.stone.set
        from routedriver.route.provenance import find_approvers

        approvers = find_approvers(context.route, context.repo)
    if not said.passed:
        return _who_may_approve(said, approvers, context)
    unlisted = unlisted_approver(approval.marker, approvers, context)
    if not unlisted:
        return said
    reason = f"wait for human approval: {unlisted}"
    return Verdict("failed", reason, f"passed: false\nreason: {reason}\n")


def _who_may_approve(verdict: Verdict, approvers: Approvers, context: StoneContext) -> Verdict:
    """A stone that waits for approval says who may give it (the approvers file's emails)."""
    if approvers.path is None or not approvers.emails:
        return verdict
    emails = sorted(approvers.emails)
    listed = ", ".join(emails[:5]) + (f" and {len(emails) - 5} more" if len(emails) > 5 else "")
    shown = hashing.relative_posix(approvers.path, context.base)
    reason = f"{verdict.reason}; who may approve: {listed} ({shown})"
    output = verdict.output.replace(f"reason: {verdict.reason}\n", f"reason: {reason}\n", 1)
    return Verdict(verdict.status, reason, output)


def unlisted_approver(marker: Marker | None, approvers: Approvers, context: StoneContext) -> str:
    """Why an approval does not count where an approvers file lists who may approve (its approver is not
    there), with the command a listed approver runs; "" when it counts or no file decides."""
    if marker is None or approvers.path is None or approvers.problem or not approvers.emails:
        return ""
    email = marker.approver_email.lower()
    if email and email in approvers.emails:
        return ""
    who = marker.approver_email or "someone unnamed"
    shown = hashing.relative_posix(approvers.path, context.base)
    return (
        f"approved by {who}, who is not in {shown}; a listed approver runs, in a terminal: "
        f"{context.command_hint('set', portable=True)} --as approved"
    )
