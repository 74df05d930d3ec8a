"""Which files are a stone's artifacts: the guard's ``artifacts:`` globs (default ``$route/<name>*.md``)."""

from __future__ import annotations

import glob
import os
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
    found: set[Path] = set()
    state_dir = route.state_dir
    for pattern in artifact_globs(stone, guard):
        expanded = expand_glob(pattern, route, stone)
        if not os.path.isabs(expanded):
            expanded = os.path.join(glob.escape(str(base)), expanded)
        for match in glob.glob(expanded, recursive=True):
            path = Path(os.path.normpath(match))
            if path.name.endswith(_DRIVER_SUFFIXES) or state_dir in path.parents or not path.is_file():
                continue
            found.add(path)
    return sorted(found)
