"""``route.drive``: where a robot is on its route, what to do next, and the exact commands to do it.

It reads the state the driver keeps in files (markers, review and judge files) and recomputes only the
review-input hash of the next stones, so it can tell apart a robot that can act (write an artifact, run
``set``, fix what a judge rejected) from a route that waits on a human's approval.
"""

from __future__ import annotations

import hashlib
import json
import shlex
from dataclasses import dataclass
from pathlib import Path

from routedriver import gitops
from routedriver.errors import Refused
from routedriver.route import inputs, judges, records, store
from routedriver.route.api import open_route
from routedriver.route.artifacts import artifact_globs, find_artifacts
from routedriver.route.guardfile import load_guard
from routedriver.route.inputs import StoneContext
from routedriver.route.model import Guard, JudgeRecord, Route, Stone
from routedriver.route.select import NEXT_ALL, select

# What the robot should do about a stone.
NEEDS_ARTIFACT = "needs-artifact"  # write the artifact
READY = "ready"  # run route.stone.set --as passed
REJECTED = "rejected"  # fix what the judges said, then set again
WAITING = "waiting-for-approval"  # nothing the robot can do: a human approves
ROBOT_CAN_ACT = (NEEDS_ARTIFACT, READY, REJECTED)


@dataclass(frozen=True)
class StoneState:
    stone: Stone
    state: str
    detail: str  # the judges' reasons on a rejection, what waits on a human, …
    review_input_hash: str  # "" when there is no artifact yet


@dataclass(frozen=True)
class Guidance:
    route: Route
    passed: int
    total: int
    stones: tuple[StoneState, ...]  # the active tier's incomplete stones; empty when the route is complete

    @property
    def complete(self) -> bool:
        return not self.stones

    @property
    def robot_can_act(self) -> bool:
        return any(state.state in ROBOT_CAN_ACT for state in self.stones)

    @property
    def waiting(self) -> tuple[StoneState, ...]:
        return tuple(state for state in self.stones if state.state == WAITING)

    def fingerprint(self) -> str:
        """Same next stones, same states, same artifacts → same fingerprint (loop detection)."""
        payload = [str(self.route.path), [[s.stone.name, s.state, s.review_input_hash] for s in self.stones]]
        return hashlib.sha256(json.dumps(payload).encode("utf-8")).hexdigest()


def guidance(route_option: str | None) -> Guidance:
    route = open_route(route_option)
    selection = select(route, NEXT_ALL)
    names = store.list_state(route)
    passed = sum(1 for stone in route.stones if store.is_passed(route, stone.name, names))
    repo = gitops.find_repo(route.path) if selection.stones else None
    base = repo.toplevel if repo is not None else Path.cwd()
    states = tuple(
        _state(StoneContext(route, item.stone, load_guard(route, item.stone), repo, base), names)
        for item in selection.stones
    )
    return Guidance(route, passed, len(route.stones), states)


def _gated(guard: Guard | None) -> bool:
    return guard is not None and any(judges.first_word(judge) == "approved?" for judge in guard.judges)


def _state(context: StoneContext, names: frozenset[str]) -> StoneState:
    stone, guard = context.stone, context.guard
    artifacts = find_artifacts(context.route, stone, guard, context.base)
    if not artifacts and inputs.artifacts_required(context):
        return StoneState(stone, NEEDS_ARTIFACT, "", "")
    review_input_hash, _ids = inputs.review_input(context, artifacts)
    if guard is None or not guard.judges:
        return StoneState(stone, READY, "", review_input_hash)
    approval = inputs.approval_state(context.route, stone.name)
    approved_now = approval.marker is not None and approval.marker.review_input_hash == review_input_hash
    latest = _latest_judging(context, names, review_input_hash)
    if not latest:
        return StoneState(stone, READY, "", review_input_hash)
    failing = [record for record in latest if not record.passed]
    if not failing:
        return StoneState(stone, READY, "", review_input_hash)
    only_approval = all(judges.first_word(record.command) == "approved?" for record in failing)
    if only_approval and _gated(guard):
        if approved_now:
            return StoneState(stone, READY, "a human approved it since the last run", review_input_hash)
        return StoneState(stone, WAITING, "every other judge passed; it waits for a human", review_input_hash)
    reasons = "; ".join(
        f"j{record.position} {judges.first_word(record.command)}: {record.reason}" for record in failing
    )
    files = ", ".join(context.route.show(record.path) for record in failing)
    return StoneState(stone, REJECTED, f"{reasons} (read {files})", review_input_hash)


def _latest_judging(
    context: StoneContext, names: frozenset[str], review_input_hash: str
) -> list[JudgeRecord]:
    """The judge records of the latest judging of these artifacts (highest iteration and pass)."""
    entries = [
        entry
        for entry in store.judge_files(names, context.stone.name)
        if entry[2] == review_input_hash[: store.SHORT]
    ]
    if not entries:
        return []
    newest = max((entry[0], entry[1]) for entry in entries)
    found = []
    for entry in entries:
        if (entry[0], entry[1]) == newest:
            record = records.read_judge(context.route.state_dir / entry[5], context.stone.name)
            if record is not None:
                found.append(record)
    return sorted(found, key=lambda record: record.position)


# ---------------------------------------------------------------- the words a robot reads


def _quote(value: str) -> str:
    return shlex.quote(value)


def commands(route: Route, stone: Stone) -> tuple[str, str, str]:
    """(get --say, set --as passed, set --as approved) for ``stone``, quoted for a shell."""
    head = f"--route {_quote(route.display)} --stone {_quote(stone.name)}"
    return (
        f"route.stone.get {head} --say",
        f"route.stone.set {head} --as passed",
        f"route.stone.set {head} --as approved",
    )


def _artifact_hint(route: Route, stone: Stone, guard: Guard | None) -> str:
    globs = artifact_globs(stone, guard)
    if not globs:
        return "none (this stone produces no files)"
    shown = [
        pattern.replace("${stone}", stone.name)
        .replace("$stone", stone.name)
        .replace("${route}", route.display)
        for pattern in globs
    ]
    return ", ".join(item.replace("$route", route.display) for item in shown)


def _checks(guard: Guard | None) -> str:
    if guard is None:
        return "no guard: the stone passes once its artifact exists"
    parts = []
    if guard.reviews:
        parts.append(f"{len(guard.reviews)} review{'s' if len(guard.reviews) != 1 else ''}")
    for judge in guard.judges:
        word = judges.first_word(judge)
        parts.append("approved? (a human approves)" if word == "approved?" else f"judge: {judge}")
    return "; ".join(parts) or "the guard has no reviews or judges"


def render(guide: Guidance, instructions: bool = True) -> str:
    route = guide.route
    if guide.complete:
        return f"route {route.display}: all {guide.total} stones passed; nothing left to do.\n"
    names = ", ".join(state.stone.name for state in guide.stones)
    lines = [f"route {route.display}: {guide.passed} of {guide.total} stones passed; next: {names}"]
    for state in guide.stones:
        stone = state.stone
        get, set_passed, set_approved = commands(route, stone)
        guard = load_guard(route, stone)
        lines += ["", f"## {stone.name} ({state.state})"]
        if instructions:
            text = _read(stone.path).rstrip("\n")
            lines += [
                f"instructions ({route.show(stone.path)}):",
                *(f"  {line}" for line in text.splitlines()),
            ]
        lines.append(f"artifacts: {_artifact_hint(route, stone, guard)}")
        lines.append(f"checked by: {_checks(guard)}")
        if state.state == NEEDS_ARTIFACT:
            lines += [
                "do: write the artifact as the instructions say, then run:",
                f"  {set_passed}",
            ]
        elif state.state == READY:
            lines += [f"do: run the guard{f' ({state.detail})' if state.detail else ''}:", f"  {set_passed}"]
        elif state.state == REJECTED:
            lines += [
                f"last result: rejected: {state.detail}",
                "do: fix what the judges said, then run again:",
                f"  {set_passed}",
            ]
        else:
            lines += [
                f"waiting for human approval ({state.detail}); robots cannot approve.",
                f"  a human runs, in a terminal: {set_approved}",
                f"  then: {set_passed}",
            ]
        lines.append(f"re-read the instructions: {get}")
    return "\n".join(lines) + "\n"


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise Refused(f"cannot read {path}: {exc.strerror}", "check the file's permissions") from None
