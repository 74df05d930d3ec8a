"""What a robot may not write, for ``route.bounce``'s two readers (file edits in ``route.bounce``, Bash
commands in ``route.bounce_bash``): the driver's own files (``driver_file``) and the paths a guard's
``protect:`` globs name while its stone has not passed (``Protection``), and the answer both give
(``Bounce``).
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from routedriver import globs, userfile
from routedriver.errors import Refused
from routedriver.route import store
from routedriver.route.model import STATE_DIR, VARIABLE, Guard, Route, Stone

if TYPE_CHECKING:
    from routedriver.gitops import Repo
    from routedriver.route.state import Survey


@dataclass(frozen=True)
class Bounce:
    blocked: bool
    reason: str = ""
    warnings: tuple[str, ...] = ()  # problems that did not block (a guard that does not parse)
    problem: str = ""  # a misconfiguration that disables protect: rules (the hook exits 1: shown to the user)
    unread: bool = False  # blocked because the event could not be read (exit 2, not Claude Code's JSON deny)


# Claude Code's project settings files (shared and local), where route.init --claude-code wires the hooks.
CLAUDE_SETTINGS = frozenset({"settings.json", "settings.local.json"})


def _is_route(directory: Path) -> bool:
    try:
        with os.scandir(directory) as entries:
            return any(entry.name.endswith(".stone") and not entry.name.startswith(".") for entry in entries)
    except OSError:
        return False


def driver_file(target: Path) -> str | None:
    """Why ``target`` is a file robots never write, or None.

    Names are compared without letter case: on a case-insensitive file system (macOS, Windows) a write to
    ``1.Vision.STONE`` or ``.ROUTE/`` lands in the stone or the driver's directory."""
    name, parent = target.name.casefold(), target.parent
    if name.endswith(".stone") and not name.startswith("."):
        return "stones (*.stone) are read-only templates: a human writes them, route.stone.del removes them"
    # os.path.exists, not Path.exists: a name too long for the file system is "no such stone", not a crash.
    stone = parent / f"{target.name[:-6]}.stone"
    if name.endswith(".guard") and (os.path.exists(stone) or _is_route(parent)):
        return "guards (*.guard) are read-only templates: only a human changes what checks a stone"
    if name == ".route-approvers":
        return "the approvers file says who may approve; only a human changes it"
    if name in CLAUDE_SETTINGS and parent.name.casefold() == ".claude":
        # The hooks that hold the robot to its route (this one included) are wired here; a robot that
        # could edit them could switch them off (``disableAllHooks``, or simply remove them).
        return (
            "Claude Code's settings wire the hooks that hold the robot to its route; only a human changes "
            "them"
        )
    for ancestor in target.parents:
        if ancestor.name.casefold() == STATE_DIR and _is_route(ancestor.parent):
            return (
                "files under a route's .route/ are written by the driver only (reviews, judges, markers, "
                "bindings, approvers); run route.stone.set and let it record the result"
            )
    return None


class Protection:
    """What the bound route (or ``--route``) protects with its guards' ``protect:`` globs, read once for all
    the paths of one tool call: the route is opened, its state listed and its guards read and parsed at the
    first path asked about, and a stone's pass is checked once."""

    def __init__(self, route_option: str | None) -> None:
        self.route_option = route_option
        self._opened: tuple[Route | None, Bounce | None] | None = None
        self._located: tuple[Repo | None, Path] | None = None
        self._names: frozenset[str] = frozenset()
        self._guards: list[tuple[Stone, Guard | Refused]] | None = None
        self._survey: Survey | None = None
        self._passed: dict[str, bool] = {}

    def route(self) -> tuple[Route | None, Bounce | None]:
        """The route, or None and why not (a problem to report, or None: no route is bound here, so there
        is nothing more to protect: main, a detached HEAD)."""
        if self._opened is None:
            # route.bounce on a Bash command that writes nothing (an `ls`) opens no route: the route,
            # git, the guard reader (PyYAML) and the Survey, here and below, load only when a path is judged
            # (~16 ms)
            from routedriver.route.bind import NotBound
            from routedriver.route.load import open_route

            try:
                self._opened = (open_route(self.route_option), None)
            except NotBound:
                self._opened = (None, None)
            except Refused as exc:
                # A route that cannot be resolved (two bound, a bad --route) protects nothing: say so, or
                # the protect: rules would silently stop working.
                why = exc.line().removeprefix("error: ")
                problem = f"route.bounce cannot tell what to protect (protect: rules off): {why}"
                self._opened = (None, Bounce(False, problem=problem))
        return self._opened

    def located(self, route: Route) -> tuple[Repo | None, Path]:
        """The repository holding the route, and the base its globs are relative to (its top level)."""
        if self._located is None:
            # git: only when a path is judged (see open above)
            from routedriver.gitops import find_repo

            repo = find_repo(route.path)
            self._located = (repo, repo.toplevel if repo is not None else Path.cwd())
            self._names = store.list_state(route)
        return self._located

    def guards(self, route: Route) -> list[tuple[Stone, Guard | Refused]]:
        """``(stone, guard)`` for every guard that mentions ``protect`` (the others protect nothing), parsed
        once for all the paths asked about; a guard that does not parse comes with why (``Refused``)."""
        if self._guards is None:
            self._guards = []
            for stone in route.stones:
                if stone.guard_path is None:
                    continue
                try:
                    shown = route.show(stone.guard_path)
                    text = userfile.read_text(stone.guard_path, what="guard", shown=shown)
                except Refused:
                    continue
                if "protect" not in text:
                    continue
                # the guard reader (PyYAML): only for a guard that may protect something
                from routedriver.route.guardfile import parse_guard

                try:
                    self._guards.append((stone, parse_guard(text, stone.guard_path, shown, stone.name)))
                except Refused as exc:
                    self._guards.append((stone, exc))
        return self._guards

    def passed(self, route: Route, stone: Stone) -> bool:
        """Whether ``stone`` has passed as route.verify would say it: fresh."""
        if stone.name not in self._passed:
            repo, base = self.located(route)
            passed = False
            if store.has_marker(self._names, stone.name):
                # the Survey: only for a stone with a pass to check
                from routedriver.route.state import Survey

                self._survey = self._survey or Survey(route, repo, base, names=self._names)
                passed = self._survey.check(stone).passed
            self._passed[stone.name] = passed
        return self._passed[stone.name]

    def protected_globs(self) -> list[tuple[str, Path]]:
        """Every ``protect:`` glob of a stone that has not passed, ``$route``/``$stone`` substituted, with
        the base it is relative to (for a directory a command writes below: does it hold such paths?)."""
        route, _ = self.route()
        if route is None:
            return []
        _, base = self.located(route)
        found = []
        for stone, guard in self.guards(route):
            if isinstance(guard, Refused):
                continue
            if guard.protect and not self.passed(route, stone):
                found += [(_expand(pattern, route, stone, base), base) for pattern in guard.protect]
        return found

    def check(self, target: Path, how: str = "") -> Bounce:
        """Blocked when a ``protect:`` glob of a stone that has not passed covers ``target`` (``how``: what
        writes it, said after the path)."""
        route, problem = self.route()
        if route is None:
            return problem or Bounce(False)
        _, base = self.located(route)
        relative = Path(os.path.relpath(target, base)).as_posix()
        warnings: list[str] = []
        for stone, guard in self.guards(route):
            if isinstance(guard, Refused):
                why = guard.line().removeprefix("error: ")  # the CLI adds its own "warning: "
                warnings.append(f"{why} (its protect: rules are not enforced until it is fixed)")
                continue
            pattern = _protecting_glob(route, stone, guard, relative, base)
            if pattern is None or self.passed(route, stone):
                continue
            shown = relative if not relative.startswith("../") else str(target)
            shown += f" ({how})" if how else ""
            head = f"--route {shlex.quote(route.display)} --stone {shlex.quote(stone.name)}"
            return Bounce(
                True,
                f"route.bounce: blocked {shown}: it is protected by stone {stone.name} of route "
                f"{route.display} (protect: {pattern}) until that stone passes. Finish that stone first: "
                f"read it with route.stone.get {head} --say, then run route.stone.set {head} --as passed.",
                tuple(warnings),
            )
        return Bounce(False, "", tuple(warnings))


def _protecting_glob(route: Route, stone: Stone, guard: Guard, relative: str, base: Path) -> str | None:
    """The first ``protect:`` glob of the stone's guard that matches ``relative``, unless the path is one
    of the stone's own artifacts."""
    hit = next((pattern for pattern in guard.protect if _match(pattern, route, stone, relative, base)), None)
    if hit is None or any(_match(pattern, route, stone, relative, base) for pattern in guard.artifacts):
        return None
    return hit


def _match(pattern: str, route: Route, stone: Stone, relative: str, base: Path) -> bool:
    """Whether the guard's glob ``pattern`` covers ``relative`` (``routedriver.globs``'s rule: hidden names
    included, ``x/`` is everything below ``x``), ``$route`` and ``$stone`` substituted."""
    return globs.covers(_expand(pattern, route, stone, base), relative)


def _expand(pattern: str, route: Route, stone: Stone, base: Path) -> str:
    """A guard's glob with ``$route`` and ``$stone`` substituted, relative to ``base``."""
    route_value = Path(os.path.relpath(route.path, base)).as_posix()
    values = {"route": globs.escape(route_value), "stone": globs.escape(stone.name)}
    expanded = VARIABLE.sub(lambda match: values.get(match[1] or match[2], match[0]), pattern)
    if os.path.isabs(expanded):
        # relpath drops a trailing "/", which means "everything below": keep it.
        expanded = Path(os.path.relpath(expanded, base)).as_posix() + ("/" if expanded.endswith("/") else "")
    return expanded
