"""Each component hashes its inputs: reviews are keyed by their artifacts, judges by reviews and approvals.

This module gathers those inputs for one stone (guard, git repo, artifacts, the reviews in use, the approval
state) and computes the two public hashes.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Container, Iterable, Sequence
from pathlib import Path

from routedriver import userfile
from routedriver.errors import Refused
from routedriver.gitops import IndexSnapshot, find_repo
from routedriver.route import guardfile, hashing, records, store
from routedriver.route.artifacts import find_artifacts
from routedriver.route.artifacts import input_files as files_of
from routedriver.route.context import ApprovalState, StoneContext
from routedriver.route.load import load_route
from routedriver.route.model import Guard, ReviewRecord, Route, Stone


def find_stone(route: Route, name: str) -> Stone:
    """The stone called ``name`` (also accepts ``<name>.stone`` or its path); refuses unknown names."""
    stone = route.stone(name)
    if stone is None and name.endswith(".stone"):
        stone = route.stone(os.path.basename(name)[: -len(".stone")])
    if stone is None:
        raise Refused(
            f"no stone named {name!r} in {route.display}",
            f"run route.stone.get --route {shlex.quote(route.display)} --stone '*' to list stones",
        )
    return stone


# What the public helpers take (docs/route.md, Python API): a route directory's path or a loaded Route, and a
# stone's name (also ``<name>.stone`` or its path) or a Stone.
RouteArg = Route | str | os.PathLike[str]
StoneArg = Stone | str


def route_and_stone(route: RouteArg, stone: StoneArg) -> tuple[Route, Stone]:
    """The loaded route and its stone, from any of the forms the public helpers take; refuses an unknown
    stone name (a Stone is taken as given)."""
    loaded = route if isinstance(route, Route) else load_route(route)
    return loaded, stone if isinstance(stone, Stone) else find_stone(loaded, stone)


def stone_context(route: RouteArg, stone: StoneArg) -> StoneContext:
    loaded, found = route_and_stone(route, stone)
    repo = find_repo(loaded.path)
    base = repo.toplevel if repo is not None else Path.cwd()
    guard = guardfile.load_guard(loaded, found)
    return StoneContext(route=loaded, stone=found, guard=guard, repo=repo, base=base)


def load_guard(route: RouteArg, stone: StoneArg) -> Guard | None:
    """The stone's guard, or None when it has none; refuses with the guard's first problem (the public
    ``routedriver.route.load_guard``: ``guardfile.load_guard`` with the argument forms of the Python API)."""
    return guardfile.load_guard(*route_and_stone(route, stone))


def artifacts_required(context: StoneContext) -> bool:
    return context.guard is None or bool(context.guard.artifacts)


def artifacts_or_refuse(context: StoneContext) -> list[Path]:
    artifacts = find_artifacts(context.route, context.stone, context.guard, context.base)
    if not artifacts and artifacts_required(context):
        raise Refused(
            "artifact not found",
            f"run {context.command_hint('get')} --say to see instructions",
        )
    return artifacts


def review_input(
    context: StoneContext,
    artifacts: Iterable[str | Path] | None = None,
    snapshot: IndexSnapshot | None = None,
    *,
    from_disk: bool = False,
) -> tuple[str, hashing.ContentIds]:
    """The review-input hash and the content ids of the artifacts it was made from (``snapshot``,
    ``from_disk``: see hashing.content_ids). The hash also covers the files the guard's ``inputs:`` name."""
    paths = artifacts_or_refuse(context) if artifacts is None else list(artifacts)
    ids = hashing.content_ids(paths, context.base, context.repo, snapshot, from_disk=from_disk)
    named = input_files(context)
    input_ids = (
        hashing.content_ids_of(named, context.repo, snapshot, from_disk=from_disk).ids if named else {}
    )
    return hashing.review_input_hash(ids.ids, input_ids), ids


def input_files(context: StoneContext) -> dict[str, str]:
    """``{path relative to the top-level: absolute path}`` of the files the guard's ``inputs:`` globs name
    (none without a guard or the key): hashed into the stone's review input, so the stone goes stale when
    one of them changes (an approved plan edited under the code that followed it)."""
    guard = context.guard
    if guard is None or not guard.inputs:
        return {}

    return files_of(guard.inputs, context.route, context.stone, context.base)


def reusable_review(
    route: Route,
    stone: str,
    names: Iterable[str],
    review_input_hash: str,
    position: int,
    command: str,
    entries: Sequence[store.ReviewEntry] | None = None,
) -> ReviewRecord | None:
    """The review a judge reads for this input and place in the guard: the LATEST run of it (a file that
    does not read back as the driver wrote it is passed over), when that run succeeded with this command;
    None means it must run (again). The latest run counts, so a review run again (``set --rerun``) replaces
    what it said before, also when it broke. ``entries``: the stone's ``store.review_files``, when the
    caller already has them."""
    short = review_input_hash[: store.SHORT]
    listed = store.review_files(names, stone) if entries is None else entries
    candidates = [entry for entry in listed if entry.short_hash == short and entry.position == position]
    for entry in sorted(candidates, reverse=True):
        record = records.read_review(route.state_dir / entry.filename, stone)
        if record is None or record.review_input_hash != review_input_hash:
            continue
        return record if record.ok and record.command == command else None
    return None


def reviews_in_use(
    context: StoneContext,
    review_input_hash: str,
    names: Iterable[str] | None = None,
    entries: Sequence[store.ReviewEntry] | None = None,
) -> dict[int, ReviewRecord]:
    """For each of the guard's reviews, the record a judge would read now (missing positions left out);
    ``entries`` as in ``reusable_review``."""
    if entries is None:
        entries = store.review_files(
            store.list_state(context.route) if names is None else names, context.stone.name
        )
    found: dict[int, ReviewRecord] = {}
    for position, command in enumerate(context.guard.reviews if context.guard else (), start=1):
        record = reusable_review(
            context.route, context.stone.name, (), review_input_hash, position, command, entries
        )
        if record is not None:
            found[position] = record
    return found


def approval_state(
    route: RouteArg, stone: StoneArg, names: Container[str] | None = None, content_id: str | None = None
) -> ApprovalState:
    """The approval marker as it is now. ``content_id``: its content id as the caller computed it with the
    stone's other inputs (``state.gather``); without one it is the blob id of the bytes read here. ``names``:
    the ``.route/`` listing the caller works from (route.verify), which then decides whether there is one;
    a caller passing it names its stones by name as they are (not looked up: verify asks for each of
    thousands)."""
    if isinstance(route, Route) and (names is not None or isinstance(stone, Stone)):
        loaded, name = route, stone if isinstance(stone, str) else stone.name
    else:
        loaded, found = route_and_stone(route, stone)
        name = found.name
    if names is not None and f"{name}.approved" not in names:
        return ApprovalState(None, False, None)
    path = store.approved_path(loaded, name)
    try:
        raw = userfile.read_record(path)  # a FIFO or a link to /dev/zero put there: unreadable, not a hang
    except FileNotFoundError:
        return ApprovalState(None, False, None)
    except OSError:
        return ApprovalState(None, True, content_id)
    try:  # the bytes just read are the ones parsed: one read, one answer
        marker = store.parse_marker(raw.decode("utf-8"), path, name)
    except UnicodeDecodeError:
        marker = None
    return ApprovalState(marker, True, content_id or hashing.blob_id_of(raw))


def refuse_symlinked(context: StoneContext, artifacts: Iterable[Path]) -> None:
    """``route.stone.set``: a symlinked artifact is the robot's to fix (make it the file itself), refused
    before anything runs or is written (hashing refuses one anyway: ``hashing.symlink_problem``)."""
    for path in artifacts:
        if os.path.islink(path):
            raise Refused(
                hashing.symlink_problem(context.show(path), hashing.link_text(path)), hashing.SYMLINK_FIX
            )


def judge_input_hash(review_input_hash: str, reviews: Sequence[ReviewRecord], approval: ApprovalState) -> str:
    """The judge-input hash: the review-input hash and every input a built-in judge reads
    (``builtin_judges.JUDGE_INPUTS``: the reviews in use, the approval marker's content id), whichever judges
    the guard has."""
    return hashing.judge_input_hash(
        review_input_hash,
        [(review.position, review.command, review.stdout_sha256) for review in reviews],
        approval.content_id,
    )


def compute_stone_review_input_hash(route: RouteArg, stone: StoneArg) -> str:
    """The review-input hash of ``stone``: sha256 over its artifacts' paths and content ids (64 hex).

    Refuses (``routedriver.errors.Refused``) when the stone is unknown, its guard is malformed or it has no
    artifact.
    """
    return review_input(stone_context(route, stone))[0]


def compute_stone_judge_input_hash(
    route: RouteArg, stone: StoneArg, review_input_hash: str | None = None
) -> str:
    """The judge-input hash of ``stone``: its review-input hash, the reviews that hash selects and the
    approval state (64 hex). Pass ``review_input_hash`` to skip recomputing it.

    Refuses when one of the guard's reviews has no successful result for the current artifacts yet.
    """
    context = stone_context(route, stone)
    current = review_input_hash or review_input(context)[0]
    found = reviews_in_use(context, current)
    commands = context.guard.reviews if context.guard else ()
    missing = [position for position in range(1, len(commands) + 1) if position not in found]
    if missing:
        raise Refused(
            f"{context.stone.name}: review r{missing[0]} has no successful result for the current artifacts",
            f"run {context.command_hint('set')} --as passed",
        )
    return judge_input_hash(
        current,
        [found[position] for position in sorted(found)],
        approval_state(context.route, context.stone.name),
    )
