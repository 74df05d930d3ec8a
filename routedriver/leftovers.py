"""What a finished command left running, found, killed and reaped: ``proc``'s helper, Linux only.

A command ``proc`` starts leads its own session and process group, and what it starts stays in that group
unless it leaves it (``setsid``, ``setpgid``). A process whose parent exits is re-parented: normally to
init, out of our reach. ``enable()`` makes this process a *child subreaper*
(``prctl(PR_SET_CHILD_SUBREAPER)``), so orphans of our descendants are re-parented to us instead and show
up among our own children (``/proc/self/task/*/children``). ``proc`` also gives every command a mark in its
environment (``ROUTEDRIVER_PROC``: the marks of the commands it runs under, then its own), which
descendants inherit across ``setsid``.

``sweep(marks, groups)`` kills (SIGKILL) and reaps everything that belongs to a command: the members of its
process group or session (``groups``; they may be zombies, whose group and session ``/proc/<pid>/stat``
still shows) and any child of ours whose environment carries one of ``marks``, with the group or session
such a process leads. It repeats until none is left (a killed process's children come to us next) or a
deadline passes.

What it never touches: a child of ours that is neither in those groups nor carries a mark, such as a
``subprocess`` child another thread owns (reaping it would steal the exit status its ``Popen`` waits for).
It never waits for "any child" (``waitpid(-1)``), only for the pids it chose, and sweeps one at a time, so
no pid it looked at is reaped and reused under it.

Out of reach: a process that both leaves the session and drops the mark (``env -i setsid …``), or that
something else starts for it (``systemd-run``, ``at``, a daemon it asks); only a cgroup or a container
holds those. Elsewhere than Linux there is no subreaper: a command's group is still killed.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import signal
import sys
import threading
import time
from collections.abc import Collection, Iterator
from typing import NamedTuple

ENV = "ROUTEDRIVER_PROC"  # space-separated marks: the commands a process runs under, outermost first
SWEEP_S = 2.0  # how long a sweep goes on killing and reaping before it gives up (a D-state process)
_PR_SET_CHILD_SUBREAPER = 36

_COUNTER = itertools.count(1)
# One sweep at a time (re-entrant: the CLI's signal handler may sweep while this thread is sweeping).
_LOCK = threading.RLock()
_ENABLED: list[bool] = []  # [whether this process is a subreaper], once asked


def enable() -> bool:
    """Make this process a child subreaper, once; whether it is one. Costs a ctypes import (~2 ms), so
    only commands that ask for their leftovers to be killed call it."""
    if _ENABLED:
        return _ENABLED[0]
    enabled = False
    if sys.platform.startswith("linux"):
        import ctypes  # here, not at the top: a command that starts only git never pays for it

        try:
            libc = ctypes.CDLL(None, use_errno=True)
            enabled = libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
        except (OSError, AttributeError):
            enabled = False  # no libc we can load, or no prctl in it: only the group kill is left
    _ENABLED.append(enabled)
    return enabled


def new_mark() -> str:
    """A mark no other command of this process (or of any other living one) carries."""
    return f"{os.getpid()}-{next(_COUNTER)}"


def marked(environ: dict[str, str], mark: str) -> None:
    """Add ``mark`` to the chain of marks in ``environ`` (changed in place)."""
    outer = environ.get(ENV, "").split()
    environ[ENV] = " ".join([*outer, mark])


class _Stat(NamedTuple):
    state: str  # "Z" for a zombie
    ppid: int
    pgrp: int
    session: int


def _stat(pid: int) -> _Stat | None:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            raw = handle.read()
    except OSError:
        return None
    # The command name (field 2) may hold spaces and parentheses: the fields we want follow its last ')'.
    fields = raw[raw.rfind(b")") + 2 :].split()
    try:
        return _Stat(fields[0].decode("ascii", "replace"), int(fields[1]), int(fields[2]), int(fields[3]))
    except (IndexError, ValueError):
        return None


def _carries(pid: int, marks: Collection[str]) -> bool:
    """Whether the environment ``pid`` started with holds one of ``marks`` (unreadable: no)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as handle:
            raw = b"\0" + handle.read()
    except OSError:
        return False
    start = raw.find(b"\0" + ENV.encode() + b"=")
    if start < 0:
        return False
    start += len(ENV) + 2
    end = raw.find(b"\0", start)
    chain = raw[start : end if end >= 0 else len(raw)].decode("ascii", "replace").split()
    return any(mark in chain for mark in marks)


def _children() -> Iterator[int]:
    """Our children, whichever thread forked (or was given) them."""
    me = os.getpid()
    try:
        tasks = os.listdir(f"/proc/{me}/task")
    except OSError:
        return
    seen: set[int] = set()
    for task in tasks:
        try:
            with open(f"/proc/{me}/task/{task}/children", "rb") as handle:
                pids = handle.read().split()
        except OSError:
            continue  # a thread that just ended (or a kernel without this file: nothing to find)
        for pid in pids:
            if int(pid) not in seen:
                seen.add(int(pid))
                yield int(pid)


def _exists(group: int) -> bool:
    try:
        os.killpg(group, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _kill(pid: int, *, group: bool) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        if group:
            os.killpg(pid, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)


def sweep(marks: Collection[str], groups: Collection[int], *, within_s: float = SWEEP_S) -> int:
    """Kill and reap what belongs to the commands with ``marks`` and the process groups (and sessions)
    ``groups``; returns how many processes it killed or reaped. ``groups`` are the pids of commands ``proc``
    started in their own session, each the leader of its group: killed with it, but left for its ``Popen``
    to reap (reaping it here would steal the exit status its owner waits for)."""
    if not sys.platform.startswith("linux"):
        for group in groups:
            _kill(group, group=True)
        return 0
    me = os.getpid()
    mine = {os.getpgrp(), os.getsid(0)}
    with _LOCK:
        leaders = set(groups)  # each one its Popen waits for: signalled with its group, never reaped here
        ids = {group for group in groups if group not in mine}
        for group in ids:
            _kill(group, group=True)
        handled: set[int] = set()
        deadline = time.monotonic() + within_s
        pause = 0.001
        while True:
            found = False
            for pid in _children():
                info = _stat(pid)
                if info is None or info.ppid != me or pid in leaders:
                    continue  # gone already, re-parented elsewhere since the listing, or a Popen's own
                ours = pid in handled or info.pgrp in ids or info.session in ids
                if not ours and info.state != "Z" and _carries(pid, marks):
                    ours = True
                    # What is in its group or session descends from the command too (unless it is ours:
                    # a command run in our session). Killed now, while this unreaped child of ours keeps
                    # both ids from being reused.
                    for own in (info.pgrp, info.session):
                        if own not in ids and own not in mine:
                            ids.add(own)
                            _kill(own, group=True)
                if not ours:
                    continue  # not ours to touch
                found = True
                handled.add(pid)
                if info.state == "Z":
                    with contextlib.suppress(ChildProcessError):
                        os.waitpid(pid, os.WNOHANG)
                else:
                    _kill(pid, group=False)
            if not found and not any(_exists(group) for group in ids):
                return len(handled)
            if time.monotonic() > deadline:
                return len(handled)
            time.sleep(pause)
            pause = min(pause * 2, 0.05)
