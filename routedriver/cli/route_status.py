"""``route.status``: the board of one route, several, or every route in the repository (a Report)."""

from __future__ import annotations

import shutil
import sys

import click

from routedriver.cli._command import Command
from routedriver.errors import Refused
from routedriver.report import Report
from routedriver.route import status, status_report


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
def status_command(routes: tuple[str, ...], all_routes: bool, as_json: bool, markdown: bool) -> Report:
    """Show every stone by tier: its state and why, its latest review's counts, who approved it."""
    if as_json and markdown:
        raise Refused("--json and --markdown exclude each other", "give one of them")
    form: status_report.Form = "json" if as_json else "markdown" if markdown else "plain"
    if form == "plain" and sys.stdout is not None and sys.stdout.isatty():
        form = "coloured"
    boards = [status.board(route) for route in status.routes_of(routes, all_routes)]
    return status_report.report(boards, form, width=shutil.get_terminal_size().columns)
