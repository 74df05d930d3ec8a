"""``route.status``: the board. Every stone of a route, by tier, with the state every command agrees on.

It reads files only (no review, no judge, no network) and decides nothing of its own: whether a stone is
done is ``state.Survey.check`` (what ``route.verify`` says), and what the robot should do about a stone of
the active tier is ``drive.state_of`` (what ``route.drive`` says). Around that it gathers what a person
steering the route wants at a glance: why a stone is stale, what blocks it, the counts of its latest
review, who approved it and when.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, NamedTuple

from routedriver import gitops
from routedriver.errors import Refused
from routedriver.route import drive, judges, records, store
from routedriver.route.load import open_route
from routedriver.route.model import Route, Stone
from routedriver.route.select import NEXT_ALL, select, survey_of
from routedriver.route.state import Survey
from routedriver.route.verify import route_paths
from routedriver.route.words import count

BoardState = Literal[
    "passed",
    "stale",
    "ready",
    "needs-artifact",
    "blocked",
    "waiting-for-approval",
    "rejected",
    "malfunction",
    "unapproved",
    "broken",
]


class ReviewCounts(NamedTuple):
    blockers: int | None
    nitpicks: int | None
    file: str  # the review file, as the route names it


class Approval(NamedTuple):
    name: str
    email: str
    at: str
    current: bool  # for the artifacts as they are now


class Row(NamedTuple):
    """One stone on the board."""

    stone: Stone
    state: BoardState
    detail: str  # why it is stale, what blocks it, the judges' reasons, …
    blocked_by: str | None  # the first stone of a lower tier that is not passed
    review: ReviewCounts | None  # the counts of the latest review that ran on it
    approval: Approval | None

    @property
    def tier(self) -> str:
        return ".".join(map(str, self.stone.prefix))


class RouteBoard(NamedTuple):
    route: Route
    rows: tuple[Row, ...]

    @property
    def passed(self) -> int:
        return sum(1 for row in self.rows if row.state == "passed")

    @property
    def total(self) -> int:
        return len(self.rows)


def board(route: Route) -> RouteBoard:
    """The state of every stone of ``route``."""
    survey = survey_of(route)
    selection = select(route, NEXT_ALL, survey)
    active = {item.stone.name for item in selection.stones}
    first_open = selection.stones[0].stone if selection.stones else None
    rows = []
    for stone in route.stones:
        done = survey.check(stone) if survey.needs_checking(stone) else None
        blocked_by: str | None = None
        if done is not None and done.passed:
            state: BoardState = "passed"
            detail = count(done.history, "older pass record") if done.history else ""
        elif stone.name in active:
            found = _drive_state(survey, stone, done)
            state, detail = found
        elif done is not None and done.state != "incomplete":
            guided = drive.not_done(stone, done)
            state, detail = _board_state(guided.state), guided.detail
        else:
            state, detail = "blocked", ""
            blocked_by = first_open.name if first_open is not None else None
            if blocked_by is not None:
                detail = f"{blocked_by} comes first"
        current = done.inputs.review_input_hash if done is not None and done.inputs is not None else None
        if current is None and stone.name in active:
            current = _current_input(survey, stone)
        review, approval = _latest_review(survey, stone), _approval(route, stone, current)
        rows.append(Row(stone, state, detail, blocked_by, review, approval))
    return RouteBoard(route, tuple(rows))


def _current_input(survey: Survey, stone: Stone) -> str | None:
    try:
        return survey.inputs(stone).review_input_hash if survey.artifacts(stone) else None
    except Refused:
        return None


def _drive_state(survey: Survey, stone: Stone, done: object) -> tuple[BoardState, str]:
    try:
        guided = drive.state_of(survey, stone, done)  # type: ignore[arg-type]
    except Refused as exc:
        return "broken", exc.line().removeprefix("error: ")
    return _board_state(guided.state), guided.detail


def _board_state(state: str) -> BoardState:
    known: dict[str, BoardState] = {
        drive.NEEDS_ARTIFACT: "needs-artifact",
        drive.READY: "ready",
        drive.REJECTED: "rejected",
        drive.STALE: "stale",
        drive.WAITING: "waiting-for-approval",
        drive.MALFUNCTION: "malfunction",
    }
    return known[state]


def _latest_review(survey: Survey, stone: Stone) -> ReviewCounts | None:
    """The counts of the stone's latest review run (its first review of the latest iteration)."""
    files = survey.files.get(stone.name)
    if files is None or not files.reviews:
        return None
    latest = max(files.reviews)
    record = records.read_review(survey.route.state_dir / latest.filename, stone.name)
    if record is None:
        return None
    blockers, nitpicks = judges.count_issues(record.stdout)
    return ReviewCounts(blockers, nitpicks, survey.route.show(record.path))


def _approval(route: Route, stone: Stone, review_input_hash: str | None) -> Approval | None:
    """Who approved the stone and when, and whether for its artifacts as they are (``review_input_hash``)."""
    path = store.approved_path(route, stone.name)
    marker = store.read_marker(path, stone.name)
    if marker is None:
        return None
    current = marker.review_input_hash == review_input_hash
    return Approval(marker.approver_name, marker.approver_email, marker.at, current)


def routes_of(route_options: tuple[str, ...], all_routes: bool) -> list[Route]:
    """The routes ``--route``/``--all`` (or the bound route) name, as ``route.verify`` and ``route.lint``
    read the same options; ``--all`` names them relative to where you are."""
    repo = None
    if all_routes:
        repo = gitops.find_repo(Path.cwd())
    return [open_route(str(path)) for path in route_paths(route_options, all_routes, repo)]
