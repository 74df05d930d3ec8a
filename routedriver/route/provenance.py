"""Who approved: an approval marker counts only when git's history vouches for it.

A marker is valid when the commit that last set it on the history HEAD has (found with ONE ``git log`` over
every marker of the run, reading every parent of a merge, so ``git merge -s ours`` cannot resurrect an older
approval: ``gitops.last_commits``) committed exactly the marker in the work tree, changed nothing but that
one marker (what the approve commands commit: a marker that arrived in a mixed commit, such as ``git add -A
&& git commit``, a squash merge, or a commit holding two approvals, is not an approval even when a listed
approver signed that commit), was authored by an email in the approvers file who is also the person the
marker names, and, with ``require_signed``, carries a signature ``git verify-commit`` accepts (GPG, or SSH
with an allowed-signers file) from an approver.

A shallow clone shows the commit where its history is cut off as adding every file, so a marker that seems
to come from such a commit is never vouched for; and every approval that fails in a shallow clone says that
fetching the whole history may change the verdict.

The approvers file: ``--approvers FILE``, else ``$route/.route/approvers``, else
``<top-level>/.route-approvers``; UTF-8 (a byte-order mark is fine), one email per line (``Name <email>`` is
fine), ``#`` starts a comment. A file that exists but cannot be read, or lists nobody, approves nobody and
says so (the next place is looked at only when a file is absent).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import NamedTuple, Protocol

from routedriver import gitops, userfile
from routedriver.errors import Refused
from routedriver.later import Later
from routedriver.route import hashing
from routedriver.route.model import STATE_DIR, Route

ROUTE_APPROVERS = f"{STATE_DIR}/approvers"
REPO_APPROVERS = ".route-approvers"
_EMAIL = re.compile(r"<([^<>\s]+@[^<>\s]+)>|([^\s<>]+@[^\s<>]+)")


class Approvers(NamedTuple):
    path: Path | None  # None: no approvers file anywhere
    emails: frozenset[str]  # lower-case
    problem: str = ""  # the file exists but cannot be used (unreadable, not UTF-8): why, and what to do


class ApprovalRecord(Protocol):
    """What vouching needs of an approval marker: its exact text and who it names. A stone's ``Marker`` and
    the route's policy approval (``routedriver.route.policy``) both are one."""

    @property
    def raw(self) -> str: ...

    @property
    def approver_email(self) -> str: ...


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
    """The emails the approvers file lists, a line at a time as git and its readers show lines (split at
    ``\n`` only). A line holding another line break (U+2028 after a ``#``: "one comment line" to a reader)
    names nobody: who may approve must be what a reviewer of the file sees."""
    emails = set()
    for line in text.split("\n"):
        if userfile.find_hidden_line_break(line.removesuffix("\r")) is not None:
            continue
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
        self._history: Later[_History] | None = None
        self._approvers: dict[Path, Approvers] = {}
        self._signatures: dict[str, gitops.Signature] = {}
        self._boundary: Later[frozenset[str] | None] | None = None
        # With --base and no --approvers: who may approve, as the base has it (``policy.base_approvers``),
        # so a pull request that lists its own author cannot approve its own work.
        self.from_base: Callable[[Route], Approvers] | None = None
        self._base_approvers: dict[Path, Approvers] = {}

    def load_history(self, marker_paths: Iterable[str]) -> None:
        """Start ONE ``git log`` over every approval marker (paths relative to the top-level), then ONE more
        for everything the commits it finds changed, both in the background while the caller goes on."""
        repo, paths = self.repo, sorted(set(marker_paths))
        if repo is not None and paths:
            self._history = Later(lambda: _read_history(repo, paths))

    def _changed(self, sha: str) -> frozenset[str] | None:
        """Every path the commit ``sha`` changed (None: git could not say)."""
        return self._history.get().changes.get(sha) if self._history is not None else None

    @property
    def commits(self) -> dict[str, gitops.CommitInfo]:
        return self._history.get().commits if self._history is not None else {}

    def approvers(self, route: Route) -> Approvers:
        if self.override is None and self.from_base is not None:
            if route.path not in self._base_approvers:
                self._base_approvers[route.path] = self.from_base(route)
            return self._base_approvers[route.path]
        return find_approvers(route, self.repo, self.override, self._approvers)

    def _show(self, path: Path) -> str:
        return _shown(path, self.repo)

    def _cut_off(self) -> frozenset[str] | None:
        """Where a shallow clone's history stops (None: not shallow). Asked only when an approval fails or
        rests on a commit without parents, so a full clone that verifies pays nothing for it."""
        if self.repo is None:
            return None
        if self._boundary is None:
            repo = self.repo
            self._boundary = Later(lambda: gitops.shallow_boundary(repo))
        return self._boundary.get()

    def check(
        self,
        route: Route,
        marker: ApprovalRecord | None,
        path: Path,
        approve_hint: str,
        approvers: Approvers | None = None,
    ) -> ApprovalCheck:
        """Is the approval marker at ``path`` (it exists) one a listed human committed? ``approvers``: who
        may approve, when not the route's usual approvers file (a policy approval: the base's)."""
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
        approvers = approvers if approvers is not None else self.approvers(route)
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
        self, approvers: Approvers, marker: ApprovalRecord, path: Path, approve_hint: str
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
        mixed = mixed_changes(self._changed(info.sha), relative)
        if mixed:
            why = (
                f"its approval marker arrived in commit {info.sha[:12]} together with other changes "
                f"({mixed}); "
                "an approval counts only in a commit of its own, as the approve command makes it; a human "
                f"approves again with: {approve_hint}"
            )
            return ApprovalCheck(False, "forged", why), True
        shown = self._show(approvers.path)
        if info.author_email.lower() not in approvers.emails:
            why = (
                f"its approval was committed by {info.author_email} (commit {info.sha[:12]}), who is not in "
                f"{shown}; a listed approver runs, in a terminal: {approve_hint}"
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
                return ApprovalCheck(False, "unapproved", f"{failed}: {approve_hint}"), True
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
                f"{commit} has no signature; the approver turns on commit signing (git config "
                "commit.gpgsign true) and approves again, in a terminal"
            )
        if not signature.ok:
            return (
                f"{commit} has no valid signature (git verify-commit: {signature.detail}); the approver "
                "approves again with a key the allowed signers trust, in a terminal"
            )
        if any(wildcard in signature.signer for wildcard in _WILDCARDS):
            # git names the allowed-signers line's principal pattern, not a person: the key is trusted for
            # whoever the pattern covers, so the author (a listed approver) must be one of them.
            if not principal_covers(signature.signer, info.author_email):
                return (
                    f"{commit} is signed by a key trusted for {signature.signer}, which does not cover its "
                    f"author {info.author_email}; the approver approves again with their own key, in a "
                    "terminal"
                )
            return ""
        # The signer must be a listed approver: a key trusted for a principal that is no email (a bot's
        # "ci-robot" line in the same allowed-signers file) or a signature git does not name vouches for
        # nobody the approvers file lists.
        if not signature.signer:
            return (
                f"{commit} is signed, but git does not say by whom ({signature.detail}); sign with a key the "
                "allowed signers list under the approver's email and approve again, in a terminal"
            )
        if not emails_in(signature.signer) & approvers.emails:
            return (
                f"{commit} is signed by {signature.signer}, who is not in {shown}; a listed approver "
                "approves again, in a terminal"
            )
        return ""


class _History(NamedTuple):
    commits: dict[str, gitops.CommitInfo]  # marker path → the commit that last set it
    changes: dict[str, frozenset[str]]  # commit id → every path it changed


def _read_history(repo: gitops.Repo, paths: list[str]) -> _History:
    """The commits that last set the markers ``paths``, and what each of them changed: the second ``git
    log`` follows the first in the same background job, off the caller's path (it is needed for every
    approval that is vouched for)."""
    commits = gitops.last_commits(repo, paths)
    return _History(commits, gitops.changed_paths(repo, {info.sha for info in commits.values()}))


def find_approvers(
    route: Route,
    repo: gitops.Repo | None,
    override: Path | None = None,
    cache: dict[Path, Approvers] | None = None,
) -> Approvers:
    """The approvers file that decides for ``route``: ``override`` (``--approvers``), else
    ``$route/.route/approvers``, else ``<top-level>/.route-approvers``; the next place is looked at only
    when a file is absent. ``cache`` keeps files already read (one verify run reads each once)."""
    cache = {} if cache is None else cache
    candidates = [override] if override is not None else [route.path / ROUTE_APPROVERS]
    if override is None and repo is not None:
        candidates.append(repo.toplevel / REPO_APPROVERS)
    for candidate in candidates:
        if candidate is None:
            continue
        if candidate in cache:
            return cache[candidate]
        shown = _shown(candidate, repo)
        if not os.path.lexists(candidate):
            continue  # absent: the next place may hold one
        try:  # a link to /dev/zero that a pull request commits must not take the gate down
            raw = userfile.read_bytes(candidate, what="approvers file", shown=shown)
        except Refused as exc:
            found = Approvers(candidate, frozenset(), f"the approvers file {exc.what}; {exc.fix}")
        else:
            try:
                # utf-8-sig: an editor's byte-order mark must not hide the first email.
                found = Approvers(candidate, parse_approvers(raw.decode("utf-8-sig")))
            except UnicodeDecodeError:
                why = (
                    f"the approvers file {shown} is not UTF-8 text; save it as UTF-8, one approver email "
                    "a line"
                )
                found = Approvers(candidate, frozenset(), why)
        cache[candidate] = found
        return found
    return Approvers(None, frozenset())


def _shown(path: Path, repo: gitops.Repo | None) -> str:
    """A file as messages name it: relative to the top-level when it is inside."""
    if repo is not None and repo.toplevel in path.parents:
        return hashing.relative_posix(path, repo.toplevel)
    return str(path)


def mixed_changes(changed: frozenset[str] | None, marker: str) -> str:
    """What else the commit that set the approval marker ``marker`` (relative to the top-level, POSIX)
    changed, given every path it changed: a few of them, "" when it changed nothing but that marker and its
    route's ``.route/.gitignore`` (which the first approval commits with it). One approval, one marker: a
    second marker in the same commit, even another approval, makes it mixed, whoever signed it (a hook in
    the approver's clone could have staged it). A commit git cannot describe (None) counts as mixed: a gate
    that cannot read its input fails closed."""
    if changed is None:
        return "git could not list what it changed"
    allowed = {marker, marker.rpartition("/")[0] + "/.gitignore"}
    others = sorted(path for path in changed if path not in allowed)
    if not others:
        return ""
    shown = ", ".join(others[:3])
    return shown + (f" and {len(others) - 3} more" if len(others) > 3 else "")


def _conflicted(path: Path) -> bool:
    """Does the file hold git's merge conflict markers (``<<<<<<< ours`` … ``>>>>>>> theirs``)?"""
    try:
        text = userfile.read_record(path).decode("utf-8", errors="replace")
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
