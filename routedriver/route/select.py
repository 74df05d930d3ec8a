"""Which stones a robot works on: ``@next-one``, ``@next-all``, or stones by name or glob.

On ``route.stone.get``'s path: reads markers only (no hashing, no yaml, no git).
"""

from __future__ import annotations

import fnmatch
import shlex
from dataclasses import dataclass

from routedriver.errors import Refused
from routedriver.route import store
from routedriver.route.model import Route, Stone

NEXT_ONE = "@next-one"
NEXT_ALL = "@next-all"
_GLOB_CHARS = frozenset("*?[")


@dataclass(frozen=True)
class StoneStatus:
    stone: Stone
    passed: bool

    @property
    def status(self) -> str:
        return "passed" if self.passed else "incomplete"


@dataclass(frozen=True)
class Selection:
    stones: tuple[StoneStatus, ...]
    all_passed: bool  # every stone of the route has passed


class _Status:
    """Completion of each stone, read once and only when asked (a marker read per stone)."""

    def __init__(self, route: Route) -> None:
        self.route = route
        self.names = store.list_state(route)
        self.known: dict[str, bool] = {}

    def passed(self, stone: Stone) -> bool:
        if stone.name not in self.known:
            self.known[stone.name] = store.is_passed(self.route, stone.name, self.names)
        return self.known[stone.name]

    def first_incomplete(self) -> int | None:
        for index, stone in enumerate(self.route.stones):
            if not self.passed(stone):
                return index
        return None


def has_glob(pattern: str) -> bool:
    return any(char in _GLOB_CHARS for char in pattern)


def match_names(route: Route, pattern: str) -> list[Stone]:
    """Stones whose name is ``pattern`` or matches it as a glob (``*.research.*``), in route order; refuses
    when none does."""
    exact = route.stone(pattern) or (
        route.stone(pattern[: -len(".stone")]) if pattern.endswith(".stone") else None
    )
    if exact is not None:
        return [exact]
    matched = [stone for stone in route.stones if fnmatch.fnmatchcase(stone.name, pattern)]
    if not matched:
        raise Refused(
            f"no stone matches {pattern!r} in {route.display}",
            f"run route.stone.get --route {shlex.quote(route.display)} --stone '*' to list stones",
        )
    return matched


def select(route: Route, selector: str) -> Selection:
    status = _Status(route)
    first = status.first_incomplete()
    if selector in (NEXT_ONE, NEXT_ALL):
        if first is None:
            return Selection((), True)
        head = route.stones[first]
        chosen = [head]
        if selector == NEXT_ALL:
            # One tier at a time: the incomplete stones sharing the first incomplete stone's whole prefix.
            for stone in route.stones[first + 1 :]:
                if stone.prefix != head.prefix:
                    break
                if not status.passed(stone):
                    chosen.append(stone)
        return Selection(tuple(StoneStatus(stone, False) for stone in chosen), False)
    if selector.startswith("@"):
        raise Refused(f"unknown selector {selector!r}", f"use {NEXT_ONE}, {NEXT_ALL}, a stone name or a glob")
    matched = match_names(route, selector)
    return Selection(tuple(StoneStatus(stone, status.passed(stone)) for stone in matched), first is None)
