"""What a command says and how it ends, as a value: ``Report``.

A command builds one (the route driver's reports are pure functions of a result: ``route.stone_report``,
``route.verify_report``, …); ``cli._exits.run`` writes it and returns its exit code. That is the only place a
command turns into an exit code, so what a command prints and how it exits is decided, and tested, apart
from the terminal.
"""

from __future__ import annotations

import json
from typing import NamedTuple

from routedriver.errors import ExitCode


class Report(NamedTuple):
    stdout: str = ""  # the result (text, or one JSON document)
    stderr: tuple[str, ...] = ()  # warnings and notices, then at most one ``error:`` line, which stays last
    # An ExitCode; or 130/143 for a run a signal stopped that still reports what it did (bhrain run).
    exit_code: int = ExitCode.OK


def as_json(document: object) -> str:
    """One JSON document, as every ``--json`` prints it."""
    return json.dumps(document, ensure_ascii=False, indent=2) + "\n"


def one_line(text: str) -> str:
    """A message as one stderr line (runs of whitespace, newlines included, become one space)."""
    return " ".join(text.split())
