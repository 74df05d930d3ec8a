"""Which stones a robot works on: ``@next-one``, ``@next-all``, or stones by name or glob.

On ``route.stone.get``'s path. Whether a stone is done is ``state.Survey.check``, the answer every command
shares: a stone whose artifacts, instructions, guard or approval changed since its pass is ``stale``, and
the next stones include it. Only stones with a pass record are looked at (git's index is read once for
them); the rest are simply incomplete.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import NamedTuple

from routedriver import globs
from routedriver.errors import Refused
from routedriver.route.artifacts import Listings
from routedriver.route.load import open_route
from routedriver.route.model import Route, Stone
from routedriver.route.state import Done, Survey

NEXT_ONE = "@next-one"
NEXT_ALL = "@next-all"


class StoneStatus(NamedTuple):
    stone: Stone
    done: Done

    @property
    def passed(self) -> bool:
        return self.done.passed

    @property
    def status(self) -> str:
        """passed, incomplete, stale, unapproved or broken (see ``state.Done``)."""
        return self.done.state


class Selection(NamedTuple):
    stones: tuple[StoneStatus, ...]
    all_passed: bool  # every stone of the route has passed


class GetResult(NamedTuple):
    route: Route
    selector: str
    selection: Selection


def get(route_option: str | None, selector: str) -> GetResult:
    """``route.stone.get``: the route, and the stones ``selector`` names with their states."""
    listings = Listings()  # the route's directory is read once: for its stones and their artifacts
    route = open_route(route_option, listings)
    survey = survey_of(route, listings, open_tier_only=selector in (NEXT_ONE, NEXT_ALL))
    return GetResult(route, selector, select(route, selector, survey))


class _Status:
    """The state of each stone, asked in route order and only when needed."""

    def __init__(self, route: Route, survey: Survey | None = None) -> None:
        self.route = route
        self.survey = survey if survey is not None else survey_of(route)
        self.known: dict[str, Done] = {}

    def done(self, stone: Stone) -> Done:
        if stone.name not in self.known:
            self.known[stone.name] = self.survey.check(stone)
        return self.known[stone.name]

    def passed(self, stone: Stone) -> bool:
        return self.done(stone).passed

    def first_incomplete(self) -> int | None:
        for index, stone in enumerate(self.route.stones):
            if not self.passed(stone):
                return index
        return None


def survey_of(route: Route, listings: Listings | None = None, *, open_tier_only: bool = False) -> Survey:
    """A ``Survey`` of ``route`` with git's index read once for the stones that have a pass to check (git
    is not even started for a route that has none, until something needs it). ``listings``: directories
    already read (``load_route``'s).

    ``open_tier_only`` (``@next-one``, ``@next-all``): only the stones up to the tier of the first stone
    with no record of a pass are prepared. That stone is incomplete, so the first incomplete stone is at
    or before it and the stones of later tiers are never asked about: their files are not hashed."""
    survey = Survey(route, None, Path.cwd(), locate=True, listings=listings)
    checked: list[Stone] = []
    open_tier: tuple[int, ...] | None = None
    for stone in route.stones:
        if open_tier is not None and stone.prefix != open_tier:
            break
        if survey.needs_checking(stone):
            checked.append(stone)
        elif open_tier_only and open_tier is None:
            open_tier = stone.prefix
    if checked:
        survey.prepare(checked)
    return survey


def has_glob(pattern: str) -> bool:
    return globs.has_magic(pattern)


def match_names(route: Route, pattern: str) -> list[Stone]:
    """Stones whose name is ``pattern`` or matches it as a glob (``*.research.*``), in route order; refuses
    when none does."""
    exact = route.stone(pattern) or (
        route.stone(pattern[: -len(".stone")]) if pattern.endswith(".stone") else None
    )
    if exact is not None:
        return [exact]
    matches = globs.name_matcher(pattern)  # a stone's name is one name: the glob rule of routedriver.globs
    matched = [stone for stone in route.stones if matches(stone.name)]
    if not matched:
        raise Refused(
            f"no stone matches {pattern!r} in {route.display}",
            f"run route.stone.get --route {shlex.quote(route.display)} --stone '*' to list stones",
        )
    return matched


def select(route: Route, selector: str, survey: Survey | None = None) -> Selection:
    """The stones ``selector`` names, each with its state (``survey``: one already made for ``route``)."""
    status = _Status(route, survey)
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
        return Selection(tuple(StoneStatus(stone, status.done(stone)) for stone in chosen), False)
    if selector.startswith("@"):
        raise Refused(f"unknown selector {selector!r}", f"use {NEXT_ONE}, {NEXT_ALL}, a stone name or a glob")
    matched = match_names(route, selector)
    return Selection(tuple(StoneStatus(stone, status.done(stone)) for stone in matched), first is None)
