"""Reporters: ``console`` (plain, or Rich on a terminal; ends with the verdict lines), ``json``, ``markdown``,
``junit``; plus the GitHub Actions annotations and step summary in ``github``."""

from __future__ import annotations

from routedriver.behaviorci.reporters import console, json_report, junit, markdown
from routedriver.behaviorci.results import RunResult

FORMATS = ("console", "json", "markdown", "junit")


def render(
    fmt: str,
    result: RunResult,
    *,
    verbose: bool = False,
    quiet: bool = False,
    rich: bool = False,
    width: int = 100,
) -> str:
    if fmt == "console":
        if rich:
            return console.render_rich(result, verbose=verbose, quiet=quiet, width=width)
        return console.render_plain(result, verbose=verbose, quiet=quiet)
    if fmt == "json":
        return json_report.render(result, verbose=verbose)
    if fmt == "markdown":
        return markdown.render(result, verbose=verbose)
    if fmt == "junit":
        return junit.render(result, verbose=verbose)
    raise ValueError(f"unknown format {fmt!r}")
