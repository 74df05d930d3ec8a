"""What a pass stands on that a fresh clone will not have: files of a passed stone that are not committed.

``route.verify`` re-derives every pass from the work tree. CI's checkout holds only commits, so a pass whose
artifacts, pass record, review and judge files or approval marker exist only in one work tree is "not passed
yet" there, while the same check in that work tree said ok. So wherever the work tree is not what HEAD holds,
``route.verify`` (and ``route.drive`` once the route is done) names those files and says to commit them.

"Committed" means HEAD holds the file as it is on disk: not untracked (nor ignored by git, which no commit
ever holds), not modified in the work tree, not staged since HEAD. Asked of git in a fixed number of calls
(the index snapshot the caller already has, one ``git diff-index --cached``; ``git ls-files`` and ``git
check-ignore`` only for the files the index lacks), so a clean checkout (CI) costs one extra git call and
changes no answer.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Literal

from routedriver import gitops
from routedriver.later import Later
from routedriver.route import store
from routedriver.route.hashing import relative_posix

if TYPE_CHECKING:
    from routedriver.route.model import Stone
    from routedriver.route.state import Done, Survey

How = Literal[
    "untracked",
    "ignored by git",
    "modified",
    "staged, not committed",
    "no commit yet",
    "outside the repository",
]
SHOWN = 4  # files named in one message; the rest are counted


class Checker:
    """Which files of passed stones HEAD does not hold, for one run: git's index as the caller read it (or
    as read here for the paths asked), and what is staged since HEAD, asked once. A stone whose files the
    index vouches for costs no file read (its pass record is read only when one of its ``.route/`` files is
    not committed), so a clean checkout adds one git call to ``route.verify``, however many stones."""

    def __init__(
        self,
        repo: gitops.Repo,
        snapshot: gitops.IndexSnapshot | None = None,
        *,
        approvers_given: bool = False,
    ) -> None:
        """``approvers_given``: the approvers file was named on the command line (``--approvers``), as CI
        names one taken from the base branch: an input of the check, not a file the passes stand on."""
        self.repo = repo
        self.snapshot = snapshot
        self.approvers_given = approvers_given
        # Asked now, answered while the caller checks its stones.
        self._staged = Later(lambda: gitops.staged_since_head(repo))
        self._dirty: frozenset[str] | None = None
        self._dirty_records: dict[int, bool] = {}  # per Survey (one route): is any .route/ file uncommitted?

    def staged(self) -> frozenset[str] | None:
        return self._staged.get()

    def _all_clean(self, snapshot: gitops.IndexSnapshot, paths: Sequence[str]) -> bool:
        """Does HEAD hold every one of ``paths`` as it is on disk, as far as the index tells (probes in C: a
        stone may have 100,000 artifacts)?"""
        if self._dirty is None:
            staged = self.staged()
            if staged is None:
                return False  # no commit yet: nothing is committed
            self._dirty = snapshot.modified | staged
        # Each path probed in the index's dict and the dirty set; no set of the paths is built (issubset(keys)
        # would also copy all the index's keys into a set on every call).
        return all(map(snapshot.staged.__contains__, paths)) and self._dirty.isdisjoint(paths)

    def stone(self, survey: Survey, stone: Stone, done: Done) -> dict[str, How]:
        """``not_committed`` of the files the stone's current pass stands on (``pass_files``)."""
        snapshot = self.snapshot
        approvers = not self.approvers_given
        if snapshot is None:
            return self.paths(pass_files(survey, stone, done, approvers=approvers))
        quick = pass_files(survey, stone, done, with_records=False, approvers=approvers)
        records = self._records_dirty(survey, snapshot)
        if not records and self._all_clean(snapshot, quick):
            return {}
        return self.paths(pass_files(survey, stone, done, approvers=approvers) if records else quick)

    def _records_dirty(self, survey: Survey, snapshot: gitops.IndexSnapshot) -> bool:
        """Is any file under the route's ``.route/`` (but the driver's local ones) not committed?"""
        known = self._dirty_records.get(id(survey))
        if known is None:
            head = relative_posix(survey.route.state_dir, survey.base) + "/"
            known = self._dirty_records[id(survey)] = not self._all_clean(
                snapshot, [head + name for name in survey.names if _shared(name)]
            )
        return known

    def paths(self, paths: Iterable[str]) -> dict[str, How]:
        """``{path: how}`` for those of ``paths`` (relative to the top-level) that HEAD does not hold as they
        are on disk. A path outside the repository (an artifact glob that climbs out of it) no commit can
        hold; an ``--approvers`` file in the runner's temp is an input of the check, and callers leave it
        out (``approvers_given``). When git cannot answer, nothing more is reported (this is advice; the
        verdict is the caller's)."""
        found: dict[str, How] = {
            path: "outside the repository" for path in paths if path.startswith("../") or os.path.isabs(path)
        }
        wanted = sorted({path for path in paths if path not in found})
        if not wanted:
            return found
        snapshot = self.snapshot or gitops.snapshot_of(self.repo, wanted)
        if snapshot is None:
            return found
        absent = [path for path in wanted if path not in snapshot.staged]
        if absent:
            # The snapshot leaves out tracked entries git does not compare (assume-unchanged, skip-worktree).
            indexed = gitops.in_index(self.repo, absent)
            untracked = [path for path in absent if path not in indexed]
            ignored = gitops.ignored(self.repo, untracked) if untracked else frozenset()
            for path in untracked:
                found[path] = "ignored by git" if path in ignored else "untracked"
        staged = self.staged()
        for path in wanted:
            if path in found:
                continue
            if staged is None:
                found[path] = "no commit yet"
            elif path in snapshot.modified:
                found[path] = "modified"
            elif path in staged:
                found[path] = "staged, not committed"
        return found


def _shared(name: str) -> bool:
    """A ``.route/`` file meant to be committed (not a lock, an interrupted write or hook state, which the
    driver's ``.route/.gitignore`` keeps local)."""
    return not (name.endswith((".lock", ".state")) or name.startswith("."))


def pass_files(
    survey: Survey, stone: Stone, done: Done, *, with_records: bool = True, approvers: bool = True
) -> tuple[str, ...]:
    """The files (relative to the top-level, POSIX) the stone's current pass stands on: its stone and guard,
    its artifacts and its guard's ``inputs:``, its pass record (and, ``with_records``, the review and judge
    files the record names), its approval marker and (``approvers``) the approvers file that decided it."""
    inputs = done.inputs
    if not done.passed or inputs is None:
        return ()
    route, base = survey.route, survey.base
    files = [relative_posix(stone.path, base)]
    if stone.guard_path is not None:
        files.append(relative_posix(stone.guard_path, base))
    files += [*inputs.artifacts, *inputs.inputs]
    files.append(relative_posix(route.state_dir / store.pass_name(stone.name, inputs.key), base))
    if with_records:
        record = survey.record(stone, done)
        if record is not None:
            files += [relative_posix(route.state_dir / name, base) for name in record.files]
    if inputs.approval_id is not None:
        files.append(relative_posix(store.approved_path(route, stone.name), base))
        decided_by = survey.approvers().path if approvers else None
        if decided_by is not None:
            files.append(relative_posix(decided_by, base))
    return tuple(files)


def why(found: Mapping[str, str]) -> str:
    """What ``route.verify`` says of a pass standing on files no commit holds, and what to do."""
    listed = listing(found)
    return (
        f"passed here, but not committed: {listed}; CI's checkout holds only commits, where this stone is "
        f"not passed: {advice(found)}"
    )


def listing(found: Mapping[str, str]) -> str:
    """The first few files and how each is not committed; the rest counted."""
    paths = sorted(found)
    listed = ", ".join(f"{path} ({found[path]})" for path in paths[:SHOWN])
    return listed + (f" and {len(paths) - SHOWN} more" if len(paths) > SHOWN else "")


def advice(found: Mapping[str, str]) -> str:
    """What to do: commit them; where git ignores one, no commit can, so the glob or the rule must change."""
    text = "commit them"
    if "ignored by git" in found.values():
        text += (
            "; git ignores some of them, so no commit will hold them: narrow the guard's artifacts: (or "
            "inputs:) globs so they do not match them, or stop ignoring them"
        )
    if "outside the repository" in found.values():
        text += "; no commit holds a file outside the repository: make the guard's artifacts: name ones in it"
    return text
