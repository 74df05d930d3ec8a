"""``route.verify``: re-check, from the files and git alone, every claim a route makes. The CI gate.

It starts no review or judge command and imports no LLM SDK (``--recheck`` does: ``route.recheck`` runs
each new claim's reviews and shell judges in CI, after the checks below). For each stone it re-derives the
review-input hash from the work tree and then asks: does a ``.passed`` claim still hold for these artifacts,
this guard and this approval? Are the judge files behind it consistent, and do the built-in judges (pure
functions of the files) still say yes? Was every approval marker committed by a listed approver (and signed,
if required)?

What it cannot do alone: re-check what a review command (an LLM) or a shell judge said. Their recorded output
is checked for consistency (hashes, verdict vs. output), not re-derived, unless ``--recheck``; see
docs/route-gate.md.

Git is asked a fixed number of times for the whole run, however many stones: one ``git ls-files -v -s``,
one ``git diff-files`` (content ids of committed, unchanged files), one ``git log`` over all approval markers,
and, with ``--all``, one ``git ls-files`` to find the routes. The repository is the one holding the routes:
the current directory's (already asked) when they are inside its work tree, else one ``git rev-parse`` per
route to find theirs. The index is read while the routes and guards load, and the log while every stone's
claims are checked; the approvals, which need it, are looked at last. Each stone's artifacts come from one
listing of their directory, with content ids (and "is a file") from git's index wherever git vouches for
them.

A route is checked where git has it: a route path that is or passes through a symlink, that lies in a
repository of its own, whose ``.route/`` is a symlink, and a ``*.stone`` that is not a regular file are
``broken``, never skipped; with ``--base`` every route REF has is looked for too (``route.policy``).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from routedriver import gitops
from routedriver.errors import Refused
from routedriver.fsutil import real_path, realpath
from routedriver.later import Later
from routedriver.route import builtin_judges, committed, hashing, inputs, judges, records, store
from routedriver.route.checks import StoneCheck
from routedriver.route.context import ApprovalState, StoneContext
from routedriver.route.hashing import relative_posix
from routedriver.route.load import load_route, resolve_route
from routedriver.route.model import Guard, JudgeRecord, ReviewRecord, Route, Stone
from routedriver.route.provenance import Approvers, Provenance, marker_paths
from routedriver.route.state import Done, Survey
from routedriver.route.words import count

if TYPE_CHECKING:
    from routedriver.route.policy import PolicyReport
    from routedriver.route.policy_base import Base
    from routedriver.route.recheck import Options, RecheckReport


class VerifyReport(NamedTuple):
    checks: tuple[StoneCheck, ...]
    allow_incomplete: bool
    require_signed: bool
    policy: PolicyReport | None = None  # with --base: the routes' definitions compared with it
    recheck: RecheckReport | None = None  # with --recheck: what CI's own runs of the new claims came to
    require_bound: bool = False  # with --base: every file the pull request changes is bound (``route.bound``)

    @property
    def ok(self) -> bool:
        return all(check.ok(self.allow_incomplete) for check in self.checks)

    @property
    def failing(self) -> tuple[StoneCheck, ...]:
        return tuple(check for check in self.checks if not check.ok(self.allow_incomplete))

    def counts(self) -> dict[str, int]:
        found: dict[str, int] = {}
        for check in self.checks:
            found[check.status] = found.get(check.status, 0) + 1
        return found


class _Run(NamedTuple):
    repo: gitops.Repo | None
    base: Path
    index_read: Later[gitops.IndexSnapshot | None]  # read in the background while routes and guards load
    provenance: Provenance

    @property
    def snapshot(self) -> gitops.IndexSnapshot | None:
        return self.index_read.get()


def discover_routes(repo: gitops.Repo) -> list[Path]:
    """Every directory holding ``*.stone`` files that git tracks or would track (one ``git ls-files``)."""
    try:
        stones = gitops.list_files(repo, [gitops.ROUTE_STONES])
    except gitops.GitError as exc:
        raise Refused(
            f"cannot list the repository's files: {exc}", "run route.verify inside a git work tree"
        ) from None
    directories = set()
    for path in stones:
        parent, _, filename = path.rpartition("/")
        if filename.startswith(".") or f"/{parent}/".find("/.route/") >= 0:
            continue
        directories.add(repo.toplevel / parent if parent else repo.toplevel)
    return sorted(directories)


class _Where(NamedTuple):
    """Where a run's routes are, found before any is read."""

    repo: gitops.Repo | None
    base: Path  # the repository's top level (else the working directory): routes are named from here
    index_read: Later[gitops.IndexSnapshot | None]  # git's index, read in the background while routes load
    paths: list[Path]  # the routes as given (or found, --all)
    names: dict[Path, str | None]  # each route's name inside the repository (None: outside it)
    nested: list[StoneCheck]  # with --base: the routes that lie in a repository of their own (broken)


def verify(
    route_options: Sequence[str],
    *,
    all_routes: bool = False,
    approvers: Path | None = None,
    require_signed: bool = False,
    allow_incomplete: bool = False,
    allowed_signers: Path | None = None,
    cwd: Path | None = None,
    base_ref: str | None = None,
    recheck: Options | None = None,
    require_bound: bool = False,
) -> VerifyReport:
    if recheck is not None and base_ref is None:
        raise Refused(
            "--recheck needs --base REF (the pull request's base): a pass REF holds is not run again",
            "add --base",
        )
    if require_bound and base_ref is None:
        raise Refused(
            "--require-bound needs --base REF (the pull request's base): what the pull request changes is "
            "counted from it",
            "add --base",
        )
    where = _locate(route_options, all_routes=all_routes, cwd=cwd, base_ref=base_ref)
    repo, base, names = where.repo, where.base, where.names
    asked = [name for name in names.values() if name is not None]
    base_tree: Later[Base] | None = None
    if base_ref is not None:
        # policy (~18 ms) and recheck: only with --base and --recheck, off a plain CI run
        from routedriver.route import policy_base

        # REF is resolved now (a name git cannot find is refused before any report) and listed while the
        # claims are checked.
        base_tree = policy_base.start_base(repo, base_ref, asked, all_routes=all_routes)
    checks = list(where.nested)
    routes = _load_routes(where.paths, names, base, repo, checks)
    provenance = _provenance(
        repo, routes, base_tree, approvers=approvers, require_signed=require_signed, signers=allowed_signers
    )
    run = _Run(repo, base, where.index_read, provenance)
    unsaved: dict[tuple[str, str], dict[str, committed.How]] = {}  # (route, stone) → its files not committed
    checker = _commit_checker(run, approvers_given=approvers is not None)
    claims = _check_claims(run, routes, checker, unsaved)
    paths = where.paths
    if base_tree is not None and all_routes:
        # Every route REF has is accounted for: one the checkout does not show as a route (a symlink, a
        # file, a submodule, stones turned into directories) is loaded here and reported as what it is.
        extra = _only_at_base(base_tree.get(), asked, base)
        names.update(extra)
        more = _load_routes(list(extra), names, base, repo, checks)
        if more and repo is not None:  # rare: asked again, with the first run's markers
            routes.update(more)
            provenance.load_history(marker_paths(routes, repo.toplevel))
        claims += _check_claims(run, more, checker, unsaved)
        paths = [*paths, *extra]
    if all_routes and not paths:
        raise Refused("no routes in this repository (no *.stone files)", "add a route, or use --route")
    # Approvals last: the one git log they need has been running while the claims were checked.
    vouched = [_vouch(run, claim) for claim in claims]
    checks.extend(vouched)
    policy_report: PolicyReport | None = None
    rechecked: RecheckReport | None = None
    if base_tree is not None:
        checks, policy_report, rechecked = _against_base(
            base_tree.get(),
            routes,
            names,
            claims,
            vouched=vouched,
            checks=checks,
            unsaved=unsaved,
            provenance=provenance,
            all_routes=all_routes,
            recheck=recheck,
            require_bound=require_bound,
        )
    if unsaved:
        checks = _uncommitted(checks, unsaved)
    return VerifyReport(
        tuple(checks), allow_incomplete, require_signed, policy_report, rechecked, require_bound=require_bound
    )


def _unbound(
    at_base: Base,
    policy_report: PolicyReport,
    names: Mapping[Path, str | None],
    claims: Sequence[_Claim],
    vouched: Sequence[StoneCheck],
) -> list[StoneCheck]:
    """--require-bound: a check for each file the pull request changes that no pass binds (route.bound)."""
    from routedriver.route import bound

    stones = [
        (check, claim.context, claim.done.inputs.artifacts if claim.done and claim.done.inputs else None)
        for check, claim in zip(vouched, claims, strict=True)
    ]
    routes = [name for name in names.values() if name is not None]
    return bound.unbound(at_base, policy_report, routes, stones)


def _locate(
    route_options: Sequence[str], *, all_routes: bool, cwd: Path | None, base_ref: str | None
) -> _Where:
    """The repository, the routes a run checks and their names in it; git's index is being read already."""
    here = Path.cwd() if cwd is None else cwd
    repo = gitops.find_repo(here)
    # Git is asked in the background, each question once, while Python reads routes and guards.
    index: Later[gitops.IndexSnapshot | None] | None = None
    if all_routes or not route_options:
        index = _read_index(repo)  # the routes come from this repository: start now, listing them waits
    # With --base, REF's routes count too: a repository whose routes all became something else still has
    # them to account for.
    paths = route_paths(route_options, all_routes, repo, required=base_ref is None)
    nested: list[StoneCheck] = []
    if base_ref is not None and route_options and repo is not None:
        # --base compares with this repository's history: a route that became a submodule (or sits in a
        # clone inside this one) must not take the check into a history the pull request brings along.
        paths, nested = _outside_nested(paths, repo)
    if index is None:
        repo = repository_of(paths, repo)  # --route: the repository holding the routes, not the cwd's
        index = _read_index(repo)
    base = repo.toplevel if repo is not None else here
    return _Where(repo, base, index, paths, {path: _name_in(path, base) for path in paths}, nested)


def _provenance(
    repo: gitops.Repo | None,
    routes: Mapping[Route, frozenset[str]],
    base_tree: Later[Base] | None,
    *,
    approvers: Path | None,
    require_signed: bool,
    signers: Path | None,
) -> Provenance:
    """Who may approve, and the history of the routes' approval markers (asked now, read when vouching)."""
    provenance = Provenance(repo, approvers, require_signed, signers)
    if base_tree is not None:
        from routedriver.route import policy

        # Who may approve comes from REF, as the policy does: a pull request that adds its author to an
        # approvers file must not make that author's approvals count in its own gate.
        provenance.from_base = lambda route: policy.base_approvers(base_tree.get(), route)
    if repo is not None:
        provenance.load_history(marker_paths(routes, repo.toplevel))
    return provenance


def _only_at_base(at_base: Base, asked: Sequence[str], base: Path) -> dict[Path, str]:
    """REF's routes the run was not asked about (``--all``: the checkout does not show them as routes),
    each as ``--route`` would name it from here, with its name in the repository."""
    return {Path(os.path.relpath(base / name)): name for name in at_base.routes() if name not in asked}


def _against_base(
    at_base: Base,
    routes: Mapping[Route, frozenset[str]],
    names: Mapping[Path, str | None],
    claims: Sequence[_Claim],
    *,
    vouched: Sequence[StoneCheck],
    checks: Sequence[StoneCheck],
    unsaved: Mapping[tuple[str, str], object],
    provenance: Provenance,
    all_routes: bool,
    recheck: Options | None,
    require_bound: bool,
) -> tuple[list[StoneCheck], PolicyReport, RecheckReport | None]:
    """--base: the definitions themselves are policy; they must be REF's or carry a human's approval. With
    --require-bound, every file that differs from REF must be bound (``route.bound``). With --recheck, CI
    also runs what each new claim (``vouched``: its verdict; ``claims``: what it rests on) rests on itself
    (``route.recheck``), last: what git says is read before any command runs. ``checks`` with every
    verdict, and the two reports."""
    from routedriver.route import policy

    asked = [name for name in names.values() if name is not None]
    parsed: dict[Route, dict[str, Guard | None]] = {}
    for claim in claims:
        if claim.context is not None:  # the guards the claims were checked with: parsed once per run
            parsed.setdefault(claim.context.route, {})[claim.context.stone.name] = claim.context.guard
    report = policy.compare(
        at_base, routes, asked, provenance=provenance, all_routes=all_routes, guards=parsed
    )
    unbound = _unbound(at_base, report, names, claims, vouched) if require_bound else []
    if recheck is None:
        return [*policy.apply(report, checks), *unbound], report, None
    from routedriver.route import recheck as rechecking

    # A pass on files no commit holds is no claim CI would see (it is reported uncommitted): its commands
    # are not run (no state: nothing to recheck).
    stones = [
        rechecking.Claim(check, claim.context, None if (check.route, check.stone) in unsaved else claim.done)
        for check, claim in zip(vouched, claims, strict=True)
    ]
    rechecked = rechecking.run(recheck, at_base, report, stones, provenance)
    return [*rechecking.apply(rechecked, policy.apply(report, checks)), *unbound], report, rechecked


def _name_in(path: Path, top: Path) -> str | None:
    """The route ``path`` as named inside the repository at ``top`` (POSIX, relative; ``.`` for the
    top-level), following the path as written, not its symlinks: the name a route has in git's tree. None
    when the path does not lead into the work tree that way."""
    found = _below_top(path, top)
    return None if found is None else "/".join(found) or "."


def _below_top(path: Path, top: Path) -> list[str] | None:
    """The components of ``path`` (as written, made absolute) below the directory that is the top-level
    ``top``; None when no directory on the way is."""
    absolute = Path(os.path.abspath(path))
    below: list[str] = []
    candidate = absolute
    while True:
        if candidate == top or realpath(candidate) == os.fspath(top):
            return below[::-1]
        if candidate.parent == candidate:
            return None
        below.append(candidate.name)
        candidate = candidate.parent


def _path_problem(path: Path, top: Path) -> tuple[str, bool]:
    """Why the route at ``path`` cannot be checked as a route of the repository at ``top``: the path (as
    written, below the top-level) is a symlink or passes through one, or a directory on it holds a
    repository of its own (then the flag is True); "" when it is a plain path of the work tree (or leads
    nowhere, which loading says)."""
    below = _below_top(path, top)
    if below is None:
        return "", False
    current = top
    for index, component in enumerate(below):
        current = current / component
        shown = "/".join(below[: index + 1])
        if os.path.islink(current):
            target = os.readlink(current)
            if index == len(below) - 1:
                return (
                    f"route {shown} is a symlink (to {target}), not a directory of the repository; a route "
                    "is checked where git has it: restore the directory"
                ), False
            return (
                f"route {'/'.join(below)} passes through the symlink {shown} (to {target}); a route is "
                "checked where git has it: restore the directory"
            ), False
        if os.path.lexists(current / ".git"):
            return (
                f"route {'/'.join(below)} is inside {shown}, a repository of its own (a submodule or a "
                "clone); its history is not this repository's, so it cannot be checked here"
            ), True
    return "", False


def _outside_nested(paths: list[Path], repo: gitops.Repo) -> tuple[list[Path], list[StoneCheck]]:
    """``paths`` without the routes that lie inside ``repo``'s work tree but in a repository nested in it,
    and a ``broken`` line for each of those (with ``--base``, see ``verify``)."""
    kept: list[Path] = []
    nested: list[StoneCheck] = []
    for path in paths:
        name = _name_in(path, repo.toplevel)
        problem, nested_repository = _path_problem(path, repo.toplevel)
        if name is not None and nested_repository:
            nested.append(StoneCheck(name, "*", "broken", problem, name))
        else:
            kept.append(path)
    return kept, nested


def _irregular_stone(route: Route, shown: str, filename: str, base: Path) -> StoneCheck:
    """A ``*.stone`` entry that is not a regular file: the stone is ``broken`` (it must not just drop out)."""
    path = route.path / filename
    if os.path.islink(path):
        what = f"a symlink (to {os.readlink(path)})"
    elif os.path.isdir(path):
        what = "a directory"
    else:
        what = "not a regular file"
    relative = relative_posix(path, base)
    why = f"{relative} is {what}; a stone is a regular file: restore it"
    return StoneCheck(shown, filename[: -len(".stone")], "broken", why, relative)


def _load_routes(
    paths: Sequence[Path],
    names: Mapping[Path, str | None],
    base: Path,
    repo: gitops.Repo | None,
    checks: list[StoneCheck],
) -> dict[Route, frozenset[str]]:
    """The routes at ``paths`` that can be checked, with their ``.route/`` listings; a ``broken`` line in
    ``checks`` for each that cannot (and for each of their ``*.stone`` entries that is not a file)."""
    routes: dict[Route, frozenset[str]] = {}
    for path in paths:
        name = names[path]
        problem = _path_problem(path, base)[0] if repo is not None and name is not None else ""
        if problem:
            assert name is not None
            checks.append(StoneCheck(name, "*", "broken", problem, name))
            continue
        irregular: list[str] = []
        try:
            route = load_route(path, irregular)
        except Refused as exc:
            shown = name if name is not None else relative_posix(realpath(path), base)
            checks.append(StoneCheck(shown, "*", "broken", exc.line().removeprefix("error: "), shown))
            continue
        shown = relative_posix(route.path, base)
        checks.extend(_irregular_stone(route, shown, filename, base) for filename in sorted(irregular))
        if os.path.islink(route.state_dir):
            records = relative_posix(route.state_dir, base)
            why = (
                f"its records directory {records} is a symlink (to {os.readlink(route.state_dir)}); a "
                "route's records (approvals, passes, reviews) live in its own .route/ directory: restore it"
            )
            checks.append(StoneCheck(shown, "*", "broken", why, records))
            continue
        if not route.stones:
            # A gate pointed at the wrong directory must not pass with nothing checked.
            why = f"no stones in {shown} (no <name>.stone files); check --route"
            checks.append(StoneCheck(shown, "*", "broken", why, shown))
            continue
        routes[route] = store.list_state(route)
    return routes


def _check_claims(
    run: _Run,
    routes: Mapping[Route, frozenset[str]],
    checker: committed.Checker | None,
    unsaved: dict[tuple[str, str], dict[str, committed.How]],
) -> list[_Claim]:
    """Each stone's claim; a passed stone whose files no commit holds goes into ``unsaved`` (``checker``)."""
    claims: list[_Claim] = []
    attributes = _attributes_tracked(run.snapshot)
    for route, state_names in routes.items():
        route_rel = relative_posix(route.path, run.base)
        survey = Survey(
            route,
            run.repo,
            run.base,
            names=state_names,
            snapshot=run.snapshot,
            approvers=run.provenance.approvers(route),
        )
        survey.prepare(stone for stone in route.stones if survey.needs_checking(stone))  # one hashing run
        checked = [_check_claim(run, survey, route_rel, stone) for stone in route.stones]
        if attributes:  # a file git checks out as other bytes breaks its stone
            checked = _as_stored(run, survey, checked)
        for stone, claim in zip(route.stones, checked, strict=True):
            if checker is not None and claim.done is not None and claim.check.status == "passed":
                found = checker.stone(survey, stone, claim.done)
                if found:
                    unsaved[(route_rel, stone.name)] = found
        claims += checked
    return claims


def _attributes_tracked(snapshot: gitops.IndexSnapshot | None) -> bool:
    """Does git track a ``.gitattributes`` (what a pull request can bring to make a checkout rewrite
    files)? True when the index could not be read. The clone's own attribute files (``info/attributes``,
    ``core.attributesFile``) are whoever runs it's, as the rest of its git configuration is."""
    if snapshot is None:
        return True
    # (a file whose name merely ends so costs the check, nothing more). No path holds a NUL: one search of
    # the joined paths, in C, tells whether one ends so (a loop per path costs ~1 ms a 10,000 files).
    return ".gitattributes\0" in "\0".join(snapshot.staged) + "\0"


def _as_stored(run: _Run, survey: Survey, claims: list[_Claim]) -> list[_Claim]:
    """A passed stone with a file git checks out as other bytes than it stores
    (``hashing.rewritten_on_checkout``) is ``broken``: what CI's reviewers would read is not what was judged
    and committed. ONE ``git check-attr`` for the route's passed stones."""
    passed = {
        index: survey.covered(claim.context.stone)
        for index, claim in enumerate(claims)
        if claim.check.status == "passed" and claim.context is not None
    }
    if not passed or run.repo is None:
        return claims
    failure = ""
    try:
        every = {path: file for files in passed.values() for path, file in files.items()}
        rewritten = hashing.rewritten_on_checkout(
            run.repo, every, lambda paths: survey.ids({path: every[path] for path in paths})
        )
    except Refused as exc:  # a gate that cannot read its input fails closed
        failure, rewritten = exc.line().removeprefix("error: "), {}
    result = list(claims)
    for index, files in passed.items():
        bad = sorted(path for path in files if path in rewritten)
        if failure:
            check = claims[index].check._replace(status="broken", why=failure)
        elif bad:
            problem, fix = hashing.rewritten_line(bad[0], rewritten[bad[0]])
            check = claims[index].check._replace(status="broken", why=f"{problem}; {fix}", file=bad[0])
        else:
            continue
        result[index] = claims[index]._replace(check=check)
    return result


def _commit_checker(run: _Run, *, approvers_given: bool) -> committed.Checker | None:
    """Which passes stand on files no commit holds (a local run's advice; a clean checkout has none)."""
    if run.repo is None:
        return None
    return committed.Checker(run.repo, run.snapshot, approvers_given=approvers_given)


def _uncommitted(
    checks: list[StoneCheck], unsaved: dict[tuple[str, str], dict[str, committed.How]]
) -> list[StoneCheck]:
    """A stone still passed at the end stands or falls with its files being committed: CI's checkout holds
    only commits, so there it would not pass. The local gate says what CI will say."""
    marked = []
    for check in checks:
        found = unsaved.get((check.route, check.stone)) if check.status == "passed" else None
        if found:
            first = sorted(found)[0]
            check = StoneCheck(check.route, check.stone, "uncommitted", committed.why(found), first)
        marked.append(check)
    return marked


def _read_index(repo: gitops.Repo | None) -> Later[gitops.IndexSnapshot | None]:
    return Later(lambda: gitops.index_snapshot(repo) if repo is not None else None)


def repository_of(paths: Sequence[Path], here: gitops.Repo | None) -> gitops.Repo | None:
    """The one repository holding every route in ``paths``: ``here`` (the cwd's, already asked) when they
    are inside it, which a look for ``.git`` entries on the way up settles without asking git; else git is
    asked where each one lives. Routes in different repositories are refused: each has its own history."""
    found: dict[Path | None, gitops.Repo | None] = {}
    for path in paths:
        resolved = real_path(path)
        if not os.path.isdir(resolved):
            continue  # load_route says what is wrong with it (missing, a file, unreadable, a loop)
        repo = here if here is not None and _inside_work_tree(resolved, here.toplevel) else None
        if repo is None:
            repo = gitops.find_repo(resolved)
        found.setdefault(repo.toplevel if repo is not None else None, repo)
    if len(found) > 1:
        where = ", ".join(str(top) if top is not None else "outside git" for top in found)
        raise Refused(
            f"the routes are in different git repositories ({where})", "run route.verify once per repository"
        )
    return next(iter(found.values())) if found else here


def _inside_work_tree(path: Path, toplevel: Path) -> bool:
    """Is ``path`` (resolved) in the work tree at ``toplevel`` and not in a repository nested in it (a
    submodule, or a clone inside the checkout), which would have a ``.git`` of its own on the way up?"""
    if path != toplevel and toplevel not in path.parents:
        return False
    while path != toplevel:
        if os.path.lexists(path / ".git"):
            return False
        path = path.parent
    return True


def route_paths(
    route_options: Sequence[str], all_routes: bool, repo: gitops.Repo | None, *, required: bool = True
) -> list[Path]:
    """The routes a gate command means (``route.verify``, ``route.lint``, ``route.status``): ``--all`` (every
    route in ``repo``, named relative to where you are, as ``--route`` would name it: what messages show),
    the ``--route`` options (each route once, as first named), else the route bound to the branch.
    ``required=False``: ``--all`` finding none is no refusal (the caller has more to look at)."""
    if all_routes:
        if route_options:
            raise Refused("--all and --route exclude each other", "give one of them")
        if repo is None:
            raise Refused("--all needs a git repository", "run it inside one, or use --route")
        found = discover_routes(repo)
        if not found and required:
            raise Refused("no routes in this repository (no *.stone files)", "add a route, or use --route")
        return [Path(os.path.relpath(path)) for path in found]
    if route_options:
        # The same route named twice (``routes/x`` and ``$PWD/routes/x``) is checked and counted once.
        unique: dict[str, Path] = {}
        for option in route_options:
            unique.setdefault(realpath(option), Path(option))
        return list(unique.values())

    try:
        return [resolve_route(None)]
    except Refused as exc:
        from routedriver.route.bind import NotBound  # loaded already: resolve_route(None) asked it

        if not isinstance(exc, NotBound):  # no git, two bindings: their own fixes hold
            raise
        raise Refused(exc.what, "use --route, --all or route.bind --set") from None


class _Claim(NamedTuple):
    """What a stone's claims came to, before its approval marker (if it has one) is vouched for."""

    check: StoneCheck
    approval: ApprovalState | None  # the approval to vouch for
    context: StoneContext | None
    done: Done | None = None  # its state (``--recheck`` reads the pass that holds)


def _check_claim(run: _Run, survey: Survey, route_rel: str, stone: Stone) -> _Claim:
    route = survey.route

    def result(status: str, why: str, file: Path | str | None = None) -> StoneCheck:
        where = file if isinstance(file, str) else relative_posix(file or stone.path, run.base)
        return StoneCheck(route_rel, stone.name, status, why, where)

    try:
        context = survey.context(stone)
    except Refused as exc:
        return _Claim(result("broken", exc.line().removeprefix("error: "), stone.guard_path), None, None)
    done = survey.check(stone)
    approval = inputs.approval_state(
        route, stone.name, survey.names, done.inputs.approval_id if done.inputs else None
    )
    check = _check_stone(survey, context, done, approval, result)
    return _Claim(check, approval if approval.exists else None, context, done)


def _vouch(run: _Run, claim: _Claim) -> StoneCheck:
    """A stone with an approval marker stands or falls with it first: was it committed by a listed human?"""
    check, approval, context, _done = claim
    if approval is None or context is None:
        return check
    path = store.approved_path(context.route, context.stone.name)
    hint = context.command_hint("set", portable=True) + " --as approved"
    vouched = run.provenance.check(context.route, approval.marker, path, hint)
    if vouched.ok:
        return check
    return StoneCheck(check.route, check.stone, vouched.status, vouched.why, relative_posix(path, run.base))


def _check_stone(
    survey: Survey,
    context: StoneContext,
    done: Done,
    approval: ApprovalState,
    result: Callable[..., StoneCheck],
) -> StoneCheck:
    """The stone's state as every command decides it (``state.Survey.check``); for a pass, the evidence
    behind it: the reviews it relied on, every judge of the current guard, and the built-in judges asked
    again now."""
    route, stone, guard = context.route, context.stone, context.guard
    if done.state == "incomplete":
        why = "not passed yet"
        if builtin_judges.gated(guard) and not approval.exists:
            why += "; waiting for human approval"
        return result("incomplete", why)
    if not done.passed:
        return result(done.state, done.why, done.file)
    record, now = survey.record(stone, done), done.inputs
    assert now is not None
    if record is None:
        path = route.state_dir / store.pass_name(stone.name, now.key)
        shown = relative_posix(path, survey.base)
        why = f"its pass record {shown} is not what the driver wrote (edited by hand?)"
        return result("forged", why, path)
    if guard is None:
        return result("passed", _passed_why("passed; its artifacts are unchanged", done))
    files = survey.files.get(stone.name)
    reviews = inputs.reviews_in_use(context, now.review_input_hash, entries=files.reviews if files else [])
    for position, command in enumerate(guard.reviews, start=1):
        if position not in reviews:
            return result(
                "unproven",
                f"review r{position} ({command}) has no successful review file for these artifacts "
                "(were the .route/ files committed?)",
                route.state_dir,
            )
    ordered = [reviews[position] for position in sorted(reviews)]
    judge_input_hash = inputs.judge_input_hash(now.review_input_hash, ordered, approval)
    if judge_input_hash != record.judge_input_hash:
        used = ", ".join(sorted(review.path.name for review in ordered))
        return result(
            "forged",
            f"the reviews in use ({used}) are not the ones its pass record relied on (edited by hand?)",
            record.path,
        )
    return _check_judges(
        context,
        files.judges if files else [],
        now.review_input_hash,
        judge_input_hash,
        ordered,
        approval,
        now.artifacts,
        survey.approvers(),
        done,
        result,
    )


def _passed_why(why: str, done: Done) -> str:
    if not done.history:
        return why
    older = count(done.history, "other pass record")
    return f"{why}; {older} kept as history"


def _check_judges(
    context: StoneContext,
    entries: list[store.JudgeEntry],
    review_input_hash: str,
    judge_input_hash: str,
    reviews: list[ReviewRecord],
    approval: ApprovalState,
    artifact_ids: dict[str, str],
    approvers: Approvers,
    done: Done,
    result: Callable[..., StoneCheck],
) -> StoneCheck:
    """Every judge of the CURRENT guard: a passed, self-consistent judge file for these hashes and this
    command, and the built-ins say yes again right now."""
    assert context.guard is not None
    route, stone = context.route, context.stone.name
    for position, command in enumerate(context.guard.judges, start=1):
        record, tampered = _judge_file(
            route, stone, entries, review_input_hash, judge_input_hash, position, command
        )
        if record is None:
            if tampered is not None:
                return result(
                    "forged",
                    f"judge file j{position} ({command}) is not what the driver wrote (edited by hand?)",
                    tampered,
                )
            return result(
                "unproven",
                f"no passed judge file for j{position} ({command}) at these hashes "
                "(were the .route/ files committed?)",
                route.state_dir,
            )
        spec = builtin_judges.parse_builtin(command)
        if spec is None:
            verdict = judges.parse_verdict(record.stdout, record.exit_code)
            if not verdict.passed:
                return result(
                    "forged",
                    f"judge file j{position} ({command}) says passed, but its recorded output and exit "
                    f"code say {verdict.status}: {verdict.reason}",
                    record.path,
                )
            continue
        reading = builtin_judges.Reading(
            context, review_input_hash, artifact_ids, reviews, approval, approvers
        )
        verdict = spec.verdict(reading)
        if verdict.passed:
            continue
        if (
            spec.judge.verify_as == "forged"
        ):  # what it reads is what the hashes bind: the record is not its own
            return result(
                "forged",
                f"judge file j{position} says {spec.name} passed, but {_read_by(spec.judge)} "
                f"{verdict.status}: {verdict.reason}",
                record.path,
            )
        return result(
            "unapproved",
            f"j{position} {spec.name} does not hold now: {verdict.reason}",
            store.approved_path(route, stone),
        )
    judged = len(context.guard.judges)
    why = f"passed and fresh ({count(judged, 'judge')} re-checked)" if judged else "passed and fresh"
    return result("passed", _passed_why(why, done))


def _read_by(judge: builtin_judges.Builtin) -> str:
    """``the reviews say``: what a built-in judge reads, as the subject of what it says now."""
    read = {"reviews": "the reviews", "approval": "the approval"}
    subject = " and ".join(read[what] for what in judge.reads) or "its inputs"
    return f"{subject} {'says' if subject == 'the approval' else 'say'}"


def _judge_file(
    route: Route,
    stone: str,
    entries: list[store.JudgeEntry],
    review_input_hash: str,
    judge_input_hash: str,
    position: int,
    command: str,
) -> tuple[JudgeRecord | None, Path | None]:
    """The latest passed judge file for exactly these inputs, or (None, a file named for them that does not
    read back as the driver wrote it)."""
    tampered: Path | None = None
    for entry in sorted(entries, reverse=True):
        if (
            entry.position != position
            or entry.review_short != review_input_hash[: store.SHORT]
            or entry.judge_short != judge_input_hash[: store.SHORT]
        ):
            continue
        path = route.state_dir / entry.filename
        record = records.read_judge(path, stone)
        if record is None:
            tampered = tampered or path
            continue
        if (
            record.passed
            and record.command == command
            and record.review_input_hash == review_input_hash
            and record.judge_input_hash == judge_input_hash
        ):
            return record, None
    return None, tampered
