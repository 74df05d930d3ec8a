"""``route.verify --base REF --require-bound``: every file the pull request changes is one its passes bind.

``--recheck`` runs the base's guards on the pull request's files, and compares with the base the programs
their commands name; what those programs load by themselves (``conftest.py`` behind ``pytest``, a module
``tools/review.py`` imports, a ``Makefile``, ``.gitattributes``) no reader of command lines can know. With
``--require-bound`` the gate does not need to: a pull request may change only

- a route's own files: its stones and guards (``route.policy`` compares them with REF, and anything it
  reports there is policy's, guard programs and approvers files included) and the files the driver writes
  under its ``.route/`` (the records and markers ``route.verify`` checks: ``store.is_driver_file``);
- the artifacts of stones that pass: each is bound by its stone's pass and judged by its guard (with
  ``--recheck``, CI's own run of it). A file deleted is bound when a passed stone's artifact globs cover it.
  A stone the pull request adds binds nothing unless the base or a human vouches for its guard (``_passes``).

Every other path where the checkout's commit differs from REF is ``unbound``: one line each, and the gate
fails. So whatever a guard program loads that no pass binds is the base's, byte for byte, by construction.
The comparison is of the two trees, not of what the branch did since it forked: a branch forked from an
older base keeps that base's copy of every file the base changed since (a rule the base fixed, or a module
a robot planted there in an earlier pull request and took back before it merged), and that copy is not
REF's. CI checks out the merge of the pull request into REF (GitHub's ``refs/pull/N/merge``), where the
difference is exactly the pull request's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import NamedTuple

from routedriver import gitops, globs
from routedriver.errors import Refused
from routedriver.route import builtin_judges, store
from routedriver.route.artifacts import artifact_patterns
from routedriver.route.checks import UNBOUND, StoneCheck
from routedriver.route.context import StoneContext
from routedriver.route.load import GUARD_SUFFIX, STONE_SUFFIX
from routedriver.route.model import DEFAULT_ARTIFACTS, STATE_DIR, Guard
from routedriver.route.policy import PolicyReport
from routedriver.route.policy_base import Base
from routedriver.route.provenance import REPO_APPROVERS

_DONE = {"A": "added", "M": "changed", "T": "changed", "D": "deleted"}
_RULE = (
    "with --require-bound every file that differs from the base is an artifact of a stone that passes or a "
    "route's own file"
)


class Passed(NamedTuple):
    """A stone that passes: where it is, the files its pass binds (relative to the top-level), and whether the
    base or a human vouches for what it binds (``_vouched``)."""

    context: StoneContext
    artifacts: tuple[str, ...]
    vouched: bool


# A stone's check, its context and the artifacts its pass binds (None: no pass to read them from).
Claim = tuple[StoneCheck, StoneContext | None, Mapping[str, str] | None]


def unbound(
    base: Base, policy: PolicyReport, routes: Iterable[str], claims: Iterable[Claim]
) -> list[StoneCheck]:
    """An ``unbound`` check for each path where HEAD differs from REF that neither a route owns nor a pass
    binds (``routes``: the routes verified, relative to the top-level; ``claims``: each stone's check, context
    and the artifacts its pass binds); refused when git cannot compare the two."""
    try:
        changed = gitops.tree_changes(base.repo, base.commit)
    except gitops.GitError as exc:
        raise Refused(
            f"--require-bound: cannot compare the checkout with {base.short}: {exc}",
            "check --base and that git works in this checkout",
        ) from None
    owned = {REPO_APPROVERS} | {change.path for route in policy.routes for change in route.changes}
    route_names = {*routes, *(route.route for route in policy.routes)}
    passes = _passes(base, policy, list(claims))
    # A path several passes bind is bound when any of them is vouched for: those come last and win.
    bound = {
        path: stone for stone in sorted(passes, key=lambda stone: stone.vouched) for path in stone.artifacts
    }
    found = []
    for path, how in sorted(changed.items()):
        if path in owned or _route_file(path, route_names):
            continue
        by = bound.get(path) or (_covering(path, passes, base) if how == "D" else None)
        if by is not None and by.vouched:
            continue
        done = f"{_DONE.get(how, 'changed')} since {base.short}"
        if by is None:
            why = (
                f"{done} and no pass binds it: {_RULE}; make it one (a stone whose artifacts cover it), or "
                "leave it out (a branch behind the base: merge the base in)"
            )
        else:
            stone = f"{by.context.route_arg}/{by.context.stone.name}"
            why = (
                f"{done} and only {stone} binds it, a stone the pull request adds that neither a human nor "
                "the base vouches for: a new stone binds files when its guard has approved?, when it is word "
                "for word the guard of a stone the base has (artifacts, reviews and judges) and its commands "
                "name $stone where its artifacts do, or when a human runs route.policy.approve --route "
                f"{by.context.route_arg}"
            )
        found.append(StoneCheck("", path, UNBOUND, why, path))
    return found


def _passes(base: Base, policy: PolicyReport, claims: list[Claim]) -> list[Passed]:
    """The claims that pass, each vouched for or not. A stone the base has binds what its guard says (REF's,
    or one a human approved; else the stone is policy-changed anyway). A stone new in the pull request binds
    its artifacts only when a human approves them (``approved?``) or its route's definitions
    (``route.policy.approve``), or when its guard is, word for word, the guard of an unchanged stone of the
    base (its artifacts, reviews and judges: a copy that dropped ``reviewed?`` would judge nothing) whose
    commands judge the stone they run for (``judges_its_own``). Else a robot would add a stone with
    ``artifacts: [tools/**]`` and nothing to run, and bind what it likes."""
    routes = {route.route: route for route in policy.routes}
    new: dict[tuple[str, str], bool] = {}
    known: set[_Shape] = set()
    for check, context, _artifacts in claims:
        if context is None:
            continue
        route = routes.get(check.route)
        stones = base.directory(check.route).stones
        at_base = route is not None and route.state != "added" and check.stone in stones
        new[(check.route, check.stone)] = not at_base
        if at_base and route is not None and not any(change.stone == check.stone for change in route.changes):
            known.add(_shape(context.guard))
    passes = []
    for check, context, artifacts in claims:
        if check.status != "passed" or context is None or artifacts is None:
            continue
        route, guard = routes.get(check.route), context.guard
        vouched = (
            not new[(check.route, check.stone)]
            or builtin_judges.gated(guard)
            or (route is not None and route.approval is not None and route.approval.ok)
            or (_shape(guard) in known and builtin_judges.judges_its_own(guard))
        )
        passes.append(Passed(context, tuple(artifacts), vouched))
    return passes


_Shape = tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]


def _shape(guard: Guard | None) -> _Shape:
    """What a guard binds and how it judges it: its artifact globs, reviews and judges, as written."""
    if guard is None:
        return (DEFAULT_ARTIFACTS, (), ())
    return (guard.artifacts, guard.reviews, guard.judges)


def _route_file(path: str, routes: Iterable[str]) -> bool:
    """A stone or a guard of one of ``routes``, or a file the driver writes in its ``.route/``."""
    for route in routes:
        top = route in ("", ".")
        if not top and not path.startswith(route + "/"):
            continue
        inside = path if top else path[len(route) + 1 :]
        directory, _, name = inside.rpartition("/")
        if directory == STATE_DIR:  # only what the driver writes there: anything else could be anything
            return store.is_driver_file(name)
        if "/" not in inside and inside.endswith((STONE_SUFFIX, GUARD_SUFFIX)):
            return True
    return False


def _covering(path: str, passes: Iterable[Passed], base: Base) -> Passed | None:
    """The passed stone whose artifact globs cover ``path``, a deleted file (its pass binds its absence)."""
    absolute = str(base.repo.toplevel / path)
    for stone in sorted(passes, key=lambda stone: not stone.vouched):  # one vouched for first
        context = stone.context
        patterns = artifact_patterns(context.route, context.stone, context.guard, context.base)
        if any(globs.covers(pattern, absolute) for pattern in patterns):
            return stone
    return None
