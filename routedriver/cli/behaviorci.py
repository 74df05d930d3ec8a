"""``behaviorci``: file-first CI checks of LLM behavior, compatible with BehaviorCI 0.1.0, usable as a judge.

Exit codes: 0 every threshold met; 1 a threshold failed (as in BehaviorCI 0.1.0); 2 a configuration or
provider problem, found before any case runs, or a run in which every case errored. The console report
ends with ``passed: true|false`` and ``reason: …``, which the route driver reads before the exit code.
"""

from __future__ import annotations

import gc
import os
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import click

from routedriver.behaviorci.status import Status
from routedriver.cli._command import Group
from routedriver.errors import ExitCode, Malfunction, UserError
from routedriver.report import Report
from routedriver.report import as_json as json_text

# Copies of reporters.FORMATS and models.PROVIDERS (a test keeps them equal): importing those modules here
# would load pydantic and the report code before a flag is even parsed.
FORMATS = ("console", "json", "markdown", "junit")
PROVIDER_NAMES = ("openai", "anthropic", "mock")


@click.group("behaviorci", cls=Group, version_note="BehaviorCI 0.1.0 compatible")
def behaviorci_group() -> None:
    """Check LLM behavior in CI: a prompt, a dataset and an output contract, all in files."""


@behaviorci_group.command("init", short_help="Create an example bundle that passes under the mock provider.")
@click.argument("path", default="bundles/example", type=click.Path(file_okay=False))
@click.option("--force", "-f", is_flag=True, help="Overwrite the bundle's files if they exist.")
def init_command(path: str, force: bool) -> Report:
    """Create an example bundle at PATH (default bundles/example) that passes under the mock provider."""
    # Each command imports its own work: it brings pydantic, jinja2, jsonschema, importlib.resources or
    # the reporters (~0.1 s), which --help and the other commands do without
    from routedriver.behaviorci.scaffold import scaffold

    written = scaffold(Path(path), force=force)
    bundle = os.path.join(path, "bundle.yaml")
    next_steps = f"created a bundle in {path}; next: behaviorci validate {bundle} && behaviorci run {bundle}"
    return Report("".join(f"{target}\n" for target in written), (next_steps,))


@behaviorci_group.command("validate", short_help="Check a bundle without calling any model.")
@click.argument("bundle_path", metavar="BUNDLE")
@click.option(
    "--json", "as_json", is_flag=True, help="Print one JSON object (also for an invalid bundle: valid false)."
)
def validate_command(bundle_path: str, as_json: bool) -> Report:
    """Check BUNDLE (a bundle.yaml or its directory) without calling any model."""
    # each behaviorci command imports its own work: validate never loads the runner nor the SDKs
    from routedriver.behaviorci.bundle import load_bundle
    from routedriver.behaviorci.describe import describe, summary

    try:
        bundle = load_bundle(bundle_path)
    except UserError as exc:
        if not as_json:
            raise
        # The verdict on stdout for a program; the one-line error on stderr as always.
        verdict = {"valid": False, "bundle": bundle_path, "error": exc.line().removeprefix("error: ")}
        return Report(json_text(verdict), (exc.line(),), exc.exit_code)
    warnings = tuple(f"behaviorci: warning: {warning}" for warning in bundle.warnings)
    return Report(json_text(summary(bundle)) if as_json else describe(bundle), warnings)


@behaviorci_group.command("run", short_help="Run a bundle against a model and apply its thresholds.")
@click.argument("bundle_path", metavar="BUNDLE")
@click.option(
    "--provider",
    "-p",
    type=click.Choice(PROVIDER_NAMES, case_sensitive=False),
    help="Use this provider instead of the bundle's.",
)
@click.option("--model", "-m", help="Use this model instead of the bundle's.")
@click.option(
    "--base-url",
    metavar="URL",
    help="Send the calls (and the key) to this OpenAI-compatible server or Anthropic proxy "
    "(default: $OPENAI_BASE_URL/$ANTHROPIC_BASE_URL, else the provider's own).",
)
@click.option(
    "--api-key-env",
    metavar="VAR",
    help="Read the provider key from this variable (default: OPENAI_API_KEY/ANTHROPIC_API_KEY).",
)
@click.option(
    "--format",
    "-f",
    "fmt",
    type=click.Choice(FORMATS),
    default="console",
    show_default=True,
    help="Report format.",
)
@click.option(
    "--output",
    "-o",
    type=click.Path(dir_okay=False),
    help="Write the report to FILE (atomically; through a symlink; a FIFO or device is written in place).",
)
@click.option("--verbose", "-v", is_flag=True, help="Show every case (and outputs in json/junit).")
@click.option("--quiet", "-q", is_flag=True, help="No status lines; the console report is the verdict only.")
@click.option("--no-cache", is_flag=True, help="Call the provider for every case, ignoring the cache.")
@click.option("--cache-dir", type=click.Path(file_okay=False), help="Keep cached answers here.")
@click.option("--concurrency", "-j", type=click.IntRange(1, 256), help="Calls in flight at once.")
@click.option("--repeat", "-r", type=click.IntRange(1, 100), help="Runs per case.")
def run_command(
    bundle_path: str,
    provider: str | None,
    model: str | None,
    base_url: str | None,
    api_key_env: str | None,
    fmt: str,
    output: str | None,
    verbose: bool,
    quiet: bool,
    no_cache: bool,
    cache_dir: str | None,
    concurrency: int | None,
    repeat: int | None,
) -> Report:
    """Run BUNDLE, check every answer against its contract and apply the thresholds."""
    # the runner, providers and reporters (pydantic, rich): only behaviorci run
    from routedriver.behaviorci import app
    from routedriver.behaviorci.reporters import github, render

    request = app.RunRequest(
        bundle_path,
        provider=provider,
        model=model,
        base_url=base_url,
        api_key_env=api_key_env,
        use_cache=not no_cache,
        cache_dir=cache_dir,
        concurrency=concurrency,
        repeat=repeat,
    )
    if output is None and sys.stdout is None:  # started with stdout closed (`>&-`): refuse, not lose
        raise Malfunction(
            "stdout is closed, so the report would be lost", "run it with stdout open or with --output FILE"
        )
    in_actions = github.active()
    resume = _pause_collection_until_started()
    with Status(quiet=quiet, verbose=verbose, on_first_result=resume) as status:
        try:
            if output is not None:
                app.check_output_path(output)  # before the run, not after paying for it
            result = app.execute(request, status)
        except UserError as exc:
            if not in_actions:
                raise
            annotation = github.error_annotation(exc.line().removeprefix("error: "))
            return Report("", (annotation, exc.line()), exc.exit_code)

    rich = fmt == "console" and output is None and _colour_ok()  # a report file is always plain
    width = _terminal_width() if rich else 100
    report = _encodable(render(fmt, result, verbose=verbose, quiet=quiet, rich=rich, width=width))
    if output is not None:
        app.write_report(output, report)
        status.say(f"behaviorci: report written to {output}")
    annotations: list[str] = []
    if in_actions:
        annotations += github.annotation_lines(result)
        github.append_step_summary(result)
    # Also when every case errored: `-f junit > report.xml` must hold the report exactly when CI needs it.
    stdout = report if output is None else ""
    if result.all_errored:
        error = app.all_errored_error(result)
        if in_actions:
            annotations.append(github.error_annotation(error.what))
        return Report(stdout, (*annotations, error.line()), error.exit_code)
    _skip_shutdown_collection()
    return Report(stdout, tuple(annotations), ExitCode.OK if result.passed else ExitCode.MALFUNCTION)


def _as_script() -> bool:
    # The garbage-collector settings below are for this process only when it IS the behaviorci command;
    # an embedding process (a test runner using CliRunner) keeps its collector untouched.
    return os.path.basename(sys.argv[0]) == "behaviorci"


def _pause_collection_until_started() -> Callable[[], None] | None:
    """Start-up builds thousands of long-lived objects (our modules, and with the first call the provider
    SDK's types) and next to no garbage, yet cyclic collections keep walking them (~0.07 s of ~2 s). Pause
    the collector until the first case has a result, then freeze what exists (later collections skip it)
    and collect as usual for the rest of the run."""
    if not _as_script():
        return None

    gc.disable()

    def resume() -> None:
        gc.freeze()
        gc.enable()

    return resume


def _skip_shutdown_collection() -> None:
    """Spare the exiting interpreter a garbage collection over everything the SDK built (~0.08 s of ~2 s).

    ``gc.freeze()`` moves every live object to the permanent generation, which shutdown's final collection
    skips; nothing else about shutdown changes (atexit handlers and flushing still run). Only when this
    process is the ``behaviorci`` command: an embedding process (a test runner) keeps its collector whole.
    """
    if _as_script():
        gc.freeze()


def _encodable(text: str) -> str:
    # A model can answer with lone surrogates (JSON "\\ud800"); they cannot be written as UTF-8.
    return text.encode("utf-8", "replace").decode("utf-8")


def _colour_ok() -> bool:
    if os.environ.get("NO_COLOR") or os.environ.get("TERM") == "dumb":
        return False
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def _terminal_width() -> int:
    return max(60, min(160, shutil.get_terminal_size((100, 24)).columns))
