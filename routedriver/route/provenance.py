"""Who approved: an approval marker counts only when git's history vouches for it.

A marker is valid when the latest commit that changed it (found with ONE ``git log`` over every marker of
the run) was authored by an email in the approvers file, the marker in the work tree is byte for byte what
that commit put there, the marker names that same person, and, with ``require_signed``, the commit carries a
signature ``git verify-commit`` accepts (GPG, or SSH with an allowed-signers file) from an approver.

A shallow clone shows the commit where its history is cut off as adding every file, so a marker that seems
to come from such a commit is never vouched for; and every approval that fails in a shallow clone says that
fetching the whole history may change the verdict.

The approvers file: ``--approvers FILE``, else ``$route/.route/approvers``, else
``<top-level>/.route-approvers``; UTF-8 (a byte-order mark is fine), one email per line (``Name <email>`` is
fine), ``#`` starts a comment. A file that exists but cannot be read, or lists nobody, approves nobody and
says so (the next place is looked at only when a file is absent).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import NamedTuple

from routedriver import gitops, userfile
from routedriver.errors import Refused
from routedriver.later import Later
from routedriver.route import hashing
from routedriver.route.model import STATE_DIR, Marker, Route

ROUTE_APPROVERS = f"{STATE_DIR}/approvers"
REPO_APPROVERS = ".route-approvers"
_EMAIL = re.compile(r"<([^<>\s]+@[^<>\s]+)>|([^\s<>]+@[^\s<>]+)")


class Approvers(NamedTuple):
    path: Path | None  # None: no approvers file anywhere
    emails: frozenset[str]  # lower-case
    problem: str = ""  # the file exists but cannot be used (unreadable, not UTF-8): why, and what to do


class ApprovalCheck(NamedTuple):
    ok: bool
    status: str  # passed | forged | unapproved | broken
    why: str


SHALLOW_HINT = (
    "; but this clone is shallow, which can hide the approval commit: fetch the whole history "
    "(actions/checkout with fetch-depth: 0)"
)
_WILDCARDS = ("*", "?")


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


def principal_covers(patterns: str, email: str) -> bool:
    """Does an allowed-signers principal list (``a@x,*@example.com,!eve@example.com``: ``*`` and ``?``
    wildcards, ``!`` negates, as ssh-keygen matches them) cover ``email``? Compared case-insensitively, as
    every email here is."""
    covered = False
    for pattern in patterns.split(","):
        pattern = pattern.strip().lower()
        negated = pattern.startswith("!")
        pattern = pattern.removeprefix("!")
        if not pattern:
            continue
        regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in pattern)
        if re.fullmatch(regex, email.lower()):
            if negated:
                return False
            covered = True
    return covered


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
        self._boundary: Later[frozenset[str] | None] | None = None

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
            if not candidate.exists():
                continue  # absent: the next place may hold one
            try:  # a link to /dev/zero that a pull request commits must not take the gate down
                raw = userfile.read_bytes(candidate, what="approvers file", shown=self._show(candidate))
            except Refused as exc:
                found = Approvers(candidate, frozenset(), f"the approvers file {exc.what}; {exc.fix}")
            else:
                try:
                    # utf-8-sig: an editor's byte-order mark must not hide the first email.
                    found = Approvers(candidate, parse_approvers(raw.decode("utf-8-sig")))
                except UnicodeDecodeError:
                    why = (
                        f"the approvers file {self._show(candidate)} is not UTF-8 text; save it as UTF-8, "
                        "one approver email a line"
                    )
                    found = Approvers(candidate, frozenset(), why)
            self._approvers[candidate] = found
            return found
        return Approvers(None, frozenset())

    def _show(self, path: Path) -> str:
        """An approvers file as messages name it: relative to the top-level when it is inside."""
        if self.repo is not None and self.repo.toplevel in path.parents:
            return hashing.relative_posix(path, self.repo.toplevel)
        return str(path)

    def _cut_off(self) -> frozenset[str] | None:
        """Where a shallow clone's history stops (None: not shallow). Asked only when an approval fails or
        rests on a commit without parents, so a full clone that verifies pays nothing for it."""
        if self.repo is None:
            return None
        if self._boundary is None:
            repo = self.repo
            self._boundary = Later(lambda: gitops.shallow_boundary(repo))
        return self._boundary.get()

    def check(self, route: Route, marker: Marker | None, path: Path, approve_hint: str) -> ApprovalCheck:
        """Is the approval marker at ``path`` (it exists) one a listed human committed?"""
        if marker is None:
            if _conflicted(path):
                return ApprovalCheck(
                    False,
                    "broken",
                    "its approval marker does not parse (a merge conflict: it holds <<<<<<< and >>>>>>> "
                    f"lines); a human approves again with: {approve_hint}",
                )
            return ApprovalCheck(
                False, "forged", "its approval marker does not parse (not written by the driver)"
            )
        if self.repo is None:
            return ApprovalCheck(False, "unapproved", "cannot check who approved: not in a git repository")
        approvers = self.approvers(route)
        if approvers.problem:
            return ApprovalCheck(False, "unapproved", approvers.problem)
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
        if not approvers.emails:
            return ApprovalCheck(
                False,
                "unapproved",
                f"the approvers file {self._show(approvers.path)} lists nobody: add the emails of the people "
                "who may approve, one a line",
            )
        vouched, shallow_matters = self._vouch(approvers, marker, path, approve_hint)
        if vouched.ok or not shallow_matters or self._cut_off() is None:
            return vouched
        return vouched._replace(why=vouched.why + SHALLOW_HINT)

    def _vouch(
        self, approvers: Approvers, marker: Marker, path: Path, approve_hint: str
    ) -> tuple[ApprovalCheck, bool]:
        """The history's verdict on the marker, and whether a shallow clone could be what made it fail."""
        assert self.repo is not None and approvers.path is not None
        relative = hashing.relative_posix(path, self.repo.toplevel)
        info = self.commits.get(relative)
        if info is None:
            why = (
                "its approval marker was never committed (written by hand?); a human approves with: "
                + approve_hint
            )
            return ApprovalCheck(False, "forged", why), True
        if info.deleted:
            why = (
                f"its approval marker is not tracked by git: commit {info.sha[:12]} removed it from git; "
                f"a human approves with: {approve_hint}"
            )
            return ApprovalCheck(False, "forged", why), True
        # The bytes the marker was parsed from (and the approval state hashed): one read, one answer.
        current = hashing.blob_id_of(marker.raw.encode("utf-8"), self.repo.object_format)
        if current != info.blob:
            why = f"its approval marker differs from what commit {info.sha[:12]} committed (edited since)"
            return ApprovalCheck(False, "forged", why), True
        if info.parentless:
            boundary = self._cut_off()
            # A shallow clone shows the commit where its history stops as adding every file: whoever made
            # that commit did not necessarily write this marker. An unreadable list: assume the worst.
            if boundary is not None and (not boundary or info.sha in boundary):
                why = (
                    f"its approval marker comes from commit {info.sha[:12]}, where this shallow clone's "
                    "history is cut off, so who committed it cannot be checked; fetch the whole history "
                    "(actions/checkout with fetch-depth: 0)"
                )
                return ApprovalCheck(False, "unapproved", why), False
        shown = self._show(approvers.path)
        if info.author_email.lower() not in approvers.emails:
            why = (
                f"its approval was committed by {info.author_email} (commit {info.sha[:12]}), who is not in "
                f"{shown}"
            )
            return ApprovalCheck(False, "forged", why), True
        if marker.approver_email and marker.approver_email.lower() != info.author_email.lower():
            why = (
                f"its approval marker names {marker.approver_email} but commit {info.sha[:12]} was made by "
                f"{info.author_email}"
            )
            return ApprovalCheck(False, "forged", why), True
        if self.require_signed:
            failed = self._signed(info, approvers, shown)
            if failed:
                return ApprovalCheck(False, "unapproved", failed), True
        approved = f"approved by {info.author_email} in commit {info.sha[:12]}"
        return ApprovalCheck(True, "passed", approved), False

    def _signed(self, info: gitops.CommitInfo, approvers: Approvers, shown: str) -> str:
        """Why the approval commit's signature does not do, or "" when it does."""
        assert self.repo is not None
        if info.sha not in self._signatures:
            self._signatures[info.sha] = gitops.verify_commit(self.repo, info.sha, self.allowed_signers)
        signature = self._signatures[info.sha]
        commit = f"its approval commit {info.sha[:12]}"
        if signature.unsigned:
            return (
                f"{commit} has no signature; turn on commit signing (git config commit.gpgsign true) and "
                "approve again"
            )
        if not signature.ok:
            return f"{commit} has no valid signature (git verify-commit: {signature.detail})"
        if any(wildcard in signature.signer for wildcard in _WILDCARDS):
            # git names the allowed-signers line's principal pattern, not a person: the key is trusted for
            # whoever the pattern covers, so the author (a listed approver) must be one of them.
            if not principal_covers(signature.signer, info.author_email):
                return (
                    f"{commit} is signed by a key trusted for {signature.signer}, which does not cover its "
                    f"author {info.author_email}"
                )
            return ""
        signer_emails = emails_in(signature.signer)
        if signer_emails and not signer_emails & approvers.emails:
            return f"{commit} is signed by {signature.signer}, who is not in {shown}"
        return ""


def _conflicted(path: Path) -> bool:
    """Does the file hold git's merge conflict markers (``<<<<<<< ours`` … ``>>>>>>> theirs``)?"""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    return len(re.findall(r"^(?:<{7}|>{7})(?: |$)", text, re.M)) >= 2


def marker_paths(routes: Mapping[Route, frozenset[str]], toplevel: Path) -> list[str]:
    """Every ``.approved`` marker of ``routes`` (given their ``.route/`` listings), relative to the
    top-level."""
    found = []
    for route, names in routes.items():
        for name in names:
            if name.endswith(".approved"):
                found.append(hashing.relative_posix(route.state_dir / name, toplevel))
    return found
