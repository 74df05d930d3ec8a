"""The ``files`` tool set: read, write, edit, glob, grep.

Paths are taken relative to the session's working directory (absolute paths and ``~`` work too). Every
failure is an error result that says what to do next, so the model can recover.

Writes are atomic and change only what was asked: ``write`` and ``edit`` write through a symlink to its
target, keep the file's mode, and refuse a read-only file (its owner made it so). ``edit`` works on the
file's exact bytes: CRLF line endings stay, and bytes that are not UTF-8 are carried through unchanged.
``read`` reads only what it can show, and refuses FIFOs and devices, which could block or never end.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator, Mapping
from typing import Any, BinaryIO

from routedriver.brain.hooks import ToolOutcome
from routedriver.brain.tools.base import Tool, ToolContext, fail, ok, schema, truncate
from routedriver.brain.tools.search import (
    BLOCK_BYTES,
    SPECIAL_FILE,
    checked_path,
    glob,
    grep,
    is_binary,
    moved,
    moved_message,
    open_directory,
    open_regular,
)
from routedriver.fsutil import replace_in

MAX_EDIT_BYTES = 50_000_000  # edit holds the file in memory twice; past this, sed in bash is the tool
MAX_READ_CHARS = 10_000_000  # what read shows when the output limit is off (max_output_chars <= 0)
EXACT_READ_BYTES = 4_000_000  # up to this size read takes the whole file, to count what it left out
READ_HINT = "read a range with offset and limit (line numbers), or search the file with grep"


# -- read ----------------------------------------------------------------------------------------------------
def read(args: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
    name: str = args["file_path"]
    offset, limit = args.get("offset"), args.get("limit")
    for key, value in (("offset", offset), ("limit", limit)):
        if value is not None and value < 1:
            return fail(f"{key} must be 1 or more, not {value}; lines are numbered from 1")
    # The file the permission rules saw (symlinks resolved then), opened without following any symlink: a
    # name a concurrent call turned into a link to a protected file is refused, never followed.
    real = checked_path(ctx, "file_path", name)
    if moved(ctx, name, real):
        return fail(moved_message(name, "read", real))
    try:
        info = os.stat(real, follow_symlinks=False)  # a device or FIFO is refused before it is opened
    except FileNotFoundError:
        return fail(f"file not found: {name}; check the path or find the file with glob")
    except OSError as exc:
        return fail(f"cannot read {name}: {exc.strerror}; check the path and its permissions")
    if stat.S_ISDIR(info.st_mode):
        return fail(f"{name} is a directory, not a file; list it with glob, e.g. pattern '*'")
    if not stat.S_ISREG(info.st_mode):
        return fail(f"{name} {SPECIAL_FILE}; read only reads files (head -c N in bash reads part of one)")
    chars = ctx.max_output_chars if ctx.max_output_chars > 0 else MAX_READ_CHARS
    try:
        handle, info = open_regular(real)
        with handle:
            if not stat.S_ISREG(info.st_mode):  # replaced since the stat above
                return fail(f"{name} {SPECIAL_FILE}; read only reads files")
            if is_binary(handle.read(8192)):
                return fail(f"{name} is a binary file ({info.st_size:,} bytes); it cannot be read as text")
            handle.seek(0)
            if offset is None and limit is None:
                return _read_whole(handle, name, info.st_size, chars)
            return _read_lines(handle, name, offset or 1, limit, chars)
    except OSError as exc:
        return fail(f"cannot read {name}: {exc.strerror}; check the path and its permissions")


def _read_whole(handle: BinaryIO, name: str, size: int, chars: int) -> ToolOutcome:
    # Up to 4 bytes a character: chars * 4 bytes always fill the output. A file up to a few MB is read
    # whole anyway, so the notice can say exactly how many characters were left out.
    data = handle.read(max(chars * 4 + 4, EXACT_READ_BYTES))
    if not data:
        return ok(f"({name} is empty)", bytes=0)
    text = data.decode("utf-8", errors="replace")
    if len(data) >= size:  # the whole file: the notice can say exactly how much was cut
        shown, cut = truncate(text, chars, hint=READ_HINT)
        return ok(shown, bytes=size, truncated_chars=cut)
    notice = (
        f"\n[output truncated: showed the first {chars:,} characters of {name} ({size:,} bytes; "
        f"limit {chars:,}); {READ_HINT}]"
    )
    return ok(text[:chars] + notice, bytes=size, truncated_chars=size - len(text[:chars].encode()))


def _read_lines(handle: BinaryIO, name: str, offset: int, limit: int | None, chars: int) -> ToolOutcome:
    budget = chars * 4 + 4
    number = 0
    while number < offset - 1:  # skip to the offset a block at a time, counting newlines
        line = handle.readline(BLOCK_BYTES)
        if not line:
            return fail(f"{name} has {number:,} lines; offset {offset:,} is past the end")
        if line.endswith(b"\n"):
            number += 1
    taken: list[bytes] = []
    size = 0
    while (limit is None or len(taken) < limit) and size <= budget:
        line = handle.readline(budget - size + 1)
        if not line:
            break
        taken.append(line)
        size += len(line)
    more = bool(handle.read(1))
    text = b"".join(taken).decode("utf-8", errors="replace")
    if not taken:
        if number == 0:
            return ok(f"({name} is empty)", bytes=0)
        return fail(f"{name} has {number:,} lines; offset {offset:,} is past the end")
    last = offset + len(taken) - 1
    if len(text) > chars:
        text = text[:chars] + f"\n[output truncated at {chars:,} characters (the limit); {READ_HINT}]"
    elif more:
        text += f"\n[lines {offset:,}-{last:,} shown; the file goes on: read with offset={last + 1}]"
    return ok(text, first_line=offset, last_line=last)


# -- write and edit ------------------------------------------------------------------------------------------
class _Unwritable(Exception):
    """Why a file must not be written, worded as the tool's error result."""


@contextlib.contextmanager
def _target(ctx: ToolContext, name: str, *, create: bool) -> Iterator[tuple[int, str, os.stat_result | None]]:
    """Where a write lands: the directory (open), the file's name in it and its stat if it exists; raises
    ``_Unwritable``. A symlink is written through: the path checked (``checked_path``) is its target.

    The directory is opened along that checked path following no symlink, and the file is replaced in it by
    its descriptor: a concurrent call that swaps a part of the path for a symlink to a protected place makes
    the write fail, never land there. ``create`` makes missing directories, as the write tool does."""
    real = checked_path(ctx, "file_path", name)
    if moved(ctx, name, real):
        raise _Unwritable(moved_message(name, "written", real))
    directory, base = os.path.split(real)
    if not base:
        raise _Unwritable(f"{name} is a directory; give a file path")
    try:
        parent = open_directory(directory, create=create)
    except FileNotFoundError:
        raise _Unwritable(
            f"file not found: {name}; create it with write, or check the path with glob"
        ) from None
    except OSError as exc:
        raise _Unwritable(
            f"cannot write {name}: {exc.strerror}; check the path and its permissions"
        ) from None
    try:
        yield parent, base, _writable(name, base, parent)
    finally:
        os.close(parent)


def _writable(name: str, base: str, parent: int) -> os.stat_result | None:
    """The stat of ``base`` in the directory ``parent`` (None: no such file), or ``_Unwritable``."""
    try:
        info = os.stat(base, dir_fd=parent, follow_symlinks=False)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise _Unwritable(
            f"cannot write {name}: {exc.strerror}; check the path and its permissions"
        ) from None
    if stat.S_ISLNK(info.st_mode):  # the checked path had no symlink left in it
        raise _Unwritable(moved_message(name, "written"))
    if stat.S_ISDIR(info.st_mode):
        raise _Unwritable(f"{name} is a directory; give a file path")
    if not stat.S_ISREG(info.st_mode):
        raise _Unwritable(f"{name} {SPECIAL_FILE}; write and edit only change regular files")
    mode = stat.S_IMODE(info.st_mode)
    # Root may write anything, so the mode bits say what the user meant; os.access covers everyone else.
    if not mode & 0o222:
        why = (
            f"{name} is read-only (mode {mode:o}), so it was left unchanged; it was made read-only on purpose"
        )
        raise _Unwritable(f"{why}: ask the user before changing it")
    if not os.access(base, os.W_OK, dir_fd=parent):
        why = f"you may not write {name} (mode {mode:o}, owner uid {info.st_uid}), so it was left unchanged"
        raise _Unwritable(f"{why}; ask the user to change it or its permissions")
    return info


def _encode(text: str, what: str, errors: str = "strict") -> bytes | str:
    """UTF-8 bytes, or why ``text`` cannot be written (a lone surrogate); ``errors="surrogateescape"`` puts
    back the bytes that were not UTF-8 when the file was read."""
    try:
        return text.encode("utf-8", errors=errors)
    except UnicodeEncodeError as exc:
        bad = exc.object[exc.start : exc.end]
        return f"{what} contains {bad!r}, which cannot be written as UTF-8; fix the text"


def write(args: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
    name, content = args["file_path"], args["content"]
    payload = _encode(content, "content")
    if isinstance(payload, str):
        return fail(payload)
    try:
        with _target(ctx, name, create=True) as (parent, base, info):
            # A new file gets 0644 (less the umask), an existing one keeps its mode.
            replace_in(parent, base, payload, existing=info)
    except _Unwritable as exc:
        return fail(str(exc))
    lines = content.count("\n") + (0 if content.endswith("\n") or not content else 1)
    verb = "overwrote" if info is not None else "created"
    return ok(f"{verb} {name}: {len(payload):,} bytes, {lines} lines", created=info is None)


def edit(args: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
    name: str = args["file_path"]
    old, new = args["old_string"], args["new_string"]
    if old == new:
        return fail("old_string and new_string are identical; nothing to change")
    if not old:
        return fail("old_string is empty; copy the exact text to replace from the file (read it first)")
    try:
        with _target(ctx, name, create=False) as (parent, base, info):
            return _edit_in(ctx, name, old, new, parent, base, info)
    except _Unwritable as exc:
        return fail(str(exc))


def _edit_in(
    ctx: ToolContext, name: str, old: str, new: str, parent: int, base: str, info: os.stat_result | None
) -> ToolOutcome:
    """The edit of ``base`` in the open directory ``parent`` (see ``_target``)."""
    if info is None:
        return fail(f"file not found: {name}; create it with write, or check the path with glob")
    if info.st_size > MAX_EDIT_BYTES:
        return fail(f"{name} is too large to edit ({info.st_size:,} bytes); change it with bash, e.g. sed -i")
    handle, opened = open_regular(checked_path(ctx, "file_path", name))  # the file _writable looked at
    with handle:
        if not stat.S_ISREG(opened.st_mode) or opened.st_size > MAX_EDIT_BYTES:  # replaced meanwhile
            return fail(f"{name} changed while it was being edited; call edit again")
        data = handle.read()
    # surrogateescape keeps bytes that are not UTF-8 as they are; no newline translation keeps CRLF.
    text = data.decode("utf-8", errors="surrogateescape")
    utf8 = not _has_escapes(text)
    count = text.count(old)
    if count == 0 and "\r\n" in text and "\n" in old and "\r" not in old:
        # The model writes "\n"; a CRLF file has "\r\n". Match and replace in the file's own endings.
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
        count = text.count(old)
    if count == 0:
        note = (
            ""
            if utf8
            else f" ({name} is not valid UTF-8: those bytes show as \ufffd in read and cannot be matched; "
            "choose old_string from text without them)"
        )
        return fail(
            f"old_string not found in {name}; read the file and copy the exact text, "
            f"including whitespace and indentation{note}"
        )
    if count > 1:
        return fail(
            f"old_string occurs {count} times in {name}; include more surrounding lines "
            "so it matches exactly once"
        )
    if not utf8 and any(ord(c) > 127 for c in new if not 0xDC80 <= ord(c) <= 0xDCFF):
        return fail(
            f"{name} is not UTF-8 text (another encoding, e.g. Latin-1), and new_string has non-ASCII "
            "characters, which would mix two encodings in one file; use ASCII in new_string, or convert the "
            "file with bash first (e.g. iconv -f latin1 -t utf-8)"
        )
    start = text.index(old)
    updated = text[:start] + new + text[start + len(old) :]
    payload = _encode(updated, "new_string", "surrogateescape")
    if isinstance(payload, str):
        return fail(payload)
    replace_in(parent, base, payload, existing=info)  # keeps the mode; through a symlink, the target changes
    first_line = updated.count("\n", 0, start) + 1
    return ok(_edited(name, updated, first_line, new, ctx), line=first_line)


def _has_escapes(text: str) -> bool:
    return not text.isascii() and any(0xDC80 <= ord(c) <= 0xDCFF for c in text)


def _edited(name: str, updated: str, first_line: int, new: str, ctx: ToolContext) -> str:
    last_line = first_line + new.count("\n")
    lines = updated.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line starts no new one
    lo, hi = max(first_line - 3, 1), min(last_line + 3, len(lines))
    snippet = (
        "\n".join(f"{n:>6}\t{_printable(lines[n - 1].removesuffix(chr(13)))}" for n in range(lo, hi + 1))
        if lines
        else "(the file is now empty)"
    )
    shown, _ = truncate(snippet, ctx.max_output_chars, hint="read the file to see the rest")
    return f"edited {name}: 1 replacement; lines {lo}-{hi} now read:\n{shown}"


def _printable(line: str) -> str:
    """A line for display: bytes that were not UTF-8 show as U+FFFD (a lone surrogate cannot be sent)."""
    if not _has_escapes(line):
        return line
    return line.encode("utf-8", errors="surrogateescape").decode("utf-8", errors="replace")


def files_tools() -> list[Tool]:
    path_arg = {
        "type": "string",
        "description": "Path to the file, relative to the working directory or absolute.",
    }
    return [
        Tool(
            "read",
            "Read a text file and return its contents (or a range of its lines with offset and limit).",
            schema(
                {
                    "file_path": path_arg,
                    "offset": {"type": "integer", "description": "First line to show (1-based)."},
                    "limit": {"type": "integer", "description": "How many lines to show."},
                },
                ("file_path",),
            ),
            read,
            read_only=True,
        ),
        Tool(
            "write",
            "Write content to a file, creating it (and its directories) or replacing it.",
            schema(
                {
                    "file_path": path_arg,
                    "content": {"type": "string", "description": "The full new content."},
                },
                ("file_path", "content"),
            ),
            write,
            restores_secrets=("content",),
        ),
        Tool(
            "edit",
            "Replace one exact occurrence of old_string with new_string in a file.",
            schema(
                {
                    "file_path": path_arg,
                    "old_string": {
                        "type": "string",
                        "description": "Exact text to replace; must occur once.",
                    },
                    "new_string": {"type": "string", "description": "The replacement text."},
                },
                ("file_path", "old_string", "new_string"),
            ),
            edit,
            restores_secrets=("old_string", "new_string"),
        ),
        Tool(
            "glob",
            "Find files whose paths match a glob pattern such as '**/*.py'.",
            schema(
                {
                    "pattern": {
                        "type": "string",
                        "description": "Glob pattern; ** matches any number of directories; wildcards match "
                        "names starting with '.' too; a trailing / lists directories only.",
                    },
                    "path": {"type": "string", "description": "Directory to search (default: working dir)."},
                },
                ("pattern",),
            ),
            glob,
            read_only=True,
        ),
        Tool(
            "grep",
            "Search file contents with a regular expression; returns path:line:text for each match.",
            schema(
                {
                    "pattern": {"type": "string", "description": "Regular expression (Python syntax)."},
                    "path": {
                        "type": "string",
                        "description": "File or directory to search (default: working dir).",
                    },
                },
                ("pattern",),
            ),
            grep,
            read_only=True,
        ),
    ]
