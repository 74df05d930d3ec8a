"""The only place routedriver starts subprocesses.

``run`` takes an argv list (or a shell string with ``shell=``), closes stdin unless input is given, captures
stdout and stderr (keeping at most ``max_output`` bytes of each, counting the rest), enforces a timeout by
killing the whole process group, and never raises for a non-zero exit or a missing executable: callers get a
``ProcResult`` and decide what it means.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from typing import NamedTuple

# How long a process group gets between SIGTERM and SIGKILL once we decide to stop it.
TERM_GRACE_S = 1.0
# After the leader exits, how long we keep reading pipes that a leftover child may still hold open.
DRAIN_S = 1.0

# Every child still running, so that an interrupted caller can take its process groups down with it.
_LIVE: dict[int, subprocess.Popen[bytes]] = {}
_LIVE_LOCK = threading.RLock()  # re-entrant: a signal handler on this thread may call kill_running


class ProcResult(NamedTuple):  # not a dataclass: importing dataclasses costs every command ~7 ms
    returncode: int  # the exit status; -N when killed by signal N; 127 when the program was not found
    stdout: str
    stderr: str
    timed_out: bool
    duration_s: float
    stdout_dropped: int = 0  # bytes of stdout beyond max_output that were read and discarded
    stderr_dropped: int = 0

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out


class _Capture(threading.Thread):
    """Reads one pipe to the end, keeping the first ``limit`` bytes and counting the rest."""

    def __init__(self, pipe: object, limit: int | None) -> None:
        super().__init__(daemon=True)
        self.pipe = pipe
        self.limit = limit
        self.chunks: list[bytes] = []
        self.kept = 0
        self.dropped = 0

    def run(self) -> None:
        read = self.pipe.read1 if hasattr(self.pipe, "read1") else self.pipe.read  # type: ignore[attr-defined]
        try:
            while chunk := read(65536):
                if self.limit is None or self.kept < self.limit:
                    room = len(chunk) if self.limit is None else self.limit - self.kept
                    self.chunks.append(chunk[:room])
                    self.kept += min(room, len(chunk))
                    self.dropped += max(0, len(chunk) - room)
                else:
                    self.dropped += len(chunk)
        except (OSError, ValueError):
            pass  # the pipe was closed under us after a kill; what we have is what there was

    def text(self, encoding: str) -> str:
        return b"".join(self.chunks).decode(encoding, errors="replace")


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
    try:
        return _collect(proc, input, timeout, max_output, kill_leftovers, encoding, started)
    finally:
        with _LIVE_LOCK:
            _LIVE.pop(proc.pid, None)


def kill_running(grace_s: float = TERM_GRACE_S) -> int:
    """Stop the process group of every command still running; returns how many there were.

    The CLI calls this when it is interrupted (Ctrl-C) or terminated (SIGTERM), so that reviews and judges
    running in worker threads do not outlive the command that started them. SIGTERM first, all at once;
    SIGKILL for whatever is left after ``grace_s``.
    """
    with _LIVE_LOCK:
        running = list(_LIVE.values())
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for child in running:
            _signal_group(child.pid, sig)
        deadline = time.monotonic() + grace_s
        while sig == signal.SIGTERM and time.monotonic() < deadline:
            if all(child.poll() is not None for child in running):
                break
            time.sleep(0.02)
    return len(running)


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
