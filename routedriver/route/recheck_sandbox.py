"""Where ``route.verify --recheck`` runs a pull request's commands: under bubblewrap (``--recheck-sandbox``).

A rechecked command may run code the pull request wrote: a judge that runs the tests runs the tests the
robot wrote (they are its stone's artifacts), and whatever they import. Run as the gate's own user, that code
could rewrite the gate itself before it decides (its installed modules, read after the commands ran), the
files the job's next steps read (``$GITHUB_ENV``, ``$GITHUB_OUTPUT``), or git's own files in the checkout
(its refs, its configuration), or look at the gate's process. In the sandbox a command sees the whole file
system read-only but the checkout (writable: tests write caches, builds write outputs) and a scratch
directory of the run's (``TMPDIR`` and ``XDG_CACHE_HOME``: no cache from another run), its ``.git``
read-only, fresh ``/dev`` and ``/proc`` in a pid namespace of its own, every capability dropped, and the
network (reviews call their model). The host's ``/tmp`` stays visible, read-only: the programs CI installed
there still run. The verdict is decided outside, by the gate, from what the commands printed.

What it does not stop: a command still holds the job's environment (the reviewer's key: give the job that
key and nothing else), and it can change what another stone's commands read in the checkout while they run
(recheck hashes each stone's files before and after its run). The sandbox is ``brain.sandbox``'s (the bash
tool's), with a policy of its own.
"""

from __future__ import annotations

import os
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
    git_dirs = {realpath(path) for path in (repo.git_dir, repo.toplevel / ".git") if path is not None}
    read_only = tuple(sorted(path for path in git_dirs if os.path.lexists(path)))
    scratch.mkdir()
    temporary = realpath(scratch)
    policy = sandbox.Policy((top, temporary), read_only=read_only, network=True)
    env = {"TMPDIR": temporary, "XDG_CACHE_HOME": os.path.join(temporary, ".cache")}

    def start(command: str) -> list[str]:
        return sandbox.bwrap_argv(bwrap, policy, command, cwd=top, env=env, private_tmp=False)

    return Jail(start)
