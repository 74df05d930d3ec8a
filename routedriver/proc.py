"""The only place routedriver starts subprocesses.

``run`` takes an argv list (or a shell string with ``shell=``), closes stdin unless input is given, captures
stdout and stderr (keeping at most ``max_output`` bytes of each: the beginning and the end, counting what was
dropped in between), enforces a timeout by killing the whole process group, and never raises for a non-zero
exit or a missing executable: callers get a ``ProcResult`` and decide what it means.

A command stopped by ``kill_running`` (the CLI on Ctrl-C or SIGTERM) comes back with ``interrupted`` set: its
exit status and output are what our signal made of it, not its own verdict, and callers must not record
them as one. Once the process is stopping for good (``kill_running(stop=True)``), ``run`` starts nothing.

A ``Scope`` narrows that to one caller: commands started while it is entered (in its thread, and in threads
that run a copy of its context) are counted, and ``Scope.stop`` stops them, and only them, the same way;
afterwards nothing starts in that scope. A server that runs several requests at once cancels one that way.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

# How long a process group gets between SIGTERM and SIGKILL once we decide to stop it.
TERM_GRACE_S = 1.0
# After the leader exits, how long we keep reading pipes that a leftover child may still hold open.
DRAIN_S = 1.0

# With a limit, this much of the END of a stream is kept too (at most a quarter of the limit): what a
# command prints last (a summary, counts, the error) matters most, the middle of a huge output least.
TAIL_BYTES = 64 << 10

# Every child still running, so that an interrupted caller can take its process groups down with it.
_LIVE: dict[int, subprocess.Popen[bytes]] = {}
_LIVE_LOCK = threading.RLock()  # re-entrant: a signal handler on this thread may call kill_running
# Pids in _LIVE that kill_running signalled: their results are marked interrupted. Kept in step with _LIVE
# under _LIVE_LOCK, so a reused pid is never mistaken for a killed one.
_KILLED: set[int] = set()
# Set by kill_running(stop=True): the process is shutting down and starts no more commands.
_STOPPING = threading.Event()


class Scope:
    """The commands one caller starts: ``with scope:`` around its work, ``scope.stop()`` to cancel it.

    Entering sets a context variable, so worker threads see the scope only when they run a copy of the
    caller's context (``contextvars.copy_context().run``). ``started``/``finished``/``running`` count its
    commands (for progress reports); every field is read and written under ``_LIVE_LOCK``.
    """

    def __init__(self) -> None:
        self.stopped = False
        self.started = 0
        self.finished = 0
        self._pids: set[int] = set()
        self._token: contextvars.Token[Scope | None] | None = None

    @property
    def running(self) -> int:
        with _LIVE_LOCK:
            return len(self._pids)

    def __enter__(self) -> Scope:  # once, in one thread; its worker threads copy the context instead
        self._token = _SCOPE.set(self)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            _SCOPE.reset(self._token)
            self._token = None

    def stop(self, grace_s: float = TERM_GRACE_S) -> int:
        """Stop this scope's running commands like ``kill_running`` (they come back ``interrupted``) and
        start none of its commands after; returns how many were running."""
        with _LIVE_LOCK:
            self.stopped = True
            running = _mark_killed(self._pids)
        _stop_all(running, grace_s)
        return len(running)


_SCOPE: contextvars.ContextVar[Scope | None] = contextvars.ContextVar("routedriver_proc_scope", default=None)


class ProcResult(NamedTuple):  # not a dataclass: importing dataclasses costs every command ~7 ms
    returncode: int  # the exit status; -N when killed by signal N; 127 when the program was not found
    stdout: str
    stderr: str
    timed_out: bool
    duration_s: float
    stdout_dropped: int = 0  # bytes of stdout beyond max_output that were read and discarded (the middle)
    stderr_dropped: int = 0
    interrupted: bool = False  # stopped by kill_running (or never started while stopping): no verdict

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out and not self.interrupted


class _Capture(threading.Thread):
    """Reads one pipe to the end. With a ``limit``, keeps the first bytes and the last ones (``TAIL_BYTES``,
    at most a quarter of the limit), ``limit`` bytes in all, and counts what it dropped in between."""

    def __init__(self, pipe: object, limit: int | None) -> None:
        super().__init__(daemon=True)
        self.pipe = pipe
        limit = None if limit is None else max(limit, 0)
        self.tail_limit = 0 if limit is None else min(TAIL_BYTES, limit // 4)
        self.head_limit = None if limit is None else limit - self.tail_limit
        self.head = bytearray()
        self.tail = bytearray()  # a window over the end of the stream, trimmed now and then
        self.seen = 0

    def run(self) -> None:
        read = self.pipe.read1 if hasattr(self.pipe, "read1") else self.pipe.read  # type: ignore[attr-defined]
        try:
            while chunk := read(65536):
                self.seen += len(chunk)
                if self.head_limit is None:
                    self.head += chunk
                    continue
                room = self.head_limit - len(self.head)
                if room > 0:
                    self.head += chunk[:room]
                    chunk = chunk[room:]
                if chunk and self.tail_limit:
                    self.tail += chunk
                    if len(self.tail) > 2 * self.tail_limit:  # trim in bulk: amortized O(1) per byte
                        del self.tail[: -self.tail_limit]
        except (OSError, ValueError):
            pass  # the pipe was closed under us after a kill; what we have is what there was

    def _kept_tail(self) -> bytes:
        return bytes(self.tail[-self.tail_limit :]) if self.tail_limit else b""

    @property
    def dropped(self) -> int:
        return self.seen - len(self.head) - len(self._kept_tail())

    def text(self, encoding: str) -> str:
        head, tail, dropped = bytes(self.head), self._kept_tail(), self.dropped
        if not dropped or not (head or tail):
            return (head + tail).decode(encoding, errors="replace")
        # Mark the gap on lines of its own, so the two sides never join into one misleading line.
        gap = f"\n[routedriver: {dropped:,} bytes of output dropped here]\n"
        return head.decode(encoding, errors="replace") + gap + tail.decode(encoding, errors="replace")


def _signal_group(pid: int, sig: signal.Signals) -> None:
    """Send ``sig`` to the process group led by ``pid``; a group that is already gone is not an error."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM the process group, then SIGKILL it if the leader has not gone after a grace period."""
    for sig, wait_s in ((signal.SIGTERM, TERM_GRACE_S), (signal.SIGKILL, 5.0)):
        _signal_group(proc.pid, sig)
        try:
            proc.wait(timeout=wait_s)
            if sig == signal.SIGTERM:
                # The leader is gone; make sure nothing else in its group outlives it.
                _signal_group(proc.pid, signal.SIGKILL)
            return
        except subprocess.TimeoutExpired:
            continue


def run(
    cmd: str | Sequence[str],
    *,
    shell: str | None = None,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    extra_env: Mapping[str, str] | None = None,
    timeout: float | None = None,
    input: str | bytes | None = None,
    max_output: int | None = None,
    kill_leftovers: bool = True,
    encoding: str = "utf-8",
) -> ProcResult:
    """Run ``cmd`` and capture its output; never raises for a failing or missing program.

    ``cmd`` is an argv list, or a string run by ``shell`` (e.g. ``"bash"`` → ``bash -c cmd``). ``env``
    replaces the environment (default: inherit), ``extra_env`` is merged on top. On timeout the whole process
    group is terminated and the output read so far is kept. With ``kill_leftovers`` (default), children that
    outlive the leader while holding its pipes are killed too, so no command leaves processes behind.
    """
    if isinstance(cmd, str):
        if shell is None:
            raise ValueError("a command string needs shell=, e.g. shell='bash'")
        argv: list[str] = [shell, "-c", cmd]
    else:
        argv = list(cmd)
    full_env = dict(os.environ if env is None else env)
    if extra_env:
        full_env.update(extra_env)

    started = time.monotonic()
    scope = _SCOPE.get()
    if _STOPPING.is_set() or (scope is not None and scope.stopped):
        # Shutting down: a command started now would outlive us (or, in a daemon thread, be cut off).
        return ProcResult(-signal.SIGTERM, "", "not started: stopping\n", False, 0.0, interrupted=True)
    try:
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=full_env,
            stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,  # its own process group, so a timeout can kill everything it started
        )
    except (FileNotFoundError, PermissionError, NotADirectoryError) as exc:
        return ProcResult(127, "", f"{argv[0]}: {exc.strerror or exc}\n", False, time.monotonic() - started)

    with _LIVE_LOCK:
        _LIVE[proc.pid] = proc
        # Stopping began between our check and now: kill_running (or Scope.stop) missed it.
        late = _STOPPING.is_set() or (scope is not None and scope.stopped)
        if late:
            _KILLED.add(proc.pid)
        if scope is not None:
            scope._pids.add(proc.pid)
            scope.started += 1
    try:
        if late:
            _kill_group(proc)
        result = _collect(proc, input, timeout, max_output, kill_leftovers, encoding, started)
    finally:
        with _LIVE_LOCK:
            _LIVE.pop(proc.pid, None)
            interrupted = proc.pid in _KILLED
            _KILLED.discard(proc.pid)
            if scope is not None:
                scope._pids.discard(proc.pid)
                scope.finished += 1
    return result._replace(interrupted=True) if interrupted else result


def stopping() -> bool:
    """Whether ``kill_running(stop=True)`` was called: the process is shutting down."""
    return _STOPPING.is_set()


def resume() -> None:
    """Undo ``kill_running(stop=True)``: for an embedding caller that goes on after an interrupt."""
    _STOPPING.clear()


def kill_running(grace_s: float = TERM_GRACE_S, *, stop: bool = False) -> int:
    """Stop the process group of every command still running; returns how many there were.

    The CLI calls this (with ``stop``) when it is interrupted (Ctrl-C) or terminated (SIGTERM), so that
    reviews and judges running in worker threads do not outlive the command that started them, and no new
    one starts. SIGTERM first, all at once; SIGKILL for whatever is left after ``grace_s``. Every command
    signalled here returns a result with ``interrupted`` set, however it exited: a child that traps SIGTERM
    and exits 0 did not pass anything.
    """
    with _LIVE_LOCK:
        if stop:
            _STOPPING.set()
        running = _mark_killed(_LIVE)
    _stop_all(running, grace_s)
    return len(running)


def _mark_killed(pids: Iterable[int]) -> list[subprocess.Popen[bytes]]:
    """The live children among ``pids``, marked killed before any signal is sent, so whoever sees the exit
    also sees the mark. Call under ``_LIVE_LOCK``."""
    running = [_LIVE[pid] for pid in pids if pid in _LIVE]
    _KILLED.update(child.pid for child in running)
    return running


def _stop_all(running: list[subprocess.Popen[bytes]], grace_s: float) -> None:
    """SIGTERM every process group at once; SIGKILL whatever is left after ``grace_s``."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for child in running:
            _signal_group(child.pid, sig)
        deadline = time.monotonic() + grace_s
        while sig == signal.SIGTERM and time.monotonic() < deadline:
            if all(child.poll() is not None for child in running):
                break
            time.sleep(0.02)


def _collect(
    proc: subprocess.Popen[bytes],
    input: str | bytes | None,
    timeout: float | None,
    max_output: int | None,
    kill_leftovers: bool,
    encoding: str,
    started: float,
) -> ProcResult:
    out, err = _Capture(proc.stdout, max_output), _Capture(proc.stderr, max_output)
    out.start()
    err.start()
    if input is not None:
        data = input.encode(encoding) if isinstance(input, str) else input
        threading.Thread(target=_feed, args=(proc, data), daemon=True).start()

    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc)

    for reader in (out, err):
        reader.join(DRAIN_S)
    if out.is_alive() or err.is_alive():
        # The leader exited but something it started still holds the pipes open.
        if kill_leftovers:
            _signal_group(proc.pid, signal.SIGKILL)
        for reader in (out, err):
            reader.join(DRAIN_S)
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None and not (out.is_alive() or err.is_alive()):
            pipe.close()

    returncode = proc.returncode if proc.returncode is not None else -signal.SIGKILL
    return ProcResult(
        returncode=returncode,
        stdout=out.text(encoding),
        stderr=err.text(encoding),
        timed_out=timed_out,
        duration_s=time.monotonic() - started,
        stdout_dropped=out.dropped,
        stderr_dropped=err.dropped,
    )


def _feed(proc: subprocess.Popen[bytes], data: bytes) -> None:
    assert proc.stdin is not None
    try:
        proc.stdin.write(data)
        proc.stdin.close()
    except (BrokenPipeError, OSError):
        pass  # the child stopped reading; that is its business
