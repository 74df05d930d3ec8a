"""GitHub Actions integration: workflow-command annotations on stderr and a Markdown step summary.

Failed thresholds are ``::error`` annotations; failed cases are ``::warning`` annotations pinned to their
line in the dataset file, so a pull request shows them next to the case. The step summary is the Markdown
report appended to ``$GITHUB_STEP_SUMMARY``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from routedriver.behaviorci.reporters import markdown
from routedriver.behaviorci.results import RunResult
from routedriver.fsutil import real_path

MAX_CASE_ANNOTATIONS = 50  # GitHub shows only a handful per step anyway; do not flood the log


def active(environ: Mapping[str, str] | None = None) -> bool:
    return (os.environ if environ is None else environ).get("GITHUB_ACTIONS") == "true"


def annotation_lines(result: RunResult, environ: Mapping[str, str] | None = None) -> list[str]:
    title = f"behaviorci {result.bundle_name}"
    workspace = (os.environ if environ is None else environ).get("GITHUB_WORKSPACE")
    bundle_file = _in_workspace(result.bundle_path, workspace)
    dataset_file = _in_workspace(result.dataset_path, workspace)
    lines = []
    for t in result.thresholds:
        if not t.passed:
            lines.append(
                _command("error", f"threshold failed: {t.describe()}", title=title, file=bundle_file)
            )
    failed = result.failed_cases
    for case in failed[:MAX_CASE_ANNOTATIONS]:
        lines.append(
            _command(
                "warning",
                f"case {case.case.id} failed: {case.failure_summary()}",
                title=title,
                file=dataset_file,
                line=str(case.case.line),
            )
        )
    if len(failed) > MAX_CASE_ANNOTATIONS:
        lines.append(
            _command("warning", f"{len(failed) - MAX_CASE_ANNOTATIONS} more cases failed", title=title)
        )
    return lines


def _in_workspace(path: str, workspace: str | None) -> str:
    """``path`` (as reports show it: relative to the working directory, or absolute) relative to the
    repository checkout, which is what GitHub pins annotations to; unchanged outside it or without one."""
    if not workspace:
        return path
    try:
        absolute = real_path(path)
        return absolute.relative_to(real_path(workspace)).as_posix()
    except (OSError, ValueError):
        return path


def error_annotation(message: str) -> str:
    return _command("error", message, title="behaviorci")


def append_step_summary(result: RunResult, environ: Mapping[str, str] | None = None) -> bool:
    """Append the Markdown report to ``$GITHUB_STEP_SUMMARY``; False when there is no such file to write."""
    path = (os.environ if environ is None else environ).get("GITHUB_STEP_SUMMARY")
    if not path:
        return False
    try:
        # Appending (not replacing) is the contract: other steps' summaries share the file.
        with open(path, "a", encoding="utf-8", errors="replace") as handle:
            handle.write(markdown.render(result) + "\n")
    except OSError:
        return False
    return True


def _command(kind: str, message: str, **properties: str) -> str:
    props = ",".join(f"{key}={_escape_property(value)}" for key, value in properties.items() if value)
    return f"::{kind}{' ' + props if props else ''}::{_escape_data(message)}"


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")
