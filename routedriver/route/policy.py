"""Route definitions are policy, and policy comes from the base: ``route.verify --base REF``.

A route's **definitions** are what ``load.load_route`` reads, each stone's ``<name>.stone`` and its
``<name>.guard``, plus the route's own approvers file (``$route/.route/approvers``) when it has one, and its
guards' programs (``route.programs``: the tracked files their commands run). A pull request that edits them
can weaken every check that follows (lower ``--allow-blockers``, drop ``approved?``, narrow ``artifacts:``,
delete a gated stone, make ``tools/review.py`` print ``blockers: 0``), and every file would still be an honest
record of the weaker policy. So, compared by git blob id with REF (the pull request's base), any difference is
a **policy change**, except what loses nothing: stones and routes added, and a stone removed that at REF had
no guard, none of its default artifacts and no marker (the pruning ``route.stone.del`` does). Renamed is
removed plus added; the removed side decides. A stone added whose name extends one REF has on the default
glob is a change to that one (it takes files of the older stone's artifacts: ``_extending``).

A policy change passes only with a **policy approval**: ``$route/.route/policy.approved``, written by
``route.policy.approve`` (a human at a terminal) and committed alone, whose definitions hash equals the
current definitions, which git's history vouches for exactly as for a stone approval
(``provenance.Provenance``), and whose commit REF's history does not hold (an approval approves the difference
from the base it was made against; see ``_approval``). Who may approve it comes from REF (the route's
approvers file there, else the repository's ``.route-approvers`` there) unless ``--approvers`` names a file: a
pull request cannot list its own author for its own change. A removed route has no approval path (nothing is
left to hold a marker): humans remove routes on the base branch.

Every route REF has is accounted for (``compare``): compared, gone (``removed``), or replaced by what cannot
be a route (``route.verify`` reports a symlink, a file or stones that are directories as ``broken``).

Git is asked a fixed number of times per run, however many routes: the commit REF names, ONE ``git
ls-tree -r`` (of the routes and the top-level approvers file, or with ``--all`` of the whole tree;
``policy_base`` runs it in the background), with ``--route`` one more for guard programs outside the
routes, and ONE ``git ls-files`` per route for which of the files its guards name are tracked; plus, for a
route whose policy approval must be vouched for, the base's approvers file (``git cat-file``) and ``git
merge-base --is-ancestor``. The one ``git log`` provenance runs over every ``*.approved`` marker covers
``policy.approved`` too. The current definitions are hashed from disk exactly as they are (what runs),
never taken from git's index nor passed through its conversions; a symlink's id is marked as a link's
(``programs.identities``).
"""

from __future__ import annotations

import contextlib
import os
import shlex
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Literal, NamedTuple

from routedriver import gitops
from routedriver.errors import Refused
from routedriver.route import approval_commit, hashing, manifest, programs, store, words
from routedriver.route import frontmatter as fm
from routedriver.route.approval_commit import HUMANS_ONLY
from routedriver.route.checks import StoneCheck
from routedriver.route.guardfile import load_guard
from routedriver.route.load import GUARD_SUFFIX, STONE_SUFFIX, open_route
from routedriver.route.model import STATE_DIR, Guard, Route, default_owner, writes_globs
from routedriver.route.policy_base import Base, BaseDir
from routedriver.route.provenance import (
    REPO_APPROVERS,
    ROUTE_APPROVERS,
    ApprovalCheck,
    Approvers,
    Provenance,
    parse_approvers,
)

POLICY_APPROVED = "policy.approved"  # in $route/.route/; *.approved: an approval marker like the others
APPROVE_COMMAND = "route.policy.approve"
STATUS = "policy-changed"
ROUTE_WIDE = "*"  # the stone a change to the route as a whole is reported on

ChangeKind = Literal["changed", "added", "removed"]
RouteState = Literal["compared", "added", "removed", "replaced"]


class Change(NamedTuple):
    path: str  # the definition, relative to the top-level
    kind: ChangeKind
    stone: str  # the stone whose checks it alters, or ROUTE_WIDE (a stone removed, the approvers file)
    via: str = ""  # a guard program: the guard that runs it (relative to the top-level)
    extends: bool = False  # an added stone whose name extends ``stone``'s (see _extending)


class RoutePolicy(NamedTuple):
    """One route compared with REF."""

    route: str  # relative to the top-level
    state: RouteState = "compared"
    added: tuple[str, ...] = ()  # stones added since REF: reported, no human needed
    pruned: tuple[str, ...] = ()  # stones removed that had nothing to lose at REF: reported
    changes: tuple[Change, ...] = ()  # policy changes: each needs the policy approval
    approval: ApprovalCheck | None = None  # with changes: the policy approval's verdict (None: there is none)
    stones_at_base: int = 0  # a removed route: how many stones it had at REF
    problem: str = ""  # its definitions could not be read (or, replaced: what is there now)

    @property
    def accepted(self) -> bool:
        if self.state in ("removed", "replaced") or self.problem:
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


class Definitions(NamedTuple):
    """A route's definitions as they are now."""

    ids: dict[str, str]  # path relative to the top-level → blob id: stones, guards, approvers, guard programs
    named: dict[str, programs.Named]  # stone → what its guard's commands name (guards that load)
    tracked: programs.Tracked  # of what they name, the files git tracks now
    guards: dict[str, str]  # stone → its guard file, relative to the top-level
    written: frozenset[str]  # stones whose guard names their artifacts (``model.writes_globs``)

    def programs(self, stone: str, also: Collection[str] = ()) -> set[str]:
        """The stone's guard programs now, plus what its commands name among ``also`` (REF's files)."""
        named = self.named.get(stone)
        if named is None:
            return set()
        return self.tracked.resolve(named) | named.resolve(also)


def read_definitions(
    route: Route, repo: gitops.Repo, loaded: Mapping[str, Guard | None] | None = None
) -> Definitions:
    """The route's definitions as they are on disk (see the module's docstring), with what its guards'
    commands name (``route.programs``): one ``git ls-files`` for the programs, one hashing run for all.
    ``loaded``: guards the caller has parsed already (by stone name)."""
    paths: list[Path] = []
    guards: dict[str, Guard | None] = {}
    guard_files: dict[str, str] = {}
    for stone in route.stones:
        paths.append(stone.path)
        if stone.guard_path is not None:
            paths.append(stone.guard_path)
            guard_files[stone.name] = hashing.relative_posix(stone.guard_path, repo.toplevel)
            if loaded is not None and stone.name in loaded:
                guards[stone.name] = loaded[stone.name]
                continue
            # A guard that does not load: its stone is broken, and the guard file is compared as it is.
            with contextlib.suppress(Refused):
                guards[stone.name] = load_guard(route, stone)
    own = route.path / ROUTE_APPROVERS
    if os.path.lexists(own):
        paths.append(own)
    named = programs.route_names(route, guards, repo.toplevel)
    tracked = programs.tracked(repo, named.values())
    used = set().union(*(tracked.resolve(names) for names in named.values())) if named else set()
    paths += [repo.toplevel / path for path in sorted(used) if os.path.lexists(repo.toplevel / path)]
    # From disk, exactly: what is compared and approved are the bytes in the work tree (what runs), whatever
    # git's index claims or its conversions would store.
    ids = programs.identities(repo, [hashing.relative_posix(path, repo.toplevel) for path in paths])
    written = frozenset(stone for stone, guard in guards.items() if writes_globs(guard))
    return Definitions(ids, named, tracked, guard_files, written)


def definitions(route: Route, repo: gitops.Repo) -> dict[str, str]:
    """The route's definitions as they are on disk: ``{path relative to the top-level: blob id}``."""
    return read_definitions(route, repo).ids


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
        ("approved_at", store.utc_now(milliseconds=True)),  # an approval made again is new bytes
    ]
    path = marker_path(route)
    store.write_text(path, fm.render_document(fields))
    return path


# ---------------------------------------------------------------- comparing with the base


def compare(
    base: Base,
    routes: Iterable[Route],
    asked: Sequence[str],
    *,
    provenance: Provenance,
    all_routes: bool,
    guards: Mapping[Route, Mapping[str, Guard | None]] | None = None,
) -> PolicyReport:
    """Compare the definitions of ``routes`` (loaded, with stones) with REF's. ``asked`` are the routes the
    run was given or found (relative to the top-level; some did not load, which the run reported); with
    ``all_routes`` every route REF has is accounted for too: loaded and compared, or gone (``removed``), or
    replaced by what cannot be a route (``replaced``: a submodule; a symlink, a file or a route that does not
    load is reported by the run as ``broken``). ``guards``: the guards the run parsed, by route."""
    repo = base.repo
    top = repo.toplevel
    loaded = {hashing.relative_posix(route.path, top): route for route in routes}
    wanted = set(loaded) | set(asked)
    if all_routes:
        wanted |= set(base.routes())
    known = guards or {}
    current = {name: _definitions(route, repo, known.get(route)) for name, route in loaded.items()}
    readable = [found for found in current.values() if not isinstance(found, str)]
    base.ensure(
        (names for found in readable for names in found.named.values()),
        (
            target
            for found in readable
            for target in (*found.tracked.links.values(), *found.tracked.inside.values())
        ),
    )
    found: list[RoutePolicy] = []
    for name in sorted(wanted):
        at_base = base.directory(name)
        route = loaded.get(name)
        if route is None:
            if at_base.stones:
                gone = _gone(base, name, len(at_base.stones))
                if gone is not None:
                    found.append(gone)
            continue
        if not at_base.stones:
            found.append(RoutePolicy(name, "added", added=tuple(stone.name for stone in route.stones)))
            continue
        now = current[name]
        if isinstance(now, str):  # a definition that cannot be read cannot be shown to be the base's
            found.append(RoutePolicy(name, problem=now))
            continue
        found.append(_compare_route(base, route, name, now, provenance))
    return PolicyReport(base.ref, base.commit, tuple(found))


def _definitions(
    route: Route, repo: gitops.Repo, guards: Mapping[str, Guard | None] | None
) -> Definitions | str:
    try:
        return read_definitions(route, repo, guards)
    except Refused as exc:
        return exc.line().removeprefix("error: ")


def _gone(base: Base, name: str, stones: int) -> RoutePolicy | None:
    """A route REF has that did not load here: gone (nothing there, or a directory without a single
    ``*.stone`` entry), replaced by a submodule, or None (something is there that the run reported as
    ``broken``: a symlink, a file, stones that are directories)."""
    path = base.repo.toplevel / name
    if not os.path.lexists(path):
        return RoutePolicy(name, "removed", stones_at_base=stones)
    if os.path.islink(path) or not os.path.isdir(path):
        return None
    try:
        entries = os.listdir(path)
    except OSError:
        return None
    if not entries:
        try:
            gitlink = gitops.index_modes(base.repo, [name]).get(name) == gitops.GITLINK_MODE
        except gitops.GitError:
            gitlink = False
        if gitlink:
            return RoutePolicy(
                name, "replaced", stones_at_base=stones, problem="is a submodule now (a gitlink)"
            )
    if not any(entry.endswith(STONE_SUFFIX) and not entry.startswith(".") for entry in entries):
        return RoutePolicy(name, "removed", stones_at_base=stones)
    return None


def _join(route: str, name: str) -> str:
    return name if route == "." else f"{route}/{name}"


def _difference(before: str | None, after: str | None) -> ChangeKind | None:
    if before == after:
        return None
    return "added" if before is None else "removed" if after is None else "changed"


def _compare_route(
    base: Base, route: Route, name: str, current: Definitions, provenance: Provenance
) -> RoutePolicy:
    at_base, state = base.directory(name), base.directory(_join(name, STATE_DIR))
    base_stones = at_base.stones
    now = {stone.name for stone in route.stones}
    changes: list[Change] = []
    for stone in sorted(base_stones & now):
        for suffix in (STONE_SUFFIX, GUARD_SUFFIX):
            entry = at_base.files.get(stone + suffix)
            path = _join(name, stone + suffix)
            kind = _difference(programs.base_identity(entry), current.ids.get(path))
            if kind is not None:
                changes.append(Change(path, kind, stone))
        # The files its guard runs: REF's and the current ones, by what the (current) guard names.
        for path in sorted(current.programs(stone, base.files)):
            entry = base.program(path)
            kind = _difference(programs.base_identity(entry), current.ids.get(path))
            if kind is not None:
                changes.append(Change(path, kind, stone, current.guards.get(stone, "")))
    pruned = []
    for stone in sorted(base_stones - now):
        if _prunable(stone, at_base, state):
            pruned.append(stone)
        else:
            changes.append(Change(_join(name, stone + STONE_SUFFIX), "removed", ROUTE_WIDE))
    extending = _extending(name, sorted(now - base_stones), sorted(base_stones & now - current.written))
    changes += extending
    approvers = _join(name, ROUTE_APPROVERS)
    own = state.files.get(os.path.basename(ROUTE_APPROVERS))
    kind = _difference(programs.base_identity(own), current.ids.get(approvers))
    if kind is not None:
        changes.append(Change(approvers, kind, ROUTE_WIDE))
    approval = _approval(base, route, name, current.ids, provenance) if changes else None
    policy = {change.path for change in extending}  # added, but a change to an older stone: not a notice
    added = tuple(
        stone.name
        for stone in route.stones
        if stone.name not in base_stones and _join(name, stone.name + STONE_SUFFIX) not in policy
    )
    return RoutePolicy(name, "compared", added, tuple(pruned), tuple(changes), approval)


def _extending(route: str, added: Sequence[str], kept: Sequence[str]) -> list[Change]:
    """Added stones whose names extend a stone REF has on the default glob (``kept``; ``1.vision-risks``
    beside ``1.vision``): a file both default globs match is the longer name's (``default_owner``), so the
    new stone takes files out of the older one's artifacts, which its reviews, judges and approval no longer
    cover. That narrows the older stone's policy (reported on it); taken by name, whatever files there are
    now, since a file written later would be taken too."""
    return [
        Change(_join(route, stone + STONE_SUFFIX), "added", older, extends=True)
        for stone in added
        for older in kept
        if stone.startswith(older)
    ]


def _prunable(stone: str, at_base: BaseDir, state: BaseDir) -> bool:
    """At REF, did ``stone`` have nothing to lose: no guard, no marker and none of its default artifacts
    (``$route/<name>*.md``; a file a longer stone name's default also matches is that stone's)?"""
    if stone + GUARD_SUFFIX in at_base.files or store.has_marker(state.files, stone):
        return False
    names = at_base.stones
    return not any(default_owner(filename, names) == stone for filename in at_base.files)


def _approval(
    base: Base, route: Route, name: str, current: Mapping[str, str], provenance: Provenance
) -> ApprovalCheck | None:
    """The policy approval's verdict on the current definitions; None when there is no policy approval.

    Beyond what vouches for any approval (``Provenance``), its commit must not be in REF's history: an
    approval approves the difference from the base it was made against, and one the base already holds was
    made against an older base. Replayed (the old, weaker guard restored after a human re-gated the stone
    on the base), it would otherwise approve the same difference again."""
    path = marker_path(route)
    if not os.path.lexists(path):
        return None
    marker = read_approval(path)
    if marker is not None and marker.definitions_hash != definitions_hash(current):
        what = manifest.describe(marker.files, current) or "the same files, other content"
        why = f"it approves other definitions (since then: {what})"
        return ApprovalCheck(False, STATUS, why)
    who = None if provenance.override is not None else base_approvers(base, route)
    vouched = provenance.check(route, marker, path, approve_hint(name), approvers=who)
    if not vouched.ok:
        return vouched
    info = provenance.commits.get(hashing.relative_posix(path, base.repo.toplevel))
    if info is None or gitops.is_ancestor(base.repo, info.sha, base.commit) is not False:
        sha = info.sha[:12] if info is not None else "?"
        why = (
            f"its approval (commit {sha}) is already in the history of {base.ref} ({base.short}), and a "
            "policy approval approves only the difference from the base it was made against; a human "
            f"approves this change: {approve_hint(name)} --base {shlex.quote(base.ref)}"
        )
        return ApprovalCheck(False, STATUS, why)
    if gitops.shallow_boundary(base.repo) is not None:
        # git answers "not an ancestor" when the base's history is cut before the approval: a replayed
        # approval (one the base holds already, brought back by a merge) would pass for a new one.
        why = (
            f"this clone is shallow, so whether the history of {base.ref} already holds its approval (commit "
            f"{info.sha[:12]}) cannot be told, and a policy approval approves only the difference from the "
            "base it was made against; fetch the whole history (actions/checkout with fetch-depth: 0)"
        )
        return ApprovalCheck(False, STATUS, why)
    return vouched


def approval_now(base: Base, route: Route, provenance: Provenance) -> ApprovalCheck | None:
    """The route's policy approval judged against its current definitions exactly as a route with changes
    is (``_approval``), for a route whose differences need none to merge: ``route.verify --recheck`` runs a
    new stone's commands only when the base or a human vouches for them. None: no policy approval."""
    if not os.path.lexists(marker_path(route)):
        return None
    name = hashing.relative_posix(route.path, base.repo.toplevel)
    return _approval(base, route, name, definitions(route, base.repo), provenance)


def base_approvers(base: Base, route: Route) -> Approvers:
    """Who may approve (without ``--approvers``), a policy change or a stone: the approvers file as REF has
    it, the route's own, else the repository's. A pull request cannot list its own author for its own
    change, nor for its own work (``route.verify --base`` judges stone approvals by it too)."""
    name = hashing.relative_posix(route.path, base.repo.toplevel)
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


def _approvers_at_base(base: Base, entry: gitops.TreeEntry, path: Path) -> Approvers:
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
    if route.state == "replaced":
        count = words.count(route.stones_at_base, "stone")
        why = (
            f"route {route.route} {route.problem}, where {short} has a route with {count}; its stones "
            "cannot be checked here (restore the route's directory)"
        )
        return [StoneCheck(route.route, ROUTE_WIDE, "broken", why, route.route)]
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
    shown = ", ".join(f"{change.path} {change.kind}{_aside(change)}" for change in changes[:3])
    if len(changes) > 3:
        shown += f" (+{len(changes) - 3} more)"
    why = f"policy changed: {shown} since {short}"
    hint = approve_hint(route.route)
    if route.approval is not None:
        why += f"; its policy approval does not count: {route.approval.why}"
        if hint in route.approval.why:
            return why  # the reason already says which command fixes it
    return f"{why}; a human runs {hint}"


def _aside(change: Change) -> str:
    if change.via:
        return f" (a program {change.via} runs)"
    if change.extends:
        return f" (its name extends {change.stone}'s: it takes the files both default globs match)"
    return ""


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
    again: str = ""  # why the same definitions were approved anew (the base already holds that approval)
    commit_with: str = ""  # --no-commit: the exact command that commits the approval alone, hooks off


def approve(
    route_option: str | None, *, human: bool, commit: bool = True, base_ref: str | None = None
) -> PolicyApproveResult:
    """Record (and commit, alone) a human's approval of the route's current definitions. With ``base_ref``
    (the base the change is for), an approval of the same definitions that the base's history already holds
    is made again, in a new commit: it approves a difference from an older base (see ``_approval``)."""
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
    approval_commit.refuse_repository_config(repo)  # the robot's clone: nothing it configured may run
    base_commit = None
    if base_ref is not None:
        base_commit = gitops.resolve_commit(repo, base_ref)
        if base_commit is None:
            raise Refused(
                f"--base {base_ref}: git cannot find that commit here",
                "fetch the base's history or check the name",
            )
    ids = definitions(route, repo)
    approval_commit.refuse_unfaithful({path: repo.toplevel / path for path in ids}, ids, repo.object_format)
    digest = definitions_hash(ids)
    approver = approval_commit.identity(repo.toplevel)
    path = marker_path(route)
    route_rel = hashing.relative_posix(route.path, repo.toplevel)
    with store.writing(route):
        store.ensure_state_dir(route)
        with store.stone_lock(route, "policy.approve"):
            existing = read_approval(path)
            same = (
                existing is not None
                and existing.definitions_hash == digest
                and existing.approver_email.lower() == approver[1].lower()
            )
            again = _held_by_base(repo, path, base_ref, base_commit) if same and base_commit else ""
            same = same and not again
            since = manifest.describe(existing.files, ids) if existing is not None and not same else ""
            if not same:
                write_approval(route, route_rel, ids, approver)
            outcome: Literal["approved", "already-approved"] = "already-approved" if same else "approved"
            result = PolicyApproveResult(route, path, digest, ids, approver, outcome, None, "", since, again)
            if not commit:
                if same and approval_commit.committed(repo, path):
                    return result
                how = approval_commit.commit_command(repo, route, "policy", path)
                return result._replace(not_committed="--no-commit", commit_with=how)
            return result._replace(commit=approval_commit.commit(repo, route, "policy", path))


def _held_by_base(repo: gitops.Repo, path: Path, base_ref: str | None, base_commit: str) -> str:
    """Why the policy approval at ``path`` (committed as it is) does not count against the base: the commit
    that last set it is in the base's history; "" when it is not (or is not committed yet)."""
    relative = hashing.relative_posix(path, repo.toplevel)
    info = gitops.last_commits(repo, [relative]).get(relative)
    if info is None or info.deleted or hashing.blob_id(path, repo.object_format) != info.blob:
        return ""
    if gitops.is_ancestor(repo, info.sha, base_commit) is False:
        return ""
    return f"its last approval (commit {info.sha[:12]}) is already in the history of {base_ref}"
