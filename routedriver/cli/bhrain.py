"""``bhrain``: the agentic brain (bhrain.struct.v1) as a command: ``bhrain run …`` and ``bhrain behave …``.

Subcommands are imported on demand, so ``bhrain --help`` loads neither the LLM SDKs nor the behavior engine.
This module only parses flags and renders; ``routedriver.brain.runner`` does the work.
"""

from __future__ import annotations

import importlib
import logging
import sys
from pathlib import Path
from typing import Any, Literal

import click

from routedriver.cli._command import Command, FiniteFloat, Group
from routedriver.report import Report


class LazyGroup(Group):
    """A group whose subcommands are ``"module:attr"`` strings, imported only when that command runs."""

    lazy_commands: dict[str, tuple[str, str]] = {}  # name → (import path, one-line help for --help)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.lazy_commands, *super().list_commands(ctx)})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name in self.lazy_commands:
            module_name, _, attr = self.lazy_commands[cmd_name][0].partition(":")
            command: click.Command = getattr(importlib.import_module(module_name), attr)
            return command
        return super().get_command(ctx, cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, self.lazy_commands[name][1]) for name in sorted(self.lazy_commands)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


class BhrainGroup(LazyGroup):
    lazy_commands = {
        "run": ("routedriver.cli.bhrain:run_command", "Run the brain on one task (act, ask or review)."),
        "behave": (
            "routedriver.cli.bhrain_behave:behave_command",
            "Judge one Claude Code tool call against behavior rules (a hook).",
        ),
    }


@click.group("bhrain", cls=BhrainGroup)
def bhrain_group() -> None:
    """bhrain: an LLM agent for the command line. It gives a model (Claude, Qwen or any OpenAI-compatible
    server) a task, runs the tools the model asks for (read and edit files, run shell commands, search the
    web) under permission rules, and prints the answer. Route guards use it as a reviewer: --skill review
    ends with the blockers/nitpicks counts the reviewed? judge reads.

    \b
    Examples:
      bhrain run --skill ask --atom claude --input "What does src/app.py do?"
      bhrain run --skill act --atom qwen --input-file task.md --tools files,bash --trace run.json
      bhrain run --skill review --atom claude --input-file 1.vision.md
      bhrain run --skill review --atom scripted --input-file 1.vision.md   # offline: no key, no model

    Keys: ANTHROPIC_API_KEY (claude), QWEN_API_KEY or OPENAI_API_KEY (qwen). More: docs/bhrain.md,
    installed with the package as routedriver/docs/bhrain.md.
    """


class _StderrHandler(logging.Handler):
    """Writes to whatever ``sys.stderr`` is at the time (click's test runner swaps it), secrets redacted."""

    def __init__(self, redactor: Any) -> None:
        super().__init__()
        self.redactor = redactor

    def emit(self, record: logging.LogRecord) -> None:
        try:
            sys.stderr.write(self.redactor.text(f"bhrain: {self.line(record)}") + "\n")
            sys.stderr.flush()
        except Exception:  # noqa: BLE001, S110 - logging must never break the run, nor log its own failure
            pass

    def line(self, record: logging.LogRecord) -> str:
        return record.getMessage()


class _McpSdkHandler(_StderrHandler):
    """The MCP SDK's own log records (loggers ``mcp`` and ``client``) as one line: the SDK logs a server's
    every unreadable stdout line with its traceback (a dozen lines each), and bhrain goes on without that
    server anyway, naming it in its own line."""

    def __init__(self, redactor: Any) -> None:
        super().__init__(redactor)
        self.said: set[str] = set()

    def emit(self, record: logging.LogRecord) -> None:
        said = record.getMessage()
        if said not in self.said:  # once per message: not once per line of a chatty server
            self.said.add(said)
            super().emit(record)

    def line(self, record: logging.LogRecord) -> str:
        text = record.getMessage()
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            text += f" ({type(exc).__name__}: {' '.join(str(exc).split())[:300]})"
        return f"mcp: {' '.join(text.split())}"


@click.command("run", cls=Command)
@click.option(
    "--skill",
    metavar="[act|ask|review]",
    help="act: do the task; ask: answer, read-only; review: review artifacts and end with "
    "blockers/nitpicks counts.",
)
@click.option("--atom", help="claude, qwen, scripted, a registered atom, or MODULE:OBJ.")
@click.option("--input", "input_text", help="The task, question, or review request.")
@click.option(
    "--input-file",
    "input_files",
    multiple=True,
    help="Read input from a file (repeatable; - = stdin). For review: the artifacts.",
)
@click.option("--arch", help="Accepted for compatibility; only bhrain.struct.v1 exists.")
@click.option("--model", help="The provider's model id (default per atom).")
@click.option("--base-url", help="The provider endpoint (any atom).")
@click.option("--max-iterations", type=click.IntRange(min=1), help="Model calls before a graceful stop (30).")
@click.option(
    "--max-tokens-total",
    type=click.IntRange(min=1),
    help="Budget: input + output tokens of the whole run; a graceful stop once spent.",
)
@click.option(
    "--max-cost",
    type=FiniteFloat(min=0, min_open=True),
    metavar="USD",
    help="Budget: US dollars of the whole run (from the token prices in routedriver/brain/prices.yaml); a "
    "graceful stop once spent.",
)
@click.option("--tools", help="Tool sets: files,bash,websearch (or none). Default per skill.")
@click.option(
    "--permissions",
    type=click.Path(path_type=Path),
    help="Claude Code style permissions file (JSON or YAML).",
)
@click.option(
    "--toolbox",
    "toolboxes",
    multiple=True,
    help="MODULE:OBJ of a Toolbox (repeatable; 'default' is the built-in one).",
)
@click.option(
    "--guard", "guards", multiple=True, help="MODULE:OBJ of a custom permission guard (repeatable)."
)
@click.option(
    "--mcp-config",
    type=click.Path(path_type=Path),
    help="A .mcp.json file: its mcpServers (stdio) become toolboxes mcp__<server> (replaces the config's).",
)
@click.option(
    "--sandbox",
    type=click.Choice(["on", "off", "auto"]),
    help="Run the bash tool's commands under bubblewrap: on (refuse without it), off, or auto (use it when "
    "it works, else say so once). Default: on for --skill review, else auto.",
)
@click.option("--memory", help="truncate, summarize-on-limit (default), none, or MODULE:OBJ.")
@click.option("--script", type=click.Path(path_type=Path), help="Turns for the scripted atom (JSON or YAML).")
@click.option(
    "--rubric", type=click.Path(path_type=Path), help="Review rubric (Jinja2); default: the built-in."
)
@click.option("--temperature", type=FiniteFloat(), help="Sampling temperature passed to the model.")
@click.option("--max-tokens", type=click.IntRange(min=1), help="Most tokens per model answer.")
@click.option(
    "--config",
    "config_path",
    type=click.Path(path_type=Path),
    help="YAML settings (keys mirror these flags, plus security: permissions/behavior). Flags win.",
)
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of the text.")
@click.option(
    "--trace", type=click.Path(path_type=Path), help="Write the trajectory as JSON after each iteration."
)
@click.option("-v", "--verbose", count=True, help="Log progress on stderr (-vv: also full tool outputs).")
@click.option("--repo", hidden=True, help="Accepted and ignored (rhachet compatibility).")
@click.option("--role", hidden=True, help="Accepted and ignored (rhachet compatibility).")
def run_command(
    skill: str | None,
    atom: str | None,
    input_text: str | None,
    input_files: tuple[str, ...],
    arch: str | None,
    model: str | None,
    base_url: str | None,
    max_iterations: int | None,
    max_tokens_total: int | None,
    max_cost: float | None,
    tools: str | None,
    permissions: Path | None,
    toolboxes: tuple[str, ...],
    guards: tuple[str, ...],
    mcp_config: Path | None,
    sandbox: Literal["on", "off", "auto"] | None,
    memory: str | None,
    script: Path | None,
    rubric: Path | None,
    temperature: float | None,
    max_tokens: int | None,
    config_path: Path | None,
    as_json: bool,
    trace: Path | None,
    verbose: int,
    repo: str | None,
    role: str | None,
) -> Report:
    """Run the brain on one task and print the result."""
    # bhrain behave imports this module before every tool call: a run's config, redactor and runner
    # (~50 ms), and its MCP servers' config below, load only for bhrain run
    from routedriver.brain.config import RunSettings, load_config
    from routedriver.brain.redact import Redactor
    from routedriver.brain.runner import report, run_session

    flags = RunSettings(
        arch=arch,
        skill=skill,
        atom=atom,
        model=model,
        base_url=base_url,
        input=input_text,
        input_files=list(input_files),
        rubric=rubric,
        script=script,
        tools=tools.split(",") if tools is not None else None,
        toolboxes=list(toolboxes),
        permissions=permissions,
        guards=list(guards),
        mcp_servers=_mcp_servers(mcp_config),
        mcp_config=mcp_config,
        sandbox=sandbox,
        memory=memory,
        max_iterations=max_iterations,
        max_tokens_total=max_tokens_total,
        max_cost=max_cost,
        max_tokens=max_tokens,
        temperature=temperature,
        trace=trace,
    )
    settings = flags.merged_over(load_config(config_path)) if config_path else flags
    redactor = Redactor()
    handler = _StderrHandler(redactor)
    level = (
        logging.DEBUG if verbose >= 2 else logging.INFO if verbose or _stderr_is_tty() else logging.WARNING
    )
    # "bhrain" is the loop's logger; "routedriver" covers the parts it uses (behavior engine, llm adapters);
    # "mcp" and "client" are the MCP SDK's, warnings only (its debug lines are its own business).
    sdk = _McpSdkHandler(redactor)
    loggers = [
        (logging.getLogger("bhrain"), handler, level),
        (logging.getLogger("routedriver"), handler, level),
        (logging.getLogger("mcp"), sdk, max(level, logging.WARNING)),
        (logging.getLogger("client"), sdk, max(level, logging.WARNING)),
    ]
    saved = [(lg.level, lg.propagate) for lg, _, _ in loggers]
    for logger, its_handler, its_level in loggers:
        logger.addHandler(its_handler)
        logger.propagate = False
        logger.setLevel(its_level)
    try:
        outcome = run_session(settings)
    finally:
        for (logger, its_handler, _), (old_level, old_propagate) in zip(loggers, saved, strict=True):
            logger.removeHandler(its_handler)
            logger.setLevel(old_level)
            logger.propagate = old_propagate
    return report(outcome, redactor, as_json=as_json)


def _mcp_servers(path: Path | None) -> Any:
    if path is None:
        return None
    # only with --mcp-config
    from routedriver.mcp.servers_config import load_mcp_config

    return load_mcp_config(path)


def _stderr_is_tty() -> bool:
    try:
        return sys.stderr.isatty()
    except (AttributeError, ValueError):
        return False
