"""``route.mcp``: the route driver served over MCP on stdin/stdout, with the official SDK's low-level server.

``handshake`` answers the client's first messages before this module (and the SDK) has loaded; ``serve``
takes over from there, on the wire ``handshake.claim_stdio`` claimed.

Tools are ``route_tools.TOOLS``; each stone's ``.stone`` file of the served route is also a resource
(``file://`` URI, read-only; nothing else can be read through it). Every call runs in a worker thread, so
several calls can run at once, each inside its own ``proc.Scope``:

- progress: while ``route_set_passed`` runs, a progress notification every ``HEARTBEAT_S`` seconds says how
  many of its commands finished and how many run (only when the client asked, with a progress token);
- cancellation: a cancelled call stops ITS reviews and judges like Ctrl-C stops ``route.stone.set`` (their
  process groups get SIGTERM, then SIGKILL; none starts after) and records nothing they printed; other
  calls go on. The handler returns once the call's thread has unwound, so the stone's lock is free again.

Answers never raise into the SDK: refusals and malfunctions are tool results with ``isError: true``, and
arguments that do not fit a tool's schema are refused the same way.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import IO, Any, TextIO, TypeVar, cast

import anyio
import anyio.to_thread
from mcp import types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

from routedriver import __version__, proc
from routedriver.errors import Refused
from routedriver.later import Later
from routedriver.mcp import route_tools
from routedriver.mcp.handshake import (
    INSTRUCTIONS,
    SERVER_NAME,
    AnsweredFilter,
    Handshake,
    ReplayReader,
)

HEARTBEAT_S = 2.0
T = TypeVar("T")


def serve(default_route: str | None, handshake: Handshake, wire_in: IO[bytes], wire_out: IO[bytes]) -> None:
    """Serve until the client closes stdin, after ``handshake.answer_early`` answered what it could.

    The event loop runs on a daemon thread while the main thread waits for it: Ctrl-C and SIGTERM are
    handled on the main thread (``cli._exits`` stops every child, says one line, exits), and a daemon loop
    (whose worker threads inherit that, one of them blocked reading stdin) cannot hold the exit up.
    """
    # what the loop raised is raised here
    Later(lambda: anyio.run(_serve, default_route, handshake, wire_in, wire_out)).get()


async def _serve(
    default_route: str | None, handshake: Handshake, wire_in: IO[bytes], wire_out: IO[bytes]
) -> None:
    server = build_server(default_route)
    stdin = anyio.wrap_file(cast(TextIO, ReplayReader(handshake.replay, wire_in)))
    stdout = anyio.wrap_file(cast(TextIO, AnsweredFilter(handshake.answered, wire_out)))
    async with stdio_server(stdin, stdout) as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


def build_server(default_route: str | None) -> Server[Any]:
    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[_tool(tool) for tool in route_tools.TOOLS])

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        name, arguments = params.name, params.arguments
        tool = route_tools.BY_NAME.get(name)
        progress = None
        if tool is not None and tool.runs_commands:
            stone = str((arguments or {}).get("stone", ""))
            progress = _progress_reporter(ctx, stone)
        answer = await in_thread(lambda: route_tools.call(name, arguments, default_route), progress)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=answer.text)],
            structured_content=answer.document,
            is_error=answer.error is not None,
        )

    async def list_resources(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        stones = await anyio.to_thread.run_sync(stone_files, default_route)
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=uri,
                    name=name,
                    title=f"{name}.stone",
                    description=f"the instructions of stone {name}",
                    mime_type="text/markdown",
                )
                for uri, (name, _path) in stones.items()
            ]
        )

    async def read_resource(
        ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        stones = await anyio.to_thread.run_sync(stone_files, default_route)
        found = stones.get(str(params.uri))
        if found is None:
            # Only the stones' own files: a resource URI is never a way to read any other file.
            raise MCPError(
                types.INVALID_PARAMS,
                f"error: unknown resource {params.uri}; list the resources to see the stones of the route",
            )
        text = await anyio.to_thread.run_sync(_read_stone, found[1])
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=str(params.uri), mime_type="text/markdown", text=text)]
        )

    return Server(
        SERVER_NAME,
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )


def _tool(tool: route_tools.RouteTool) -> types.Tool:
    return types.Tool(
        name=tool.name,
        title=tool.title,
        description=tool.description,
        input_schema=tool.input_schema,
        annotations=types.ToolAnnotations(
            title=tool.title,
            read_only_hint=not tool.runs_commands,
            destructive_hint=False,
            idempotent_hint=True,  # set_passed again reuses every result whose inputs did not change
            open_world_hint=False,
        ),
    )


ProgressReporter = Callable[[proc.Scope, float], Awaitable[None]]


def _progress_reporter(ctx: ServerRequestContext[Any], stone: str) -> ProgressReporter:
    async def report(scope: proc.Scope, elapsed_s: float) -> None:
        running = scope.running
        doing = (
            f"{running} command{'s' if running != 1 else ''} of its guard running" if running else "working"
        )
        # progress: the seconds elapsed, which only grow (no total: how many reviews are reused is unknown).
        await ctx.session.report_progress(round(elapsed_s, 1), None, f"{stone}: {doing} ({elapsed_s:.0f} s)")

    return report


async def in_thread(work: Callable[[], T], progress: ProgressReporter | None = None) -> T:
    """Run ``work`` in a worker thread inside its own ``proc.Scope``; report progress meanwhile; on
    cancellation stop the scope's commands and wait for the thread to unwind before passing it on.

    A call cancelled before a worker thread picked it up never runs (anyio drops it): then there is nothing
    to wait for. (The client closing stdin right after a call cancels it that way; waiting for a thread
    that never starts kept the server from ever exiting.)"""
    scope = proc.Scope()
    finished = threading.Event()
    state = {"started": False, "dropped": False}
    lock = threading.Lock()

    def run() -> T:
        with lock:
            if state["dropped"]:
                raise anyio.get_cancelled_exc_class()()  # too late: the caller has gone
            state["started"] = True
        try:
            with scope:
                return work()
        finally:
            finished.set()

    def drop() -> bool:
        """Whether the work started (so the caller must wait for it); else it never will."""
        with lock:
            state["dropped"] = True
            return state["started"]

    async def heartbeat(report: ProgressReporter) -> None:
        started = time.monotonic()
        while True:
            await report(scope, time.monotonic() - started)
            await anyio.sleep(HEARTBEAT_S)

    results: list[T] = []
    async with anyio.create_task_group() as group:
        if progress is not None:
            group.start_soon(heartbeat, progress)
        try:
            results.append(await anyio.to_thread.run_sync(run, abandon_on_cancel=True))
        except anyio.get_cancelled_exc_class():
            if drop():
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(scope.stop)
                    await anyio.to_thread.run_sync(finished.wait)
            raise
        finally:
            group.cancel_scope.cancel()
    return results[0]


def stone_files(default_route: str | None) -> dict[str, tuple[str, Path]]:
    """The served route's stones by resource URI: ``{uri: (name, path)}``; empty when no route is given or
    bound (the tools say what is wrong; a resource listing has no one to tell)."""
    # the driver loads when a client asks, not while the handshake is answered (this module loads then)
    from routedriver.route.load import open_route

    try:
        route = open_route(default_route)
    except Refused:
        return {}
    return {stone.path.as_uri(): (stone.name, stone.path) for stone in route.stones}


def _read_stone(path: Path) -> str:
    """The stone's text, or the one line saying why it cannot be read (not a regular file, too large)."""
    # the route loader: not on the handshake (tests/mcp/test_lazy_imports.py)
    from routedriver.route.load import stone_text

    try:
        return stone_text(path)
    except Refused as exc:
        raise MCPError(types.INVALID_PARAMS, exc.line()) from None
