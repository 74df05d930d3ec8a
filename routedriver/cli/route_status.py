"""``route.status``: the board of one route, several, or every route in the repository. No logic here."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import click

from routedriver.cli._command import Command

if TYPE_CHECKING:
    from routedriver.route.status import RouteBoard


@click.command("route.status", cls=Command)
@click.option(
    "--route",
    "routes",
    multiple=True,
    metavar="DIR",
    help="The route directory (repeatable; default: the route bound to this branch).",
)
@click.option("--all", "all_routes", is_flag=True, help="Every route in the repository.")
@click.option(
    "--json",
    "as_json",
    is_flag=True,
    help="Print one JSON document: {routes: [{route, passed, total, complete, stones: [{name, tier, state, "
    "detail, blocked_by, file, review, approval}]}]}.",
)
@click.option("--markdown", is_flag=True, help="Print Markdown: a table and a Mermaid flowchart per route.")
def status_command(routes: tuple[str, ...], all_routes: bool, as_json: bool, markdown: bool) -> int:
    """Show every stone by tier: its state and why, its latest review's counts, who approved it."""
    import sys

    from routedriver.errors import Refused
    from routedriver.route import status, status_report

    if as_json and markdown:
        raise Refused("--json and --markdown exclude each other", "give one of them")
    boards = [status.board(route) for route in status.routes_of(routes, all_routes)]
    if as_json:
        import json

        click.echo(json.dumps(status_report.to_json(boards), ensure_ascii=False, indent=2))
    elif markdown:
        click.echo(status_report.markdown(boards), nl=False)
    elif sys.stdout.isatty():
        _coloured(boards)
    else:
        click.echo(status_report.plain(boards), nl=False)
    return 0


def _coloured(boards: Sequence[RouteBoard]) -> None:
    """The same table on a terminal, coloured by state (rich; NO_COLOR turns colour off). Cells are Text,
    never markup: a stone named ``[red]x`` is shown as it is."""
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from routedriver.route import status_report

    console = Console()
    for board in boards:
        table = Table(*status_report.COLUMNS, show_edge=False, header_style="bold")
        for row in board.rows:
            cells = [Text(cell) for cell in status_report.cells(row)]
            cells[2].stylize(status_report.STYLES[row.state][2])
            table.add_row(*cells)
        console.print(table)
        console.print(status_report.progress(board), markup=False, highlight=False)
