"""Which files are a stone's artifacts: the guard's ``artifacts:`` globs (default ``$route/<name>*.md``).

A glob means what ``routedriver.globs`` says (hidden names match like any other; ``out/`` is every file
below ``out``); only files count. The driver's own files are never artifacts: nothing under this route's
``.route/``, no ``.stone`` or ``.guard`` file.

Where a wildcard walks (``src/**``, ``docs/*/x.md``), nothing may hide from it, or a file added there after a
pass or an approval would change nothing in the verdict. It enters every real directory below which the glob
could match, hidden ones included (``.hg``, ``.svn``, a ``.route/`` that is not a route's own), except:

- ``.git`` (git's own store: no tracked file can be under it);
- a route's own ``.route/`` (the records of a route living among the artifacts; its parent directory holds a
  ``*.stone`` file), which are that route's, not this stone's output;

and it refuses (the stone is ``broken``, naming the path) to go past

- a symlink to a directory (its files are not where the glob says, and git stores only the link);
- a repository of its own (a directory holding ``.git``: a checked-out submodule or a clone inside), or an
  empty directory that git's index holds as a gitlink (a submodule entry that is not checked out, as in
  CI's clone): the files there are another repository's, so no change to them shows in this one.

``route.stone.set``, ``route.verify`` and every other command read artifacts with these functions, so they
agree on which files a stone has.

The default glob of ``3.plan`` also matches ``3.plan-details.md``, the default artifact of ``3.plan-details``.
The most specific name owns such a file: a file the default glob of a stone with a longer name (one that
extends this stone's name) also matches is not this stone's. Globs written in a guard are taken as written.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

from routedriver import globs
from routedriver.errors import Refused
from routedriver.fsutil import entry_is_dir, entry_is_file
from routedriver.route.hashing import relative_posix
from routedriver.route.model import (
    STATE_DIR,
    VARIABLE,
    Guard,
    Route,
    Stone,
    default_artifacts,
    default_owner,
    writes_globs,
)

_DRIVER_SUFFIXES = (".stone", ".guard")
# The one directory a wildcard never enters whatever it holds: git's own store. (``globs.NEVER_ENTERED``'s
# other names, ``.hg`` and ``.svn``, are ordinary directories to git, so a tracked file there is content.)
_GIT_DIR = ".git"
_STONE_SUFFIX = ".stone"


def expand_glob(pattern: str, route: Route, stone: Stone) -> str:
    """``pattern`` with ``$route``/``$stone`` replaced by their values, escaped to match only themselves."""
    values = {"route": globs.escape(str(route.path)), "stone": globs.escape(stone.name)}
    return VARIABLE.sub(lambda match: values.get(match[1] or match[2], match[0]), pattern)


def artifact_globs(stone: Stone, guard: Guard | None) -> tuple[str, ...]:
    return guard.artifacts if guard is not None else default_artifacts(stone.name)


class Listing(NamedTuple):
    """One directory's entries, read once."""

    names: list[str]  # sorted
    is_file: dict[str, bool]  # a regular file, or a link to one
    subdirs: frozenset[str]  # real directories (not links): where a wildcard may go on
    linked_dirs: frozenset[str] = frozenset()  # symlinks to directories: where a wildcard must not go

    def holds_route(self) -> bool:
        """Is this directory a route (a ``*.stone`` regular file in it), whose ``.route/`` is its own?"""
        return any(
            name.endswith(_STONE_SUFFIX) and not name.startswith(".") and self.is_file[name]
            for name in self.names
        )


class _WalkRefused(Exception):
    """A wildcard would walk past a symlinked directory or into another repository (see the docstring);
    ``_named_files`` turns it into the stone's refusal, naming the path and the glob."""

    def __init__(self, path: str, what: str) -> None:
        super().__init__(path)
        self.path = path  # absolute
        self.what = what

    def named(self, pattern: str, base: Path) -> Refused:
        shown = relative_posix(self.path, base)
        return Refused(
            f"{shown} is {self.what}, and the artifact glob {pattern} would walk into it (a file changed "
            "there would not change this stone's verdict)",
            f"make {shown} an ordinary directory of this repository, or write artifact globs that do not "
            "reach it",
        )


class Listings:
    """Directory listings read once and shared by every glob asked in one run: a route keeps its stones'
    artifacts side by side, and ``route.drive`` looks at every passed stone (a thousand stones would
    otherwise be a thousand scans of one directory). Each listing knows which names are files and which are
    directories (``os.scandir``: no stat per file) and is sorted, so a glob's literal prefix is found by
    bisection."""

    def __init__(self) -> None:
        self._read: dict[str, Listing] = {}
        self._gitlinks: dict[str, bool] = {}

    def get(self, directory: str) -> Listing:
        """The entries of ``directory``; none when it is missing or unreadable."""
        found = self._read.get(directory)
        if found is None:
            try:
                with os.scandir(directory) as entries:
                    found = self.record(directory, entries)
            except OSError:  # a directory that is missing or unreadable holds nothing
                found = self.record(directory, ())
        return found

    def record(self, directory: str, entries: Iterable[os.DirEntry[str]]) -> Listing:
        """The listing of ``directory`` from ``entries``, its ``os.scandir`` read by whoever read it first
        (``load.load_route`` reads the route's directory for its stones): never a second scan."""
        is_file: dict[str, bool] = {}
        subdirs: set[str] = set()
        linked: set[str] = set()
        try:
            for entry in entries:
                name = entry.name
                is_file[name] = regular = entry_is_file(entry)
                # A file is no directory: only the rest are asked (thousands of files a listing).
                if not regular:
                    if entry.is_dir(follow_symlinks=False):
                        subdirs.add(name)
                    elif entry.is_symlink() and entry_is_dir(entry):
                        linked.add(name)
        except OSError:
            pass  # what could be read of a directory that became unreadable is what it holds
        listing = self._read[directory] = Listing(
            sorted(is_file), is_file, frozenset(subdirs), frozenset(linked)
        )
        return listing

    def is_gitlink(self, directory: str) -> bool:
        """Does git's index hold the (empty) ``directory`` as a gitlink, a submodule entry not checked out?
        Asked only of empty directories a wildcard reaches: git checks a gitlink out as one, and creates no
        other empty directory, so the common walk asks git nothing."""
        known = self._gitlinks.get(directory)
        if known is None:
            # git (~13 ms with proc and threads): only for an empty directory, never on get's common path
            from routedriver import gitops

            repo = gitops.find_repo(directory)
            known = False
            if repo is not None:
                relative = relative_posix(directory, repo.toplevel)
                try:
                    modes = gitops.index_modes(repo, [relative])
                except gitops.GitError:
                    modes = {relative: gitops.GITLINK_MODE}  # git cannot say: a gate fails closed
                known = modes.get(relative) == gitops.GITLINK_MODE
            self._gitlinks[directory] = known
        return known


def find_artifacts(
    route: Route, stone: Stone, guard: Guard | None, base: Path, listings: Listings | None = None
) -> list[Path]:
    """Files matched by the stone's artifact globs (relative globs start at ``base``), sorted, never the
    driver's own files: nothing under ``.route/``, no ``.stone`` or ``.guard`` file. Pass one ``Listings``
    when asking for many stones."""
    return [Path(path) for path in artifact_paths(route, stone, guard, base, listings)]


def default_glob_files(route: Route, listings: Listings) -> dict[str, list[str]]:
    """The files of every stone's default glob (``$route/<name>*.md``) as names in the route's directory,
    sorted, by stone name: ONE pass over the route's listing for all its stones (route.stone.get checks
    every passed stone of a long route), matching no pattern. Stones whose names hold glob characters are
    left out (``artifact_paths`` finds theirs). The same files ``artifact_paths`` finds: each goes to its
    ``default_owner``."""
    names = route.names
    found: dict[str, list[str]] = {name: [] for name in names if not globs.has_magic(name)}
    listing = listings.get(os.fspath(route.path))
    for entry in listing.names:
        owner = default_owner(entry, names)
        if owner is not None and owner in found and listing.is_file[entry]:
            found[owner].append(entry)
    return found


def artifact_paths(
    route: Route, stone: Stone, guard: Guard | None, base: Path, listings: Listings | None = None
) -> list[str]:
    """``find_artifacts`` as normalized absolute path strings (Path objects cost when there are thousands)."""
    state_prefix = os.fspath(route.state_dir) + os.sep
    listings = listings or Listings()
    patterns = _patterns(route, stone, guard, base)
    kept = [
        path
        for pattern in patterns
        for path in _named_files(pattern, listings, base)
        if not (path.endswith(_DRIVER_SUFFIXES) or path.startswith(state_prefix))
    ]
    # One glob names each file once, from sorted listings (sorting what is mostly in order is one pass);
    # several globs may name a file twice.
    found = kept if len(patterns) == 1 else set(kept)
    if writes_globs(guard):
        return sorted(found)
    # On the default glob, a file a stone whose name extends this one's also matches is that stone's
    # (``3.plan-details.md`` is ``3.plan-details``'s, not ``3.plan``'s: ``default_owner``).
    name, names = stone.name, route.names
    return sorted(path for path in found if default_owner(os.path.basename(path), names) == name)


def _last_only(pattern: str) -> tuple[str, str | None]:
    """(the directory, the last component) of a glob with wildcards in its last component only, none of them
    a whole ``**`` (``route/1.vision*.md``, ``docs/*.md``): one listing of that directory answers it. The
    component is None for any other glob."""
    directory, _, name = pattern.rpartition("/")
    if globs.has_magic(name) and name != globs.GLOBSTAR and not globs.has_magic(directory):
        return directory or "/", name  # the usual glob, told without parsing it (a thousand stones ask)
    spec = globs.parse(pattern).cover
    rest = spec.rest
    if rest is None or len(rest.parts) != 1 or rest.parts[0] == globs.GLOBSTAR:
        return spec.head, None
    return spec.head, rest.parts[0]


def artifact_patterns(route: Route, stone: Stone, guard: Guard | None, base: Path) -> list[str]:
    """The stone's artifact globs as absolute patterns (relative ones start at ``base``), ``$route`` and
    ``$stone`` put in: ``globs.covers(pattern, absolute_path)`` says whether a file is one of its artifacts
    by the glob alone (the walk's rules aside)."""
    return _patterns(route, stone, guard, base)


def _named_files(pattern: str, listings: Listings, base: Path) -> list[str]:
    try:
        return _files(pattern, listings)
    except _WalkRefused as exc:
        head = globs.escape(os.fspath(base)).rstrip("/") + "/"
        raise exc.named(pattern.removeprefix(head), base) from None


def input_files(
    patterns: Iterable[str], route: Route, stone: Stone, base: Path, listings: Listings | None = None
) -> dict[str, str]:
    """The files a guard's ``inputs:`` globs cover, read as its artifact globs are (``globs``'s rule, the
    same walk), as ``{path relative to base (POSIX): absolute path}``; never a route's ``.route/`` record."""
    listings = listings or Listings()
    found: dict[str, str] = {}
    for pattern in _absolute(patterns, route, stone, base):
        for path in _named_files(pattern, listings, base):
            if f"{os.sep}{STATE_DIR}{os.sep}" not in path:
                found[relative_posix(path, base)] = path
    return found


def input_patterns(route: Route, stone: Stone, guard: Guard | None, base: Path) -> list[str]:
    """The guard's ``inputs:`` globs as absolute patterns, as ``artifact_patterns`` gives its artifact globs
    (``route.verify --recheck`` asks which of a base's files they covered)."""
    return _absolute(guard.inputs if guard is not None else (), route, stone, base)


def _patterns(route: Route, stone: Stone, guard: Guard | None, base: Path) -> list[str]:
    """The stone's artifact globs, substituted, absolute (relative ones start at ``base``) and normalized
    (a trailing ``/`` kept: it means every file below)."""
    return _absolute(artifact_globs(stone, guard), route, stone, base)


def _absolute(globs_written: Iterable[str], route: Route, stone: Stone, base: Path) -> list[str]:
    escaped_base = globs.escape(str(base))
    patterns = []
    for pattern in globs_written:
        expanded = expand_glob(pattern, route, stone)
        if not os.path.isabs(expanded):
            expanded = os.path.join(escaped_base, expanded)
        normalized = os.path.normpath(expanded)
        patterns.append(normalized + "/" if expanded.endswith("/") and normalized != "/" else normalized)
    return patterns


def _files(pattern: str, listings: Listings) -> list[str]:
    """Normalized paths of the files the (absolute, normalized) glob ``pattern`` covers. The common shape,
    wildcards in the last component only (``route/1.vision*.md``, ``docs/*.md``), is answered from the
    directory's listing: only the names that start with the glob's literal prefix are looked at (found by
    bisection in the sorted names), and none is stat-ed, which matters at 10,000 files. Other globs walk down
    from their literal head, entering only directories below which something could match."""
    directory, name = _last_only(pattern)
    if name is not None:
        listing = listings.get(directory or os.curdir)
        names, is_file = listing.names, listing.is_file
        literal = globs.literal_prefix(name)
        matches = globs.name_matcher(name)
        head = directory.rstrip(os.sep) + os.sep if directory else ""
        start = bisect.bisect_left(names, literal)
        # Sorted: the names with that prefix run from ``start`` to the first name whose head differs.
        end = bisect.bisect_right(names, literal, lo=start, key=lambda entry: entry[: len(literal)])
        ends = globs.star_ends(name)
        if ends is not None:  # <literal>*<tail>: told inline, no call per name (100,000 names in a route)
            tail, shortest = ends[1], len(ends[0]) + len(ends[1])
            return [
                head + entry
                for entry in names[start:end]
                if entry.endswith(tail) and len(entry) >= shortest and is_file[entry]
            ]
        return [head + entry for entry in names[start:end] if matches(entry) and is_file[entry]]
    spec = globs.parse(pattern).cover
    if spec.rest is None:
        return [spec.head] if os.path.isfile(spec.head) else []
    return list(_walk(spec.head, spec.rest, listings))


def _walk(top: str, rest: globs.Glob, listings: Listings) -> Iterator[str]:
    """The files below ``top`` whose paths relative to it ``rest`` matches."""
    pending = [("", top)]
    while pending:
        relative_dir, directory = pending.pop()
        listing = listings.get(directory)
        if relative_dir:  # entered by a wildcard: another repository must not hide behind it
            if _GIT_DIR in listing.is_file:
                raise _WalkRefused(
                    directory, "a repository of its own (it holds .git: a submodule or a clone)"
                )
            if not listing.names and listings.is_gitlink(directory):
                raise _WalkRefused(directory, "a submodule (git's index holds it as a gitlink)")
        prefix = relative_dir + "/" if relative_dir else ""
        for name in listing.names:
            relative = prefix + name
            if listing.is_file[name]:
                if rest.matches(relative):
                    yield os.path.join(directory, name)
            elif name in listing.subdirs:
                if name == _GIT_DIR or (name == STATE_DIR and listing.holds_route()):
                    continue
                if rest.may_match_below(relative):
                    pending.append((relative, os.path.join(directory, name)))
            elif name in listing.linked_dirs and rest.may_match_below(relative):
                target = os.readlink(os.path.join(directory, name))
                raise _WalkRefused(os.path.join(directory, name), f"a symlink to a directory ({target})")
