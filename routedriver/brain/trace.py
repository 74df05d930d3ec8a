"""``--trace FILE``: the whole trajectory as JSON, rewritten atomically after every iteration.

A run killed at any point leaves the trace of its last finished iteration (``status: "running"``); a run
that ends writes ``status`` ``done`` / ``max_iterations`` / ``denied`` / ``error`` … with the totals.
Secrets are redacted before anything is written.

``start`` writes the first version before the first model call, so a path that cannot be written is refused
before the run acts. A later write that fails does not stop the run: ``failure`` says why, and the next write
tries again (each write is the whole trace); the caller reports it if the last write failed.
"""

from __future__ import annotations

import datetime
import errno
import json
import logging
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from routedriver.brain.redact import Redactor
from routedriver.errors import Refused
from routedriver.fsutil import open_directory, realpath, replace_in
from routedriver.llm.types import Message, Usage
from routedriver.userfile import escape_surrogates, file_kind

if TYPE_CHECKING:
    from routedriver.brain.loop import CallRecord, IterationRecord, Loop

TRACE_VERSION = 1
log = logging.getLogger("bhrain")


def message_json(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message.role, "text": message.text}
    if message.tool_calls:
        out["tool_calls"] = [
            {
                "id": c.id,
                "name": c.name,
                "arguments": dict(c.arguments),
                **({"raw_arguments": c.raw_arguments} if c.raw_arguments is not None else {}),
                **({"error": c.error} if c.error else {}),
            }
            for c in message.tool_calls
        ]
    if message.role == "tool":
        out["tool_call_id"] = message.tool_call_id
        out["is_error"] = message.is_error
    return out


def usage_json(usage: Usage) -> dict[str, int]:
    """Token counts as --json and the trace show them; the cache counts are parts of ``input_tokens``."""
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_tokens": usage.cache_read_tokens,
        "cache_write_tokens": usage.cache_write_tokens,
    }


def call_json(call: CallRecord, *, output: bool = True) -> dict[str, Any]:
    out: dict[str, Any] = {
        "name": call.name,
        "input": dict(call.input),
        "ok": call.ok,
        "status": call.status,
        "id": call.call_id,
        "iteration": call.iteration,
        "elapsed_s": round(call.elapsed_s, 4),
    }
    if output:
        out["output"] = call.output
    return out


class TraceWriter:
    def __init__(self, path: Path, meta: Mapping[str, Any], redactor: Redactor, *, workdir: Path) -> None:
        self.path, self.redactor, self.workdir = path, redactor, workdir
        self.failure = ""  # why the latest write failed ("" when it succeeded)
        # The trace's folder, opened at the first write and written through ever after: the commands a run
        # starts may replace the trace with a symlink, or its folder with a link to another, and bhrain
        # (outside the sandbox) must not write through either. See _write.
        self._folder: int | None = None
        self.doc: dict[str, Any] = {
            "version": TRACE_VERSION,
            "started_at": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
            **meta,
            "status": "running",
            "iterations": [],
        }

    def iteration(self, loop: Loop, record: IterationRecord) -> None:
        self.doc["iterations"].append(
            {
                "iteration": record.iteration,
                "context_tokens": record.context_tokens,
                "usage": usage_json(record.usage),
                "elapsed_s": round(record.elapsed_s, 4),
                "text": record.text,
                "tool_calls": [call_json(c) for c in record.calls],
            }
        )
        self.write(loop)

    def finish(self, loop: Loop, status: str, summary: Mapping[str, Any]) -> None:
        self.doc["status"] = status
        self.doc.update(summary)
        self.write(loop)
        if self._folder is not None:
            os.close(self._folder)
            self._folder = None

    def start(self, loop: Loop) -> None:
        """The first write (status ``running``, no iterations); refuses a path it cannot write."""
        problem = self._write(loop)  # a failed write already names the path's problem (see path_problem)
        if problem:
            raise Refused(
                f"cannot write the trace to {self.path}: {problem}",
                "give --trace a file path in a writable directory",
            )

    def write(self, loop: Loop) -> None:
        problem = self._write(loop)
        if problem and not self.failure:
            log.warning("cannot write the trace to %s (%s); the run goes on", self.path, problem)
        self.failure = problem

    def _write(self, loop: Loop) -> str:
        """Write the whole trace; "" or why it could not be written."""
        self.doc["system"] = loop.system
        self.doc["tools"] = [spec.name for spec in loop.tool_specs]
        self.doc["messages"] = [message_json(m) for m in loop.context.messages]
        self.doc["totals"] = {
            "iterations": loop.iteration,
            **usage_json(loop.usage),
            "tool_calls": len(loop.records),
        }
        if loop.cost is not None:
            self.doc["totals"]["cost_usd"] = round(loop.cost, 6)
        text = json.dumps(self.redactor.value(self.doc), ensure_ascii=False, indent=1, default=str)
        # A model's "\udcff" has no UTF-8 bytes: unescaped, it would stop the trace here and after.
        text = escape_surrogates(text)
        try:
            if self._folder is None:
                self._folder = _first_folder(self.path, self.workdir)
            # Whatever else a command put at the name (a link, a pipe) is replaced, never written through.
            found = _at(self._folder, self.path.name)
            existing = found if found is not None and stat.S_ISREG(found.st_mode) else None
            replace_in(self._folder, self.path.name, (text + "\n").encode(), existing=existing, fsync=False)
        except (OSError, ValueError) as exc:  # ValueError: a name no temp file can be made for (NUL)
            return path_problem(self.path) or _reason(exc)
        return ""


def _first_folder(path: Path, workdir: Path) -> int:
    """The trace's folder (made when missing), open; refuses a trace path that is a symlink or no regular
    file, or whose folders inside the working directory hold a symlink: such a link may be one a command of
    an earlier run left there for this one to write through (links outside it are the user's)."""
    if path.name in ("", ".", ".."):
        raise IsADirectoryError(errno.EISDIR, "is a directory", os.fspath(path))
    work = realpath(workdir)
    for parent in Path(os.path.abspath(path)).parents:
        inside = realpath(parent.parent)
        if os.path.islink(parent) and (inside == work or inside.startswith(work + os.sep)):
            what = f"{parent} is a symbolic link in the working directory, where a command may have put it"
            raise OSError(errno.EINVAL, what, os.fspath(path))
    os.makedirs(path.parent, exist_ok=True)
    folder = open_directory(path.parent)
    found = _at(folder, path.name)
    if found is not None and not stat.S_ISREG(found.st_mode):
        os.close(folder)
        raise OSError(errno.EINVAL, f"it is {file_kind(found.st_mode)}, not a regular file", os.fspath(path))
    return folder


def _at(folder: int, name: str) -> os.stat_result | None:
    """What is at ``name`` in ``folder`` (a link is not followed), or None."""
    try:
        return os.stat(name, dir_fd=folder, follow_symlinks=False)
    except FileNotFoundError:
        return None


def path_problem(path: Path) -> str:
    """Why ``path`` cannot be the trace file (missing folders are made), or ""."""
    if path.name in ("", ".", "..") or os.path.isdir(path):
        return "it is a directory"
    for folder in path.parents:
        if os.path.exists(folder) or os.path.islink(folder):
            return "" if os.path.isdir(folder) else f"{folder} is not a directory"
    return ""


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror[:1].lower() + exc.strerror[1:]
    return str(exc) or type(exc).__name__
