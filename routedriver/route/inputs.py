"""Each component hashes its inputs: reviews are keyed by their artifacts, judges by reviews and approvals.

This module gathers those inputs for one stone (guard, git repo, artifacts, the reviews in use, the approval
state) and computes the two public hashes.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Container, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from routedriver import userfile
from routedriver.errors import Refused
from routedriver.route import guardfile, hashing, judges, records, store
from routedriver.route.artifacts import find_artifacts
from routedriver.route.load import load_route
from routedriver.route.model import Guard, Marker, ReviewRecord, Route, Stone, Verdict

if TYPE_CHECKING:  # git and the approvers file only when a command gets that far (route.stone.get mostly not)
    from routedriver.gitops import IndexSnapshot, Repo
    from routedriver.route.provenance import Approvers


class StoneContext(NamedTuple):
    route: Route
    stone: Stone
    guard: Guard | None
    repo: Repo | None
    base: (
        Path  # the git top-level, or the cwd outside git: commands run here, hashed paths are relative to it
    )

    @property
    def route_arg(self) -> str:
        """``$route`` / ``ROUTE`` as the commands see it: relative to where they run."""
        relative = hashing.relative_posix(self.route.path, self.base)
        return f"./{relative}" if relative.startswith("-") else relative

    def show(self, path: Path) -> str:
        """``path`` relative to where commands run: how files are named inside the files we write."""
        return hashing.relative_posix(path, self.base)

    def command_hint(self, action: str, portable: bool = False) -> str:
        """A ``route.stone.<action>`` command line for this stone; ``portable`` names the route relative to
        the git top-level (for text written into files) instead of as the user named it."""
        route = self.route_arg if portable else self.route.display
        return f"route.stone.{action} --route {shlex.quote(route)} --stone {shlex.quote(self.stone.name)}"


class ApprovalState(NamedTuple):
    marker: Marker | None
    exists: bool
    content_id: str | None  # the marker file's content id (part of the judge-input hash); None: no marker


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
    from routedriver.gitops import find_repo

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
    from routedriver.route.artifacts import input_files as files_of

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


def approved_verdict(
    context: StoneContext,
    approval: ApprovalState,
    review_input_hash: str,
    artifacts: dict[str, str],
    approvers: Approvers | None = None,
) -> Verdict:
    """``approved?`` for this stone: does ``approval`` hold for the artifacts as they are now, given by
    someone the approvers file lists (``approvers``; looked up when not given)? Never for a symlinked
    artifact (``symlinked_artifact``)."""
    linked = symlinked_artifact(context, artifacts)
    if linked:
        reason = f"{linked}; {SYMLINK_FIX}"
        return Verdict("failed", reason, f"passed: false\nreason: {reason}\n")
    verdict = judges.approved(
        approval.marker,
        approval.exists,
        review_input_hash,
        context.show,
        context.command_hint("set", portable=True) + " --as approved",
        current_artifacts=artifacts,
    )
    if approvers is None:
        from routedriver.route.provenance import find_approvers

        approvers = find_approvers(context.route, context.repo)
    if not verdict.passed:
        return _who_may_approve(verdict, approvers, context)
    unlisted = unlisted_approver(approval.marker, approvers, context)
    if not unlisted:
        return verdict
    reason = f"wait for human approval: {unlisted}"
    return Verdict("failed", reason, f"passed: false\nreason: {reason}\n")


SYMLINK_FIX = "make it the file itself, not a link to it"


def symlinked_artifact(context: StoneContext, artifacts: Iterable[str]) -> str:
    """Why a stone a human approves cannot take its artifacts as they are: one of them (relative to
    ``context.base``) is a symlink. git stores only the link, and an approval binds content ids, so an
    approved link would stay approved while what it points at changes. "" when none is."""
    # One directory listing per directory (its entries say whether they are links without a system call
    # each): route.verify asks this of every gated stone, whose artifacts may be thousands of files.
    by_directory: dict[str, set[str]] = {}
    for relative in artifacts:
        directory, _, name = relative.rpartition("/")
        by_directory.setdefault(directory, set()).add(name)
    base = os.fspath(context.base)
    for directory, names in sorted(by_directory.items()):
        try:
            with os.scandir(os.path.join(base, directory)) as entries:
                links = sorted(entry.name for entry in entries if entry.name in names and entry.is_symlink())
        except OSError:
            continue  # hashing the artifacts already said what is wrong with such a directory
        if links:
            relative = f"{directory}/{links[0]}" if directory else links[0]
            target = os.readlink(os.path.join(base, relative))
            return (
                f"artifact {relative} is a symlink (to {target}): a stone a human approves takes no "
                "symlinked artifacts (an approval would cover the link, not what it points at)"
            )
    return ""


def gated(guard: Guard | None) -> bool:
    """Does the guard have a human gate (an ``approved?`` judge)?"""
    return guard is not None and any(judges.first_word(judge) == "approved?" for judge in guard.judges)


def refuse_symlinked_gate(context: StoneContext, artifacts: Iterable[Path]) -> None:
    """``route.stone.set`` on a stone with ``approved?``: a symlinked artifact is the robot's to fix (make
    it the file itself), refused before anything runs, rather than a gate no human could ever open."""
    if not gated(context.guard):
        return
    linked = symlinked_artifact(context, [context.show(path) for path in artifacts])
    if linked:
        raise Refused(linked, SYMLINK_FIX)


def _who_may_approve(verdict: Verdict, approvers: Approvers, context: StoneContext) -> Verdict:
    """A stone that waits for approval says who may give it (the approvers file's emails)."""
    if approvers.path is None or not approvers.emails:
        return verdict
    emails = sorted(approvers.emails)
    listed = ", ".join(emails[:5]) + (f" and {len(emails) - 5} more" if len(emails) > 5 else "")
    shown = hashing.relative_posix(approvers.path, context.base)
    reason = f"{verdict.reason}; who may approve: {listed} ({shown})"
    output = verdict.output.replace(f"reason: {verdict.reason}\n", f"reason: {reason}\n", 1)
    return Verdict(verdict.status, reason, output)


def unlisted_approver(marker: Marker | None, approvers: Approvers, context: StoneContext) -> str:
    """Why an approval does not count where an approvers file lists who may approve (its approver is not
    there), with the command a listed approver runs; "" when it counts or no file decides."""
    if marker is None or approvers.path is None or approvers.problem or not approvers.emails:
        return ""
    email = marker.approver_email.lower()
    if email and email in approvers.emails:
        return ""
    who = marker.approver_email or "someone unnamed"
    shown = hashing.relative_posix(approvers.path, context.base)
    return (
        f"approved by {who}, who is not in {shown}; a listed approver runs, in a terminal: "
        f"{context.command_hint('set', portable=True)} --as approved"
    )


def builtin_verdict(
    context: StoneContext,
    spec: judges.BuiltinJudge,
    reviews: Sequence[ReviewRecord],
    approval: ApprovalState,
    review_input_hash: str,
    artifacts: dict[str, str],
    approvers: Approvers | None = None,
) -> Verdict:
    """A guard's built-in judge on the reviews and approval in use: what route.stone.set records and what
    route.verify re-derives."""
    if spec.mechanism == "reviewed?":
        return judges.reviewed(reviews, context.show, spec.allow_blockers, spec.allow_nitpicks)
    return approved_verdict(context, approval, review_input_hash, artifacts, approvers)


def judge_input_hash(review_input_hash: str, reviews: Sequence[ReviewRecord], approval: ApprovalState) -> str:
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
