"""``$route/.route/``: file names, listing, pass records, ``.approved`` markers, the lock, atomic writes.

Every file there is front matter then a body (``routedriver.route.frontmatter``); review and judge files
are read and written by ``routedriver.route.records``. Readers are tolerant: a file that is missing,
unreadable, truncated, hand-edited or named oddly is a miss (``None``), never a crash. Writes go through
``fsutil.atomic_write``, so a killed run leaves either nothing or a whole file. This module is on
``route.stone.get``'s path: keep its imports light.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from itertools import filterfalse
from pathlib import Path
from typing import NamedTuple

from routedriver import userfile
from routedriver.errors import Malfunction
from routedriver.fsutil import TEMP_MARK, FileLock, LockTimeout, atomic_write
from routedriver.route import frontmatter as fm
from routedriver.route.hashing import pass_key
from routedriver.route.model import Marker, PassRecord, Route

SHORT = 16  # hex chars of a hash used in file names; the full hash is recorded inside the file
GITIGNORE = (
    "# routedriver: locks, interrupted writes and hook state stay local; the rest may be committed\n"
    "*.lock\n.*.tmp-*\n.*.state\n"
)

_HEX64 = re.compile(r"[0-9a-f]{64}")
_REVIEW_TAIL = re.compile(r"i(\d+)\.([0-9a-f]{16})\.r(\d+)\.md")
_JUDGE_TAIL = re.compile(r"i(\d+)p(\d+)\.([0-9a-f]{16})\.([0-9a-f]{16})\.j(\d+)\.md")
_PASS_PART = ".passed."  # noqa: S105 - a file name's part, not a password
_PASS_TAIL = re.compile(r"[0-9a-f]{16}")


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


# The longest file name the driver makes for a stone, less the stone's own name: a judge's output at its 999th
# iteration, pass and position, as atomic_write first writes it aside (".<name>.tmp-<12 hex digits>"). A
# stone's name may be as long as the system's limit on one file name (255 bytes) leaves room for.
_LONGEST_OWN_NAME = len(f".{judge_name('', 999, 999, '0' * 64, '0' * 64, 999)}{TEMP_MARK}{'0' * 12}")
MAX_STONE_NAME_BYTES = 255 - _LONGEST_OWN_NAME


def pass_name(stone: str, key: str) -> str:
    return f"{stone}{_PASS_PART}{key[:SHORT]}"


def pass_path(route: Route, stone: str, key: str) -> Path:
    return route.state_dir / pass_name(stone, key)


def legacy_passed_name(stone: str) -> str:
    """The one mutable ``$stone.passed`` marker routedriver wrote before pass records (never read now)."""
    return f"{stone}.passed"


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


class ReviewEntry(NamedTuple):
    """A review file as its name describes it."""

    iteration: int
    short_hash: str  # the review-input hash's first SHORT hex digits
    position: int
    filename: str


class JudgeEntry(NamedTuple):
    """A judge file as its name describes it."""

    iteration: int
    pass_number: int
    review_short: str
    judge_short: str
    position: int
    filename: str


def review_files(names: Iterable[str], stone: str) -> list[ReviewEntry]:
    """``(iteration, short hash, position, filename)`` of the stone's review files, by name only."""
    head = f"{stone}.guard.review."
    found = []
    for name in names:
        if name.startswith(head) and (match := _REVIEW_TAIL.fullmatch(name, len(head))):
            found.append(ReviewEntry(int(match[1]), match[2], int(match[3]), name))
    return found


def judge_files(names: Iterable[str], stone: str) -> list[JudgeEntry]:
    """``(iteration, pass, short review hash, short judge hash, position, filename)`` of its judges."""
    head = f"{stone}.guard.judge."
    found = []
    for name in names:
        if name.startswith(head) and (match := _JUDGE_TAIL.fullmatch(name, len(head))):
            found.append(JudgeEntry(int(match[1]), int(match[2]), match[3], match[4], int(match[5]), name))
    return found


def pass_files(names: Iterable[str], stone: str) -> list[str]:
    """The names of the stone's pass records, by name only."""
    head = stone + _PASS_PART
    cut = len(head)
    return [name for name in names if name.startswith(head) and _PASS_TAIL.fullmatch(name, cut)]


def has_marker(names: Iterable[str], stone: str) -> bool:
    """Does the listing hold a record of the stone's history: a pass record or an approval marker (or the
    ``.passed`` marker of older routedriver versions)?"""
    listed = names if isinstance(names, (set, frozenset)) else set(names)
    return (
        f"{stone}.approved" in listed
        or legacy_passed_name(stone) in listed
        or bool(pass_files(listed, stone))
    )


_REVIEW_PART = ".guard.review."
_JUDGE_PART = ".guard.judge."


class StoneFiles(NamedTuple):
    """One stone's files under ``.route/``, told apart by name alone."""

    reviews: list[ReviewEntry]
    judges: list[JudgeEntry]
    passes: list[str]


def files_by_stone(names: Iterable[str]) -> dict[str, StoneFiles]:
    """``StoneFiles`` of every stone at once, in one pass over ``names`` (route.verify reads a whole
    ``.route/``). A name belongs to at most one stone: the part after the LAST ``.guard.review.`` /
    ``.guard.judge.`` / ``.passed.`` is the strict tail, which holds none of them."""
    found: dict[str, StoneFiles] = {}

    def files(stone: str) -> StoneFiles:
        if stone not in found:
            found[stone] = StoneFiles([], [], [])
        return found[stone]

    for name in names:
        at = name.rfind(_REVIEW_PART)
        if at > 0 and (match := _REVIEW_TAIL.fullmatch(name, at + len(_REVIEW_PART))):
            files(name[:at]).reviews.append(ReviewEntry(int(match[1]), match[2], int(match[3]), name))
            continue
        at = name.rfind(_JUDGE_PART)
        if at > 0 and (match := _JUDGE_TAIL.fullmatch(name, at + len(_JUDGE_PART))):
            judge = JudgeEntry(int(match[1]), int(match[2]), match[3], match[4], int(match[5]), name)
            files(name[:at]).judges.append(judge)
            continue
        at = name.rfind(_PASS_PART)
        if at > 0 and _PASS_TAIL.fullmatch(name, at + len(_PASS_PART)):
            files(name[:at]).passes.append(name)
    return found


def is_driver_file(name: str) -> bool:
    """Is ``name``, a file directly under ``.route/``, one the driver writes to be committed: a review,
    judge or pass record, an approval marker (a stone's, ``policy.approved``), the route's ``approvers``, its
    ``.gitignore``, a branch's binding (``route.bind``) or an older version's ``<stone>.passed``?"""
    if name in (".gitignore", "approvers") or name.endswith((".approved", ".passed")):
        return True
    if name.startswith(".bind.") and name.endswith(".flag"):
        return True
    return bool(files_by_stone([name]))


def _is_temp(name: str) -> bool:
    return name.startswith(".") and TEMP_MARK in name  # fsutil.is_temp, on a name (no Path per entry)


def read_text(path: Path) -> str | None:
    """A file of the driver's own under ``.route/`` (a record, a marker, its ``.gitignore``, a hook's state),
    or None when it cannot be read as UTF-8 text: absent, not a regular file (a FIFO a robot made there is
    never waited on), or larger than ``userfile.MAX_BYTES``."""
    try:
        return userfile.read_record(path).decode("utf-8")
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
    fields = _head_fields(text)
    if fields is None:
        return None
    review_input_hash = read_hash(fields, "review_input_hash")
    at = fm.one(fields, "approved_at")
    if review_input_hash is None or at is None or fm.one(fields, "stone") != stone:
        return None
    return Marker(
        path=path,
        stone=stone,
        review_input_hash=review_input_hash,
        at=at,
        raw=text,
        approver_name=fm.one(fields, "approver_name") or "",
        approver_email=fm.one(fields, "approver_email") or "",
    )


def _head_fields(text: str) -> fm.Fields | None:
    """The front matter of a marker or pass record, its ``artifact:`` lines left out (read when asked)."""
    split = fm.split_document(text)
    if split is None:
        return None
    fields: fm.Fields = {}
    # Manifest lines in the driver's form always parse (key "artifact", a plain value) and are skipped here
    # in C: the manifest is read from the text if it is ever asked for. Every other line must parse.
    for line in filterfalse(_MANIFEST_LINE.match, split[0]):
        if not fm.add_line(fields, line):
            return None
    return fields


def read_pass(path: Path, stone: str) -> PassRecord | None:
    """A pass record, or None when it is absent, does not parse, or its name is not the hash of what it
    says it covers (renamed, or edited since the driver wrote it)."""
    text = read_text(path)
    fields = _head_fields(text) if text is not None else None
    if text is None or fields is None or fm.one(fields, "stone") != stone:
        return None
    review_input_hash, judge_input_hash = (
        read_hash(fields, "review_input_hash"),
        read_hash(fields, "judge_input_hash"),
    )
    stone_id = fm.one(fields, "stone_id")
    guard_id, approval_id = fm.one(fields, "guard_id"), fm.one(fields, "approval_id")
    if review_input_hash is None or judge_input_hash is None or not stone_id:
        return None
    key = pass_key(review_input_hash, stone_id=stone_id, guard_id=guard_id, approval_id=approval_id)
    if path.name != pass_name(stone, key):
        return None
    return PassRecord(
        path=path,
        stone=stone,
        key=key,
        review_input_hash=review_input_hash,
        stone_id=stone_id,
        guard_id=guard_id,
        approval_id=approval_id,
        judge_input_hash=judge_input_hash,
        files=tuple(fields.get("file", ())),
        raw=text,
    )


def _manifest_fields(manifest: Mapping[str, str], key: str = "artifact") -> list[tuple[str, fm.Value]]:
    return [(key, f"{content_id} {path}") for path, content_id in sorted(manifest.items())]


# ---------------------------------------------------------------- writers


def utc_now(*, milliseconds: bool = False) -> str:
    now = time.time()
    text = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now))
    return f"{text}.{int(now * 1000) % 1000:03d}Z" if milliseconds else f"{text}Z"


def write_text(path: Path, text: str) -> None:
    """Write one of the driver's own files under ``.route/`` atomically (``fsutil.atomic_write``). They are
    regular files: a symlink, a named pipe or a device node put at the name instead (a robot's shell can) is
    replaced, never written through or into; ``atomic_write`` alone would refuse to replace it."""
    with contextlib.suppress(FileNotFoundError):
        mode = os.lstat(path).st_mode
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):  # a directory there: atomic_write says so
            os.unlink(path)
    atomic_write(path, text)


def ensure_state_dir(route: Route) -> None:
    """Create ``.route/`` and, once, its ``.gitignore`` (locks and temp files are never committed)."""
    ignore = route.state_dir / ".gitignore"
    if not os.path.exists(ignore):
        write_text(ignore, GITIGNORE)


def write_pass(
    route: Route,
    stone: str,
    *,
    review_input_hash: str,
    stone_id: str,
    guard_id: str | None,
    approval_id: str | None,
    judge_input_hash: str,
    files: Sequence[str],
    manifest: Mapping[str, str],
    inputs: Mapping[str, str] | None = None,
) -> Path:
    """Record that the stone passed for exactly these inputs, on these review and judge files: a file named by
    the pass key, holding nothing that depends on the run (no time), so the same pass writes the same bytes
    wherever it is made. Rewritten only when a rerun passed the same inputs on other reviews."""
    key = pass_key(review_input_hash, stone_id=stone_id, guard_id=guard_id, approval_id=approval_id)
    fields: list[tuple[str, fm.Value]] = [
        ("stone", stone),
        ("review_input_hash", review_input_hash),
        ("stone_id", stone_id),
    ]
    if guard_id:
        fields.append(("guard_id", guard_id))
    if approval_id:
        fields.append(("approval_id", approval_id))
    fields += [
        ("judge_input_hash", judge_input_hash),
        *(("file", name) for name in files),
        *_manifest_fields(manifest),
        *_manifest_fields(inputs or {}, "input"),
    ]
    path = pass_path(route, stone, key)
    text = fm.render_document(fields)
    if read_text(path) != text:
        write_text(path, text)
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
    # To the millisecond: approving the same content again (a fresh approval commit) must change the file.
    fields.append(("approved_at", utc_now(milliseconds=True)))
    write_text(path, fm.render_document(fields))
    return path


def remove_pass(route: Route, stone: str, key: str) -> bool:
    """Withdraw the pass for these inputs (a rerun did not pass them again)."""
    try:
        pass_path(route, stone, key).unlink()
    except FileNotFoundError:
        return False
    return True


def stone_lock(route: Route, stone: str) -> FileLock:
    """The per-stone lock held for a whole evaluation (a context manager)."""
    return FileLock(lock_path(route, stone))


def acquire_stone_lock(route: Route, stone: str) -> tuple[FileLock, bool]:
    """Take the stone's lock; also says whether another run held it (then what it saw may have changed)."""
    try:
        lock = FileLock(lock_path(route, stone), timeout=0)
        lock.acquire()
        return lock, False
    except LockTimeout:
        lock = FileLock(lock_path(route, stone))
        lock.acquire()
        return lock, True


@contextlib.contextmanager
def writing(route: Route) -> Iterator[None]:
    """A file the driver cannot write under .route/ (permissions, full disk) is a malfunction, in one line."""
    try:
        yield
    except OSError as exc:
        where = exc.filename or route.show(route.state_dir)
        raise Malfunction(
            f"cannot write {where}: {exc.strerror or exc}", "check permissions and free space"
        ) from None
