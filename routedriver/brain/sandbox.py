"""The bash tool's sandbox: every command it runs starts under bubblewrap (``bwrap``, Linux).

What a sandboxed command sees: the whole file system read-only, except the working directory (writable) and a
private ``/tmp`` (an empty tmpfs, gone with the command; ``TMPDIR`` points there); a fresh ``/dev`` and
``/proc`` (no disks, no host processes); what a ``Read`` deny rule names masked (an empty read-only tmpfs over
a directory, ``/dev/null`` bound over anything else, so it cannot be read, written, removed or renamed); what
an ``Edit``/``Write`` deny rule names read-only, also inside the working directory, and so are the run's own
settings (config, permissions, MCP config, rubric, behavior profile folders); no network, not even the host's
loopback (``--unshare-net``), unless the config says ``network: true``. The command is pid 1's child in its
own pid namespace with ``--die-with-parent``: when the command ends, is timed out or stopped, everything it
started dies with it, ``setsid`` and ``env -i`` included. Every capability is dropped (``--cap-drop ALL``:
bubblewrap run by root keeps them otherwise), so not even root inside can unmount a mask, and a user namespace
made inside finds the mounts locked.

Deny rules are gitignore patterns; they are resolved to the paths that exist when each command starts
(``resolve``), by the reading of ``permissions.rules``. A directory every new name in which a rule would
cover (``secrets/**``) is masked or made read-only whole, so what is created in it later is covered too.
A path created later elsewhere is not: a file a ``Write(*.lock)`` rule names can be created where none
existed. Symlinks: what a path resolves to is masked or made read-only, under every name it has; a walk
goes into symlinked directories too (``*.pem`` covers what ``keys/x.pem`` leads to when ``keys`` links to
a key store elsewhere), never round a loop. A mount holds what a link leads to, never the link, so a
read-only name (an Edit/Write rule's, or the run's own settings') reached through a symlink a command could
replace is refused, naming the link. A directory the walk cannot list is covered whole (fail closed).

``Policy`` and ``bwrap_argv`` are pure: what to mount, and the argv that mounts it. ``prepare`` finds
``bwrap`` (never one inside the working directory, where a command could plant its own) and probes once per
run whether it can build a sandbox here, which decides ``--sandbox on|off|auto``. The bash tool runs the argv
through ``routedriver.proc``, the one door, whose process-group and leftover cleanup still applies.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Literal, NamedTuple

from routedriver import proc
from routedriver.brain.permissions.rules import Rule, RulesPolicy, gitignore, rule_base
from routedriver.errors import Refused
from routedriver.fsutil import entry_is_dir, realpath

log = logging.getLogger("bhrain")

Mode = Literal["on", "off", "auto"]
MODES: tuple[Mode, ...] = ("on", "off", "auto")
SHELL = "bash"
TMP = "/tmp"  # noqa: S108 - a fresh tmpfs inside the sandbox, never the host's /tmp
# Mounted fresh inside the sandbox: masking a host path under them is moot, walking them a waste.
REPLACED = ("/dev", "/proc", TMP)
NOT_WALKED = frozenset({"/proc", "/sys", "/dev"})
# How many directory entries resolving the deny rules may look at before each command. A pattern that
# matches at any depth is checked against every entry under its base; past this the command is not run
# (fail closed) and the message says which rule to narrow.
WALK_LIMIT = 200_000
# Two names a pattern must both cover for "every new name in this directory is covered" (``secrets/**``
# yes, ``secrets/*.pem`` or ``secrets/r*`` no).
PROBES = ("routedriver-sandbox-probe", "Q.z")
INSTALL = "install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap)"
_MAGIC = frozenset("*?[\\")


class Mask(NamedTuple):
    path: str  # absolute, resolved
    directory: bool  # a directory gets an empty read-only tmpfs, anything else /dev/null


class Policy(NamedTuple):
    """What one sandboxed command may touch. Paths are absolute and resolved."""

    writable: tuple[str, ...]  # bound read-write (the working directory)
    masked: tuple[Mask, ...] = ()  # unreadable
    read_only: tuple[str, ...] = ()  # inside a writable directory, but read-only
    # Directories inside a writable one, bound onto themselves: a mount point cannot be renamed or removed,
    # so a protected path's parents stay where they are (else `mv conf x; mkdir conf` makes a new
    # conf/config.yml beside the read-only one, and its old name is free).
    pinned: tuple[str, ...] = ()
    network: bool = False  # False: a network namespace of its own (no interface but its own loopback)


def bwrap_argv(
    bwrap: str,
    policy: Policy,
    command: str,
    *,
    cwd: str,
    env: Mapping[str, str] | None = None,
    private_tmp: bool = True,
) -> list[str]:
    """The argv that runs ``bash -c command`` in ``cwd`` under ``policy``, with ``env`` set inside and, with
    ``private_tmp``, an empty ``/tmp`` of its own (``TMPDIR``); else ``/tmp`` is the host's, read-only like
    the rest. Mounts apply in order: the writable directories over the read-only root, their pinned
    directories, the read-only paths, and the masks last, so nothing shows through them."""
    # /proc/sys read-only: the kernel lets uid 0 write its settings whatever capabilities it dropped (as root,
    # kernel.core_pattern would run a program outside the sandbox), and bwrap leaves the fresh /proc's sys
    # as the host's. A hostname of its own (--unshare-uts) for the same reason.
    argv = [
        bwrap,
        "--ro-bind",
        "/",
        "/",
        "--dev",
        "/dev",
        "--proc",
        "/proc",
        "--ro-bind",
        "/proc/sys",
        "/proc/sys",
    ]
    if os.path.exists("/proc/sysrq-trigger"):
        argv += ["--ro-bind", "/proc/sysrq-trigger", "/proc/sysrq-trigger"]
    if private_tmp:
        argv += ["--tmpfs", TMP]
    for path in (*policy.writable, *policy.pinned):
        argv += ["--bind", path, path]
    for path in policy.read_only:
        argv += ["--ro-bind", path, path]
    for mask in policy.masked:
        if mask.directory:
            argv += ["--tmpfs", mask.path, "--remount-ro", mask.path]
        else:
            argv += ["--ro-bind", "/dev/null", mask.path]
    argv += ["--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    if not policy.network:
        argv.append("--unshare-net")
    # Run as root, bwrap keeps every capability unless told: root inside could then unmount a mask.
    argv += ["--cap-drop", "ALL", "--die-with-parent", "--new-session"]
    if private_tmp:
        argv += ["--setenv", "TMPDIR", TMP]
    for name, value in (env or {}).items():
        argv += ["--setenv", name, value]
    argv += ["--chdir", cwd]
    return [*argv, "--", SHELL, "-c", command]


def _under(path: str, parents: Iterable[str]) -> bool:
    return any(path == parent or path.startswith(parent.rstrip("/") + "/") for parent in parents)


def policy_for(
    writable: Sequence[str], hidden: Mapping[str, bool], read_only: Iterable[str], *, network: bool
) -> Policy:
    """The policy from resolved paths (``hidden`` maps each to whether it is a directory): masks that the
    sandbox can see (not under a fresh ``/tmp``, ``/dev`` or ``/proc``, unless in a writable directory),
    read-only paths inside writable directories, and the directories between the two pinned; nothing under
    a mask (it would show through it) and nothing twice. Sorted, so a parent comes before its children."""
    masks: list[Mask] = []
    for path in sorted(hidden):
        if _under(path, REPLACED) and not _under(path, writable):
            continue
        if _under(path, [m.path for m in masks if m.directory]):
            continue
        masks.append(Mask(path, hidden[path]))
    masked_dirs = [m.path for m in masks if m.directory]
    masked_files = {m.path for m in masks if not m.directory}
    kept: list[str] = []
    for path in sorted(set(read_only)):
        if not _under(path, writable) or _under(path, masked_dirs) or path in masked_files:
            continue
        if _under(path, kept):
            continue
        kept.append(path)
    pinned: set[str] = set()
    for path in (*kept, *(m.path for m in masks)):
        roots = [root for root in writable if _under(path, [root]) and path != root]
        if not roots:
            continue
        parent = os.path.dirname(path)
        while parent != roots[0] and _under(parent, roots):
            pinned.add(parent)
            parent = os.path.dirname(parent)
    return Policy(tuple(writable), tuple(masks), tuple(kept), tuple(sorted(pinned)), network)


# -- deny rules as paths -------------------------------------------------------------------------------------
class PathRule(NamedTuple):
    text: str  # the rule as written, for messages
    base: Path  # the directory the pattern is relative to
    pattern: str  # a gitignore pattern, relative to base


def path_rules(
    policies: Iterable[object], workdir: Path
) -> tuple[tuple[PathRule, ...], tuple[PathRule, ...]]:
    """The (Read, Edit/Write) deny rules of the permission policies, with their bases as
    ``permissions.rules`` reads them. Rules without a path (``Read``) are about the tool, not paths: the
    sandbox leaves them to it."""
    hidden: list[PathRule] = []
    read_only: list[PathRule] = []
    for policy in policies:
        if not isinstance(policy, RulesPolicy):
            continue
        for rule in policy.rules:
            if rule.kind != "deny" or not rule.specifier:
                continue
            if rule.covers("read"):
                hidden.append(_path_rule(rule, workdir))
            elif rule.covers("edit"):
                read_only.append(_path_rule(rule, workdir))
    return tuple(hidden), tuple(read_only)


def _path_rule(rule: Rule, workdir: Path) -> PathRule:
    return PathRule(rule.text, *rule_base(rule, workdir))


class Unprotectable(Exception):
    """A deny rule (or the run's own settings) that the sandbox cannot hold for a command starting now: the
    command is not run (at the start of the run: the run is refused), and the message says what to change."""


class TooManyPaths(Unprotectable):
    """Resolving a rule would look at more than ``WALK_LIMIT`` entries."""

    def __init__(self, rule: PathRule, start: str, limit: int, via: str = "") -> None:
        through = f" (through the symlink {via} -> {_shown(via)})" if via else ""
        super().__init__(
            f"the sandbox cannot resolve the deny rule {rule.text}: it would check more than {limit:,} "
            f"paths under {start}{through} before every command; narrow the rule (a directory such as "
            "secrets/**, or a path from its start such as config/*.pem)"
        )


class ReplaceableLink(Unprotectable):
    """A protected name reached through a symlink that a command could remove and put its own file in place
    of: a bind mount holds what a link leads to, never the link (a symlink cannot be a mount point)."""

    def __init__(self, what: str, link: str, remedy: str) -> None:
        super().__init__(
            f"the sandbox cannot keep {what} in place: {link} is a symlink (to {_shown(link)}) in "
            f"a directory commands may write, and a command could replace it; {remedy}"
        )


def _real(name: str, what: str) -> str:
    """``name`` resolved (``fsutil.realpath``); raises ``Unprotectable`` for a chain of symlinks too long to
    follow (a command can make one), which the sandbox cannot say where it leads."""
    try:
        return realpath(name, strict=True)
    except OSError as exc:
        raise Unprotectable(
            f"the sandbox cannot resolve {what}: {exc.strerror}; remove the chain of symlinks"
        ) from None


def _shown(link: str) -> str:
    """Where ``link`` leads, for a message."""
    try:
        return realpath(link, strict=True)
    except OSError:
        return "a chain of symlinks too long to follow"


def resolve(rules: Sequence[PathRule], *, limit: int = WALK_LIMIT) -> dict[str, bool]:
    """The resolved paths that exist now and that ``rules`` cover, each mapped to whether it is a directory
    (covered whole when the rule covers everything new in it too). Raises ``TooManyPaths`` past ``limit``
    entries looked at."""
    found = {
        _real(name, f"{name} (the deny rule {rule.text})")
        for rule, name in found_names(rules, limit=limit, every_name=False)
    }
    return {path: os.path.isdir(path) for path in found}


def found_names(
    rules: Sequence[PathRule], *, limit: int = WALK_LIMIT, every_name: bool = True
) -> list[tuple[PathRule, str]]:
    """Each path that exists now and that a rule covers, as a command would name it (absolute, symlinks on
    the way not resolved: through a symlinked directory too), with the rule. ``every_name``: each name of
    a path, not only the path (see ``_walk``). Raises ``TooManyPaths``."""
    found: list[tuple[PathRule, str]] = []
    budget = [limit, limit]  # what is left, and the limit (for the message)
    for rule in rules:
        base = realpath(rule.base)
        start = _start(rule.pattern)
        if start is None:
            continue
        root = os.path.join(base, start) if start else base
        if not start or _MAGIC & set(rule.pattern.rstrip("/")):
            # A pattern on the last part of a name (*.pem, **/.env) finds the same in a directory by any
            # name: one walk of each directory finds every path (``.venv/lib64 -> lib`` not walked twice).
            once = not every_name and "/" not in _unanchored(rule.pattern)
            names = _walk(_matcher(rule.pattern), rule, root, start or ".", budget, once=once)
            found.extend((rule, name) for name in names)
        elif os.path.lexists(root) and (os.path.isdir(root) or not rule.pattern.endswith("/")):
            found.append((rule, root))  # a literal path: no walk
    return found


def _matcher(pattern: str) -> Callable[[str], bool]:
    """Whether a path relative to the pattern's base (``dir/`` for a directory) matches: the permission
    rules' reading (a gitignore pattern, by pathspec), through its compiled expression when it has one,
    which is ten times faster than asking the spec for every entry of a walk."""
    spec = gitignore(pattern)
    patterns = list(spec.patterns)
    regex = getattr(patterns[0], "regex", None) if len(patterns) == 1 else None
    if regex is not None and getattr(patterns[0], "include", None) is True:
        return lambda rel: regex.match(rel) is not None
    return lambda rel: bool(spec.match_file(rel))


def _start(pattern: str) -> str | None:
    """Where the paths ``pattern`` can match start, relative to its base: its leading literal directories
    when it is anchored (a ``/`` before its end), "" when it matches at any depth; None when it matches
    nothing (a negation)."""
    if pattern.startswith("!") or not pattern.strip("/"):
        return None
    body = pattern.rstrip("/")
    parts = body.split("/")
    if len(parts) == 1:
        return ""  # no slash but a trailing one: any depth
    literal: list[str] = []
    for index, part in enumerate(parts):
        if part == "**" or _MAGIC & set(part) or index == len(parts) - 1:
            break
        literal.append(part)
    if len(literal) == len(parts) - 1 and not (_MAGIC & set(parts[-1])) and parts[-1] != "**":
        return body  # the whole pattern is one path
    return "/".join(literal)


def _covered(matches: Callable[[str], bool], rel: str, directory: bool) -> bool:
    """Whether the rule covers ``rel``: it names it, or (a directory) every new name in it too."""
    if rel != "." and (matches(rel) or (directory and matches(rel + "/"))):
        return True
    prefix = "" if rel == "." else rel + "/"
    return directory and all(matches(prefix + probe) for probe in PROBES)


def _unanchored(pattern: str) -> str:
    """``pattern`` without a trailing ``/`` and leading ``**/`` (which match at any depth anyway)."""
    body = pattern.rstrip("/")
    while body.startswith("**/"):
        body = body[3:]
    return body


def _walk(
    matches: Callable[[str], bool],
    rule: PathRule,
    root: str,
    rel_root: str,
    budget: list[int],
    *,
    once: bool = False,
) -> Iterator[str]:
    """What ``rule`` covers under ``root`` (``rel_root`` relative to its base), as named from ``root``.

    A symlinked directory is walked too, under its own name: what ``keys/server.pem`` leads to is covered by
    ``*.pem`` when ``keys`` links to a key store elsewhere, as the permission rules read that name. A
    directory already on the way down (a link to ``.`` or ``..``) is not entered again: a name that goes
    round a loop is a longer spelling of one already walked. ``once``: no directory is walked twice, for a
    pattern that reads only the last part of a name (a directory it names on the way is covered whole). The
    budget bounds the rest (a link to ``/`` would walk the whole file system: the command is refused
    instead, naming the link)."""
    if not os.path.isdir(root):
        return
    if _covered(matches, rel_root, True):
        yield root
        return
    # (the directory as named, the real directories on the way down to it, the first symlink on the way)
    way: tuple[str, ...] = (realpath(root),)
    walked = set(way)
    stack = [(root, "" if rel_root == "." else rel_root + "/", way, "")]
    while stack:
        current, prefix, way, via = stack.pop()
        try:
            entries = list(os.scandir(current))
        except FileNotFoundError:
            continue  # gone since its parent was listed
        except OSError:
            # It cannot be listed (no read permission, e.g. after `chmod 300 config`), yet a name in it may
            # still be opened when it can be searched: covered whole (fail closed). Masking only this
            # directory stops only what goes into it, where refusing would stop every command.
            yield current
            continue
        budget[0] -= len(entries)
        if budget[0] < 0:
            raise TooManyPaths(rule, root, budget[1], via)
        for entry in entries:
            rel = prefix + entry.name
            directory = entry_is_dir(entry)  # through a symlink too: the rule reads it as a directory
            if _covered(matches, rel, directory):
                yield entry.path
                continue
            if not directory:
                continue
            link = entry.is_symlink()
            real = realpath(entry.path) if link else os.path.join(way[-1], entry.name)
            if real in NOT_WALKED or real in way or (once and real in walked):
                continue
            walked.add(real)
            stack.append((entry.path, rel + "/", (*way, real), via or (entry.path if link else "")))


# -- the sandbox of one run ----------------------------------------------------------------------------------
class Sandbox(NamedTuple):
    bwrap: str  # the absolute path found once at the start of the run
    workdir: str  # resolved; the only writable directory
    network: bool
    hidden: tuple[PathRule, ...] = ()  # Read deny rules
    read_only: tuple[PathRule, ...] = ()  # Edit/Write deny rules
    # The run's own settings (config, permissions, MCP config, behavior profiles, rubric), as named
    # (absolute, symlinks not resolved): read-only wherever they are, so that a command cannot rewrite what
    # the next run will do.
    own_files: tuple[str, ...] = ()

    def policy(self) -> Policy:
        """The policy for a command starting now (the rules resolved against the file system as it is).
        Raises ``Unprotectable`` when a rule cannot be resolved or a protected name cannot be held."""
        found = found_names(self.read_only)
        own = [name for name in self.own_files if os.path.lexists(name)]
        read_only = [_real(name, name) for name in (*(name for _, name in found), *own)]
        # Read-only holds a path's content, and the pinned parents hold its name; neither holds a symlink on
        # the way to it (a bind mount lands on what the link leads to), and a command that removes the link
        # and puts its own file there has rewritten what the name says. Such a name cannot be held: refused.
        # (A Read rule needs no such care: what a replaced link leads to is resolved and masked anew.)
        held: dict[str, str] = {}
        for rule, name in found:
            what = f"{name} (the deny rule {rule.text})"
            remedy = "replace the link with what it leads to, or make the rule name that instead"
            _hold(name, what, remedy, self.workdir, read_only, held)
        for name in own:
            remedy = f"give bhrain the file's own path ({_shown(name)})"
            _hold(name, f"bhrain's settings file {name}", remedy, self.workdir, read_only, held)
        return policy_for([self.workdir], resolve(self.hidden), read_only, network=self.network)

    def argv(self, command: str, *, cwd: Path | str) -> list[str]:
        """The argv that runs ``command`` in this sandbox; raises ``Unprotectable``."""
        return bwrap_argv(self.bwrap, self.policy(), command, cwd=realpath(cwd))


def _hold(
    name: str, what: str, remedy: str, workdir: str, read_only: Sequence[str], resolved: dict[str, str]
) -> str:
    """What ``name`` resolves to; raises ``ReplaceableLink`` when a symlink on the way to it (``name`` itself
    too) lies in a directory a command may write: inside ``workdir`` and not under a ``read_only`` path. A
    link elsewhere is on the read-only root, where no command can remove it. ``resolved`` remembers the
    names already held (many names share their parents)."""
    # The names on the way up to one already held (or to /), then each held from the top down: a loop, not
    # recursion, as a command can make a path thousands of directories deep.
    way: list[tuple[str, str, str]] = []
    above = name
    while above not in resolved:
        parent, part = os.path.split(above)
        if parent == above:
            resolved[above] = "/"
            break
        way.append((above, parent, part))
        above = parent
    for below, parent, part in reversed(way):
        current = resolved[parent]
        if part in ("", "."):
            path = current
        elif part == "..":
            path = os.path.dirname(current)
        else:
            path = os.path.join(current, part)
            if os.path.islink(path):
                if _under(current, [workdir]) and not _under(current, read_only):
                    raise ReplaceableLink(what, path, remedy)
                path = _real(path, what)
        resolved[below] = path
    return resolved[name]


def find_bwrap(path_env: str | None, workdir: Path) -> str | None:
    """The first ``bwrap`` on ``path_env`` that is not inside ``workdir`` (where a sandboxed command may
    write, and could leave a fake one for the next command); None elsewhere than Linux."""
    if not sys.platform.startswith("linux"):
        return None
    inside = realpath(workdir)
    for entry in (path_env or "").split(os.pathsep):
        directory = realpath(entry or ".")
        if _under(directory, [inside]):
            continue
        candidate = os.path.join(directory, "bwrap")
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            return candidate
    return None


def probe(bwrap: str, workdir: str, *, network: bool) -> str:
    """Why ``bwrap`` cannot build the sandbox here (its first line of complaint), or "" when it can."""
    argv = bwrap_argv(bwrap, Policy((workdir,), network=network), ":", cwd=workdir)
    result = proc.run(argv, timeout=30)
    if result.ok:
        return ""
    lines = [line.strip() for line in (result.start_error or result.stderr).splitlines() if line.strip()]
    return lines[0] if lines else f"it exited with {result.returncode}"


def prepare(
    mode: Mode,
    *,
    source: str,
    network: bool,
    policies: Iterable[object],
    workdir: Path,
    path_env: str | None,
    own_files: Iterable[Path] = (),
) -> Sandbox | None:
    """The run's sandbox, or None to run unsandboxed. ``on`` refuses without a working bubblewrap; ``auto``
    says so once on stderr and goes on without one. ``source`` says where the mode came from, for messages;
    ``own_files`` are the run's settings, read-only to its commands. A deny rule that cannot be resolved, or
    a protected name that cannot be held, is refused now rather than on every command."""
    if mode == "off":
        return None
    bwrap = find_bwrap(path_env, workdir)
    if bwrap is None:
        if not sys.platform.startswith("linux"):
            _unavailable(mode, source, f"bubblewrap exists only on Linux, and this is {sys.platform}", "")
        else:
            _unavailable(mode, source, "bwrap is not on PATH", INSTALL)
        return None
    problem = probe(bwrap, realpath(workdir), network=network)
    if problem:
        what = f"{bwrap} cannot create a sandbox here ({problem})"
        remedy = (
            "allow unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1; on Ubuntu "
            "kernel.apparmor_restrict_unprivileged_userns=0)"
        )
        _unavailable(mode, source, what, remedy)
        return None
    hidden, read_only = path_rules(policies, workdir)
    own = tuple(sorted({os.path.abspath(path) for path in own_files}))  # as named: see Sandbox.policy
    sandbox = Sandbox(bwrap, realpath(workdir), network, hidden, read_only, own)
    try:
        sandbox.policy()
    except Unprotectable as exc:
        raise Refused(str(exc)) from None
    return sandbox


def _unavailable(mode: Mode, source: str, what: str, remedy: str) -> None:
    """``on``: refuse; ``auto``: say so, once (``prepare`` runs once per run)."""
    if mode == "on":
        fix = "pass --sandbox auto to run the bash tool unsandboxed"
        raise Refused(
            f"{source} needs bubblewrap for the bash tool's sandbox, but {what}",
            f"{remedy}, or {fix}" if remedy else fix,
        )
    fix = "pass --sandbox off to silence this"
    log.warning(
        "the bash tool runs without a sandbox: %s (--sandbox auto); %s",
        what,
        f"{remedy}, or {fix}" if remedy else fix,
    )
