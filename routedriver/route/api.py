"""The operations behind the ``route.stone.*`` commands. They return results; the CLI renders them.

``get`` runs every robot turn: it is ``route.select.get`` (re-exported here), which ``route.stone.get`` calls
without importing this module or the guard's machinery. ``set`` imports that machinery (``route.guard``:
subprocesses, threads, the shell lexer) and ``judge`` git when called.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from routedriver.errors import Refused
from routedriver.gitops import find_repo
from routedriver.route import builtin_judges, inputs, store
from routedriver.route.artifacts import find_artifacts
from routedriver.route.builtin_judges import Reading
from routedriver.route.context import ApprovalState, StoneContext
from routedriver.route.guard import Evaluation, evaluate
from routedriver.route.guardfile import load_guard
from routedriver.route.hashing import relative_posix
from routedriver.route.load import open_route as open_route  # where the commands find it
from routedriver.route.model import Guard, ReviewRecord, Route, Stone, Verdict
from routedriver.route.select import GetResult as GetResult  # re-exported: api is where callers look
from routedriver.route.select import get as get
from routedriver.route.select import has_glob, match_names
from routedriver.route.state import Survey

if TYPE_CHECKING:
    from routedriver.route.approve import ApproveResult


class SetResult(NamedTuple):
    route: Route
    evaluation: Evaluation
    base: Path  # the git top-level (the cwd outside git): set names files relative to it, as verify does

    def show(self, path: Path) -> str:
        return relative_posix(path, self.base)


class Kept(NamedTuple):
    """A stone ``route.stone.del`` left in place, and why."""

    stone: str
    kind: str  # "artifact" | "gate" | "marker": the JSON key that names ``path``
    path: str  # the artifact, the guard or the marker, as shown to the user
    judge: str = ""  # a gate: the judge in the guard that needs a human (approved?)

    @property
    def reason(self) -> str:
        """Why, in the words of the refusal and of the batch's notice (after the stone's name)."""
        if self.kind == "gate":
            return f"human gate; {self.stone}: {self.path} judges {self.judge}; {_GATE_ADVICE}"
        return f"{self.kind} exists; {self.stone}: {self.path}"

    @property
    def notice(self) -> str:
        """The batch's line on stderr for this stone."""
        if self.kind == "gate":
            return f"notice: kept {self.stone}: human gate ({self.path} judges {self.judge}); {_GATE_ADVICE}"
        return f"notice: kept {self.stone}: {self.kind} exists ({self.path})"


_GATE_ADVICE = "a human removes a gate by editing the route (deleting its files), not through del"


class DelResult(NamedTuple):
    route: Route
    deleted: tuple[tuple[str, tuple[Path, ...]], ...]  # stone name, the files removed
    kept: tuple[Kept, ...]


def set_passed(route_option: str | None, stone: str, *, rerun: bool = False) -> SetResult:
    """Evaluate the stone's guard under its lock and record the outcome (see ``guard.evaluate``); refuses
    while a stone of a lower tier is not passed (incomplete, stale, or waiting for a human): a route is
    walked one tier at a time. ``rerun`` runs every review again."""
    route = open_route(route_option)
    context = inputs.stone_context(route, stone)
    refuse_out_of_order(context)
    artifacts = inputs.artifacts_or_refuse(context)  # refuse before creating anything under .route/
    inputs.refuse_symlinked(context, artifacts)
    with store.writing(route):
        store.ensure_state_dir(route)
        lock, waited = store.acquire_stone_lock(route, context.stone.name)
        try:
            # After waiting for another run the artifacts may have changed: look again.
            evaluation = evaluate(context, None if waited else artifacts, rerun=rerun)
            return SetResult(route, evaluation, context.base)
        finally:
            lock.release()


def refuse_out_of_order(context: StoneContext) -> None:
    """Refuse to pass a stone while a stone of a lower tier is not passed, as ``state.Survey`` decides it
    (what route.verify will say), naming the first such stone and what to do about it."""
    route, mine = context.route, context.stone
    earlier = [stone for stone in route.stones if stone.prefix < mine.prefix]
    if not earlier:
        return
    survey = Survey(route, context.repo, context.base)
    survey.prepare(stone for stone in earlier if survey.needs_checking(stone))
    for stone in earlier:
        done = survey.check(stone)
        if done.passed:
            continue
        hint = f"route.stone.get --route {shlex.quote(route.display)} --stone @next-one --say"
        why = "" if done.state == "incomplete" else f": {done.why}"
        raise Refused(
            f"{mine.name} must wait: {stone.name}, of a lower tier, is {done.state}{why}",
            f"finish the stones before it first (see {hint})",
        )


def set_approved(route_option: str | None, stone: str, *, human: bool, commit: bool = True) -> ApproveResult:
    """Record a human's approval of the stone's current artifacts and commit it (see ``approve.approve``).
    ``human`` says a person is at the controls (the CLI: stdin is a terminal); otherwise it refuses."""
    # approve, approval_commit and provenance (~5 ms): only an approval, not route.stone.set --as passed
    from routedriver.route.approve import approve

    return approve(route_option, stone, human=human, commit=commit)


def judge(
    route_option: str | None, stone: str, mechanism: str, flags: Mapping[str, int | None] | None = None
) -> Verdict:
    """A built-in judge as a command (``route.stone.judge``): ``mechanism`` on the stone as it is now, with
    the ``flags`` given (by keyword; None: not given). Gathers what the judge reads
    (``builtin_judges.Builtin.reads``)."""
    spec = builtin_judges.asked(mechanism, flags or {})
    route = open_route(route_option)
    context = inputs.stone_context(route, stone)
    reads = spec.judge.reads
    commands = context.guard.reviews if context.guard else ()
    if "reviews" in reads and not commands:  # running set would not help: there is nothing to read
        where = "its guard lists none" if context.guard else "it has no guard"
        reason = f"{context.stone.name} has no reviews ({where}): {spec.name} judges what reviews say"
        return Verdict("failed", reason, f"passed: false\nreason: {reason}\n")
    approval = (
        inputs.approval_state(route, context.stone.name)
        if "approval" in reads
        else ApprovalState(None, False, None)
    )
    review_input_hash, ids = inputs.review_input(context)
    reviews: list[ReviewRecord] = []
    if "reviews" in reads:
        found = inputs.reviews_in_use(context, review_input_hash)
        missing = [position for position in range(1, len(commands) + 1) if position not in found]
        if missing and found:
            reason = (
                f"review r{missing[0]} has no successful result for the current artifacts; "
                f"run {context.command_hint('set')} --as passed"
            )
            return Verdict("failed", reason, f"passed: false\nreason: {reason}\n")
        reviews = [found[position] for position in sorted(found)]
    return spec.verdict(Reading(context, review_input_hash, ids.ids, reviews, approval))


def delete(route_option: str | None, pattern: str) -> DelResult:
    """Remove the ``.stone`` and ``.guard`` of matched stones that have nothing to lose (see docs/route.md):
    no artifact, no human gate (an ``approved?`` judge), no ``.passed`` or ``.approved`` marker."""
    route = open_route(route_option)
    matched = match_names(route, pattern)
    repo = find_repo(route.path)
    base = repo.toplevel if repo is not None else Path.cwd()
    # Look at every matched stone before removing anything: a malformed guard refuses the whole batch.
    plan = [(stone, _keep(route, stone, load_guard(route, stone), base)) for stone in matched]
    single = not has_glob(pattern) or len(matched) == 1
    if single and plan[0][1] is not None:
        raise Refused("cannot del", plan[0][1].reason)
    deleted: list[tuple[str, tuple[Path, ...]]] = []
    kept: list[Kept] = []
    for stone, keep in plan:
        if keep is not None:
            kept.append(keep)
            continue
        # The stone first: killed in between, an orphan guard is harmless; an unguarded stone is not.
        removed = [path for path in (stone.path, stone.guard_path) if path is not None and _unlink(path)]
        deleted.append((stone.name, tuple(removed)))
    return DelResult(route, tuple(deleted), tuple(kept))


def _keep(route: Route, stone: Stone, guard: Guard | None, base: Path) -> Kept | None:
    """Why deleting ``stone`` would lose something (None: nothing would be lost). Its artifacts are its
    work; a judge that needs a human (``approved?``) makes it a human's gate, which a robot must not remove;
    a ``.passed`` or ``.approved`` marker is its history (the approval is the record of a human's
    decision)."""
    artifacts = find_artifacts(route, stone, guard, base)
    if artifacts:
        return Kept(stone.name, "artifact", _show(route, base, artifacts[0]))
    gate = builtin_judges.gate_of(guard)
    if guard is not None and gate is not None:
        return Kept(stone.name, "gate", route.show(guard.path), gate.name)
    names = store.list_state(route)
    if store.has_marker(names, stone.name):
        marker = store.approved_path(route, stone.name)
        if not os.path.lexists(marker):
            marker = route.state_dir / next(
                iter(store.pass_files(names, stone.name) or [store.legacy_passed_name(stone.name)])
            )
        return Kept(stone.name, "marker", route.show(marker))
    return None


def _unlink(path: Path) -> bool:
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True


def _show(route: Route, base: Path, path: Path) -> str:
    if route.path in path.parents:
        return route.show(path)
    return os.path.relpath(path, base)
