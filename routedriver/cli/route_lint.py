"""``route.lint``: every problem of a route before anything runs, file by file (a Report)."""

from __future__ import annotations

import click

from routedriver.cli._command import Command
from routedriver.report import Report
from routedriver.route.lint import lint_routes, report


@click.command("route.lint", cls=Command)
@click.option(
    "--route",
    "routes",
    multiple=True,
    metavar="DIR",
    help="The route directory (repeatable; default: the route bound to this branch).",
)
@click.option("--all", "all_routes", is_flag=True, help="Lint every route in the repository.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
def lint_command(routes: tuple[str, ...], all_routes: bool, as_json: bool) -> Report:
    """Check routes for problems that would only show at run time: exit 2 listing them all, or print ok."""
    return report(lint_routes(routes, all_routes), as_json=as_json)
