"""Walking a directory tree for the search tools (``glob``, ``grep``), and glob patterns matched against it.

The walk never follows a symlinked directory (a link to ``..`` would otherwise loop until memory or time
runs out); such a link is still listed as an entry, so ``glob`` shows it. Paths the permission rules hide
(``ToolContext.readable``) are skipped and counted, so a result can say that something was left out.

Glob patterns follow ``glob.glob(recursive=True)``: ``*``, ``?`` and ``[…]`` match within one path component,
a component that is exactly ``**`` matches any number of directories, and wildcards do not match names
starting with a dot unless the pattern's component starts with one too.
"""

from __future__ import annotations

import fnmatch
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from routedriver.brain.tools.base import ReadFilter

VCS_DIRS = frozenset({".git", ".hg", ".svn"})
_MAGIC = re.compile(r"[*?[]")


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


class GlobPattern:
    """A glob pattern split into the literal directory it starts from and the components to match below."""

    def __init__(self, pattern: str) -> None:
        self.dirs_only = len(pattern) > 1 and pattern.endswith("/")
        components = pattern.rstrip("/").split("/") if self.dirs_only else pattern.split("/")
        literal = 0
        while literal < len(components) and not _MAGIC.search(components[literal]):
            literal += 1
        # The literal head is where the walk starts ("src" of "src/**/*.py", "/abs" of "/abs/*.txt").
        head = components[:literal]
        self.prefix = "/".join(head) if head != [""] else "/"
        self.parts = tuple(c for c in components[literal:] if c)
        self.literal = not self.parts
        # One compiled regex is several times faster than matching component by component; character sets
        # ("[a-z]", "[!x]") keep fnmatch's own rules through the component matcher.
        has_sets = any("[" in part for part in self.parts)
        self._regex = None if has_sets else re.compile(_path_regex(self.parts))

    def matches(self, parts: tuple[str, ...]) -> bool:
        if self._regex is None:
            return self._match(parts, partial=False)
        return self._regex.fullmatch("/".join(parts)) is not None

    def may_match_below(self, parts: tuple[str, ...]) -> bool:
        """Could a path below the directory ``parts`` match? (Lets the walk skip whole subtrees.)"""
        return self._match(parts, partial=True)

    def _match(self, parts: tuple[str, ...], *, partial: bool) -> bool:
        """The reference matcher, component by component; ``matches`` is its compiled equivalent."""
        pats = self.parts
        memo: dict[tuple[int, int], bool] = {}  # "**" can try many splits; each (i, j) is decided once

        def match(i: int, j: int) -> bool:
            key = (i, j)
            if key in memo:
                return memo[key]
            if i == len(parts):
                result = j < len(pats) if partial else all(p == "**" for p in pats[j:])
            elif j == len(pats):
                result = False
            elif pats[j] == "**":
                result = match(i, j + 1) or (not parts[i].startswith(".") and match(i + 1, j))
            else:
                result = _component_matches(parts[i], pats[j]) and match(i + 1, j + 1)
            memo[key] = result
            return result

        return match(0, 0)


def _component_matches(name: str, pattern: str) -> bool:
    if name.startswith(".") and not pattern.startswith("."):
        return False  # as glob: a wildcard does not match a hidden name
    return fnmatch.fnmatchcase(name, pattern)


_ANY_NAME = r"(?!\.)[^/]+"  # one component a wildcard may match: any name not starting with a dot


def _path_regex(pats: tuple[str, ...]) -> str:
    """The components as one regex over "a/b/c" (a whole-component ``**`` is any number of directories)."""
    out, separate = "", False
    for index, pat in enumerate(pats):
        last = index == len(pats) - 1
        if pat == "**" and not last:  # the separator stays owed to the next component: zero dirs is fine
            out += f"(?:/{_ANY_NAME})*" if separate else f"(?:{_ANY_NAME}/)*"
        elif pat == "**":
            out += f"(?:/{_ANY_NAME})*" if separate else f"(?:{_ANY_NAME}(?:/{_ANY_NAME})*)?"
        else:
            out += ("/" if separate else "") + ("" if pat.startswith(".") else r"(?!\.)") + _name_regex(pat)
            separate = True
    return out


def _name_regex(pat: str) -> str:
    """fnmatch's rules for one name without ``[…]`` sets, never matching a "/"."""
    out, i = "", 0
    while i < len(pat):
        char = pat[i]
        i += 1
        if char == "*":
            out += "[^/]*"
        elif char == "?":
            out += "[^/]"
        else:
            out += re.escape(char)
    return out
