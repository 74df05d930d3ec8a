"""Walking a directory tree for the search tools (``glob``, ``grep``).

The walk never follows a symlinked directory (a link to ``..`` would otherwise loop until memory or time
runs out); such a link is still listed as an entry, so ``glob`` shows it. It never enters ``.git``, ``.hg``
or ``.svn`` (``globs.NEVER_ENTERED``) below where it starts. Paths the permission rules hide
(``ToolContext.readable``) are skipped and counted, so a result can say that something was left out.

What a glob pattern matches is ``routedriver.globs``'s one rule (hidden names included); ``glob`` hands the
walk that module's tests as ``wanted`` and ``descend``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from routedriver.brain.tools.base import ReadFilter
from routedriver.globs import NEVER_ENTERED

VCS_DIRS = NEVER_ENTERED


@dataclass(frozen=True)
class Entry:
    path: Path
    parts: tuple[str, ...]  # the path's components below the walk's root
    is_dir: bool


@dataclass
class Skipped:
    """What a search left out, so its result can say so instead of pretending there was nothing."""

    denied: int = 0  # hidden by the permission rules
    binary: int = 0
    unreadable: int = 0  # permission errors, vanished files
    special: int = 0  # FIFOs, sockets, devices: reading them could block forever

    def note(self) -> str:
        """``"[skipped: 2 binary files, 1 path the permission rules protect]"``, or "" when nothing was."""
        parts = [
            _count(self.binary, "binary file"),
            _count(self.special, "FIFO, socket or device", plural="FIFOs, sockets or devices"),
            _count(self.unreadable, "unreadable path"),
            _count(self.denied, "path", plural="paths")
            + (" the permission rules protect" if self.denied else ""),
        ]
        shown = [p for p in parts if p]
        return f"[skipped: {', '.join(shown)}]" if shown else ""


def _count(n: int, singular: str, *, plural: str | None = None) -> str:
    if not n:
        return ""
    return f"{n:,} {singular if n == 1 else plural or singular + 's'}"


def walk(
    root: Path,
    *,
    skipped: Skipped,
    skip_dirs: frozenset[str] = VCS_DIRS,
    readable: ReadFilter | None = None,
    wanted: Callable[[tuple[str, ...], bool], bool] | None = None,
    descend: Callable[[tuple[str, ...]], bool] | None = None,
) -> Iterator[Entry]:
    """The directories and files below ``root`` that ``wanted(parts, is_dir)`` accepts (default: all),
    top-down, each directory's entries sorted by name.

    ``descend(parts)`` may refuse to enter a directory no match can lie under; directories named in
    ``skip_dirs`` are neither listed nor entered. A protected path is counted in ``skipped`` only when it
    would have been listed or entered, so the count is about the search, not the whole tree.
    """

    def unreadable(_: OSError) -> None:
        skipped.unreadable += 1

    for current, dirs, files in os.walk(root, onerror=unreadable, followlinks=False):
        here = Path(current)
        above = () if here == root else here.relative_to(root).parts
        entered = []
        for name in sorted(dirs):
            parts = (*above, name)
            if name in skip_dirs:
                continue
            listed = wanted is None or wanted(parts, True)
            enter = descend is None or descend(parts)
            if not (listed or enter):
                continue
            if readable is not None and not readable(here / name, True):
                skipped.denied += 1
                continue
            if listed:
                yield Entry(here / name, parts, True)
            if enter:
                entered.append(name)  # os.walk itself never enters a symlinked directory
        dirs[:] = entered
        for name in sorted(files):
            parts = (*above, name)
            if wanted is not None and not wanted(parts, False):
                continue
            if readable is not None and not readable(here / name, False):
                skipped.denied += 1
                continue
            yield Entry(here / name, parts, False)
