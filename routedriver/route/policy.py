"""Route definitions are policy, and policy comes from the base: ``route.verify --base REF``.

A route's **definitions** are what ``load.load_route`` reads, each stone's ``<name>.stone`` and its
``<name>.guard``, plus the route's own approvers file (``$route/.route/approvers``) when it has one. A pull
request that edits them can weaken every check that follows (lower ``--allow-blockers``, drop ``approved?``,
narrow ``artifacts:``, delete a gated stone), and every file would still be an honest record of the weaker
policy. So, compared by git blob id with REF (the pull request's base), any difference is a **policy change**,
except what loses nothing: stones and routes added, and a stone removed that at REF had no guard, none of its
default artifacts and no marker (the pruning ``route.stone.del`` does). Renamed is removed plus added; the
removed side decides.

A policy change passes only with a **policy approval**: ``$route/.route/policy.approved``, written by
``route.policy.approve`` (a human at a terminal) and committed alone, whose definitions hash equals the
current definitions, and which git's history vouches for exactly as for a stone approval
(``provenance.Provenance``). Who may approve it comes from REF (the route's approvers file there, else the
repository's ``.route-approvers`` there) unless ``--approvers`` names a file: a pull request cannot list its
own author for its own change. A removed route has no approval path (nothing is left to hold a marker):
humans remove routes on the base branch.

Git is asked twice per run, however many routes: the commit REF names and ONE ``git ls-tree -r`` (of the
routes and the top-level approvers file, or with ``--all`` of the whole tree); plus, for a route whose
policy approval must be vouched for, the base's approvers file (``git cat-file``). The one ``git log``
provenance runs over every ``*.approved`` marker covers ``policy.approved`` too. The current definitions are
hashed from disk as git would store them, never taken from git's index.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Literal, NamedTuple

from routedriver import gitops
from routedriver.errors import Refused
from routedriver.route import frontmatter as fm
from routedriver.route import hashing, manifest, store, words
from routedriver.route.load import GUARD_SUFFIX, STONE_SUFFIX
from routedriver.route.model import STATE_DIR, Route
from routedriver.route.provenance import (
    REPO_APPROVERS,
    ROUTE_APPROVERS,
    ApprovalCheck,
    Approvers,
    Provenance,
    parse_approvers,
)
from routedriver.route.verify import StoneCheck

POLICY_APPROVED = "policy.approved"  # in $route/.route/; *.approved: an approval marker like the others
APPROVE_COMMAND = "route.policy.approve"
STATUS = "policy-changed"
ROUTE_WIDE = "*"  # the stone a change to the route as a whole is reported on

ChangeKind = Literal["changed", "added", "removed"]
RouteState = Literal["compared", "added", "removed"]


class Change(NamedTuple):
    path: str  # the definition, relative to the top-level
    kind: ChangeKind
    stone: str  # the stone whose checks it alters, or ROUTE_WIDE (a stone removed, the approvers file)


class RoutePolicy(NamedTuple):
    """One route compared with REF."""

    route: str  # relative to the top-level
    state: RouteState = "compared"
    added: tuple[str, ...] = ()  # stones added since REF: reported, no human needed
    pruned: tuple[str, ...] = ()  # stones removed that had nothing to lose at REF: reported
    changes: tuple[Change, ...] = ()  # policy changes: each needs the policy approval
    approval: ApprovalCheck | None = None  # with changes: the policy approval's verdict (None: there is none)
    stones_at_base: int = 0  # a removed route: how many stones it had at REF
    problem: str = ""  # its definitions could not be read, so they cannot be shown to be REF's

    @property
    def accepted(self) -> bool:
        if self.state == "removed" or self.problem:
            return False
        return not self.changes or (self.approval is not None and self.approval.ok)


class PolicyReport(NamedTuple):
    ref: str  # as given
    commit: str  # what it names
    routes: tuple[RoutePolicy, ...]

    @property
    def short(self) -> str:
        return self.commit[:12]


class PolicyApproval(NamedTuple):
    """``$route/.route/policy.approved``: who approved which definitions, when (front matter)."""

    route: str
    approver_name: str
    approver_email: str
    definitions_hash: str
    files: dict[str, str]  # path relative to the top-level → blob id
    approved_at: str
    raw: str  # the exact text: provenance compares its blob with the commit's


def approve_hint(route: str) -> str:
    return f"{APPROVE_COMMAND} --route {shlex.quote(route)}"


# ---------------------------------------------------------------- definitions and the marker


def definitions(route: Route, repo: gitops.Repo) -> dict[str, str]:
    """The route's definitions as they are on disk: ``{path relative to the top-level: blob id}``."""
    paths: list[Path] = []
    for stone in route.stones:
        paths.append(stone.path)
        if stone.guard_path is not None:
            paths.append(stone.guard_path)
    own = route.path / ROUTE_APPROVERS
    if os.path.lexists(own):
        paths.append(own)
    # From disk (hashed as git would store it): what is compared and approved are the bytes in the work
    # tree, whatever git's index claims.
    return hashing.content_ids(paths, repo.toplevel, repo, from_disk=True).ids


def definitions_hash(ids: Mapping[str, str]) -> str:
    """sha256 of canonical JSON of the sorted ``[path, blob id]`` pairs: the review-input hash's shape."""
    return hashing.review_input_hash(dict(ids))


def marker_path(route: Route) -> Path:
    return route.state_dir / POLICY_APPROVED


def read_approval(path: Path) -> PolicyApproval | None:
    """The policy approval at ``path``; None when it is absent or does not parse (hand-made, conflicted)."""
    text = store.read_text(path)
    parsed = fm.parse_document(text) if text is not None else None
    if text is None or parsed is None:
        return None
    fields = parsed[0]
    files = {}
    for value in fields.get("file", ()):
        blob, _, file = value.partition(" ")
        if not file:
            return None
        files[file] = blob
    definitions_sha = store.read_hash(fields, "definitions_hash")
    route, email = fm.one(fields, "route"), fm.one(fields, "approver_email")
    at = fm.one(fields, "approved_at")
    if definitions_sha is None or not route or not email or not at:
        return None
    name = fm.one(fields, "approver_name") or ""
    return PolicyApproval(route, name, email, definitions_sha, files, at, text)


def write_approval(route: Route, route_rel: str, ids: Mapping[str, str], approver: tuple[str, str]) -> Path:
    """Record a human's approval of the route's definitions ``ids`` (written atomically)."""
    fields: list[tuple[str, fm.Value]] = [
        ("route", route_rel),
        ("approver_name", approver[0]),
        ("approver_email", approver[1]),
        ("definitions_hash", definitions_hash(ids)),
        *(("file", f"{blob} {path}") for path, blob in sorted(ids.items())),
        ("approved_at", store.utc_now()),
    ]
    path = marker_path(route)
    store.write_text(path, fm.render_document(fields))
    return path


# ---------------------------------------------------------------- comparing with the base


class _BaseDir(NamedTuple):
    """One directory of REF's tree: its files by name."""

    files: dict[str, gitops.TreeEntry]

    @property
    def stones(self) -> set[str]:
        return {
            name[: -len(STONE_SUFFIX)]
            for name in self.files
            if name.endswith(STONE_SUFFIX) and not name.startswith(".")
        }


class _Base(NamedTuple):
    """REF as one run compares with it."""

    repo: gitops.Repo
    short: str  # REF's commit, as messages show it
    directories: dict[str, _BaseDir]  # REF's files by directory (``.`` for the top-level)
    provenance: Provenance

    def directory(self, path: str) -> _BaseDir:
        return self.directories.get(path, _BaseDir({}))


def compare(
    repo: gitops.Repo | None,
    ref: str,
    routes: Iterable[Route],
    asked: Sequence[Path],
    *,
    all_routes: bool,
    provenance: Provenance,
) -> PolicyReport:
    """Compare the definitions of ``routes`` (loaded, with stones) with REF's; ``asked`` are the routes the
    run was given (some may not have loaded); with ``all_routes`` every route REF has is looked for too."""
    if repo is None:
        raise Refused("--base needs a git repository", "run route.verify inside the routes' work tree")
    commit = gitops.resolve_commit(repo, ref)
    if commit is None:
        raise Refused(
            f"--base {ref}: git cannot find that commit here",
            "fetch the base's history (actions/checkout with fetch-depth: 0, or git fetch origin <base>) "
            "or check the name",
        )
    top = repo.toplevel
    loaded = {hashing.relative_posix(route.path, top): route for route in routes}
    wanted = set(loaded)
    for path in asked:
        resolved = path.resolve()
        if resolved == top or top in resolved.parents:
            wanted.add(hashing.relative_posix(resolved, top))
    # The routes and the repository's approvers file (who may approve a policy change), or everything.
    listed = () if all_routes or "." in wanted else (*sorted(wanted), REPO_APPROVERS)
    try:
        tree = gitops.tree_files(repo, commit, listed)
    except gitops.GitError as exc:
        raise Refused(f"cannot list {ref} ({commit[:12]}): {exc}", "check --base") from None
    base = _Base(repo, commit[:12], _directories(tree), provenance)
    if all_routes:
        wanted |= {name for name, found in base.directories.items() if found.stones}
    found: list[RoutePolicy] = []
    for name in sorted(wanted):
        at_base = base.directory(name)
        route = loaded.get(name)
        if route is None:
            if at_base.stones and not _has_stones(top / name):  # unloadable routes are already reported
                found.append(RoutePolicy(name, "removed", stones_at_base=len(at_base.stones)))
            continue
        if not at_base.stones:
            found.append(RoutePolicy(name, "added", added=tuple(stone.name for stone in route.stones)))
            continue
        found.append(_compare_route(base, route, name))
    return PolicyReport(ref, commit, tuple(found))


def _join(route: str, name: str) -> str:
    return name if route == "." else f"{route}/{name}"


def _directories(tree: Mapping[str, gitops.TreeEntry]) -> dict[str, _BaseDir]:
    """REF's files grouped by directory (``.`` for the top-level)."""
    found: dict[str, _BaseDir] = {}
    for path, entry in tree.items():
        parent, _, name = path.rpartition("/")
        found.setdefault(parent or ".", _BaseDir({})).files[name] = entry
    return found


def _has_stones(directory: Path) -> bool:
    try:
        return any(name.endswith(STONE_SUFFIX) and not name.startswith(".") for name in os.listdir(directory))
    except OSError:
        return False


def _difference(before: str | None, after: str | None) -> ChangeKind | None:
    if before == after:
        return None
    return "added" if before is None else "removed" if after is None else "changed"


def _compare_route(base: _Base, route: Route, name: str) -> RoutePolicy:
    try:
        current = definitions(route, base.repo)
    except Refused as exc:  # a definition that cannot be read cannot be shown to be the base's: fail closed
        return RoutePolicy(name, problem=exc.line().removeprefix("error: "))
    at_base, state = base.directory(name), base.directory(_join(name, STATE_DIR))
    base_stones = at_base.stones
    now = {stone.name for stone in route.stones}
    changes: list[Change] = []
    for stone in sorted(base_stones & now):
        for suffix in (STONE_SUFFIX, GUARD_SUFFIX):
            entry = at_base.files.get(stone + suffix)
            path = _join(name, stone + suffix)
            kind = _difference(entry.blob if entry else None, current.get(path))
            if kind is not None:
                changes.append(Change(path, kind, stone))
    pruned = []
    for stone in sorted(base_stones - now):
        if _prunable(stone, at_base, state):
            pruned.append(stone)
        else:
            changes.append(Change(_join(name, stone + STONE_SUFFIX), "removed", ROUTE_WIDE))
    approvers = _join(name, ROUTE_APPROVERS)
    own = state.files.get(os.path.basename(ROUTE_APPROVERS))
    kind = _difference(own.blob if own is not None else None, current.get(approvers))
    if kind is not None:
        changes.append(Change(approvers, kind, ROUTE_WIDE))
    approval = _approval(base, route, name, current) if changes else None
    added = tuple(stone.name for stone in route.stones if stone.name not in base_stones)
    return RoutePolicy(name, "compared", added, tuple(pruned), tuple(changes), approval)


def _prunable(stone: str, at_base: _BaseDir, state: _BaseDir) -> bool:
    """At REF, did ``stone`` have nothing to lose: no guard, no marker and none of its default artifacts
    (``$route/<name>*.md``; a file a longer stone name's default also matches is that stone's)?"""
    if stone + GUARD_SUFFIX in at_base.files or store.has_marker(state.files, stone):
        return False
    longer = [other for other in at_base.stones if other != stone and other.startswith(stone)]
    for filename in at_base.files:
        if _default_match(stone, filename) and not any(_default_match(other, filename) for other in longer):
            return False
    return True


def _default_match(stone: str, filename: str) -> bool:
    """Does the default artifact glob ``<stone>*.md`` match ``filename``?"""
    return filename.startswith(stone) and filename.endswith(".md") and len(filename) >= len(stone) + 3


def _approval(base: _Base, route: Route, name: str, current: Mapping[str, str]) -> ApprovalCheck | None:
    """The policy approval's verdict on the current definitions; None when there is no policy approval."""
    path = marker_path(route)
    if not os.path.lexists(path):
        return None
    marker = read_approval(path)
    if marker is not None and marker.definitions_hash != definitions_hash(current):
        what = manifest.describe(marker.files, current) or "the same files, other content"
        why = f"it approves other definitions (since then: {what})"
        return ApprovalCheck(False, STATUS, why)
    who = None if base.provenance.override is not None else _base_approvers(base, route, name)
    return base.provenance.check(route, marker, path, approve_hint(name), approvers=who)


def _base_approvers(base: _Base, route: Route, name: str) -> Approvers:
    """Who may approve a policy change (without ``--approvers``): the approvers file as REF has it, the
    route's own, else the repository's. A pull request cannot list its own author for its own change."""
    own = base.directory(_join(name, STATE_DIR)).files.get(os.path.basename(ROUTE_APPROVERS))
    if own is not None:
        return _approvers_at_base(base, own, route.path / ROUTE_APPROVERS)
    shared = base.directory(".").files.get(REPO_APPROVERS)
    if shared is not None:
        return _approvers_at_base(base, shared, base.repo.toplevel / REPO_APPROVERS)
    why = (
        f"no approvers file at {base.short} (who may approve a policy change comes from the base): add "
        f"{_join(name, ROUTE_APPROVERS)} or {REPO_APPROVERS} on the base branch, or pass --approvers"
    )
    return Approvers(None, frozenset(), why)


def _approvers_at_base(base: _Base, entry: gitops.TreeEntry, path: Path) -> Approvers:
    shown = f"{hashing.relative_posix(path, base.repo.toplevel)} at {base.short}"
    raw = gitops.blob_bytes(base.repo, entry.blob)
    if raw is None:
        return Approvers(path, frozenset(), f"cannot read {shown} from git; fetch the base's history")
    try:
        # utf-8-sig: an editor's byte-order mark must not hide the first email (as provenance reads it).
        return Approvers(path, parse_approvers(raw.decode("utf-8-sig")))
    except UnicodeDecodeError:
        return Approvers(path, frozenset(), f"the approvers file {shown} is not UTF-8 text; save it as UTF-8")


# ---------------------------------------------------------------- the verdict as stone checks


def apply(report: PolicyReport, checks: Sequence[StoneCheck]) -> list[StoneCheck]:
    """``checks`` with the policy's verdict: a stone a policy change alters fails as ``policy-changed``
    (whatever it was), a change to the route as a whole adds (or replaces) the route's ``*`` line."""
    failing: dict[tuple[str, str], StoneCheck] = {}
    for route in report.routes:
        for failure in _failures(route, report.short):
            failing[(failure.route, failure.stone)] = failure
    result = [failing.pop((check.route, check.stone), check) for check in checks]
    for (route_name, _), failure in failing.items():  # the route-wide lines that replaced nothing
        at = max((i for i, check in enumerate(result) if check.route == route_name), default=len(result) - 1)
        result.insert(at + 1, failure)
    return result


def _failures(route: RoutePolicy, short: str) -> list[StoneCheck]:
    if route.state == "removed":
        count = words.count(route.stones_at_base, "stone")
        why = (
            f"policy changed: route {route.route} removed since {short} (it had {count}); humans remove "
            "routes on the base branch (no route is left here to hold a policy approval)"
        )
        return [StoneCheck(route.route, ROUTE_WIDE, STATUS, why, route.route)]
    if route.problem:
        why = f"cannot compare its definitions with {short}: {route.problem}"
        return [StoneCheck(route.route, ROUTE_WIDE, "broken", why, route.route)]
    if route.accepted:
        return []
    by_stone: dict[str, list[Change]] = {}
    for change in route.changes:
        by_stone.setdefault(change.stone, []).append(change)
    return [
        StoneCheck(route.route, stone, STATUS, _why(changes, short, route), changes[0].path)
        for stone, changes in by_stone.items()
    ]


def _why(changes: Sequence[Change], short: str, route: RoutePolicy) -> str:
    shown = ", ".join(f"{change.path} {change.kind}" for change in changes[:3])
    if len(changes) > 3:
        shown += f" (+{len(changes) - 3} more)"
    why = f"policy changed: {shown} since {short}"
    hint = approve_hint(route.route)
    if route.approval is not None:
        why += f"; its policy approval does not count: {route.approval.why}"
        if hint in route.approval.why:
            return why  # the reason already says which command fixes it
    return f"{why}; a human runs {hint}"


# ---------------------------------------------------------------- route.policy.approve


class PolicyApproveResult(NamedTuple):
    route: Route
    marker: Path
    definitions_hash: str
    files: dict[str, str]  # what the approval covers: path relative to the top-level → blob id
    approver: tuple[str, str]  # (name, email)
    outcome: Literal["approved", "already-approved"]
    commit: str | None  # the approval commit made now, if any
    not_committed: str = ""  # why the marker was not committed ("" when it was, or already was)
    since: str = ""  # what changed since the policy approval this one replaces ("" for none)
    commit_with: str = ""  # --no-commit: the exact command that commits the approval alone, hooks off


def approve(route_option: str | None, *, human: bool, commit: bool = True) -> PolicyApproveResult:
    """Record (and commit, alone) a human's approval of the route's current definitions."""
    from routedriver.route.api import _writing, open_route
    from routedriver.route.approve import (
        HUMANS_ONLY,
        _commit,
        _committed,
        _identity,
        commit_command,
        refuse_repository_config,
        refuse_unfaithful,
    )

    if not human:  # before anything is read or written: a robot learns only that this is not its call
        named = f" --route {shlex.quote(route_option)}" if route_option else ""
        raise Refused(HUMANS_ONLY, f"a person runs {APPROVE_COMMAND}{named} in a terminal")
    route = open_route(route_option)
    repo = gitops.find_repo(route.path)
    if repo is None:
        raise Refused(
            f"{route.display} is not in a git repository",
            "a policy approval is a commit: run it in the routes' git work tree",
        )
    refuse_repository_config(repo)  # the robot's clone: nothing it configured may run (approve.py)
    ids = definitions(route, repo)
    refuse_unfaithful({path: repo.toplevel / path for path in ids}, ids, repo.object_format)
    digest = definitions_hash(ids)
    approver = _identity(repo.toplevel)
    path = marker_path(route)
    route_rel = hashing.relative_posix(route.path, repo.toplevel)
    with _writing(route):
        store.ensure_state_dir(route)
        with store.stone_lock(route, "policy.approve"):
            existing = read_approval(path)
            same = (
                existing is not None
                and existing.definitions_hash == digest
                and existing.approver_email.lower() == approver[1].lower()
            )
            since = manifest.describe(existing.files, ids) if existing is not None and not same else ""
            if not same:
                write_approval(route, route_rel, ids, approver)
            outcome: Literal["approved", "already-approved"] = "already-approved" if same else "approved"
            result = PolicyApproveResult(route, path, digest, ids, approver, outcome, None, "", since)
            if not commit:
                if same and _committed(repo, path):
                    return result
                how = commit_command(repo, route, "policy", path)
                return result._replace(not_committed="--no-commit", commit_with=how)
            return result._replace(commit=_commit(repo, route, "policy", path))
