"""`bhrain behave`: the behavior engine as a Claude Code command hook (issue 5).

Wire it in ``.claude/settings.json`` for PreToolUse, PostToolUse, UserPromptSubmit and SessionEnd (see
examples/claude-code-behavior/). It reads one hook event as JSON on stdin and answers with Claude Code's
contract: exit 2 + stderr blocks a tool call; JSON ``hookSpecificOutput.additionalContext`` on stdout gives
the model a warning, reminder or directive; exit 0 with no output lets everything through.

An event it cannot read blocks (exit 2) unless ``--hook`` says it is not a tool call about to run: a gate
that cannot read its input fails closed. Every failure of the hook itself (a broken config, an unknown flag,
an unwritable state directory) exits 1, which Claude Code treats as a non-blocking error: a broken behavior
config shows an error but never stops the session.
This runs on every tool call, so pydantic and yaml load only when the config changed since the last call
(``brain/behavior/cache.py``).
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import click

from routedriver.brain.behavior.claude_code import (
    JudgingFailed,
    answer_event,
    default_state_dir,
    judging_failed,
)
from routedriver.cli._command import FiniteFloat, HookCommand
from routedriver.cli._exits import internal_error
from routedriver.errors import Malfunction, UserError
from routedriver.hookevent import read_stdin
from routedriver.report import Report

HOOK_CHOICES = ("pre_tool", "post_tool", "user_prompt", "session_end")  # claude_code.HOOKS, not imported yet


@click.command("behave", cls=HookCommand)
@click.option(
    "--config", "config_path", metavar="FILE", help="bhrain config file with a security.behavior block."
)
@click.option(
    "--hook",
    type=click.Choice(HOOK_CHOICES),
    help="Which event this is, when the event does not name itself (its hook_event_name wins).",
)
@click.option(
    "--state-dir",
    metavar="DIR",
    help="Where session state lives (default: ${XDG_STATE_HOME:-~/.local/state}/routedriver/behavior).",
)
@click.option(
    "--ttl-days",
    type=FiniteFloat(min=0),
    default=7.0,
    metavar="DAYS",
    show_default=True,
    help="Session state untouched this long is removed (swept on prompts and session ends).",
)
@click.option("-v", "--verbose", is_flag=True, help="Log the engine's decisions on stderr.")
def behave_command(
    config_path: str | None, hook: str | None, state_dir: str | None, ttl_days: float, verbose: bool
) -> Report:
    """Judge one Claude Code hook event against the behavior rules (reads the event JSON on stdin).

    A Claude Code command hook, in .claude/settings.json (the rules in .claude/behavior.yaml; also as
    UserPromptSubmit with --hook user_prompt, PostToolUse with post_tool, SessionEnd with session_end):

    \b
    {"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command":
      "bhrain behave --config \\"$CLAUDE_PROJECT_DIR/.claude/behavior.yaml\\" --hook pre_tool"}]}]}}

    A blocked call is denied in Claude Code's JSON (exit 0; the model reads the reason); a warning is
    added to the model's context; anything else exits 0 silently. More: docs/behavior.md, installed with
    the package as routedriver/docs/behavior.md."""
    # Flag mistakes exit 1 through HookCommand: exit 2 would BLOCK the tool call in Claude Code.
    if not config_path:
        raise Malfunction("--config FILE is required", "point it at a config with a security.behavior block")
    ttl_s = ttl_days * 86400
    _log_to_stderr(verbose)

    try:
        return answer_event(
            read_stdin,
            config_path=Path(config_path),
            hook=hook,
            state_dir=Path(state_dir) if state_dir else default_state_dir(),
            ttl_s=ttl_s,
        )
    except JudgingFailed as exc:
        assert isinstance(exc.__cause__, Exception)
        return judging_failed(internal_error("bhrain behave", exc.__cause__))
    except UserError as exc:
        raise Malfunction(exc.what, exc.fix) from None  # even a config error must not block the session


def _log_to_stderr(verbose: bool) -> None:
    logger = logging.getLogger("routedriver.brain.behavior")
    if not logger.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        logger.addHandler(handler)
    logger.setLevel(logging.INFO if verbose else logging.WARNING)
    logger.propagate = False
