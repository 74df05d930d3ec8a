"""Which files are a stone's artifacts: the guard's ``artifacts:`` globs (default ``$route/<name>*.md``)."""

from __future__ import annotations

import fnmatch
import glob
import os
import re
from collections.abc import Iterator
from pathlib import Path

from routedriver.route.guardfile import default_artifacts
from routedriver.route.model import Guard, Route, Stone
from routedriver.route.subst import VARIABLE

_DRIVER_SUFFIXES = (".stone", ".guard")


def expand_glob(pattern: str, route: Route, stone: Stone) -> str:
    """``pattern`` with ``$route``/``$stone`` replaced by their values, escaped to match only themselves."""
    values = {"route": glob.escape(str(route.path)), "stone": glob.escape(stone.name)}
    return VARIABLE.sub(lambda match: values.get(match[1] or match[2], match[0]), pattern)


def artifact_globs(stone: Stone, guard: Guard | None) -> tuple[str, ...]:
    return guard.artifacts if guard is not None else default_artifacts(stone.name)


def find_artifacts(route: Route, stone: Stone, guard: Guard | None, base: Path) -> list[Path]:
    """Files matched by the stone's artifact globs (relative globs start at ``base``), sorted, never the
    driver's own files: nothing under ``.route/``, no ``.stone`` or ``.guard`` file."""
    return [Path(path) for path in artifact_paths(route, stone, guard, base)]


def artifact_paths(route: Route, stone: Stone, guard: Guard | None, base: Path) -> list[str]:
    """``find_artifacts`` as absolute path strings (route.verify handles thousands; Path objects cost)."""
    found: set[str] = set()
    state_dir = os.fspath(route.state_dir)
    state_prefix = state_dir + os.sep
    escaped_base = glob.escape(str(base))
    for pattern in artifact_globs(stone, guard):
        expanded = expand_glob(pattern, route, stone)
        if not os.path.isabs(expanded):
            expanded = os.path.join(escaped_base, expanded)
        for path in _files(os.path.normpath(expanded)):
            if path.endswith(_DRIVER_SUFFIXES) or path.startswith(state_prefix):
                continue
            found.add(path)
    return sorted(found)


def _files(pattern: str) -> Iterator[str]:
    """Normalized paths of the files ``glob.glob(pattern, recursive=True)`` matches (``pattern`` is
    normalized). The common shape, wildcards in the last component only (``route/1.vision*.md``,
    ``docs/*.md``), reads the directory once with ``os.scandir``, whose entries already know whether they
    are files: no stat per file, which matters at 10,000 files."""
    directory, name = os.path.split(pattern)
    if glob.has_magic(directory) or not glob.has_magic(name) or "**" in name:
        for match in glob.glob(pattern, recursive=True):
            if os.path.isfile(match):
                yield os.path.normpath(match)
        return
    matcher = re.compile(fnmatch.translate(name)).match
    skip_hidden = not name.startswith(".")  # like glob: '*' does not match a leading dot
    head = directory.rstrip(os.sep) + os.sep if directory else ""
    try:
        with os.scandir(directory or os.curdir) as entries:
            for entry in entries:
                entry_name = entry.name
                if skip_hidden and entry_name[0] == ".":
                    continue
                if matcher(entry_name) and entry.is_file():
                    yield head + entry_name
    except OSError:
        return
