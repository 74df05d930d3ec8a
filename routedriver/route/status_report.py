"""How the board is shown: rows of cells (the plain table and the coloured one share them), one JSON document
with stable keys, and Markdown (a table and a Mermaid flowchart of the tiers) for a pull request comment or
``$GITHUB_STEP_SUMMARY``; on a terminal, the table coloured by state (rich). Pure functions of
``status.RouteBoard``; nothing here reads a file. ``report`` is what ``route.status`` says, as a Report.

Names, paths, details and approvers are the repository's text: every format shows them through ``shown``
(one line each, no workflow command; Markdown and Mermaid read them as plain characters)."""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from typing import Literal

from routedriver.report import Report
from routedriver.route import shown
from routedriver.route.status import RouteBoard, Row
from routedriver.route.words import count, stones_passed

COLUMNS = ("tier", "stone", "state", "detail", "review", "approved")
# Mermaid classes and the colours the terminal uses, by state (a stone is one of these).
STYLES = {
    "passed": ("#d1fadf", "#12805c", "green"),
    "stale": ("#fff4cc", "#b58100", "yellow"),
    "ready": ("#dbeafe", "#1d4ed8", "cyan"),
    "needs-artifact": ("#dbeafe", "#1d4ed8", "cyan"),
    "rejected": ("#fde2e1", "#b42318", "red"),
    "waiting-for-approval": ("#ede9fe", "#6d28d9", "magenta"),
    "unapproved": ("#ede9fe", "#6d28d9", "magenta"),
    "malfunction": ("#fde2e1", "#b42318", "bold red"),
    "broken": ("#fde2e1", "#b42318", "bold red"),
    "blocked": ("#f2f4f7", "#667085", "dim"),
}


def progress(board: RouteBoard, show: Callable[[str], str] = shown.line) -> str:
    """``route routes/demo: 2 of 5 stones passed`` (or ``all 5 stones passed``); ``show`` makes the route's
    name safe where it goes (a line of text by default)."""
    return f"route {show(board.route.display)}: {stones_passed(board.passed, board.total)}"


def _review(row: Row) -> str:
    if row.review is None:
        return ""
    parts = []
    if row.review.blockers is not None:
        parts.append(count(row.review.blockers, "blocker"))
    if row.review.nitpicks is not None:
        parts.append(count(row.review.nitpicks, "nitpick"))
    return ", ".join(parts) or "no counts"


def _approved(row: Row) -> str:
    if row.approval is None:
        return ""
    who = row.approval.email or row.approval.name or "someone"
    older = "" if row.approval.current else " (older content)"
    return f"{who} {row.approval.at}{older}"


def _raw_cells(row: Row) -> tuple[str, ...]:
    detail = " ".join(row.detail.split())
    return (row.tier, row.stone.name, row.state, detail, _review(row), _approved(row))


def cells(row: Row) -> tuple[str, ...]:
    """A row as the table's cells, in ``COLUMNS`` order, each one line of text (``shown.line``)."""
    return tuple(shown.line(cell) for cell in _raw_cells(row))


def plain(boards: Sequence[RouteBoard], width: int = 200) -> str:
    """The table as text without colour: columns padded to their widest cell, a long detail cut to fit."""
    out: list[str] = []
    for board in boards:
        table = [COLUMNS, *(cells(row) for row in board.rows)]
        widths = [max(len(line[index]) for line in table) for index in range(len(COLUMNS))]
        fixed = sum(widths) - widths[3] + 2 * (len(COLUMNS) - 1)
        widths[3] = max(len("detail"), min(widths[3], width - fixed))
        for line in table:
            padded = [
                (cell if len(cell) <= widths[index] else cell[: widths[index] - 1] + "…").ljust(widths[index])
                for index, cell in enumerate(line)
            ]
            out.append("  ".join(padded).rstrip())
        out.append(progress(board))
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"


def to_json(boards: Sequence[RouteBoard]) -> dict[str, object]:
    """The documented document (docs/route.md, route.status): stable keys, every stone of every route."""
    return {
        "routes": [
            {
                "route": board.route.display,
                "passed": board.passed,
                "total": board.total,
                "complete": board.passed == board.total,
                "stones": [_row_json(board, row) for row in board.rows],
            }
            for board in boards
        ]
    }


def _row_json(board: RouteBoard, row: Row) -> dict[str, object]:
    return {
        "name": row.stone.name,
        "tier": row.tier,
        "state": row.state,
        "detail": row.detail,
        "blocked_by": row.blocked_by,
        "file": board.route.show(row.stone.path),
        "review": (
            None
            if row.review is None
            else {"blockers": row.review.blockers, "nitpicks": row.review.nitpicks, "file": row.review.file}
        ),
        "approval": (
            None
            if row.approval is None
            else {
                "name": row.approval.name,
                "email": row.approval.email,
                "at": row.approval.at,
                "current": row.approval.current,
            }
        ),
    }


# ---------------------------------------------------------------- Markdown


def mermaid(board: RouteBoard) -> str:
    """A flowchart of the route's tiers, left to right: a subgraph per tier, a node per stone (coloured by
    its state), an arrow from each tier to the next."""
    lines = ["flowchart LR"]
    tiers: list[str] = []
    by_tier: dict[str, list[tuple[int, Row]]] = {}
    for index, row in enumerate(board.rows):
        if row.tier not in by_tier:
            tiers.append(row.tier)
        by_tier.setdefault(row.tier, []).append((index, row))
    for number, tier in enumerate(tiers):
        lines.append(f'  subgraph t{number}["tier {shown.mermaid(tier)}"]')
        for index, row in by_tier[tier]:
            label = shown.mermaid(f"{row.stone.name}: {row.state}")
            lines.append(f'    s{index}["{label}"]')
        lines.append("  end")
    for number in range(len(tiers) - 1):
        lines.append(f"  t{number} --> t{number + 1}")
    used = sorted({row.state for row in board.rows})
    for state in used:
        fill, stroke, _colour = STYLES[state]
        lines.append(f"  classDef {_class_name(state)} fill:{fill},stroke:{stroke},color:#101828")
    for state in used:
        members = ",".join(f"s{index}" for index, row in enumerate(board.rows) if row.state == state)
        lines.append(f"  class {members} {_class_name(state)}")
    return "\n".join(lines) + "\n"


def _class_name(state: str) -> str:
    return "st_" + state.replace("-", "_")


def markdown(boards: Sequence[RouteBoard]) -> str:
    out: list[str] = []
    for board in boards:
        out += [f"### {progress(board, shown.markdown)}", ""]
        out.append("| " + " | ".join(COLUMNS) + " |")
        out.append("|" + "---|" * len(COLUMNS))
        for row in board.rows:
            out.append("| " + " | ".join(shown.markdown(cell) for cell in _raw_cells(row)) + " |")
        out += ["", "```mermaid", mermaid(board).rstrip("\n"), "```", ""]
    return "\n".join(out)


def coloured(boards: Sequence[RouteBoard], width: int) -> str:
    """The table for a terminal ``width`` columns wide, coloured by state (rich; ``NO_COLOR`` turns colour
    off). Cells are Text, never markup: a stone named ``[red]x`` is shown as it is."""
    # rich (~20 ms): only the table for a terminal
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=width)
    for board in boards:
        table = Table(*COLUMNS, show_edge=False, header_style="bold")
        for row in board.rows:
            row_cells = [Text(cell) for cell in cells(row)]
            row_cells[2].stylize(STYLES[row.state][2])
            table.add_row(*row_cells)
        console.print(table)
        console.print(progress(board), markup=False, highlight=False)
    return out.getvalue()


Form = Literal["plain", "coloured", "json", "markdown"]


def report(boards: Sequence[RouteBoard], form: Form, *, width: int = 80) -> Report:
    """What ``route.status`` prints: the boards as ``form`` (``width``: the terminal's, for ``coloured``)."""
    if form == "json":
        return Report(shown.json_text(to_json(boards)))
    if form == "markdown":
        return Report(markdown(boards))
    if form == "coloured":
        return Report(coloured(boards, width))
    return Report(plain(boards))
