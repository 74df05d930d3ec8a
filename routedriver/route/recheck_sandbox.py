"""Where ``route.verify --recheck`` runs a pull request's commands: under bubblewrap (``--recheck-sandbox``).

A rechecked command may run code the pull request wrote: a judge that runs the tests runs the tests the
robot wrote (they are its stone's artifacts), and whatever they import. Run as the gate's own user, that code
could rewrite the gate itself before it decides (its installed modules, read after the commands ran), the
files the job's next steps read (``$GITHUB_ENV``, ``$GITHUB_OUTPUT``), git's files in the checkout (a
``.git`` of its own with a ``core.fsmonitor`` the gate's next git command would run), or the programs and
modules the next command, of its stone or another, runs (a later judge's ``tools/check.py``). In the sandbox
a command sees the whole file system read-only, the checkout too, but for a scratch directory of its own
(``TMPDIR``, ``XDG_CACHE_HOME``: what one command leaves there, a cache a judge trusts, no other sees); the
host's UNIX sockets masked (``connect()`` ignores a read-only mount, and ``/run/docker.sock`` would start any
container: ``sockets``); fresh ``/dev`` and ``/proc`` in a pid namespace
of its own; every capability dropped; the network kept (reviews call their model). The verdict is decided
outside, by the gate, from what the commands printed. A guard whose commands write into the checkout (a
build's outputs) fails in the sandbox: they write under ``$TMPDIR`` instead, or the run is
``--recheck-sandbox off``.

What it does not stop: a command holds the job's environment (the reviewer's key: give the job that key and
nothing else) and the network (abstract UNIX sockets and services on the host's loopback included).
The sandbox is ``brain.sandbox``'s (the bash tool's), with a policy of its own.
"""

from __future__ import annotations

import itertools
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Literal, NamedTuple

from routedriver import gitops
from routedriver.errors import Refused
from routedriver.fsutil import realpath

Mode = Literal["on", "off", "auto"]
MODES: tuple[Mode, ...] = ("on", "off", "auto")


class Jail(NamedTuple):
    """How recheck starts its commands: ``start`` (None: as they are), and why not in a sandbox."""

    start: Callable[[str], list[str]] | None
    notice: str = ""  # "" when they run in one, or --recheck-sandbox off asked for none


def prepare(mode: Mode, repo: gitops.Repo, scratch: Path) -> Jail:
    """The jail for this run's commands, ``scratch`` (a new directory outside the checkout, removed by the
    caller) their writable temporary space; ``on`` refuses without a working bubblewrap, ``auto`` runs them
    without one and says so (the notice), ``off`` runs them as ``route.stone.set`` does."""
    if mode == "off":
        return Jail(None)
    from routedriver.brain import sandbox  # bubblewrap's argv: only when a recheck runs commands

    top = realpath(repo.toplevel)
    bwrap = sandbox.find_bwrap(os.environ.get("PATH"), Path(top))
    problem = "bwrap is not on PATH" if bwrap is None else sandbox.probe(bwrap, top, network=True)
    if problem:
        remedy = (
            f"{sandbox.INSTALL}; where it cannot make a user namespace, allow them (sysctl "
            "kernel.unprivileged_userns_clone=1; on Ubuntu 24.04 "
            "kernel.apparmor_restrict_unprivileged_userns=0)"
        )
        if mode == "on":
            raise Refused(f"--recheck-sandbox on needs bubblewrap, but {problem}", remedy)
        return Jail(
            None,
            f"notice: recheck ran the pull request's commands without a sandbox ({problem}; "
            f"--recheck-sandbox auto): code they run could change the gate; {remedy}",
        )
    assert bwrap is not None
    scratch.mkdir()
    root = realpath(scratch)
    masked = tuple(sandbox.Mask(path, directory=False) for path in sockets())
    made = itertools.count(1)

    def start(command: str) -> list[str]:
        # Each command gets a scratch directory of its own: what one leaves there (a cache a judge trusts)
        # no other command sees.
        mine = os.path.join(root, str(next(made)))
        os.mkdir(mine)
        policy = sandbox.Policy((mine,), masked=masked, network=True)
        env = {
            "TMPDIR": mine,
            "XDG_CACHE_HOME": os.path.join(mine, ".cache"),
            "PYTHONDONTWRITEBYTECODE": "1",  # the checkout is read-only: no __pycache__ to write
        }
        return sandbox.bwrap_argv(bwrap, policy, command, cwd=top, env=env, private_tmp=False)

    return Jail(start)


# Where a host's UNIX sockets live (a read-only mount does not stop connect(): /run/docker.sock would run any
# container the host's docker daemon would), and how deep a walk looks for them there.
_SOCKET_PLACES = (("/run", 4), ("/var/run", 4), ("/tmp", 2), ("/var/tmp", 2))  # noqa: S108 - looked at, not used
_SOCKET_VARIABLES = (
    "SSH_AUTH_SOCK",
    "DOCKER_HOST",
    "GPG_AGENT_INFO",
    "DBUS_SESSION_BUS_ADDRESS",
    "XDG_RUNTIME_DIR",
)


def sockets() -> list[str]:
    """The host's UNIX sockets a sandboxed command could connect to, to mask: every one the kernel lists as
    bound (``/proc/net/unix``, this network namespace's), those in the usual places (another namespace's, a
    container runtime's) and those the environment names (an agent's, a daemon's). Resolved, sorted."""
    found: set[str] = set()
    try:
        with open("/proc/net/unix", encoding="utf-8", errors="surrogateescape") as listing:
            for line in listing:
                fields = line.rstrip("\n").split(maxsplit=7)
                if len(fields) == 8 and fields[7].startswith("/"):
                    _walk(fields[7], 0, found)
    except OSError:
        pass  # no /proc here: the usual places still count
    for place, depth in _SOCKET_PLACES:
        _walk(place, depth, found)
    for name in _SOCKET_VARIABLES:
        for word in re.split(r"[\s:;,=]+", os.environ.get(name, "")):
            if word.startswith("/"):
                _walk(word, 2, found)
    return sorted(found)


def _walk(path: str, depth: int, found: set[str]) -> None:
    try:
        info = os.stat(path)
    except OSError:
        return
    if stat.S_ISSOCK(info.st_mode):
        found.add(realpath(path))
    elif stat.S_ISDIR(info.st_mode) and depth > 0:
        try:
            names = os.listdir(path)
        except OSError:
            return
        for name in names:
            _walk(os.path.join(path, name), depth - 1, found)
