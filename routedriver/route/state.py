"""Is a stone done? The ONE answer ``route.stone.get``, ``route.drive``, ``route.stone.set`` and
``route.verify`` share, so a robot is told locally what CI will say.

A stone is **passed** when a pass record exists for exactly what it is now: the content ids of its artifacts
(the review-input hash), of its instructions (``$stone.stone``), of its guard and of its approval marker,
hashed together into the pass key that names the record (``hashing.pass_key``); the reviews that pass
relied on are still the latest runs of those reviews; and an approval it relied on was given by someone the
approvers file lists (when there is one). Otherwise it is **stale** (it passed, for other content: the
reason names what changed), **unapproved** (its approval is by someone not listed), **broken** (its pass
record is not what the driver wrote) or **incomplete** (never passed).

``route.verify`` asks this first and then checks the evidence behind a pass (review and judge files,
built-in judges, who committed the approval). Content ids come from git's index for committed, unmodified
files (one index read per route; ``gitops`` makes git compare files strictly) and from the files for the
rest, which git hashes for all the stones a command checks at once (``Survey.prepare``); ``route.stone.set``
hashes everything it binds from disk instead (``gather(..., from_disk=True)``).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal, NamedTuple

from routedriver import userfile
from routedriver.errors import Refused
from routedriver.route import hashing, manifest, store
from routedriver.route.artifacts import Listings, artifact_paths, default_glob_files
from routedriver.route.guardfile import load_guard
from routedriver.route.inputs import StoneContext, input_files, unlisted_approver
from routedriver.route.model import STATE_DIR, Guard, PassRecord, Route, Stone

if TYPE_CHECKING:  # on route.stone.get's path: git only once a stone has a pass to check
    from routedriver import gitops
    from routedriver.route.provenance import Approvers

DoneState = Literal["passed", "stale", "incomplete", "unapproved", "broken"]


class StoneInputs(NamedTuple):
    """Everything a pass of one stone covers, as it is now."""

    artifacts: dict[str, str]  # path relative to the top-level (the cwd outside git) → content id
    review_input_hash: str
    stone_id: str
    guard_id: str | None
    approval_id: str | None
    # The files the guard's ``inputs:`` name (relative path → content id), in the review-input hash too.
    inputs: Mapping[str, str] = {}

    @property
    def key(self) -> str:
        return hashing.pass_key(
            self.review_input_hash,
            stone_id=self.stone_id,
            guard_id=self.guard_id,
            approval_id=self.approval_id,
        )


class Done(NamedTuple):
    """The state of one stone (see the module's docstring)."""

    state: DoneState
    why: str  # what a person reads: why it is not passed, or what the pass holds
    record: PassRecord | None  # passed: the record that holds; stale: the pass it had
    inputs: StoneInputs | None  # None when they could not be computed (no artifact yet)
    file: Path | None = None  # the file a reader should look at (the changed artifact, the record, …)
    history: int = 0  # pass records of the stone that do not hold now (older passes, other branches)

    @property
    def passed(self) -> bool:
        return self.state == "passed"


def gather(
    context: StoneContext,
    artifacts: Mapping[str, str | Path],
    *,
    from_disk: bool,
    snapshot: gitops.IndexSnapshot | None = None,
) -> StoneInputs:
    """The stone's inputs: content ids of its artifacts (``{relative: absolute}``), its stone file, its guard
    and its approval marker, in one batch (one ``git hash-object`` for whatever must be read)."""
    stone = context.stone
    driver = {context.show(stone.path): stone.path}
    if stone.guard_path is not None:
        driver[context.show(stone.guard_path)] = stone.guard_path
    approval = store.approved_path(context.route, stone.name)
    if os.path.lexists(approval):
        driver[context.show(approval)] = approval
    named = input_files(context)
    both: dict[str, str | Path] = {**artifacts, **named, **driver}
    ids = hashing.content_ids_of(both, context.repo, snapshot, from_disk=from_disk).ids
    artifact_ids = {path: ids[path] for path in artifacts}
    input_ids = {path: ids[path] for path in named}
    guard_id = ids[context.show(stone.guard_path)] if stone.guard_path is not None else None
    approval_id = ids.get(context.show(approval))
    return StoneInputs(
        artifact_ids,
        hashing.review_input_hash(artifact_ids, input_ids),
        ids[context.show(stone.path)],
        guard_id,
        approval_id,
        input_ids,
    )


class Survey:
    """One route's state, read once for many stones: the ``.route/`` listing, one listing per artifact
    directory, and ONE read of git's index for the route's own files (``gitops.route_snapshot``).

    Deciding a stone costs no file read when git vouches for its files and its reviews ran once for its
    content: content ids come from the index, the pass record is found by its name, and whether a review ran
    again since is told by the review files' names. A route with 10,000 passed stones is answered from two
    listings and the index; the pass record is read only to tell which of several runs it used, and by
    ``route.verify`` (``record``), which checks the evidence behind a pass.
    """

    def __init__(
        self,
        route: Route,
        repo: gitops.Repo | None,
        base: Path,
        *,
        names: frozenset[str] | None = None,
        snapshot: gitops.IndexSnapshot | None = None,
        approvers: Approvers | None = None,
        locate: bool = False,
    ) -> None:
        """``locate``: find the repository holding the route (and so ``base``) only when first needed, so
        a route where nothing has passed is answered without starting git."""
        self.route = route
        self._repo = repo
        self._base = base
        self._located = not locate
        self.names = store.list_state(route) if names is None else names
        self.files = store.files_by_stone(self.names)
        self._snapshot = snapshot
        self._snapshot_read = snapshot is not None
        self._approvers = approvers
        self._contexts: dict[str, StoneContext] = {}
        self._artifacts: dict[str, dict[str, str]] = {}
        self._listings = Listings()
        self._by_guard_id: dict[str, Guard | None] = {}  # what finding artifacts needs, by guard content
        self._guards: dict[str, tuple[Guard | None, bool]] = {}  # _artifact_guard, by stone
        self._abs = os.fspath(route.path) + os.sep
        self._rel_known: str | None = None
        # Content ids of files git's index does not vouch for, hashed together for every stone ``prepare``
        # was given (None until the first stone needs one): one git process, not one per stone.
        self._batch: dict[str, Stone] = {}
        self._hashed: dict[str, str] | None = None

    def _locate(self) -> None:
        if not self._located:
            from routedriver import gitops

            self._located = True
            self._repo = gitops.find_repo(self.route.path)
            self._base = self._repo.toplevel if self._repo is not None else Path.cwd()

    @property
    def repo(self) -> gitops.Repo | None:
        self._locate()
        return self._repo

    @property
    def base(self) -> Path:
        """Where paths are relative to: the git top-level, or the current directory outside git."""
        self._locate()
        return self._base

    @property
    def _rel(self) -> str:
        """The route's directory as its files are keyed: relative to ``base``, ending in ``/`` (or empty)."""
        if self._rel_known is None:
            relative = hashing.relative_posix(self.route.path, self.base)
            self._rel_known = "" if relative == "." else relative + "/"
        return self._rel_known

    # ------------------------------------------------------------ what a stone is made of

    def context(self, stone: Stone) -> StoneContext:
        """The stone with its guard (refuses, naming the problem, when the guard does not load)."""
        found = self._contexts.get(stone.name)
        if found is None:
            guard = load_guard(self.route, stone)
            found = self._contexts[stone.name] = StoneContext(self.route, stone, guard, self.repo, self.base)
        return found

    def _known_id(self, relative: str) -> str | None:
        """The content id git's index vouches for (tracked, regular, unmodified), else None."""
        snapshot = self._snapshot
        if snapshot is None or relative in snapshot.modified:
            return None
        return snapshot.staged.get(relative)

    def _artifact_guard(self, stone: Stone) -> tuple[Guard | None, bool]:
        """What finding the stone's artifacts needs from its guard, and whether it must have one: the parsed
        guard when its text sets ``artifacts``, else None (the default globs). Read once per guard content:
        a long route's guards are mostly alike, and parsing every one would cost more than the rest."""
        known = self._guards.get(stone.name)
        if known is None:
            known = self._guards[stone.name] = self._find_artifact_guard(stone)
        return known

    def _find_artifact_guard(self, stone: Stone) -> tuple[Guard | None, bool]:
        if stone.name in self._contexts:
            guard = self._contexts[stone.name].guard
        elif not stone.has_guard:
            guard = None
        else:
            guard_id = self._known_id(f"{self._rel}{stone.name}.guard")
            if guard_id is not None and guard_id in self._by_guard_id:
                known = self._by_guard_id[guard_id]
                assert stone.guard_path is not None
                guard = known._replace(path=stone.guard_path) if known is not None else None
            else:
                guard = self._read_artifact_guard(stone)
                if guard_id is not None and (guard is None or guard.artifacts):
                    self._by_guard_id[guard_id] = guard
        return guard, guard is None or bool(guard.artifacts)

    def _read_artifact_guard(self, stone: Stone) -> Guard | None:
        """The parsed guard when its text mentions ``artifacts`` or ``inputs`` (which name files to hash),
        else None; refuses a guard that cannot be
        read (through ``userfile``: a FIFO or a link to /dev/zero must not hang or fill memory)."""
        assert stone.guard_path is not None
        text = userfile.read_bytes(stone.guard_path, what="guard", shown=self.route.show(stone.guard_path))
        return self.context(stone).guard if b"artifacts" in text or b"inputs" in text else None

    def artifacts(self, stone: Stone) -> dict[str, str]:
        """``{path relative to the top-level: absolute path}`` of the stone's artifacts now."""
        found = self._artifacts.get(stone.name)
        if found is None:
            guard, _required = self._artifact_guard(stone)
            names = default_glob_files(self.route, stone, self._listings) if guard is None else None
            if names is not None:  # the default glob, straight from the route's listing
                rel, absolute = self._rel, self._abs
                found = {rel + name: absolute + name for name in names}
            else:
                base = self.base
                paths = artifact_paths(self.route, stone, guard, base, self._listings)
                # Normalized absolute paths: one under base is keyed by what follows it (a slice, where
                # relative_posix per file would cost milliseconds over thousands of artifacts).
                prefix = os.fspath(base).rstrip("/") + "/"  # POSIX paths: routedriver runs on POSIX
                cut = len(prefix)
                found = {
                    path[cut:] if path.startswith(prefix) else hashing.relative_posix(path, base): path
                    for path in paths
                }
            self._artifacts[stone.name] = found
        return found

    def _bare(self, stone: Stone) -> StoneContext:
        """The stone without its guard parsed: enough to name files and commands, and to hash its inputs."""
        known = self._contexts.get(stone.name)
        return known if known is not None else StoneContext(self.route, stone, None, self.repo, self.base)

    def prepare(self, stones: Iterable[Stone]) -> None:
        """Read git's index once before ``stones`` are checked: the route's own files (stones, guards, the
        default artifacts, approval markers) and, when guards name artifacts elsewhere, those directories.
        Stones that cannot be looked at are left to ``check``, which reports them.

        The files of ``stones`` that git does not vouch for (a robot's uncommitted work) are hashed
        together, by one git process, when the first of them is needed."""
        self._batch = {stone.name: stone for stone in stones}
        if self._snapshot_read:
            return
        self._snapshot_read = True
        if self.repo is None:
            return
        from routedriver import gitops

        approvals = sorted(name for name in self.names if name.endswith(".approved"))
        self._snapshot = gitops.route_snapshot(self.repo, self._rel.rstrip("/") or ".", approvals)
        elsewhere: set[str] = set()
        for stone in self._batch.values():
            try:
                found = self.artifacts(stone)
            except Refused:
                continue
            elsewhere.update(
                path.rpartition("/")[0]
                for path in found
                if not path.startswith(self._rel) or "/" in path[len(self._rel) :]
            )
        if self._snapshot is not None and elsewhere and not any(path.startswith("../") for path in elsewhere):
            self._snapshot = self._snapshot.merged(
                gitops.snapshot_of(self.repo, [f"{d}/x" for d in elsewhere])
            )

    @property
    def snapshot(self) -> gitops.IndexSnapshot | None:
        return self._snapshot

    def needs_checking(self, stone: Stone) -> bool:
        """Has the stone any record of a pass (else it is simply incomplete, nothing to read)?"""
        name = stone.name
        found = self.files.get(name)
        return (found is not None and bool(found.passes)) or store.legacy_passed_name(name) in self.names

    def _wanted(self, stone: Stone) -> dict[str, str | Path]:
        """``{relative: absolute}`` of every file the stone's pass covers: its artifacts, the files its
        guard's ``inputs:`` name, its stone file, its guard and its approval marker (those it has)."""
        name = stone.name
        wanted: dict[str, str | Path] = dict(self.artifacts(stone))
        wanted.update(self._input_files(stone))
        wanted[f"{self._rel}{name}.stone"] = f"{self._abs}{name}.stone"
        if stone.has_guard:
            wanted[f"{self._rel}{name}.guard"] = f"{self._abs}{name}.guard"
        if f"{name}.approved" in self.names:
            wanted[f"{self._rel}{STATE_DIR}/{name}.approved"] = (
                f"{self._abs}{STATE_DIR}{os.sep}{name}.approved"
            )
        return wanted

    def _unvouched(self, wanted: Mapping[str, str | Path], ids: dict[str, str]) -> dict[str, str | Path]:
        """Those of ``wanted`` git's index does not vouch for; the ids of the others go into ``ids``."""
        snapshot = self._snapshot
        if snapshot is None:
            return dict(wanted)
        missing: dict[str, str | Path] = {}
        modified, staged = snapshot.modified, snapshot.staged
        for relative, path in wanted.items():  # once per artifact: 100,000 in a large route
            known = None if relative in modified else staged.get(relative)
            if known is None:
                missing[relative] = path
            else:
                ids[relative] = known
        return missing

    def _hash_batch(self) -> dict[str, str]:
        """Content ids of the files of every stone ``prepare`` was given that git does not vouch for, hashed
        in one go. Empty when one of them cannot be hashed: each stone then hashes its own files, so only
        the stone that file belongs to is reported broken, saying why."""
        if self._hashed is None:
            self._hashed = {}
            missing: dict[str, str | Path] = {}
            for stone in self._batch.values():
                try:
                    missing.update(self._unvouched(self._wanted(stone), {}))
                except Refused:
                    continue  # check reports it
            if missing:
                with contextlib.suppress(Refused):
                    self._hashed = hashing.content_ids_of(
                        missing, self.repo, None, from_disk=True, skip_unhashable=True
                    ).ids
        return self._hashed

    def inputs(self, stone: Stone) -> StoneInputs:
        """The stone's inputs now, from git's index where it vouches for the files (else from disk)."""
        name = stone.name
        stone_rel = f"{self._rel}{name}.stone"
        guard_rel = f"{self._rel}{name}.guard" if stone.has_guard else None
        approval_rel = f"{self._rel}{STATE_DIR}/{name}.approved"
        has_approval = f"{name}.approved" in self.names
        wanted = self._wanted(stone)
        named = self._input_files(stone)
        ids: dict[str, str] = {}
        missing = self._unvouched(wanted, ids)
        if missing and name in self._batch:
            missing = _take(self._hash_batch(), missing, ids)
        if missing:
            ids.update(hashing.content_ids_of(missing, self.repo, None, from_disk=True).ids)
        artifact_ids = {path: ids[path] for path in self.artifacts(stone)}
        input_ids = {path: ids[path] for path in named}
        return StoneInputs(
            artifact_ids,
            hashing.review_input_hash(artifact_ids, input_ids),
            ids[stone_rel],
            ids[guard_rel] if guard_rel is not None else None,
            ids[approval_rel] if has_approval else None,
            input_ids,
        )

    def _input_files(self, stone: Stone) -> dict[str, str]:
        """The files the stone's guard names under ``inputs:`` (none for most stones, found without parsing
        their guard: see ``_read_artifact_guard``)."""
        guard, _required = self._artifact_guard(stone)
        if guard is None or not guard.inputs:
            return {}
        from routedriver.route.artifacts import input_files as files_of

        return files_of(guard.inputs, self.route, stone, self.base, self._listings)

    def approvers(self) -> Approvers:
        if self._approvers is None:
            from routedriver.route.provenance import find_approvers

            self._approvers = find_approvers(self.route, self.repo)
        return self._approvers

    # ------------------------------------------------------------ the one answer

    def check(self, stone: Stone) -> Done:
        """The stone's state (see the module's docstring). A stone that cannot be looked at (its guard does
        not load, an artifact cannot be read) is ``broken``, saying why; callers report it as they must
        (verify: a failing line; drive: a human fixes it)."""
        name = stone.name
        if not self.needs_checking(stone):
            return Done("incomplete", "not passed yet", None, None)
        passes = self.files[name].passes if name in self.files else []
        try:
            _guard, required = self._artifact_guard(stone)
            if not self.artifacts(stone) and required:
                return Done(
                    "stale", "passed, but its artifacts are gone", None, None, stone.path, len(passes)
                )
            inputs = self.inputs(stone)
        except Refused as exc:
            return Done(
                "broken", exc.line().removeprefix("error: "), None, None, stone.guard_path or stone.path
            )
        wanted = store.pass_name(name, inputs.key)
        if wanted not in passes:
            return self._stale(self._bare(stone), inputs, passes)
        history = len(passes) - 1
        record: PassRecord | None = None
        if self._reran(name, inputs.review_input_hash):
            path = self.route.state_dir / wanted
            # Several runs of a review for this content: the record says which one the pass relied on.
            record = store.read_pass(path, name)
            if record is None or record.key != inputs.key:
                return Done("broken", _not_written(self.route, path), None, inputs, path, history)
            newer = self._newer_reviews(name, record)
            if newer:
                why = f"a review ran again since the pass ({newer}); run route.stone.set again"
                return Done("stale", why, record, inputs, self.route.state_dir / newer, history)
        unlisted = self._unlisted_approval(stone, inputs) if inputs.approval_id is not None else ""
        if unlisted:
            return Done(
                "unapproved", unlisted, record, inputs, store.approved_path(self.route, name), history
            )
        return Done("passed", "passed", record, inputs, None, history)

    def record(self, stone: Stone, done: Done) -> PassRecord | None:
        """The pass record behind a ``passed`` answer, read and checked (None: it is not what the driver
        wrote)."""
        if done.record is not None or done.inputs is None:
            return done.record
        record = store.read_pass(
            self.route.state_dir / store.pass_name(stone.name, done.inputs.key), stone.name
        )
        return record if record is not None and record.key == done.inputs.key else None

    def _reran(self, stone: str, review_input_hash: str) -> bool:
        """Did some review run more than once on this content (its files' names say so)?"""
        files = self.files.get(stone)
        if files is None or not files.reviews:
            return False
        short = review_input_hash[: store.SHORT]
        positions = [entry.position for entry in files.reviews if entry.short_hash == short]
        return len(positions) != len(set(positions))

    def _newer_reviews(self, stone: str, record: PassRecord) -> str:
        """The name of a review file run after the ones the pass relied on (for the same artifacts and
        place in the guard), or "": a judge reads the latest run of each review."""
        used = {
            entry.position: entry
            for entry in store.review_files(record.files, stone)
            if entry.short_hash == record.review_input_hash[: store.SHORT]
        }
        for entry in self.files[stone].reviews:
            mine = used.get(entry.position)
            if mine is not None and entry.short_hash == mine.short_hash and entry.iteration > mine.iteration:
                return entry.filename
        return ""

    def _unlisted_approval(self, stone: Stone, inputs: StoneInputs) -> str:
        """Why the stone's approval does not count here (its approver is not in the approvers file), or ""."""
        if inputs.approval_id is None:
            return ""
        marker = store.read_marker(store.approved_path(self.route, stone.name), stone.name)
        return unlisted_approver(marker, self.approvers(), self._bare(stone))

    def _stale(self, context: StoneContext, inputs: StoneInputs, passes: Sequence[str]) -> Done:
        """It passed, but not for what it is now: say what changed, against the pass that is closest."""
        stone = context.stone
        found = [
            record
            for name in passes
            if (record := store.read_pass(self.route.state_dir / name, stone.name)) is not None
        ]
        if not found:
            if store.legacy_passed_name(stone.name) in self.names:
                why = (
                    f"it passed under an older routedriver ({self.route.show(self.route.state_dir)}/"
                    f"{store.legacy_passed_name(stone.name)}); run route.stone.set again"
                )
            else:
                why = "its pass records are not what the driver wrote; run route.stone.set again"
            return Done("stale", why, None, inputs, self.route.state_dir, len(passes))
        record = max(found, key=lambda record: _likeness(record, inputs))
        why, file = _what_changed(context, record, inputs)
        return Done("stale", why, record, inputs, file, len(passes))


def _take(
    known: Mapping[str, str], wanted: Mapping[str, str | Path], ids: dict[str, str]
) -> dict[str, str | Path]:
    """Put the ids ``known`` holds for ``wanted`` into ``ids``; return the rest of ``wanted``."""
    rest: dict[str, str | Path] = {}
    for relative, path in wanted.items():
        found = known.get(relative)
        if found is None:
            rest[relative] = path
        else:
            ids[relative] = found
    return rest


def _not_written(route: Route, path: Path) -> str:
    return f"its pass record {route.show(path)} is not what the driver wrote (edited or renamed?)"


def _likeness(record: PassRecord, inputs: StoneInputs) -> tuple[int, int]:
    """How close a pass is to the stone now: the inputs it shares, then the artifacts it shares."""
    same = (
        (record.stone_id == inputs.stone_id)
        + (record.guard_id == inputs.guard_id)
        + (record.approval_id == inputs.approval_id)
        + (record.review_input_hash == inputs.review_input_hash)
    )
    manifest_now = inputs.artifacts
    shared = sum(1 for path, content_id in record.artifacts if manifest_now.get(path) == content_id)
    return same, shared


def _what_changed(context: StoneContext, record: PassRecord, inputs: StoneInputs) -> tuple[str, Path | None]:
    stone = context.stone
    changed: list[str] = []
    file: Path | None = None
    if record.review_input_hash != inputs.review_input_hash:
        described = manifest.describe(record.manifest, inputs.artifacts)
        upstream = manifest.describe(record.inputs, dict(inputs.inputs))
        if described or not upstream:
            changed.append(f"artifacts changed since the pass: {described or 'the artifact set changed'}")
        if upstream:
            # An input is another stone's work (an approved plan): name it, and where it changed.
            changed.append(f"its inputs changed since the pass: {upstream}")
        first = next(
            (
                entry.split(" ", 1)[1]
                for entry in [
                    *manifest.changes(record.manifest, inputs.artifacts),
                    *manifest.changes(record.inputs, dict(inputs.inputs)),
                ]
                if not entry.startswith("removed")
            ),
            None,
        )
        file = context.base / first if first else None
    if record.stone_id != inputs.stone_id:
        changed.append(f"its instructions changed since the pass ({context.route.show(stone.path)})")
        file = file or stone.path
    if record.guard_id != inputs.guard_id:
        guard = context.route.show(stone.guard_path) if stone.guard_path else f"{stone.name}.guard"
        what = (
            "was removed"
            if inputs.guard_id is None
            else "was added"
            if record.guard_id is None
            else "changed"
        )
        changed.append(f"the guard {what} since the pass ({guard})")
        file = file or stone.guard_path or stone.path
    if record.approval_id != inputs.approval_id:
        marker = store.approved_path(context.route, stone.name)
        what = (
            "was removed"
            if inputs.approval_id is None
            else "was added"
            if record.approval_id is None
            else "changed"
        )
        changed.append(f"the approval marker {what} since the pass")
        file = file or marker
    return "; ".join(changed) or "it passed for other inputs", file
