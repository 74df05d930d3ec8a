"""Who approved: an approval marker counts only when git's history vouches for it.

A marker is valid when the latest commit that changed it (found with ONE ``git log`` over every marker of
the run) was authored by an email in the approvers file, the marker in the work tree is byte for byte what
that commit put there, the marker names that same person, and, with ``require_signed``, the commit carries a
signature ``git verify-commit`` accepts (GPG, or SSH with an allowed-signers file) from an approver.

The approvers file: ``--approvers FILE``, else ``$route/.route/approvers``, else
``<top-level>/.route-approvers``; one email per line (``Name <email>`` is fine), ``#`` starts a comment.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import NamedTuple

from routedriver import gitops
from routedriver.later import Later
from routedriver.route import hashing
from routedriver.route.model import STATE_DIR, Marker, Route

ROUTE_APPROVERS = f"{STATE_DIR}/approvers"
REPO_APPROVERS = ".route-approvers"
_EMAIL = re.compile(r"<([^<>\s]+@[^<>\s]+)>|([^\s<>]+@[^\s<>]+)")


class Approvers(NamedTuple):
    path: Path | None  # None: no approvers file anywhere
    emails: frozenset[str]  # lower-case


class ApprovalCheck(NamedTuple):
    ok: bool
    status: str  # passed | forged | unapproved
    why: str


def parse_approvers(text: str) -> frozenset[str]:
    emails = set()
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        match = _EMAIL.search(line)
        if match:
            emails.add((match[1] or match[2]).lower())
    return frozenset(emails)


def emails_in(text: str) -> set[str]:
    return {(match[1] or match[2]).lower() for match in _EMAIL.finditer(text)}


class Provenance:
    """Everything one verify run needs to judge approval markers; git is asked once for all of them."""

    def __init__(
        self,
        repo: gitops.Repo | None,
        override: Path | None = None,  # --approvers
        require_signed: bool = False,
        allowed_signers: Path | None = None,
    ) -> None:
        self.repo = repo
        self.override = override
        self.require_signed = require_signed
        self.allowed_signers = allowed_signers
        self._history: Later[dict[str, gitops.CommitInfo]] | None = None
        self._approvers: dict[Path, Approvers] = {}
        self._signatures: dict[str, gitops.Signature] = {}
        self._shallow: bool | None = None

    def load_history(self, marker_paths: Iterable[str]) -> None:
        """Start ONE ``git log`` over every approval marker (paths relative to the top-level)."""
        repo, paths = self.repo, sorted(set(marker_paths))
        if repo is not None and paths:
            self._history = Later(lambda: gitops.last_commits(repo, paths))

    @property
    def commits(self) -> dict[str, gitops.CommitInfo]:
        return self._history.get() if self._history is not None else {}

    def approvers(self, route: Route) -> Approvers:
        candidates = [self.override] if self.override is not None else [route.path / ROUTE_APPROVERS]
        if self.override is None and self.repo is not None:
            candidates.append(self.repo.toplevel / REPO_APPROVERS)
        for candidate in candidates:
            if candidate is None:
                continue
            if candidate in self._approvers:
                return self._approvers[candidate]
            try:
                text = candidate.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            found = Approvers(candidate, parse_approvers(text))
            self._approvers[candidate] = found
            return found
        return Approvers(None, frozenset())

    def _hint(self) -> str:
        if self.repo is None:
            return ""
        if self._shallow is None:
            self._shallow = gitops.is_shallow(self.repo)
        return (
            " (this clone is shallow: fetch the whole history, e.g. actions/checkout with fetch-depth: 0)"
            if self._shallow
            else ""
        )

    def check(self, route: Route, marker: Marker | None, path: Path, approve_hint: str) -> ApprovalCheck:
        """Is the approval marker at ``path`` (it exists) one a listed human committed?"""
        if marker is None:
            return ApprovalCheck(
                False, "forged", "its approval marker does not parse (not written by the driver)"
            )
        if self.repo is None:
            return ApprovalCheck(False, "unapproved", "cannot check who approved: not in a git repository")
        approvers = self.approvers(route)
        if approvers.path is None:
            where = (
                f"{self.override}"
                if self.override is not None
                else f"{hashing.relative_posix(route.path / ROUTE_APPROVERS, self.repo.toplevel)} or "
                f"{REPO_APPROVERS} at the repository root"
            )
            return ApprovalCheck(
                False,
                "unapproved",
                f"no approvers file: create {where} listing the emails of the people who may approve",
            )
        relative = hashing.relative_posix(path, self.repo.toplevel)
        info = self.commits.get(relative)
        if info is None:
            return ApprovalCheck(
                False,
                "forged",
                f"its approval marker was never committed (written by hand?){self._hint()}; "
                f"a human approves with: {approve_hint}",
            )
        # The bytes the marker was parsed from (and the approval state hashed): one read, one answer.
        current = hashing.blob_id_of(marker.raw.encode("utf-8"), self.repo.object_format)
        if current != info.blob:
            return ApprovalCheck(
                False,
                "forged",
                f"its approval marker differs from what commit {info.sha[:12]} committed (edited since)",
            )
        shown = approvers.path.name if approvers.path.name == REPO_APPROVERS else str(approvers.path)
        if self.repo.toplevel in approvers.path.parents:
            shown = hashing.relative_posix(approvers.path, self.repo.toplevel)
        if info.author_email.lower() not in approvers.emails:
            return ApprovalCheck(
                False,
                "forged",
                f"its approval was committed by {info.author_email} (commit {info.sha[:12]}), who is not in "
                f"{shown}{self._hint()}",
            )
        if marker.approver_email and marker.approver_email.lower() != info.author_email.lower():
            return ApprovalCheck(
                False,
                "forged",
                f"its approval marker names {marker.approver_email} but commit {info.sha[:12]} was made by "
                f"{info.author_email}",
            )
        if self.require_signed:
            signature = self._signature(info.sha)
            if not signature.ok:
                return ApprovalCheck(
                    False,
                    "unapproved",
                    f"its approval commit {info.sha[:12]} has no valid signature "
                    f"(git verify-commit: {signature.detail})",
                )
            signer_emails = emails_in(signature.signer)
            if signer_emails and not signer_emails & approvers.emails:
                return ApprovalCheck(
                    False,
                    "unapproved",
                    f"its approval commit {info.sha[:12]} is signed by {signature.signer}, "
                    f"who is not in {shown}",
                )
        return ApprovalCheck(True, "passed", f"approved by {info.author_email} in commit {info.sha[:12]}")

    def _signature(self, sha: str) -> gitops.Signature:
        assert self.repo is not None
        if sha not in self._signatures:
            self._signatures[sha] = gitops.verify_commit(self.repo, sha, self.allowed_signers)
        return self._signatures[sha]


def marker_paths(routes: Mapping[Route, frozenset[str]], toplevel: Path) -> list[str]:
    """Every ``.approved`` marker of ``routes`` (given their ``.route/`` listings), relative to the
    top-level."""
    found = []
    for route, names in routes.items():
        for name in names:
            if name.endswith(".approved"):
                found.append(hashing.relative_posix(route.state_dir / name, toplevel))
    return found
