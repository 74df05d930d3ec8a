"""``$route/.route/``: file names, listing, the ``.passed``/``.approved`` markers, the lock, atomic writes.

Every file there is front matter then a body (``routedriver.route.frontmatter``); review and judge files
are read and written by ``routedriver.route.records``. Readers are tolerant: a file that is missing,
unreadable, truncated, hand-edited or named oddly is a miss (``None``), never a crash. Writes go through
``fsutil.atomic_write``, so a killed run leaves either nothing or a whole file. This module is on
``route.stone.get``'s path: keep its imports light.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Container, Iterable, Mapping, Sequence
from itertools import filterfalse
from pathlib import Path
from typing import TYPE_CHECKING

from routedriver.route import frontmatter as fm
from routedriver.route.model import Marker, Route

if TYPE_CHECKING:
    from routedriver.fsutil import FileLock

SHORT = 16  # hex chars of a hash used in file names; the full hash is recorded inside the file
GITIGNORE = (
    "# routedriver: locks, interrupted writes and hook state stay local; the rest may be committed\n"
    "*.lock\n.*.tmp-*\n.*.state\n"
)

_HEX64 = re.compile(r"[0-9a-f]{64}")
_REVIEW_TAIL = re.compile(r"i(\d+)\.([0-9a-f]{16})\.r(\d+)\.md")
_JUDGE_TAIL = re.compile(r"i(\d+)p(\d+)\.([0-9a-f]{16})\.([0-9a-f]{16})\.j(\d+)\.md")


# ---------------------------------------------------------------- names


def review_name(stone: str, iteration: int, review_input_hash: str, position: int) -> str:
    return f"{stone}.guard.review.i{iteration}.{review_input_hash[:SHORT]}.r{position}.md"


def judge_name(
    stone: str, iteration: int, pass_number: int, review_input_hash: str, judge_input_hash: str, position: int
) -> str:
    return (
        f"{stone}.guard.judge.i{iteration}p{pass_number}."
        f"{review_input_hash[:SHORT]}.{judge_input_hash[:SHORT]}.j{position}.md"
    )


def passed_path(route: Route, stone: str) -> Path:
    return route.state_dir / f"{stone}.passed"


def approved_path(route: Route, stone: str) -> Path:
    return route.state_dir / f"{stone}.approved"


def lock_path(route: Route, stone: str) -> Path:
    return route.state_dir / f"{stone}.lock"


def list_state(route: Route) -> frozenset[str]:
    """The names of the files under ``.route/``, without temp leftovers of killed writes."""
    try:
        with os.scandir(route.state_dir) as entries:
            return frozenset(entry.name for entry in entries if not _is_temp(entry.name))
    except OSError:
        return frozenset()


ReviewEntry = tuple[int, str, int, str]  # (iteration, short hash, position, filename)
JudgeEntry = tuple[int, int, str, str, int, str]  # (iteration, pass, short review hash, short judge hash, …)


def review_files(names: Iterable[str], stone: str) -> list[ReviewEntry]:
    """``(iteration, short hash, position, filename)`` of the stone's review files, by name only."""
    head = f"{stone}.guard.review."
    found = []
    for name in names:
        if name.startswith(head) and (match := _REVIEW_TAIL.fullmatch(name, len(head))):
            found.append((int(match[1]), match[2], int(match[3]), name))
    return found


def judge_files(names: Iterable[str], stone: str) -> list[JudgeEntry]:
    """``(iteration, pass, short review hash, short judge hash, position, filename)`` of its judges."""
    head = f"{stone}.guard.judge."
    found = []
    for name in names:
        if name.startswith(head) and (match := _JUDGE_TAIL.fullmatch(name, len(head))):
            found.append((int(match[1]), int(match[2]), match[3], match[4], int(match[5]), name))
    return found


_REVIEW_PART = ".guard.review."
_JUDGE_PART = ".guard.judge."


def files_by_stone(names: Iterable[str]) -> dict[str, tuple[list[ReviewEntry], list[JudgeEntry]]]:
    """``{stone: (review_files(names, stone), judge_files(names, stone))}`` for every stone at once, in one
    pass over ``names`` (route.verify reads a whole ``.route/``). A name belongs to at most one stone: the
    part after the LAST ``.guard.review.``/``.guard.judge.`` is the strict tail, which holds neither."""
    found: dict[str, tuple[list[ReviewEntry], list[JudgeEntry]]] = {}
    for name in names:
        at = name.rfind(_REVIEW_PART)
        if at > 0 and (match := _REVIEW_TAIL.fullmatch(name, at + len(_REVIEW_PART))):
            entry = (int(match[1]), match[2], int(match[3]), name)
            found.setdefault(name[:at], ([], []))[0].append(entry)
        at = name.rfind(_JUDGE_PART)
        if at > 0 and (match := _JUDGE_TAIL.fullmatch(name, at + len(_JUDGE_PART))):
            judge = (int(match[1]), int(match[2]), match[3], match[4], int(match[5]), name)
            found.setdefault(name[:at], ([], []))[1].append(judge)
    return found


def _is_temp(name: str) -> bool:
    return name.startswith(".") and ".tmp-" in name  # fsutil.is_temp, without importing fsutil here


def read_text(path: Path) -> str | None:
    try:
        with open(path, "rb") as handle:  # bytes then decode: cheaper than a text wrapper per marker
            return handle.read().decode("utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def read_hash(fields: fm.Fields, key: str) -> str | None:
    value = fm.one(fields, key)
    return value if value is not None and _HEX64.fullmatch(value) else None


# ---------------------------------------------------------------- readers


def read_marker(path: Path, stone: str) -> Marker | None:
    """A ``.passed`` or ``.approved`` marker, or None when it is absent or does not parse."""
    text = read_text(path)
    return parse_marker(text, path, stone) if text is not None else None


# ``artifact: <content id> <path>``, as the driver writes it: a marker's manifest, hundreds of lines.
_MANIFEST_LINE = re.compile(r"artifact: [0-9a-f]")


def parse_marker(text: str, path: Path, stone: str) -> Marker | None:
    """``read_marker`` of a marker whose ``text`` was already read."""
    split = fm.split_document(text)
    if split is None:
        return None
    fields: fm.Fields = {}
    # Manifest lines in the driver's form always parse (key "artifact", a plain value) and are skipped here
    # in C: Marker.artifacts reads them from the text if it is ever asked. Every other line must parse.
    for line in filterfalse(_MANIFEST_LINE.match, split[0]):
        if not fm.add_line(fields, line):
            return None
    review_input_hash = read_hash(fields, "review_input_hash")
    at = fm.one(fields, "passed_at") or fm.one(fields, "approved_at")
    if review_input_hash is None or at is None or fm.one(fields, "stone") != stone:
        return None
    return Marker(
        path=path,
        stone=stone,
        review_input_hash=review_input_hash,
        judge_input_hash=read_hash(fields, "judge_input_hash"),
        at=at,
        files=tuple(fields.get("file", ())),
        raw=text,
        approver_name=fm.one(fields, "approver_name") or "",
        approver_email=fm.one(fields, "approver_email") or "",
        approval_sha256=read_hash(fields, "approval_sha256"),
        guard_sha256=read_hash(fields, "guard_sha256"),
    )


def manifest_in(text: str) -> tuple[tuple[str, str], ...]:
    """The sorted ``(path, content id)`` pairs of a marker's ``artifact: <content id> <path>`` lines (the id
    first: paths may hold spaces); empty when ``text`` is not a whole front-matter document."""
    split = fm.split_document(text)
    if split is None:
        return ()
    fields: fm.Fields = {}
    for line in split[0]:
        fm.add_line(fields, line)
    entries = []
    for value in fields.get("artifact", ()):
        content_id, _, path = value.partition(" ")
        if path:
            entries.append((path, content_id))
    return tuple(sorted(entries))


def _manifest_fields(manifest: Mapping[str, str]) -> list[tuple[str, fm.Value]]:
    return [("artifact", f"{content_id} {path}") for path, content_id in sorted(manifest.items())]


def has_marker(names: Container[str], stone: str) -> bool:
    """Does the ``.route/`` listing ``names`` hold a marker of ``stone`` (its pass record or its approval)?
    route.verify --base asks it of the base's listing: a removed stone with a marker there was not pruned."""
    return f"{stone}.passed" in names or f"{stone}.approved" in names


def is_passed(route: Route, stone: str, names: frozenset[str] | None = None) -> bool:
    """Completion: the ``.passed`` marker exists and parses. Hashes are not recomputed (route.verify does)."""
    if names is not None and f"{stone}.passed" not in names:
        return False
    return read_marker(passed_path(route, stone), stone) is not None


# ---------------------------------------------------------------- writers


def utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def write_text(path: Path, text: str) -> None:
    """Write atomically (fsutil is imported only by the commands that write)."""
    from routedriver.fsutil import atomic_write

    atomic_write(path, text)


def ensure_state_dir(route: Route) -> None:
    """Create ``.route/`` and, once, its ``.gitignore`` (locks and temp files are never committed)."""
    ignore = route.state_dir / ".gitignore"
    if not ignore.exists():
        write_text(ignore, GITIGNORE)


def write_passed(
    route: Route,
    stone: str,
    review_input_hash: str,
    judge_input_hash: str,
    files: Sequence[str],
    manifest: Mapping[str, str] | None = None,
    approval_sha256: str | None = None,
    guard_sha256: str | None = None,
) -> Path:
    """The stone passed: what for (both hashes, the artifacts' content ids, the approval and guard it saw)
    and on which review and judge files, so route.verify can re-check the claim and say what changed."""
    path = passed_path(route, stone)
    fields: list[tuple[str, fm.Value]] = [
        ("stone", stone),
        ("review_input_hash", review_input_hash),
        ("judge_input_hash", judge_input_hash),
        *(("file", name) for name in files),
        *_manifest_fields(manifest or {}),
    ]
    if approval_sha256:
        fields.append(("approval_sha256", approval_sha256))
    if guard_sha256:
        fields.append(("guard_sha256", guard_sha256))
    fields.append(("passed_at", utc_now()))
    write_text(path, fm.render_document(fields))
    return path


def write_approved(
    route: Route,
    stone: str,
    review_input_hash: str,
    manifest: Mapping[str, str] | None = None,
    approver: tuple[str, str] | None = None,
) -> Path:
    """A human approved the stone's artifacts: who (name, email), which content (hash and manifest), when."""
    path = approved_path(route, stone)
    fields: list[tuple[str, fm.Value]] = [("stone", stone)]
    if approver is not None:
        fields += [("approver_name", approver[0]), ("approver_email", approver[1])]
    fields += [("review_input_hash", review_input_hash), *_manifest_fields(manifest or {})]
    fields.append(("approved_at", utc_now()))
    write_text(path, fm.render_document(fields))
    return path


def remove_passed(route: Route, stone: str) -> bool:
    try:
        passed_path(route, stone).unlink()
    except FileNotFoundError:
        return False
    return True


def stone_lock(route: Route, stone: str) -> FileLock:
    """The per-stone lock held for a whole evaluation (a context manager)."""
    from routedriver.fsutil import FileLock

    return FileLock(lock_path(route, stone))


def acquire_stone_lock(route: Route, stone: str) -> tuple[FileLock, bool]:
    """Take the stone's lock; also says whether another run held it (then what it saw may have changed)."""
    from routedriver.fsutil import FileLock, LockTimeout

    try:
        lock = FileLock(lock_path(route, stone), timeout=0)
        lock.acquire()
        return lock, False
    except LockTimeout:
        lock = FileLock(lock_path(route, stone))
        lock.acquire()
        return lock, True
