"""The search tools of the ``files`` set: ``glob`` (paths by pattern) and ``grep`` (lines by regex).

Both walk the tree with ``walk.walk``: symlinked directories are listed but never entered (a link to ``..``
would loop), and paths the permission rules protect (``ToolContext.readable``) are skipped and counted.
grep reads a block at a time, so a file of any size takes bounded memory, and its result says what it
skipped (binary files, FIFOs and devices, unreadable and protected paths) instead of a bare "no matches".

grep matches with the ``regex`` engine (``re``'s syntax), not ``re``: a pattern that backtracks without end
(``(a|aa)+$`` on a long line of ``a``) would hold ``re``'s C loop, and with it the GIL, for ever, so the
loop's thread could never run its SIGINT/SIGTERM handler and bhrain could not be stopped. ``regex`` searches
with the GIL released (``concurrent``), so a stop ends the run at once, and gives up when the call's time
budget (``GREP_SECONDS``) is spent, ending the call with an error result.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import stat
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, BinaryIO

from routedriver import globs
from routedriver.brain.hooks import ToolOutcome
from routedriver.brain.tools.base import ToolContext, fail, ok, tool_path, truncate
from routedriver.brain.tools.walk import Skipped, walk
from routedriver.fsutil import DIRECTORY_FLAGS, realpath

MAX_GLOB_RESULTS = 500
MAX_GREP_MATCHES = 200
MAX_LINE_CHARS = 300
BLOCK_BYTES = 1 << 20  # grep reads, and read skips lines, this much at a time
GREP_SECONDS = 60.0  # one grep call's time budget: searching more ends it with an error result
SPECIAL_FILE = "is not a regular file (a FIFO, socket or device)"
# Directories a code search almost never wants, skipped unless the search starts inside one.
SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        "node_modules",
        "__pycache__",
        ".venv",
        "venv",
        ".tox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
    }
)


def resolve(ctx: ToolContext, file_path: str) -> Path:
    """A tool's path argument: relative to the working directory, or absolute, or under ``~``."""
    return tool_path(ctx.workdir, file_path)


def is_binary(head: bytes) -> bool:
    return b"\x00" in head


def checked_path(ctx: ToolContext, key: str, name: str) -> str:
    """The real path the argument ``key`` (``name``) had when the permission rules checked the call
    (``ToolContext.resolved``); for a tool run without the loop's check (from Python), its real path now."""
    return ctx.resolved[key] if key in ctx.resolved else realpath(resolve(ctx, name), strict=True)


def moved(ctx: ToolContext, name: str, real: str) -> bool:
    """Does ``name`` lead elsewhere now than to ``real``, where it led when the call was checked? ("": it
    could not be resolved then, see ``moved_message``)"""
    try:
        return not real or realpath(resolve(ctx, name), strict=True) != real
    except OSError:  # a link replaced while it was being read: it is changing
        return True


def moved_message(name: str, verb: str, real: str | None = None) -> str:
    if real == "":  # the check could not resolve it (``dispatch.resolved_paths``)
        return (
            f"{name} cannot be resolved (a loop of symlinks, a chain of them too long to follow, or a link "
            f"replaced while it was read), so it was not {verb}; give the path of the file itself"
        )
    return (
        f"{name} changed after the permission check (a symlink now leads elsewhere), so it was not {verb}; "
        "call the tool again to have it checked as it is now"
    )


def open_directory(real: str, *, create: bool = False) -> int:
    """Open the directory at ``real``, a path with no symlink in it (a real path as the check resolved it),
    one component at a time with ``O_NOFOLLOW``: a component made a symlink since then fails (``ENOTDIR`` or
    ``ELOOP``) instead of leading elsewhere, so a tool touches only what the permission rules saw. ``create``
    makes missing directories (as ``mkdir -p``), each inside the one opened before it."""
    fd = os.open("/", DIRECTORY_FLAGS)
    try:
        for part in real.split("/"):
            if not part:
                continue
            try:
                below = os.open(part, DIRECTORY_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
            except FileNotFoundError:
                if not create:
                    raise
                with contextlib.suppress(FileExistsError):  # made by a concurrent call meanwhile
                    os.mkdir(part, dir_fd=fd)
                below = os.open(part, DIRECTORY_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = below
        return fd
    except BaseException:
        os.close(fd)
        raise


def open_regular(real: str) -> tuple[BinaryIO, os.stat_result]:
    """Open the file at ``real`` (a path with no symlink in it, see ``open_directory``) for reading, following
    no symlink and without blocking on a FIFO; the caller checks the mode it returns."""
    parent = open_directory(os.path.dirname(real))
    try:
        fd = os.open(
            os.path.basename(real) or ".", os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW, dir_fd=parent
        )
    finally:
        os.close(parent)
    try:
        info = os.fstat(fd)
        return os.fdopen(fd, "rb"), info
    except BaseException:
        os.close(fd)
        raise


def glob(args: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
    pattern: str = args["pattern"]
    where = args.get("path") or "."
    base = resolve(ctx, where)
    real_root = checked_path(ctx, "path", where)
    if moved(ctx, where, real_root):
        return fail(moved_message(where, "searched", real_root))
    if not os.path.isdir(base):
        return fail(f"{where} is not a directory; pass a directory as path")
    if not pattern.strip():
        return fail("pattern is empty; give a glob pattern such as '**/*.py' or '*'")
    spec = globs.parse(pattern)
    head, rest = spec.head, spec.rest
    absolute = os.path.isabs(head)
    start = Path(head) if absolute else base / head
    shown_root = [p for p in ("" if absolute or where == "." else where, head) if p]
    skipped = Skipped()
    matches: list[str] = []
    if rest is None:
        if os.path.lexists(start) and (not spec.directories or os.path.isdir(start)):
            if ctx.readable is None or ctx.readable(start, os.path.isdir(start)):
                shown = os.path.join(*shown_root) if shown_root else "."
                matches.append(shown + ("/" if spec.directories else ""))
            else:
                skipped.denied += 1
    elif os.path.isdir(start):
        below = rest  # for the closures: mypy keeps the narrowing

        def wanted(parts: tuple[str, ...], is_dir: bool) -> bool:
            return (is_dir or not below.directories) and below.matches("/".join(parts))

        def descend(parts: tuple[str, ...]) -> bool:
            return below.may_match_below("/".join(parts))

        # Hidden names match like any other, so the clutter grep skips is skipped here too, unless the
        # pattern names such a directory (``**/node_modules/**``) or starts inside one.
        skip = SKIP_DIRS.difference(rest.parts)
        entries = walk(
            start, skipped=skipped, skip_dirs=skip, readable=ctx.readable, wanted=wanted, descend=descend
        )
        suffix = "/" if rest.directories else ""
        matches.extend(os.path.join(*shown_root, *entry.parts) + suffix for entry in entries)
    matches.sort()
    note = skipped.note() if skipped.denied else ""  # unreadable corners of a tree are normal for glob
    if not matches:
        return ok(f"no files match {pattern!r} under {where}" + (f" {note}" if note else ""), count=0)
    text = "\n".join(matches[:MAX_GLOB_RESULTS])
    if len(matches) > MAX_GLOB_RESULTS:
        text += (
            f"\n[{len(matches) - MAX_GLOB_RESULTS:,} more matches not shown; use a narrower pattern or path]"
        )
    return ok(_with_note(text, note, ctx, "use a narrower pattern or path"), count=len(matches))


def grep(args: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
    # regex (~8 ms): loaded by the first grep, not by every run
    import regex

    try:
        pattern = regex.compile(args["pattern"])
    except regex.error as exc:
        return fail(
            f"invalid regular expression {args['pattern']!r}: {exc}; fix the pattern (Python re syntax)"
        )
    deadline = time.monotonic() + GREP_SECONDS
    where = args.get("path") or "."
    root = resolve(ctx, where)
    real_root = checked_path(ctx, "path", where)
    if moved(ctx, where, real_root):
        return fail(moved_message(where, "searched", real_root))
    if not os.path.exists(root):
        return fail(f"path not found: {where}; check it with glob")
    skipped = Skipped()
    if os.path.isdir(root):
        entries = walk(
            root, skipped=skipped, skip_dirs=SKIP_DIRS, readable=ctx.readable, wanted=lambda _, d: not d
        )
        files: Iterator[tuple[Path, str | None]] | list[tuple[Path, str | None]] = (
            (e.path, None) for e in entries
        )
    else:
        files = [(root, real_root)]  # the file the permission rules checked as the root
    found: list[str] = []
    total = 0
    for file, real in files:
        if real is None:
            # A file of the walk is read at its real path, which the filter checks itself: the filter's
            # answer on the name alone would not cover a symlink a concurrent call puts there after it.
            try:
                real = realpath(file, strict=True)
            except OSError:  # a link replaced while it was read
                skipped.unreadable += 1
                continue
            if ctx.readable is not None and not ctx.readable(Path(real), False):
                skipped.denied += 1
                continue
        shown_path = _display(file, ctx.workdir)
        try:
            for number, line in _matching_lines(real, pattern.search, deadline, skipped):
                total += 1
                if len(found) < MAX_GREP_MATCHES:
                    found.append(f"{shown_path}:{number}:{line[:MAX_LINE_CHARS]}")
        except TimeoutError:
            return fail(
                f"grep gave up after {GREP_SECONDS:.0f} s in {shown_path}: the pattern {args['pattern']!r} "
                "takes too long (nested repetition such as (a|aa)+ backtracks without end); simplify it "
                "or narrow the path"
            )
    note = skipped.note()
    if not found:
        return ok(f"no matches for {args['pattern']!r} in {where}" + (f" {note}" if note else ""), count=0)
    text = "\n".join(found)
    if total > len(found):
        text += f"\n[{total - len(found):,} more matches not shown; narrow the pattern or the path]"
    return ok(_with_note(text, note, ctx, "narrow the pattern or the path"), count=total)


def _matching_lines(
    real: str, search: Callable[..., object], deadline: float, skipped: Skipped
) -> Iterator[tuple[int, str]]:
    """(line number, line) for each line of the file at the real path ``real`` (no symlink followed, see
    ``open_regular``) ``search`` (a ``regex`` pattern's) finds something in, read a block at a time; raises
    TimeoutError once ``deadline`` (``time.monotonic``) passes."""
    try:
        if not stat.S_ISREG(os.stat(real, follow_symlinks=False).st_mode):
            skipped.special += 1
            return
        handle, info = open_regular(real)
    except OSError:
        skipped.unreadable += 1
        return
    with handle:
        if not stat.S_ISREG(info.st_mode):
            skipped.special += 1
            return
        number, last_hit, rest, first = 1, 0, b"", True
        while True:
            try:
                block = handle.read(BLOCK_BYTES)
            except OSError:
                skipped.unreadable += 1
                return
            if first and is_binary(block[:1024]):
                skipped.binary += 1
                return
            first = False
            chunk = rest + block
            # Cut after the last newline: the text decoded is whole lines (a newline byte is never part of
            # a multi-byte character), and the unfinished line waits for the next block.
            cut = chunk.rfind(b"\n") + 1 if block else len(chunk)
            if block and not cut and len(chunk) > BLOCK_BYTES:
                cut = len(chunk)  # one enormous line: search it in parts (same line number), not whole
            body, rest = chunk[:cut], chunk[cut:]
            if body:
                text = body.decode("utf-8", errors="replace")
                lines = (text.replace("\r\n", "\n") if "\r" in text else text).split("\n")
                ends_line = body.endswith(b"\n")
                if ends_line:
                    lines.pop()  # the empty text after the last newline
                # map/compress run the per-line search in C: most lines of most files do not match. Each
                # search releases the GIL (see the module's docstring) and stops at the deadline.
                timeout = max(deadline - time.monotonic(), 0.0)
                bounded = functools.partial(search, concurrent=True, timeout=timeout)
                for index in itertools.compress(range(len(lines)), map(bounded, lines)):
                    if number + index != last_hit:
                        last_hit = number + index
                        yield last_hit, lines[index]
                number += len(lines) - (0 if ends_line else 1)  # an unfinished line goes on next block
            if not block:
                return


def _with_note(text: str, note: str, ctx: ToolContext, hint: str) -> str:
    """``text`` cut to the output limit, with ``note`` (what was skipped) kept visible after it."""
    limit = ctx.max_output_chars
    if limit > 0 and note:
        limit = max(limit - len(note) - 1, 1)
    shown = truncate(text, limit, hint=hint)[0]
    return f"{shown}\n{note}" if note else shown


def _display(path: Path, workdir: Path) -> str:
    try:
        return str(path.relative_to(workdir))
    except ValueError:
        return str(path)
