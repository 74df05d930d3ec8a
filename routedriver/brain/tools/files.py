"""The ``files`` tool set: read, write, edit, glob, grep.

Paths are taken relative to the session's working directory (absolute paths and ``~`` work too). Every
failure is an error result that says what to do next, so the model can recover; writes are atomic.
"""

from __future__ import annotations

import glob as globlib
import os
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from routedriver.brain.hooks import ToolOutcome
from routedriver.brain.tools.base import Tool, ToolContext, fail, ok, schema, truncate
from routedriver.fsutil import atomic_write

MAX_GLOB_RESULTS = 500
MAX_GREP_MATCHES = 200
MAX_GREP_FILE_BYTES = 2_000_000
MAX_LINE_CHARS = 300
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
    path = Path(os.path.expanduser(file_path))
    return path if path.is_absolute() else ctx.workdir / path


def _is_binary(head: bytes) -> bool:
    return b"\x00" in head


def read(args: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
    path = resolve(ctx, args["file_path"])
    if not path.exists():
        return fail(f"file not found: {args['file_path']}; check the path or find the file with glob")
    if path.is_dir():
        return fail(f"{args['file_path']} is a directory, not a file; list it with glob, e.g. pattern '*'")
    data = path.read_bytes()
    if _is_binary(data[:8192]):
        return fail(f"{args['file_path']} is a binary file ({len(data):,} bytes); it cannot be read as text")
    text = data.decode("utf-8", errors="replace")
    if not text:
        return ok(f"({args['file_path']} is empty)", bytes=0)
    shown, cut = truncate(
        text,
        ctx.max_output_chars,
        hint="search the file with grep, or print a range with bash, e.g. sed -n '100,200p' FILE",
    )
    return ok(shown, bytes=len(data), truncated_chars=cut)


def write(args: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
    path = resolve(ctx, args["file_path"])
    if path.is_dir():
        return fail(f"{args['file_path']} is a directory; give a file path")
    existed = path.exists()
    mode = path.stat().st_mode & 0o7777 if existed else 0o644
    content: str = args["content"]
    atomic_write(path, content, mode=mode)
    lines = content.count("\n") + (0 if content.endswith("\n") or not content else 1)
    verb = "overwrote" if existed else "created"
    return ok(
        f"{verb} {args['file_path']}: {len(content.encode('utf-8')):,} bytes, {lines} lines",
        created=not existed,
    )


def edit(args: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
    path = resolve(ctx, args["file_path"])
    old, new = args["old_string"], args["new_string"]
    if not path.is_file():
        return fail(f"file not found: {args['file_path']}; create it with write, or check the path with glob")
    if old == new:
        return fail("old_string and new_string are identical; nothing to change")
    if not old:
        return fail("old_string is empty; copy the exact text to replace from the file (read it first)")
    text = path.read_text(encoding="utf-8", errors="replace")
    count = text.count(old)
    if count == 0:
        return fail(
            f"old_string not found in {args['file_path']}; read the file and copy the exact text, "
            "including whitespace and indentation"
        )
    if count > 1:
        return fail(
            f"old_string occurs {count} times in {args['file_path']}; include more surrounding lines "
            "so it matches exactly once"
        )
    start = text.index(old)
    updated = text[:start] + new + text[start + len(old) :]
    atomic_write(path, updated, mode=path.stat().st_mode & 0o7777)
    first_line = updated.count("\n", 0, start) + 1
    lines = updated.splitlines()
    last_line = first_line + max(new.count("\n"), 0)
    lo, hi = max(first_line - 3, 1), min(last_line + 3, len(lines))
    snippet = (
        "\n".join(f"{n:>6}\t{lines[n - 1]}" for n in range(lo, hi + 1))
        if lines
        else "(the file is now empty)"
    )
    shown, _ = truncate(snippet, ctx.max_output_chars, hint="read the file to see the rest")
    return ok(
        f"edited {args['file_path']}: 1 replacement; lines {lo}-{hi} now read:\n{shown}", line=first_line
    )


def glob(args: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
    pattern: str = args["pattern"]
    where = args.get("path") or "."
    base = resolve(ctx, where)
    if not base.is_dir():
        return fail(f"{where} is not a directory; pass a directory as path")
    matches = sorted(
        m
        for m in globlib.glob(pattern, root_dir=base, recursive=True)
        if not (set(Path(m).parts) & {".git", ".hg", ".svn"})
    )
    if not matches:
        return ok(f"no files match {pattern!r} under {where}", count=0)
    shown = [
        m if os.path.isabs(m) or where == "." else os.path.join(where, m) for m in matches[:MAX_GLOB_RESULTS]
    ]
    text = "\n".join(shown)
    if len(matches) > MAX_GLOB_RESULTS:
        text += (
            f"\n[{len(matches) - MAX_GLOB_RESULTS:,} more matches not shown; use a narrower pattern or path]"
        )
    return ok(
        truncate(text, ctx.max_output_chars, hint="use a narrower pattern or path")[0], count=len(matches)
    )


def _walk(root: Path) -> Iterator[Path]:
    if root.is_file():
        yield root
        return
    for current, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS)
        for name in sorted(files):
            yield Path(current) / name


def grep(args: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
    try:
        regex = re.compile(args["pattern"])
    except re.error as exc:
        return fail(
            f"invalid regular expression {args['pattern']!r}: {exc}; fix the pattern (Python re syntax)"
        )
    where = args.get("path") or "."
    root = resolve(ctx, where)
    if not root.exists():
        return fail(f"path not found: {where}; check it with glob")
    found: list[str] = []
    total = 0
    for file in _walk(root):
        try:
            if file.stat().st_size > MAX_GREP_FILE_BYTES:
                continue
            data = file.read_bytes()
        except OSError:
            continue
        if _is_binary(data[:1024]):
            continue
        shown_path = _display(file, ctx.workdir)
        for number, line in enumerate(data.decode("utf-8", errors="replace").splitlines(), 1):
            if regex.search(line):
                total += 1
                if len(found) < MAX_GREP_MATCHES:
                    found.append(f"{shown_path}:{number}:{line[:MAX_LINE_CHARS]}")
    if not found:
        return ok(f"no matches for {args['pattern']!r} in {where}", count=0)
    text = "\n".join(found)
    if total > len(found):
        text += f"\n[{total - len(found):,} more matches not shown; narrow the pattern or the path]"
    return ok(truncate(text, ctx.max_output_chars, hint="narrow the pattern or the path")[0], count=total)


def _display(path: Path, workdir: Path) -> str:
    try:
        return str(path.relative_to(workdir))
    except ValueError:
        return str(path)


def files_tools() -> list[Tool]:
    path_arg = {
        "type": "string",
        "description": "Path to the file, relative to the working directory or absolute.",
    }
    return [
        Tool(
            "read",
            "Read a text file and return its contents.",
            schema({"file_path": path_arg}, ("file_path",)),
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
        ),
        Tool(
            "glob",
            "Find files whose paths match a glob pattern such as '**/*.py'.",
            schema(
                {
                    "pattern": {"type": "string", "description": "Glob pattern; ** matches directories."},
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
