"""Where a file the user named is written: a FIFO or a device in place, anything else by ``atomic_write``.

``atomic_write`` renames a temporary file over its target (after following a symlink to it, and keeping an
existing file's mode), which is right for a regular file (a reader sees the old report or the new one, never
half) but wrong for anything else at that path: a FIFO or ``/dev/stdout`` would be replaced by a file (as root
even the system's), and whoever reads the pipe would get nothing. So an existing path that is not a regular
file is opened and written in place. ``check_writable`` says before any work is done whether the write could
succeed.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path

from routedriver.fsutil import atomic_write, realpath


@dataclass(frozen=True)
class Destination:
    path: Path  # as given: atomic_write follows a symlink itself; /dev/stdout is opened by that name
    in_place: bool  # a FIFO, a terminal or another device: opened and written, never replaced


def destination(path: str | os.PathLike[str]) -> Destination:
    """What writing ``path`` means. Raises ``IsADirectoryError`` for a directory and ``OSError`` when the path
    cannot be looked at (a symlink loop, no permission)."""
    try:
        info = os.stat(path)  # follows symlinks: the type of what the path names
    except (FileNotFoundError, NotADirectoryError):
        # Missing, or a dangling symlink: create the file it names (what `>` in a shell would do). A parent
        # that is a file is named by check_writable.
        return Destination(Path(path), in_place=False)
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(21, "it is a directory", str(path))
    return Destination(Path(path), in_place=not stat.S_ISREG(info.st_mode))


def check_writable(dest: Destination) -> str | None:
    """Why ``dest`` cannot be written, or None. For a new or replaced file the first existing ancestor of
    the directory that gets it (a symlink's target's) must allow creating files (``atomic_write`` creates
    missing directories)."""
    if dest.in_place:
        return None if os.access(dest.path, os.W_OK) else f"{dest.path} is not writable"
    parent = Path(realpath(dest.path)).parent
    while not os.path.exists(parent) and parent != parent.parent:
        parent = parent.parent
    if not os.path.isdir(parent):
        return f"{parent} is not a directory"
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"{parent} is not writable"
    return None


def write(dest: Destination, text: str) -> None:
    """Write ``text`` (UTF-8) to ``dest``; raises ``OSError``."""
    payload = text.encode("utf-8")
    if dest.in_place:
        # No O_CREAT (it exists) and no O_TRUNC (meaningless for a FIFO or a device).
        with os.fdopen(os.open(dest.path, os.O_WRONLY), "wb") as handle:
            handle.write(payload)
        return

    atomic_write(dest.path, payload)
