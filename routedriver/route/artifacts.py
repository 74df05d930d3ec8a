"""Which files are a stone's artifacts: the guard's ``artifacts:`` globs (default ``$route/<name>*.md``).

The default glob of ``3.plan`` also matches ``3.plan-details.md``, the default artifact of ``3.plan-details``.
The most specific name owns such a file: a file the default glob of a stone with a longer name (one that
extends this stone's name) also matches is not this stone's. Globs written in a guard are taken as written.
"""

from __future__ import annotations

import bisect
import fnmatch
import glob
import os
import re
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from itertools import filterfalse
from pathlib import Path

from routedriver.route.guardfile import DEFAULT_ARTIFACTS, default_artifacts
from routedriver.route.hashing import relative_posix
from routedriver.route.model import Guard, Route, Stone
from routedriver.route.subst import VARIABLE

_DRIVER_SUFFIXES = (".stone", ".guard")
_DRIVER_FILE = re.compile(r".*\.(?:stone|guard)\Z", re.DOTALL)  # a name ending in one of _DRIVER_SUFFIXES

# Given relative paths, says which are NOT known to be regular files (e.g. ``IndexSnapshot.unsure``: git's
# index lists them as regular files and the work tree agrees); those, and only those, are stat-ed.
Unsure = Callable[[Iterable[str]], set[str]]


def expand_glob(pattern: str, route: Route, stone: Stone) -> str:
    """``pattern`` with ``$route``/``$stone`` replaced by their values, escaped to match only themselves."""
    values = {"route": glob.escape(str(route.path)), "stone": glob.escape(stone.name)}
    return VARIABLE.sub(lambda match: values.get(match[1] or match[2], match[0]), pattern)


def artifact_globs(stone: Stone, guard: Guard | None) -> tuple[str, ...]:
    return guard.artifacts if guard is not None else default_artifacts(stone.name)


class Listings:
    """Directory listings read once and shared by every glob asked in one run: a route keeps its stones'
    artifacts side by side, and ``route.drive`` looks at every passed stone (a thousand stones would
    otherwise be a thousand scans of one directory). Each listing knows which names are files
    (``os.scandir``: no stat per file) and is sorted, so a glob's literal prefix is found by bisection."""

    def __init__(self) -> None:
        self._read: dict[str, tuple[list[str], dict[str, bool]]] = {}

    def get(self, directory: str) -> tuple[list[str], dict[str, bool]]:
        """(sorted names, {name: is a file}) of ``directory``; empty when it is missing or unreadable."""
        found = self._read.get(directory)
        if found is None:
            try:
                with os.scandir(directory) as entries:
                    is_file = {entry.name: entry.is_file() for entry in entries}
            except OSError:
                is_file = {}  # like glob: a directory that is missing or unreadable matches nothing
            found = self._read[directory] = (sorted(is_file), is_file)
        return found


def find_artifacts(
    route: Route, stone: Stone, guard: Guard | None, base: Path, listings: Listings | None = None
) -> list[Path]:
    """Files matched by the stone's artifact globs (relative globs start at ``base``), sorted, never the
    driver's own files: nothing under ``.route/``, no ``.stone`` or ``.guard`` file. Pass one ``Listings``
    when asking for many stones."""
    return [Path(path) for path in artifact_paths(route, stone, guard, base, listings)]


def artifact_paths(
    route: Route, stone: Stone, guard: Guard | None, base: Path, listings: Listings | None = None
) -> list[str]:
    """``find_artifacts`` as absolute path strings (Path objects cost when there are thousands)."""
    found: set[str] = set()
    state_prefix = os.fspath(route.state_dir) + os.sep
    listings = listings or Listings()
    for pattern in _patterns(route, stone, guard, base):
        for path in _files(pattern, listings):
            if path.endswith(_DRIVER_SUFFIXES) or path.startswith(state_prefix):
                continue
            found.add(path)
    taken = _taken_by_longer_name(route, stone, guard)
    if taken is not None:
        return sorted(path for path in found if not taken(os.path.basename(path)))
    return sorted(found)


def artifact_map(
    route: Route, stone: Stone, guard: Guard | None, base: Path, unsure: Unsure | None = None
) -> dict[str, str]:
    """``find_artifacts`` for route.verify, which handles thousands: ``{path relative to base (POSIX):
    absolute path}``, the same files.

    With ``unsure`` (see ``Unsure``), the common glob, wildcards in the last component only
    (``$route/art/*.md``), lists its directory once, filters the names in C and stats only the matches git
    does not vouch for. Other globs, or no ``unsure``, go through ``artifact_paths``'s way.
    """
    found: dict[str, str] = {}
    state_dir = os.fspath(route.state_dir)
    state_prefix = state_dir + os.sep
    for pattern in _patterns(route, stone, guard, base):
        directory, name = os.path.split(pattern)
        if unsure is None or os.sep != "/" or glob.has_magic(directory) or not _last_only(name):
            for path in _files(pattern, Listings()):
                if not (path.endswith(_DRIVER_SUFFIXES) or path.startswith(state_prefix)):
                    found[relative_posix(path, base)] = path
            continue
        if directory == state_dir or directory.startswith(state_prefix):
            continue
        try:
            names = os.listdir(directory)
        except OSError:
            continue  # like glob: a directory that is missing or unreadable matches nothing
        entries = list(filter(_name_matcher(name), names))
        if _may_match_driver_files(name):
            entries = list(filterfalse(_DRIVER_FILE.match, entries))
        relative_dir = relative_posix(directory, base)
        head = "" if relative_dir == "." else relative_dir + "/"
        absolute_head = directory.rstrip("/") + "/"
        # map/zip: the thousands of names are joined in C, not one by one in Python.
        here = dict(zip(map(head.__add__, entries), map(absolute_head.__add__, entries), strict=True))
        for relative in unsure(here):
            if not os.path.isfile(here[relative]):
                del here[relative]  # a directory (or a broken link) whose name matches
        found.update(here)
    taken = _taken_by_longer_name(route, stone, guard)
    if taken is not None:
        for relative, path in list(found.items()):
            if taken(os.path.basename(path)):
                del found[relative]
    return found


# What the default glob matches after the stone's name: any text, then this suffix (``.md``).
_DEFAULT_SUFFIX = DEFAULT_ARTIFACTS[0].rpartition("*")[2]
# The last route's stones and their names sorted: route.verify and route.drive ask for every stone of one
# route in turn, so the names are sorted once per route (the tuple is held, so ``is`` cannot be fooled).
_SORTED_NAMES: tuple[tuple[Stone, ...], list[str]] = ((), [])


def _taken_by_longer_name(route: Route, stone: Stone, guard: Guard | None) -> Callable[[str], bool] | None:
    """For a stone on the default glob (its guard has no ``artifacts:``), whether a file name it matches
    belongs to another stone of the route whose name extends this one's (``3.plan-details`` for ``3.plan``)
    because that stone's default glob matches it too; None (nothing to leave out) for written globs and
    for the usual stone, whose name no other stone's extends."""
    if guard is not None and guard.artifacts is not DEFAULT_ARTIFACTS:
        return None
    global _SORTED_NAMES
    stones, names = _SORTED_NAMES
    if stones is not route.stones:
        stones, names = _SORTED_NAMES = (route.stones, sorted(other.name for other in route.stones))
    name = stone.name
    # Sorted, the names that start with this one follow it, side by side.
    start = end = bisect.bisect_right(names, name)
    while end < len(names) and names[end].startswith(name):
        end += 1
    if start == end:
        return None
    longer = [(other, len(other) + len(_DEFAULT_SUFFIX)) for other in names[start:end]]
    # The file's name ends in the suffix (this stone's default matched it); the other stone's default
    # matches it when it starts with that stone's name and is long enough for both.
    return lambda filename: any(
        filename.startswith(other) and len(filename) >= least for other, least in longer
    )


@lru_cache(maxsize=256)
def _name_matcher(name: str) -> Callable[[str], re.Match[str] | None]:
    """Matches a file name against the glob component ``name`` as glob does: like fnmatch, except that a
    leading dot is matched only by a pattern that starts with one."""
    hidden = "" if name.startswith(".") else r"(?!\.)"
    return re.compile(hidden + fnmatch.translate(name)).match


@lru_cache(maxsize=256)
def _may_match_driver_files(name: str) -> bool:
    """Whether the glob component ``name`` can match a ``.stone`` or ``.guard`` file: not when it ends in
    literal text that rules both out (``*.md``: every name it matches ends in ``.md``)."""
    tail = re.split(r"[*?\]]", name)[-1]  # the literal text after the last wildcard or class
    return not tail or any(suffix.endswith(tail) or tail.endswith(suffix) for suffix in _DRIVER_SUFFIXES)


def _last_only(name: str) -> bool:
    """Wildcards in this (last) component, none of them ``**``: one directory listing answers the glob."""
    return glob.has_magic(name) and "**" not in name


def _patterns(route: Route, stone: Stone, guard: Guard | None, base: Path) -> list[str]:
    """The stone's artifact globs, substituted, absolute (relative ones start at ``base``) and normalized."""
    escaped_base = glob.escape(str(base))
    patterns = []
    for pattern in artifact_globs(stone, guard):
        expanded = expand_glob(pattern, route, stone)
        if not os.path.isabs(expanded):
            expanded = os.path.join(escaped_base, expanded)
        patterns.append(os.path.normpath(expanded))
    return patterns


_MAGIC = re.compile(r"[*?\[]")


def _files(pattern: str, listings: Listings) -> Iterator[str]:
    """Normalized paths of the files ``glob.glob(pattern, recursive=True)`` matches (``pattern`` is
    normalized). The common shape, wildcards in the last component only (``route/1.vision*.md``,
    ``docs/*.md``), is answered from the directory's listing: only the names that start with the glob's
    literal prefix are looked at, and none is stat-ed, which matters at 10,000 files."""
    directory, name = os.path.split(pattern)
    if glob.has_magic(directory) or not _last_only(name):
        for match in glob.glob(pattern, recursive=True):
            if os.path.isfile(match):
                yield os.path.normpath(match)
        return
    names, is_file = listings.get(directory or os.curdir)
    literal = _MAGIC.split(name, 1)[0]
    matches = _component_matcher(name, literal)
    skip_hidden = not name.startswith(".")  # like glob: '*' does not match a leading dot
    head = directory.rstrip(os.sep) + os.sep if directory else ""
    # By index, not islice: islice steps through every name before the start (quadratic over a long route).
    for index in range(bisect.bisect_left(names, literal), len(names)):
        entry = names[index]
        if not entry.startswith(literal):
            break  # sorted: every later name has another prefix
        if not (skip_hidden and entry[0] == ".") and matches(entry) and is_file[entry]:
            yield head + entry


def _component_matcher(name: str, literal: str) -> Callable[[str], object]:
    """Whether a file name that starts with ``literal`` matches the glob component ``name``. Each stone's own
    default, ``<literal>*<suffix>`` (``1.vision*.md``), is told by the name's length and end: compiling a
    regular expression per stone costs more than the rest on a long route."""
    rest = name[len(literal) :]
    if rest.startswith("*") and not _MAGIC.search(rest, 1):
        suffix, shortest = rest[1:], len(name) - 1
        return lambda entry: len(entry) >= shortest and entry.endswith(suffix)
    return re.compile(fnmatch.translate(name)).match
