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
from collections.abc import Callable, Iterable, Mapping, Sequence
from operator import itemgetter
from pathlib import Path
from typing import TYPE_CHECKING, Literal, NamedTuple

from routedriver import userfile
from routedriver.errors import Refused
from routedriver.route import hashing, manifest, store
from routedriver.route.artifacts import Listings, artifact_paths, default_glob_files
from routedriver.route.artifacts import input_files as guard_input_files
from routedriver.route.model import STATE_DIR, Guard, PassRecord, Route, Stone

# On route.stone.get's path: git only once a stone has a pass to check, and the guard's machinery
# (guardfile, inputs: PyYAML, the judges, the record readers) only once a guard names files to hash, a
# stone's pass does not hold or its approval is looked at. A route whose guards name no files is answered
# without them.
if TYPE_CHECKING:
    from routedriver import gitops
    from routedriver.route.context import StoneContext
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


def write_pass(
    route: Route, stone: str, now: StoneInputs, *, judge_input_hash: str, files: Sequence[str]
) -> Path:
    """Record that ``stone`` passed for the inputs ``now`` on the review and judge files ``files``
    (``store.write_pass``)."""
    return store.write_pass(
        route,
        stone,
        review_input_hash=now.review_input_hash,
        stone_id=now.stone_id,
        guard_id=now.guard_id,
        approval_id=now.approval_id,
        judge_input_hash=judge_input_hash,
        files=files,
        manifest=now.artifacts,
        inputs=now.inputs,
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
    # route.stone.get's path (tests/route/test_get_does_less.py), here and below: the guard's machinery
    # (guardfile, inputs, context), git and the approvals' readers load only when a stone has a pass to check,
    # a guard that names files or an approval
    from routedriver.route.inputs import input_files

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


class _Where:
    """Where the route's files are keyed from: the repository holding the route and its top-level (``base``;
    the current directory outside git). With ``locate`` it is found only when first asked, so a route where
    nothing has passed is answered without starting git."""

    def __init__(self, route: Route, repo: gitops.Repo | None, base: Path, *, locate: bool) -> None:
        self._route = route
        self._repo = repo
        self._base = base
        self._located = not locate
        self.absolute = os.fspath(route.path) + os.sep  # the route's directory, ending in a separator
        self._relative: str | None = None

    def _locate(self) -> None:
        if not self._located:
            # git: only once a stone has a pass to check or a guard that names files
            from routedriver import gitops

            self._located = True
            self._repo = gitops.find_repo(self._route.path)
            self._base = self._repo.toplevel if self._repo is not None else Path.cwd()

    @property
    def repo(self) -> gitops.Repo | None:
        self._locate()
        return self._repo

    @property
    def base(self) -> Path:
        self._locate()
        return self._base

    @property
    def relative(self) -> str:
        """The route's directory as its files are keyed: relative to ``base``, ending in ``/`` (or empty)."""
        if self._relative is None:
            found = hashing.relative_posix(self._route.path, self.base)
            self._relative = "" if found == "." else found + "/"
        return self._relative


class _Vouched:
    """What git vouches for, and the content ids of what it does not.

    Git's index is read ONCE (``read``) for the route's own files and the directories elsewhere its guards
    name: a tracked, unmodified file's id comes from there without opening it. The files it does not vouch
    for (a robot's uncommitted work) are hashed by ONE git process for every stone a command will check
    (``hash_together``), not one per stone."""

    def __init__(self, where: _Where, snapshot: gitops.IndexSnapshot | None) -> None:
        self._where = where
        self.snapshot = snapshot
        self._read = snapshot is not None
        self._hashed: dict[str, str] | None = None  # None until hash_together ran

    def read(self, approvals: Sequence[str], elsewhere: Callable[[], set[str]]) -> None:
        """Read the index once: the route's directory without its records but with the approval markers
        (``approvals``, names under ``.route/``), and then the directories ``elsewhere`` names (those holding
        artifacts outside the route's own directory)."""
        if self._read:
            return
        self._read = True
        repo = self._where.repo
        if repo is None:
            return
        # git: see _locate
        from routedriver import gitops

        self.snapshot = gitops.route_snapshot(repo, self._where.relative.rstrip("/") or ".", approvals)
        directories = elsewhere()
        if self.snapshot is not None and directories and not any(d.startswith("../") for d in directories):
            self.snapshot = self.snapshot.merged(gitops.snapshot_of(repo, [f"{d}/x" for d in directories]))

    def known_id(self, relative: str) -> str | None:
        """The content id git's index vouches for (tracked, regular, unmodified), else None."""
        snapshot = self.snapshot
        if snapshot is None or relative in snapshot.modified:
            return None
        return snapshot.staged.get(relative)

    def unvouched(self, wanted: Mapping[str, str | Path]) -> dict[str, str | Path]:
        """Those of ``wanted`` git's index does not vouch for."""
        snapshot = self.snapshot
        if snapshot is None:
            return dict(wanted)
        modified, staged = snapshot.modified, snapshot.staged
        return {
            relative: path
            for relative, path in wanted.items()  # once per artifact: 100,000 in a large route
            if relative in modified or relative not in staged
        }

    def hash_together(self, unvouched: Mapping[str, str | Path]) -> None:
        """Hash, in one go, the files of every stone that will be checked that git does not vouch for. A file
        that cannot be hashed this way (it is no regular file, or git fails on it) leaves its stone to hash
        its own, so only that stone is reported broken, saying why."""
        self._hashed = {}
        if unvouched:
            with contextlib.suppress(Refused):
                self._hashed = hashing.content_ids_of(
                    unvouched, self._where.repo, None, from_disk=True, skip_unhashable=True
                ).ids

    def ids(
        self, wanted: Mapping[str, str | Path], together: Callable[[], Mapping[str, str | Path]] | None = None
    ) -> dict[str, str]:
        """The content id of each of ``wanted``: from git's index where it vouches for the file, else from
        what ``hash_together`` hashed, else hashed now (from disk). ``together``: what to hash in one go
        when the first file git does not vouch for is met (those of every stone that will be checked)."""
        ids: dict[str, str] = {}
        missing: dict[str, str | Path] = {}
        snapshot = self.snapshot
        modified, staged = (snapshot.modified, snapshot.staged) if snapshot is not None else ((), {})
        for relative, path in wanted.items():  # once per artifact: 100,000 in a large route
            known = None if relative in modified else staged.get(relative)
            if known is None:
                missing[relative] = path
            else:
                ids[relative] = known
        if not missing:
            return ids
        if together is not None and self._hashed is None:
            self.hash_together(together())
        hashed = self._hashed or {}
        rest: dict[str, str | Path] = {}
        for relative, path in missing.items():
            known = hashed.get(relative)
            if known is None:
                rest[relative] = path
            else:
                ids[relative] = known
        if rest:
            ids.update(hashing.content_ids_of(rest, self._where.repo, None, from_disk=True).ids)
        return ids


class _Covered(NamedTuple):
    """The files a pass of one stone covers, as they are now (``{relative: absolute}``): its artifacts, the
    files its guard's ``inputs:`` name, and both with its stone file, its guard and its approval marker
    (those it has)."""

    artifacts: dict[str, str]
    inputs: dict[str, str]
    wanted: dict[str, str | Path]


class _OnDisk:
    """What each stone is made of on disk now: its guard (parsed only where its text names files), its
    artifacts (one listing per directory, shared by every stone), the files its guard's ``inputs:`` name, and
    so every file a pass of it covers (``wanted``)."""

    def __init__(
        self, route: Route, where: _Where, vouched: _Vouched, names: frozenset[str], listings: Listings
    ) -> None:
        self._route = route
        self._where = where
        self._vouched = vouched
        self._names = names
        self._listings = listings
        self._contexts: dict[str, StoneContext] = {}
        self._by_guard_id: dict[str, Guard | None] = {}  # what finding artifacts needs, by guard content
        self._guards: dict[str, tuple[Guard | None, bool]] = {}  # artifact_guard, by stone
        self._artifacts: dict[str, dict[str, str]] = {}
        self._defaults: dict[str, list[str]] | None = None  # default_glob_files, found when first needed
        self._covered: dict[str, _Covered] = {}

    def context(self, stone: Stone) -> StoneContext:
        """The stone with its guard (refuses, naming the problem, when the guard does not load)."""
        found = self._contexts.get(stone.name)
        if found is None:
            # the guard reader (PyYAML) and the judges: only for a stone whose guard is read
            from routedriver.route.context import StoneContext
            from routedriver.route.guardfile import load_guard

            guard = load_guard(self._route, stone)
            where = self._where
            found = self._contexts[stone.name] = StoneContext(
                self._route, stone, guard, where.repo, where.base
            )
        return found

    def bare(self, stone: Stone) -> StoneContext:
        """The stone without its guard parsed: enough to name files and commands, and to hash its inputs."""
        known = self._contexts.get(stone.name)
        if known is not None:
            return known
        # see context
        from routedriver.route.context import StoneContext

        return StoneContext(self._route, stone, None, self._where.repo, self._where.base)

    def artifact_guard(self, stone: Stone) -> tuple[Guard | None, bool]:
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
            guard_id = self._vouched.known_id(f"{self._where.relative}{stone.name}.guard")
            if guard_id is not None and guard_id in self._by_guard_id:
                known = self._by_guard_id[guard_id]
                guard = known._replace(path=stone.directory / f"{stone.name}.guard") if known else None
            else:
                guard = self._read_artifact_guard(stone)
                if guard_id is not None and (guard is None or guard.artifacts):
                    self._by_guard_id[guard_id] = guard
        return guard, guard is None or bool(guard.artifacts)

    def _read_artifact_guard(self, stone: Stone) -> Guard | None:
        """The parsed guard when its text mentions ``artifacts`` or ``inputs`` (which name files to hash),
        else None; refuses a guard that cannot be read (through ``userfile``: a FIFO or a link to /dev/zero
        must not hang or fill memory)."""
        assert stone.guard_path is not None
        text = userfile.read_bytes(stone.guard_path, what="guard", shown=self._route.show(stone.guard_path))
        return self.context(stone).guard if b"artifacts" in text or b"inputs" in text else None

    def artifacts(self, stone: Stone) -> dict[str, str]:
        """``{path relative to the top-level: absolute path}`` of the stone's artifacts now."""
        found = self._artifacts.get(stone.name)
        if found is None:
            guard, _required = self.artifact_guard(stone)
            names = None
            if guard is None:
                if self._defaults is None:
                    self._defaults = default_glob_files(self._route, self._listings)
                names = self._defaults.get(stone.name)
            if names is not None:  # the default glob, straight from the route's listing
                relative, absolute = self._where.relative, self._where.absolute
                found = {relative + name: absolute + name for name in names}
            else:
                base = self._where.base
                paths = artifact_paths(self._route, stone, guard, base, self._listings)
                # Normalized absolute paths: one under base is keyed by what follows it (a slice, where
                # relative_posix per file would cost milliseconds over thousands of artifacts).
                prefix = os.fspath(base).rstrip("/") + "/"  # POSIX paths: routedriver runs on POSIX
                cut = len(prefix)
                if paths and paths[0].startswith(prefix) and paths[-1].startswith(prefix):
                    # Sorted: every path between two that start with the prefix starts with it too, so
                    # all are sliced at once, in C (100,000 artifacts in a large route).
                    found = dict(zip(map(itemgetter(slice(cut, None)), paths), paths, strict=True))
                else:
                    found = {
                        path[cut:] if path.startswith(prefix) else hashing.relative_posix(path, base): path
                        for path in paths
                    }
            self._artifacts[stone.name] = found
        return found

    def input_files(self, stone: Stone) -> dict[str, str]:
        """The files the stone's guard names under ``inputs:`` (none for most stones, found without parsing
        their guard: see ``_read_artifact_guard``)."""
        guard, _required = self.artifact_guard(stone)
        if guard is None or not guard.inputs:
            return {}
        return guard_input_files(guard.inputs, self._route, stone, self._where.base, self._listings)

    def covered(self, stone: Stone) -> _Covered:
        """What a pass of the stone covers, found once: see ``_Covered``."""
        found = self._covered.get(stone.name)
        if found is None:
            name, relative, absolute = stone.name, self._where.relative, self._where.absolute
            artifacts = self.artifacts(stone)
            named = self.input_files(stone)
            wanted: dict[str, str | Path] = {**artifacts, **named}
            wanted[f"{relative}{name}.stone"] = f"{absolute}{name}.stone"
            if stone.has_guard:
                wanted[f"{relative}{name}.guard"] = f"{absolute}{name}.guard"
            if f"{name}.approved" in self._names:
                wanted[f"{relative}{STATE_DIR}/{name}.approved"] = (
                    f"{absolute}{STATE_DIR}{os.sep}{name}.approved"
                )
            found = self._covered[name] = _Covered(artifacts, named, wanted)
        return found


class Survey:
    """One route's state, read once for many stones: the ``.route/`` listing, one listing per artifact
    directory, and ONE read of git's index for the route's own files (``gitops.route_snapshot``).

    Deciding a stone costs no file read when git vouches for its files and its reviews ran once for its
    content: content ids come from the index, the pass record is found by its name, and whether a review ran
    again since is told by the review files' names. A route with 10,000 passed stones is answered from two
    listings and the index; the pass record is read only to tell which of several runs it used, and by
    ``route.verify`` (``record``), which checks the evidence behind a pass.

    Its parts: where the files are keyed from (``_Where``), what each stone is made of on disk
    (``_OnDisk``), what git vouches for and the hashing of the rest (``_Vouched``); here, what a stone's pass
    covers now (``inputs``) and the verdict (``check``).
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
        listings: Listings | None = None,
    ) -> None:
        """``locate``: find the repository holding the route (and so ``base``) only when first needed, so
        a route where nothing has passed is answered without starting git. ``listings``: directories
        already read (the route's own, by ``load_route``)."""
        self.route = route
        self.names = store.list_state(route) if names is None else names
        self.files = store.files_by_stone(self.names)
        self._approvers = approvers
        self._where = _Where(route, repo, base, locate=locate)
        self._vouched = _Vouched(self._where, snapshot)
        self._disk = _OnDisk(route, self._where, self._vouched, self.names, listings or Listings())
        # The stones ``prepare`` was given: their files git does not vouch for are hashed together.
        self._batch: dict[str, Stone] = {}

    @property
    def repo(self) -> gitops.Repo | None:
        return self._where.repo

    @property
    def base(self) -> Path:
        """Where paths are relative to: the git top-level, or the current directory outside git."""
        return self._where.base

    @property
    def snapshot(self) -> gitops.IndexSnapshot | None:
        return self._vouched.snapshot

    def context(self, stone: Stone) -> StoneContext:
        """The stone with its guard (refuses, naming the problem, when the guard does not load)."""
        return self._disk.context(stone)

    def artifacts(self, stone: Stone) -> dict[str, str]:
        """``{path relative to the top-level: absolute path}`` of the stone's artifacts now."""
        return self._disk.artifacts(stone)

    def covered(self, stone: Stone) -> Mapping[str, str | Path]:
        """``{path relative to the top-level: absolute path}`` of every file a pass of the stone covers now:
        its artifacts, its guard's ``inputs:``, its stone file, guard and approval marker."""
        return self._disk.covered(stone).wanted

    def ids(self, files: Mapping[str, str | Path]) -> dict[str, str]:
        """The content ids the checks use for ``files``: git's index where it vouches for one, else hashed."""
        return self._vouched.ids(files)

    def prepare(self, stones: Iterable[Stone]) -> None:
        """Read git's index once before ``stones`` are checked: the route's own files (stones, guards, the
        default artifacts, approval markers) and, when guards name artifacts elsewhere, those directories.
        Stones that cannot be looked at are left to ``check``, which reports them.

        The files of ``stones`` that git does not vouch for (a robot's uncommitted work) are hashed
        together, by one git process, when the first of them is needed."""
        self._batch = {stone.name: stone for stone in stones}
        approvals = sorted(name for name in self.names if name.endswith(".approved"))
        self._vouched.read(approvals, self._elsewhere)

    def _elsewhere(self) -> set[str]:
        """The directories outside the route's own that hold artifacts of the stones ``prepare`` was given."""
        relative = self._where.relative
        cut = len(relative)
        found: set[str] = set()
        for stone in self._batch.values():
            try:
                if self._disk.artifact_guard(stone)[0] is None:
                    continue  # the default glob: its files are in the route's own directory
                artifacts = self._disk.artifacts(stone)
            except Refused:
                continue
            found.update(
                path.rpartition("/")[0]
                for path in artifacts
                if not path.startswith(relative) or "/" in path[cut:]
            )
        return found

    def needs_checking(self, stone: Stone) -> bool:
        """Has the stone any record of a pass (else it is simply incomplete, nothing to read)?"""
        name = stone.name
        found = self.files.get(name)
        return (found is not None and bool(found.passes)) or store.legacy_passed_name(name) in self.names

    def approvers(self) -> Approvers:
        if self._approvers is None:
            # the approvers' reader: only for a stone with an approval
            from routedriver.route.provenance import find_approvers

            self._approvers = find_approvers(self.route, self.repo)
        return self._approvers

    # ------------------------------------------------------------ what a stone's pass covers now

    def inputs(self, stone: Stone) -> StoneInputs:
        """The stone's inputs now, from git's index where it vouches for the files (else from disk)."""
        covered = self._disk.covered(stone)
        name = stone.name
        ids = self._vouched.ids(covered.wanted, self._batch_files if name in self._batch else None)
        relative = self._where.relative
        artifact_ids = {path: ids[path] for path in covered.artifacts}
        input_ids = {path: ids[path] for path in covered.inputs} if covered.inputs else {}
        return StoneInputs(
            artifact_ids,
            hashing.review_input_hash(artifact_ids, input_ids),
            ids[f"{relative}{name}.stone"],
            ids[f"{relative}{name}.guard"] if stone.has_guard else None,
            ids[f"{relative}{STATE_DIR}/{name}.approved"] if f"{name}.approved" in self.names else None,
            input_ids,
        )

    def _batch_files(self) -> dict[str, str | Path]:
        """The files git does not vouch for among those the passes of the stones ``prepare`` was given cover
        (of the stones that can be looked at)."""
        files: dict[str, str | Path] = {}
        for stone in self._batch.values():
            try:
                files.update(self._vouched.unvouched(self._disk.covered(stone).wanted))
            except Refused:
                continue  # check reports it
        return files

    # ------------------------------------------------------------ the verdict

    def check(self, stone: Stone) -> Done:
        """The stone's state (see the module's docstring). A stone that cannot be looked at (its guard does
        not load, an artifact cannot be read) is ``broken``, saying why; callers report it as they must
        (verify: a failing line; drive: a human fixes it)."""
        name = stone.name
        if not self.needs_checking(stone):
            return Done("incomplete", "not passed yet", None, None)  # no record of a pass: nothing to read
        files = self.files.get(name)
        passes = files.passes if files is not None else []
        try:
            _guard, required = self._disk.artifact_guard(stone)
            if not self._disk.artifacts(stone) and required:
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
            return self._stale(self._disk.bare(stone), inputs, passes)
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
        # the approvals' reader: only for a stone with an approval
        from routedriver.route.human_gate import unlisted_approver

        marker = store.read_marker(store.approved_path(self.route, stone.name), stone.name)
        return unlisted_approver(marker, self.approvers(), self._disk.bare(stone))

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
