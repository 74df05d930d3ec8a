"""``route.mcp``: serve the route driver to MCP clients over stdio. No logic here (see routedriver.mcp)."""

from __future__ import annotations

import sys
from types import ModuleType

import click

from routedriver.cli._command import Command
from routedriver.later import Later
from routedriver.mcp.handshake import answer_early, claim_stdio


@click.command("route.mcp", cls=Command)
@click.option(
    "--route",
    "route_option",
    metavar="DIR",
    help="The route the tools and resources serve (default: the route bound to the branch at each call).",
)
def mcp_command(route_option: str | None) -> int:
    """Serve the route driver to an MCP client (Claude Code, Codex, Cursor, bhrain) over stdin/stdout. The
    client starts this command, as it starts any stdio MCP server; nobody runs it by hand.

    \b
    Claude Code:  claude mcp add route -- route.mcp
    .mcp.json (Claude Code, Cursor, Gemini CLI, Claude Desktop):
      {"mcpServers": {"route": {"command": "route.mcp", "args": []}}}
    Codex (.codex/config.toml):
      [mcp_servers.route]
      command = "route.mcp"
      args = []

    Tools: route_next (the next stone and its instructions), route_status (every stone's state),
    route_drive (where the robot is and what to run), route_set_passed (run a stone's guard) and
    route_judge (a built-in judge). No tool approves: a person runs route.stone.set --stone S --as approved
    at a terminal. It serves the route bound to the current branch (route.bind --set DIR), or --route DIR
    (in "args"). More: docs/mcp.md, installed with the package as routedriver/docs/mcp.md."""
    if route_option is not None:
        # Here, not at the top: the handshake is answered before anything of the driver is imported.
        from routedriver.route.load import open_route

        open_route(route_option)  # a wrong --route is refused now, in one line, not at every call
    if sys.stdin is not None and sys.stdin.isatty():
        click.echo(
            "route.mcp: serving MCP on stdin/stdout; an MCP client starts this command "
            "(route.mcp --help says how). Ctrl-C stops it.",
            err=True,
        )

    loading: list[Later[ModuleType]] = []  # the SDK (~0.7 s), while the handshake is answered without it
    wire_in, wire_out = claim_stdio()
    handshake = answer_early(wire_in, wire_out, lambda: loading.append(Later(_server)))
    if handshake.ended:
        return 0
    loading[0].get().serve(route_option, handshake, wire_in, wire_out)
    return 0


def _server() -> ModuleType:
    # the MCP SDK (~0.7 s), loaded on a thread while the handshake is answered without it
    import routedriver.mcp.server

    return routedriver.mcp.server
