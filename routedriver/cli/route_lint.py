"""``route.lint``: every problem of a route before anything runs, file by file. No logic here."""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from routedriver.cli._command import Command
from routedriver.gitops import find_repo
from routedriver.route.lint import lint
from routedriver.route.verify import route_paths


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
def lint_command(routes: tuple[str, ...], all_routes: bool, as_json: bool) -> int:
    """Check routes for problems that would only show at run time: exit 2 listing them all, or print ok."""
    repo = None
    if all_routes:
        repo = find_repo(Path.cwd())
    paths = route_paths(routes, all_routes, repo)  # as route.verify reads the same options
    if all_routes:
        paths = [Path(os.path.relpath(path)) for path in paths]
    reports = [lint(path) for path in paths]
    errors = sum(len(report.errors) for report in reports)
    warnings = sum(len(report.warnings) for report in reports)
    if as_json:
        payload = {
            "ok": errors == 0,
            "routes": [
                {
                    "route": report.route,
                    "problems": [
                        {"file": p.file, "level": p.level, "message": p.message} for p in report.problems
                    ],
                    "programs": [
                        {"stone": p.stone, "file": p.file, "program": p.program} for p in report.programs
                    ],
                }
                for report in reports
            ],
        }
        click.echo(json.dumps(payload, ensure_ascii=False, indent=2))
    else:
        for report in reports:
            for problem in report.problems:
                click.echo(f"{problem.file}: {problem.level}: {problem.message}")
            for program in report.programs:  # what route.verify --base compares with the base, too
                click.echo(f"{program.file}: program: {program.program}")
        if not errors:
            click.echo("ok" if not warnings else f"ok ({warnings} warning{'s' if warnings != 1 else ''})")
    if errors:
        where = ", ".join(report.route for report in reports if report.errors)
        click.echo(
            f"error: {errors} problem{'s' if errors != 1 else ''} in {where}; fix each file named above",
            err=True,
        )
        return 2
    return 0
