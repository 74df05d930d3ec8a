"""Files written so that a crash at any point leaves either the old file or the new one, never half of one.

``atomic_write`` writes a temporary file in the same directory, flushes it to disk and renames it over the
target (``os.replace``). ``FileLock`` is an advisory ``flock`` on a lock file, so concurrent processes that
share state (two ``route.stone.set`` on one route, concurrent Claude Code hooks) take turns.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import time
from collections.abc import Mapping
from pathlib import Path
from types import TracebackType

from routedriver.userfile import file_kind

TEMP_MARK = ".tmp-"  # temporary files are named ".<name>.tmp-<random>"; readers must ignore them
# A directory opened only to work inside it (``dir_fd``): O_PATH needs no read permission where it exists.
DIRECTORY_FLAGS = os.O_DIRECTORY | getattr(os, "O_PATH", os.O_RDONLY)


def cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """routedriver's cache directory: ``$XDG_CACHE_HOME/routedriver``, else ``~/.cache/routedriver``."""
    env = os.environ if environ is None else environ
    return Path(env.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")) / "routedriver"


def realpath(path: str | os.PathLike[str], *, strict: bool = False) -> str:
    """``path`` made absolute with every symlink and ``..`` resolved (``os.path.realpath``), except that it
    never raises for what a link can do: ``os.path.realpath`` raises RecursionError for a chain of links too
    long to follow (Python 3.11 recurses once per link, and anyone who can make links, a robot or a
    sandboxed command, can make thousands). Such a path comes back absolute but unresolved, and whatever
    then reads it says why it cannot (the kernel's ELOOP); a loop of links comes back so too. ``strict``: it
    raises OSError (ELOOP) instead, for a check that must not go on with a path it could not resolve
    (bhrain's permission rules and file tools, the sandbox)."""
    try:
        return os.path.realpath(path)
    except RecursionError:
        if strict:
            what = "too many levels of symbolic links to resolve"
            raise OSError(errno.ELOOP, what, os.fspath(path)) from None
        return os.path.abspath(path)


def real_path(path: str | os.PathLike[str]) -> Path:
    """``realpath`` as a Path: what ``Path.resolve()`` gives, except that it never raises (on Python 3.11
    ``resolve()`` raises RuntimeError for a loop of links, which a command would report as an internal
    error)."""
    return Path(realpath(path))


def existing_directory(path: Path) -> Path:
    """``path`` or the nearest directory above it that exists (a route about to be written, or deleted, has
    none)."""
    while not os.path.isdir(path) and path != path.parent:
        path = path.parent
    return path


def entry_is_file(entry: os.DirEntry[str]) -> bool:
    """``entry.is_file()`` (through a symlink), but False where that cannot be told, as ``os.path.isfile``
    answers: a link in a loop, or to a name too long for the system, raises there. Whatever reads the file
    then says why it cannot."""
    try:
        return entry.is_file()
    except OSError:
        return False


def entry_is_dir(entry: os.DirEntry[str]) -> bool:
    """``entry.is_dir()`` (through a symlink), False where that cannot be told (see ``entry_is_file``)."""
    try:
        return entry.is_dir()
    except OSError:
        return False


def atomic_write(
    path: str | os.PathLike[str], data: str | bytes, *, fsync: bool = True, mode: int = 0o644
) -> None:
    """Write ``data`` to ``path`` atomically, creating parent directories as needed.

    A new file gets ``mode`` (less the umask). An existing file keeps its mode (and, where the process may
    set them, its owner and group), whatever the umask. A symlink is written through: its target gets the
    new content and the link stays a link (a dangling link creates its target). What is there and is no
    regular file (a device, a named pipe, a socket, a directory) is never replaced: ``OSError`` says what it
    is (as root, ``--junit /dev/full`` had put a regular file in the device's place).
    """
    target = Path(os.path.realpath(path)) if os.path.islink(path) else Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
    except FileExistsError:  # mkdir's word for a file where a directory of the path must be
        raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), os.fspath(path)) from None
    payload = data.encode("utf-8") if isinstance(data, str) else data
    try:
        existing: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        existing = None
    if existing is not None and not stat.S_ISREG(existing.st_mode):
        what = f"it is {file_kind(existing.st_mode)}, not a regular file"
        raise OSError(errno.EINVAL, what, os.fspath(path))

    parent = open_directory(target.parent)
    try:
        replace_in(parent, target.name, payload, existing=existing, mode=mode, fsync=fsync)
    finally:
        os.close(parent)


def open_directory(path: str | os.PathLike[str]) -> int:
    """``path``, a directory, opened only to work inside it (``dir_fd``; ``replace_in``): later writes there
    look no path up again."""
    return os.open(path, DIRECTORY_FLAGS)


def replace_in(
    directory: int,
    name: str,
    data: bytes,
    *,
    existing: os.stat_result | None,
    mode: int = 0o644,
    fsync: bool = True,
) -> None:
    """Put ``data`` at ``name`` in the open ``directory`` atomically: a temporary file there, renamed over
    ``name``. No path is looked up again, so a directory swapped for a symlink meanwhile leads nowhere; a
    symlink at ``name`` itself is replaced, never written through. ``existing`` is what is at ``name`` now
    (its owner and mode are kept), None for a new file (``mode`` less the umask)."""
    # os.urandom, not the secrets module: the same bytes, without importing secrets' hmac and base64.
    temp = f".{name}{TEMP_MARK}{os.urandom(6).hex()}"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    fd = os.open(temp, flags, mode if existing is None else 0o600, dir_fd=directory)
    try:
        with os.fdopen(fd, "wb") as handle:
            if existing is not None:
                _keep_owner_and_mode(handle.fileno(), existing)
            handle.write(data)
            if fsync:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(temp, name, src_dir_fd=directory, dst_dir_fd=directory)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp, dir_fd=directory)
        raise
    if fsync:
        _fsync_dir(".", directory)


def _keep_owner_and_mode(fd: int, existing: os.stat_result) -> None:
    """Give the replacement file the old one's owner, group and mode (fchmod ignores the umask)."""
    mine = os.fstat(fd)
    if (mine.st_uid, mine.st_gid) != (existing.st_uid, existing.st_gid):
        # Only root may give a file away; others keep what they can (their own group, at least).
        with contextlib.suppress(PermissionError):
            os.fchown(fd, existing.st_uid, existing.st_gid)
    os.fchmod(fd, stat.S_IMODE(existing.st_mode))  # after fchown, which may clear set-id bits


def remove_tree(path: str | os.PathLike[str]) -> None:
    """Remove the directory ``path`` and all it holds, never following a symlink (a link is removed, not
    what it leads to) and making a directory of ours writable before emptying it, never through a link
    (3.11.7's ``TemporaryDirectory`` cleanup chmods what a link points at). No recursion and no long paths:
    each directory found is first moved up to ``path`` itself, so a tree thousands of directories deep
    (which Python 3.11's ``shutil.rmtree`` recurses into once per level, and whose paths outgrow PATH_MAX)
    is removed too. For a tree code we do not trust wrote (a sandboxed command's scratch directory), once
    that code has ended. Whatever cannot be removed stays."""
    top = os.fspath(path)
    pending, emptied, moved = [top], [], 0
    while pending:
        directory = pending.pop()
        emptied.append(directory)
        with contextlib.suppress(OSError):
            os.chmod(directory, 0o700)  # a directory itself: entries are told apart without following links
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                moved += 1
                up = os.path.join(top, f".removing-{moved}")
                try:
                    os.rename(entry.path, up)
                except OSError:
                    up = entry.path
                pending.append(up)
            else:
                with contextlib.suppress(OSError):
                    os.unlink(entry.path)
    for directory in reversed(emptied):  # each emptied before it is reached; the top last
        with contextlib.suppress(OSError):
            os.rmdir(directory)


def is_temp(path: str | os.PathLike[str]) -> bool:
    """True for a temporary file ``atomic_write`` left behind when it was killed mid-write."""
    name = Path(path).name
    return name.startswith(".") and TEMP_MARK in name


def _fsync_dir(directory: str, dir_fd: int) -> None:
    try:
        fd = os.open(directory, os.O_RDONLY, dir_fd=dir_fd)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


class LockTimeout(Exception):
    """The lock was held by someone else for longer than we were willing to wait."""


class FileLock:
    """An exclusive advisory lock on ``path`` (created if missing), released on exit or process death."""

    def __init__(
        self, path: str | os.PathLike[str], timeout: float | None = None, poll_s: float = 0.05
    ) -> None:
        self.path = Path(path)
        self.timeout = timeout
        self.poll_s = poll_s
        self._fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | (fcntl.LOCK_NB if deadline is not None else 0))
                self._fd = fd
                return
            except OSError as exc:
                if exc.errno not in (errno.EAGAIN, errno.EACCES):
                    os.close(fd)
                    raise
                if deadline is not None and time.monotonic() >= deadline:
                    os.close(fd)
                    raise LockTimeout(str(self.path)) from None
                time.sleep(self.poll_s)

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> FileLock:
        self.acquire()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()
