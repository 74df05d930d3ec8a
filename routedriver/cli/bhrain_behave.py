"""`bhrain behave`: the behavior engine as a Claude Code hook (issue 5). Being built; owned by the behavior helper."""

from __future__ import annotations

import click

from routedriver.cli._command import Command
from routedriver.errors import Refused


@click.command("behave", cls=Command)
@click.option("--config", "config_path", required=True, help="bhrain config file with a security.behavior block.")
@click.option("--hook", type=click.Choice(["pre_tool", "post_tool"]), required=True)
def behave_command(config_path: str, hook: str) -> int:
    """Judge one Claude Code tool call against the behavior rules (reads hook JSON on stdin)."""
    raise Refused("bhrain behave is not built yet", "see issue 5")
