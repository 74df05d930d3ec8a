"""``route.mcp``: serve the route driver to MCP clients over stdio. No logic here (see routedriver.mcp)."""

from __future__ import annotations

import sys
from types import ModuleType

import click

from routedriver.cli._command import Command


@click.command("route.mcp", cls=Command)
@click.option(
    "--route",
    "route_option",
    metavar="DIR",
    help="The route the tools and resources serve (default: the route bound to the branch at each call).",
)
def mcp_command(route_option: str | None) -> int:
    """Serve the route driver as an MCP server on stdin/stdout (an MCP client starts it; see docs/mcp.md).

    Tools: route_next, route_status, route_drive, route_set_passed, route_judge. No tool approves."""
    if route_option is not None:
        # Here, not at the top: the handshake is answered before anything of the driver is imported.
        from routedriver.route.api import open_route

        open_route(route_option)  # a wrong --route is refused now, in one line, not at every call
    if sys.stdin is not None and sys.stdin.isatty():
        click.echo(
            "route.mcp: serving MCP on stdin/stdout; an MCP client starts this command (see docs/mcp.md). "
            "Ctrl-C stops it.",
            err=True,
        )
    from routedriver.later import Later
    from routedriver.mcp.handshake import answer_early, claim_stdio

    loading: list[Later[ModuleType]] = []  # the SDK (~0.7 s), while the handshake is answered without it
    wire_in, wire_out = claim_stdio()
    handshake = answer_early(wire_in, wire_out, lambda: loading.append(Later(_server)))
    if handshake.ended:
        return 0
    loading[0].get().serve(route_option, handshake, wire_in, wire_out)
    return 0


def _server() -> ModuleType:
    import routedriver.mcp.server

    return routedriver.mcp.server
