"""The only place routedriver starts subprocesses.

``run`` takes an argv list (or a shell string with ``shell=``), closes stdin unless input is given, captures
stdout and stderr (keeping at most ``max_output`` bytes of each: the beginning and the end, counting what was
dropped in between), enforces a timeout by killing the whole process group, and never raises for a non-zero
exit or a program that cannot be started: callers get a ``ProcResult`` and decide what it means. A program
that is missing (127), not executable, too long a command line for ``execve`` or holding text no program
can be given (a NUL byte, a lone surrogate) (126) comes back with ``start_error`` saying why, in words a
message can quote.

Nothing a command starts outlives it (``kill_leftovers``, the default): when the command ends (or times
out), its process group is killed, and on Linux so is every process that left the group (``setsid``, a
daemon's double fork) but still carries the command's mark; see ``leftovers``, which finds them once this
process is their subreaper. Those are killed with SIGKILL and reaped, and the output they still held open
is not waited for. With ``kill_leftovers=False`` what a command leaves goes on (a daemon meant to outlive
it: git's ``fsmonitor--daemon`` or ``gc --auto``, the ``gpg-agent`` a signed commit starts) and its pipes
are read for ``DRAIN_S`` more; a timeout still kills its group.

A command stopped by ``kill_running`` (the CLI on Ctrl-C or SIGTERM) comes back with ``interrupted`` set: its
exit status and output are what our signal made of it, not its own verdict, and callers must not record
them as one. Once the process is stopping for good (``kill_running(stop=True)``), ``run`` starts nothing.

A ``Scope`` narrows that to one caller: commands started while it is entered (in its thread, and in threads
that run a copy of its context) are counted, and ``Scope.stop`` stops them, and only them, the same way;
afterwards nothing starts in that scope. A server that runs several requests at once cancels one that way.

``terminal=`` runs a command in the caller's session and process group with the caller's stdin (and, with
``"all"``, stdout and stderr) instead: it can open ``/dev/tty`` and prompt (a signing passphrase). Ctrl-C
reaches it from the terminal, and ``kill_running`` and a timeout signal it alone (its group is ours).
"""

from __future__ import annotations

import contextlib
import contextvars
import errno
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal, NamedTuple

from routedriver import leftovers

# How long a process group gets between SIGTERM and SIGKILL once we decide to stop it.
TERM_GRACE_S = 1.0
# After the leader exits, how long we keep reading pipes that a leftover child may still hold open.
DRAIN_S = 1.0

# With a limit, this much of the END of a stream is kept too (at most a quarter of the limit): what a
# command prints last (a summary, counts, the error) matters most, the middle of a huge output least.
TAIL_BYTES = 64 << 10

Terminal = Literal["stdin", "all"]


class _Running(NamedTuple):
    popen: subprocess.Popen[bytes]
    grouped: bool  # leads its own session and process group (not with terminal=: it is in ours)
    mark: str | None  # its mark for ``leftovers`` when what it leaves is to be killed


# Every child still running, so that an interrupted caller can take its process groups down with it.
_LIVE: dict[int, _Running] = {}
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
    returncode: int  # the exit status; -N when killed by signal N; 127 / 126 when it could not start
    stdout: str
    stderr: str
    timed_out: bool
    duration_s: float
    stdout_dropped: int = 0  # bytes of stdout beyond max_output that were read and discarded (the middle)
    stderr_dropped: int = 0
    interrupted: bool = False  # stopped by kill_running (or never started while stopping): no verdict
    # Why the command could not be started at all (not found, not executable, too long for execve), in
    # words a message can quote; empty when it ran. Also the whole of stderr then.
    start_error: str = ""

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


def _signal(running: _Running, sig: signal.Signals) -> None:
    """Send ``sig`` to the command's process group (to the command alone when it runs in ours); a group
    that is already gone is not an error."""
    if running.grouped:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(running.popen.pid, sig)
    else:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            running.popen.send_signal(sig)  # checks that it was not reaped (its pid reused) first


def _stop(running: _Running) -> None:
    """SIGTERM the command (its group), then SIGKILL if the leader has not gone after a grace period."""
    for sig, wait_s in ((signal.SIGTERM, TERM_GRACE_S), (signal.SIGKILL, 5.0)):
        _signal(running, sig)
        try:
            running.popen.wait(timeout=wait_s)
            if sig == signal.SIGTERM:
                # The leader is gone; make sure nothing else in its group outlives it.
                _signal(running, signal.SIGKILL)
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
    terminal: Terminal | None = None,
) -> ProcResult:
    """Run ``cmd`` and capture its output; never raises for a failing or missing program.

    ``cmd`` is an argv list, or a string run by ``shell`` (e.g. ``"bash"`` → ``bash -c cmd``). ``env``
    replaces the environment (default: inherit), ``extra_env`` is merged on top. On timeout the whole process
    group is terminated and the output read so far is kept. With ``kill_leftovers`` (default), whatever the
    command started is killed when it ends, also what left its process group (see the module docstring);
    without it, what it leaves may go on (a daemon git starts) and its pipes are read for ``DRAIN_S`` more.

    ``terminal="stdin"`` runs it in our session and process group with our stdin (the terminal), for a
    program that must prompt there; ``"all"`` passes stdout and stderr through too (nothing is captured).
    """
    if isinstance(cmd, str):
        if shell is None:
            raise ValueError("a command string needs shell=, e.g. shell='bash'")
        argv: list[str] = [shell, "-c", cmd]
    else:
        argv = list(cmd)
    if terminal is not None and input is not None:
        raise ValueError("input= and terminal= both want the command's stdin")
    full_env = dict(os.environ if env is None else env)
    if extra_env:
        full_env.update(extra_env)
    mark = None
    if kill_leftovers:
        leftovers.enable()  # before it starts: what it leaves behind must come to us, not to init
        mark = leftovers.new_mark()
        leftovers.marked(full_env, mark)

    started = time.monotonic()
    scope = _SCOPE.get()
    captured = subprocess.PIPE if terminal != "all" else None
    # Started and registered under the lock that kill_running (the CLI's signal handler) and Scope.stop take:
    # a stop either comes first, and nothing starts, or finds the child registered. Without it a child
    # started just before a Ctrl-C would be unknown to the handler, and the daemon thread that started it
    # cut off at exit before it could stop it. Starting a process takes milliseconds; threads wait that long.
    with _LIVE_LOCK:
        if _STOPPING.is_set() or (scope is not None and scope.stopped):
            # Shutting down: a command started now would outlive us (or, in a daemon thread, be cut off).
            return ProcResult(-signal.SIGTERM, "", "not started: stopping\n", False, 0.0, interrupted=True)
        try:
            popen = subprocess.Popen(  # noqa: S603 - the one door: callers pass argv, or a shell by name
                argv,
                cwd=cwd,
                env=full_env,
                stdin=subprocess.PIPE if input is not None else None if terminal else subprocess.DEVNULL,
                stdout=captured,
                stderr=captured,
                # Its own session and process group, so a timeout can kill everything it started; with the
                # terminal it stays in ours, where it may read the terminal without being stopped (SIGTTIN).
                start_new_session=terminal is None,
            )
        except OSError as exc:
            return _not_started(argv, full_env, exc, time.monotonic() - started)
        except ValueError as exc:  # a NUL byte, or a lone surrogate (UnicodeEncodeError): text with no bytes
            why = (
                f"the command holds U+{ord(exc.object[exc.start]):04X}, a half of a UTF-16 pair that has no "
                "bytes to give a program"
                if isinstance(exc, UnicodeEncodeError)
                else "the command holds a NUL byte, which no program can be given"
            )
            return ProcResult(126, "", why + "\n", False, time.monotonic() - started, start_error=why)
        running = _Running(popen, terminal is None, mark)
        _LIVE[popen.pid] = running
        if scope is not None:
            scope._pids.add(popen.pid)
            scope.started += 1
    try:
        result = _collect(running, input, timeout, max_output, encoding, started)
    finally:
        with _LIVE_LOCK:
            _LIVE.pop(popen.pid, None)
            interrupted = popen.pid in _KILLED
            _KILLED.discard(popen.pid)
            if scope is not None:
                scope._pids.discard(popen.pid)
                scope.finished += 1
    return result._replace(interrupted=True) if interrupted else result


# Linux takes at most this many bytes in one argument of execve (MAX_ARG_STRLEN: 32 pages), whatever
# ARG_MAX says about all of them together.
_ONE_ARGUMENT = 32 * 4096


def _not_started(argv: list[str], env: Mapping[str, str], exc: OSError, elapsed: float) -> ProcResult:
    """The result of a command ``Popen`` could not start, saying why in words a message can quote."""
    code = 127 if isinstance(exc, FileNotFoundError | NotADirectoryError) else 126
    if exc.errno == errno.E2BIG:
        longest = max(len(os.fsencode(arg)) for arg in argv)
        if sys.platform.startswith("linux") and longest >= _ONE_ARGUMENT:
            why = (
                f"the command is too long to start: {longest:,} bytes in one argument, and the system "
                f"takes at most {_ONE_ARGUMENT - 1:,}"
            )
        else:
            total = sum(len(os.fsencode(arg)) + 1 for arg in argv)
            total += sum(len(os.fsencode(key)) + len(os.fsencode(value)) + 2 for key, value in env.items())
            why = (
                f"the command is too long to start: {total:,} bytes of arguments and environment, more "
                "than the system takes"
            )
    else:
        # Popen names the directory when it was cwd that failed, else the program.
        where = exc.filename if exc.filename is not None else argv[0]
        why = f"{os.fsdecode(where)}: {exc.strerror or exc}"
    return ProcResult(code, "", why + "\n", False, elapsed, start_error=why)


def stopping() -> bool:
    """Whether ``kill_running(stop=True)`` was called: the process is shutting down."""
    return _STOPPING.is_set()


def resume() -> None:
    """Undo ``kill_running(stop=True)``: for an embedding caller that goes on after an interrupt."""
    _STOPPING.clear()


def kill_running(grace_s: float = TERM_GRACE_S, *, stop: bool = False) -> int:
    """Stop every command still running, and what it left; returns how many commands there were.

    The CLI calls this (with ``stop``) when it is interrupted (Ctrl-C) or terminated (SIGTERM), so that
    reviews and judges running in worker threads do not outlive the command that started them, and no new
    one starts. SIGTERM first, all at once; SIGKILL for whatever is left after ``grace_s``, and for what
    left their groups. Every command signalled here returns a result with ``interrupted`` set, however it
    exited: a child that traps SIGTERM and exits 0 did not pass anything.
    """
    with _LIVE_LOCK:
        if stop:
            _STOPPING.set()
        running = _mark_killed(_LIVE)
    _stop_all(running, grace_s)
    return len(running)


def _mark_killed(pids: Iterable[int]) -> list[_Running]:
    """The live children among ``pids``, marked killed before any signal is sent, so whoever sees the exit
    also sees the mark. Call under ``_LIVE_LOCK``."""
    running = [_LIVE[pid] for pid in pids if pid in _LIVE]
    _KILLED.update(child.popen.pid for child in running)
    return running


def _stop_all(running: list[_Running], grace_s: float) -> None:
    """SIGTERM every process group at once; SIGKILL whatever is left after ``grace_s``, and what the
    commands left behind."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for child in running:
            _signal(child, sig)
        deadline = time.monotonic() + grace_s
        while sig == signal.SIGTERM and time.monotonic() < deadline:
            if all(child.popen.poll() is not None for child in running):
                break
            time.sleep(0.02)
    # Their threads sweep too, once each leader's exit is seen; but a CLI that is stopping exits first.
    marks = [child.mark for child in running if child.mark is not None]
    if marks:
        leftovers.sweep(marks, [child.popen.pid for child in running if child.grouped and child.mark])


def _collect(
    running: _Running,
    input: str | bytes | None,
    timeout: float | None,
    max_output: int | None,
    encoding: str,
    started: float,
) -> ProcResult:
    popen = running.popen
    out, err = _Capture(popen.stdout, max_output), _Capture(popen.stderr, max_output)
    readers = [reader for reader in (out, err) if reader.pipe is not None]
    for reader in readers:
        reader.start()
    if input is not None:
        data = input.encode(encoding) if isinstance(input, str) else input
        threading.Thread(target=_feed, args=(popen, data), daemon=True).start()

    timed_out = False
    try:
        popen.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _stop(running)
    if running.mark is not None:
        # Before reading on: killed, the leftovers let go of the pipes at once.
        leftovers.sweep((running.mark,), (popen.pid,) if running.grouped else ())

    for reader in readers:
        reader.join(DRAIN_S)
    if not any(reader.is_alive() for reader in readers):
        for pipe in (popen.stdout, popen.stderr):
            if pipe is not None:
                pipe.close()
    # else: something we may not kill still holds a pipe open; its reader goes on in the background

    returncode = popen.returncode if popen.returncode is not None else -signal.SIGKILL
    return ProcResult(
        returncode=returncode,
        stdout=out.text(encoding),
        stderr=err.text(encoding),
        timed_out=timed_out,
        duration_s=time.monotonic() - started,
        stdout_dropped=out.dropped,
        stderr_dropped=err.dropped,
    )


def _feed(popen: subprocess.Popen[bytes], data: bytes) -> None:
    assert popen.stdin is not None
    try:
        popen.stdin.write(data)
        popen.stdin.close()
    except (BrokenPipeError, OSError):
        pass  # the child stopped reading; that is its business
