"""``route.bind``, ``route.drive`` and ``route.bounce``: a robot's session on a route. No logic here.

``route.drive --when …`` and ``route.bounce`` are Claude Code hooks. For them exit 2 means "block" (a
Stop hook: keep going; a PreToolUse hook: do not run the tool), so a mistake in the hook's own command
line must NOT exit 2: their flag errors exit 1, which Claude Code reports without blocking anything.
"""

from __future__ import annotations

from typing import Any

import click

from routedriver.cli._command import Command, HookCommand
from routedriver.errors import Malfunction, Refused

ROUTE_HELP = "The route directory (default: the route bound to this branch)."


def _event() -> tuple[dict[str, Any] | None, str]:
    """route.drive's hook event: (the event, "") or, when there is none (a terminal, empty stdin) or it
    cannot be read, (None, why; "" when there simply is none)."""
    from routedriver import hookevent

    try:
        data = hookevent.read_stdin()
        if data is None or not data.strip():
            return None, ""
        return hookevent.parse_event(data), ""
    except hookevent.UnreadableEvent as exc:
        return None, exc.what


def _emit(answer: Any) -> int:
    if answer.stdout:
        click.echo(answer.stdout, nl=False)
    if answer.stderr:
        click.echo(answer.stderr, nl=False, err=True)
    return int(answer.exit_code)


# ---------------------------------------------------------------- route.bind


@click.command("route.bind", cls=Command)
@click.option("--set", "set_route", metavar="DIR", help="Bind this route to the current branch.")
@click.option("--get", "get_", is_flag=True, help="Print the route bound to the current branch.")
@click.option("--del", "del_", is_flag=True, help="Unbind the current branch.")
def bind_command(set_route: str | None, get_: bool, del_: bool) -> int:
    """Bind a route to the current git branch, so route.* commands can leave out --route."""
    import os
    from pathlib import Path

    from routedriver.route import bind

    if sum((set_route is not None, get_, del_)) != 1:
        raise Refused("give exactly one of --set DIR, --get, --del", "see route.bind --help")
    cwd = Path.cwd()
    if set_route is not None:
        from routedriver.route.load import load_route

        result = bind.bind_set(load_route(set_route))
        shown = os.path.relpath(result.routes[0], cwd)
        if result.action == "already-bound":
            click.echo(f"{shown} is already bound to branch {result.branch}")
        else:
            click.echo(f"bound {shown} to branch {result.branch}")
        for replaced in result.replaced:
            click.echo(f"notice: unbound {os.path.relpath(replaced, cwd)} from {result.branch}", err=True)
        return 0
    if get_:
        result = bind.bind_get(cwd)
        if not result.routes:
            raise Refused(f"{bind.NOT_BOUND} ({result.branch})", "bind one with route.bind --set DIR")
        if len(result.routes) > 1:
            names = " and ".join(os.path.relpath(path, cwd) for path in result.routes)
            raise Refused(
                f"{len(result.routes)} routes are bound to branch {result.branch}: {names}",
                "keep one: route.bind --set DIR replaces the others",
            )
        click.echo(os.path.relpath(result.routes[0], cwd))
        return 0
    result = bind.bind_del(cwd)
    for path in result.routes:
        click.echo(f"unbound {os.path.relpath(path, cwd)} from branch {result.branch}")
    if not result.routes:
        click.echo(f"notice: no route was bound to branch {result.branch}", err=True)
    return 0


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
def drive_command(route_option: str | None, when: str | None, max_blocks: int, json_output: bool) -> int:
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
    from routedriver.route import session

    if when is None:
        import json

        from routedriver.route.drive import guidance, render, to_json

        guide = guidance(route_option)
        if json_output:
            click.echo(json.dumps(to_json(guide), ensure_ascii=False, indent=2))
        else:
            click.echo(render(guide), nl=False)
        return 0
    if json_output:
        raise Malfunction(
            "--json is for route.drive without --when", "a hook answers as Claude Code expects; drop --json"
        )
    payload, unread = _event()
    if unread:
        # Not a reason to fail: what the hook says comes from the route's files, not from the event.
        click.echo(f"warning: {unread}; route.drive answers from the route alone", err=True)
    if when == session.ON_BOOT:
        return _emit(session.on_boot(route_option))
    return _emit(session.on_stop(route_option, payload, max_blocks))


# ---------------------------------------------------------------- route.bounce


@click.command("route.bounce", cls=HookCommand)
@click.option("--route", "route_option", metavar="DIR", help=ROUTE_HELP)
def bounce_command(route_option: str | None) -> int:
    """A Claude Code PreToolUse hook: blocks robot edits of route templates, driver files and protected paths,
    and any file edit whose event it cannot read (reads the event JSON on stdin; exit 2 = blocked, the reason
    on stderr)."""
    from routedriver import hookevent
    from routedriver.route.bounce import Bounce, blocked_unread, decide

    try:
        data = hookevent.read_stdin()
        if data is None:
            raise hookevent.UnreadableEvent("there is no hook event (stdin is a terminal)", hookevent.FIX)
        payload = hookevent.parse_event(data)
    except hookevent.UnreadableEvent as exc:
        decision = blocked_unread(exc.what)  # a PreToolUse gate that cannot read its event fails closed
    else:
        try:
            decision = decide(payload, route_option)
        except Exception as exc:  # noqa: BLE001 - a gate that cannot judge a file edit blocks it
            decision = Bounce(
                True, f"route.bounce: blocked this tool call: checking it failed ({_why(exc)})."
            )
    for warning in decision.warnings:
        click.echo(f"warning: {warning}", err=True)
    if decision.blocked:
        click.echo(decision.reason, err=True)
        return 2
    if decision.problem:
        # Exit 1, not 2: Claude Code shows it to the user without blocking the edit (a hook that cannot
        # tell what to protect must not stop all work either).
        click.echo(f"error: {decision.problem}", err=True)
        return 1
    return 0


def _why(exc: Exception) -> str:
    from routedriver.cli._exits import internal_error
    from routedriver.errors import UserError

    return (
        exc.line().removeprefix("error: ")
        if isinstance(exc, UserError)
        else internal_error("route.bounce", exc)
    )
