"""``route.bind``, ``route.drive`` and ``route.bounce``: a robot's session on a route. Each
command reads its flags and returns the Report a core function makes (``bind_report.answer``,
``drive.report``, ``session.answer``, ``bounce.hook``).

``route.drive --when …`` and ``route.bounce`` are Claude Code hooks. For them exit 2 means "block" (a
Stop hook: keep going; a PreToolUse hook: do not run the tool), so a mistake in the hook's own command
line must NOT exit 2: their flag errors exit 1, which Claude Code reports without blocking anything.

Each command imports its own module when it runs: route.bounce runs before every file edit and Bash command,
route.drive at every stop, and neither loads the other (drive and session ~33 ms on bounce; bind_report
brings git onto a Bash command that writes nothing; bounce ~3 ms on the Stop hook).
"""

from __future__ import annotations

import click

from routedriver.cli._command import Command, HookCommand
from routedriver.cli._exits import internal_error
from routedriver.errors import Malfunction, UserError
from routedriver.report import Report

ROUTE_HELP = "The route directory (default: the route bound to this branch)."


# ---------------------------------------------------------------- route.bind


@click.command("route.bind", cls=Command)
@click.option("--set", "set_route", metavar="DIR", help="Bind this route to the current branch.")
@click.option("--get", "get_", is_flag=True, help="Print the route bound to the current branch.")
@click.option("--del", "del_", is_flag=True, help="Unbind the current branch.")
def bind_command(set_route: str | None, get_: bool, del_: bool) -> Report:
    """Bind a route to the current git branch, so route.* commands can leave out --route."""
    from routedriver.route import bind_report  # each command its own module: see the module docstring

    return bind_report.answer(set_route=set_route, get=get_, delete=del_)


# ---------------------------------------------------------------- route.drive


@click.command("route.drive", cls=HookCommand)
@click.option("--route", "route_option", metavar="DIR", help=ROUTE_HELP)
@click.option(
    "--when",
    type=click.Choice(["hook.onBoot", "hook.onStop"]),
    help="Run as a Claude Code hook: hook.onBoot (SessionStart) or hook.onStop (Stop); reads stdin.",
)
@click.option(
    "--max-blocks",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    help="hook.onStop: let the robot stop after this many blocks in a row with nothing changed.",
)
@click.option(
    "--json",
    "json_output",
    is_flag=True,
    help="Print one JSON document: route, passed, total, complete, and each next stone's state and commands.",
)
def drive_command(route_option: str | None, when: str | None, max_blocks: int, json_output: bool) -> Report:
    """Where the robot is on its route: the next stone(s), their instructions and the exact commands.

    As Claude Code hooks (route.init --claude-code writes them into .claude/settings.json): SessionStart runs
    route.drive --when hook.onBoot (the guidance becomes the robot's context); Stop runs route.drive --when
    hook.onStop (it sends the robot back while the route is unfinished and the robot can act).

    \b
    {"hooks": {
      "SessionStart": [{"matcher": "startup|resume|clear|compact",
                        "hooks": [{"type": "command", "command": "route.drive --when hook.onBoot"}]}],
      "Stop": [{"hooks": [{"type": "command", "command": "route.drive --when hook.onStop"}]}]}}
    """
    if when is None:
        from routedriver.route import drive  # each command its own module: see the module docstring

        return drive.report(route_option, as_json=json_output)
    if json_output:
        raise Malfunction(
            "--json is for route.drive without --when", "a hook answers as Claude Code expects; drop --json"
        )
    # the hooks' module: route.drive's report never loads it
    from routedriver.route import session

    return session.answer(when, route_option, max_blocks)


# ---------------------------------------------------------------- route.bounce


@click.command("route.bounce", cls=HookCommand)
@click.option("--route", "route_option", metavar="DIR", help=ROUTE_HELP)
def bounce_command(route_option: str | None) -> Report:
    """A Claude Code PreToolUse hook: blocks robot writes (Write, Edit, MultiEdit, NotebookEdit, and what a
    Bash command writes) to route templates, driver files and protected paths. Reads the event JSON on
    stdin; a block is Claude Code's JSON deny on stdout (exit 0: the model reads the reason); an event it
    cannot read is blocked with exit 2, the reason on stderr."""
    from routedriver.route.bounce import hook  # each command its own module: see the module docstring

    return hook(route_option, failed=_why)


def _why(exc: Exception) -> str:
    """A failure while judging a call, in one line (an unexpected one goes to the crash log, and with
    ROUTEDRIVER_DEBUG=1 its traceback to stderr, as every command's does)."""
    return (
        exc.line().removeprefix("error: ")
        if isinstance(exc, UserError)
        else internal_error("route.bounce", exc)
    )
