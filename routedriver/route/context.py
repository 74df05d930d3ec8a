"""A stone as the commands work on it: its route, stone, guard, repository and the place its commands run
(``StoneContext``), and its approval marker as read now (``ApprovalState``). ``route.inputs`` makes them;
the built-in judges, the guard, verify and recheck read them.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from routedriver.route import hashing
from routedriver.route.model import Guard, Marker, Route, Stone

if TYPE_CHECKING:
    from routedriver.gitops import Repo


class StoneContext(NamedTuple):
    route: Route
    stone: Stone
    guard: Guard | None
    repo: Repo | None
    base: (
        Path  # the git top-level, or the cwd outside git: commands run here, hashed paths are relative to it
    )
    # How a review or judge command starts: None, ``bash -c`` as it is; else the argv that runs it inside a
    # sandbox (``route.verify --recheck``: the commands of a pull request's claims, see recheck.Jail).
    jail: Callable[[str], list[str]] | None = None

    @property
    def route_arg(self) -> str:
        """``$route`` / ``ROUTE`` as the commands see it: relative to where they run."""
        relative = hashing.relative_posix(self.route.path, self.base)
        return f"./{relative}" if relative.startswith("-") else relative

    def show(self, path: Path) -> str:
        """``path`` relative to where commands run: how files are named inside the files we write."""
        return hashing.relative_posix(path, self.base)

    def command_hint(self, action: str, portable: bool = False) -> str:
        """A ``route.stone.<action>`` command line for this stone; ``portable`` names the route relative to
        the git top-level (for text written into files) instead of as the user named it."""
        route = self.route_arg if portable else self.route.display
        return f"route.stone.{action} --route {shlex.quote(route)} --stone {shlex.quote(self.stone.name)}"


class ApprovalState(NamedTuple):
    marker: Marker | None
    exists: bool
    content_id: str | None  # the marker file's content id (part of the judge-input hash); None: no marker
