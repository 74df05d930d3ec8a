"""bhrain's MCP client: the configured stdio servers of one session, their tools as toolboxes.

``McpServers`` is a ``LoopHook``. ``connect(registry)`` starts every server at once (the SDK's
``stdio_client`` + ``ClientSession``, in an event loop on a thread of its own, a blocking portal), waits
for each to answer ``initialize`` and ``tools/list`` (at most ``MCP_TIMEOUT`` ms, 30 s by default, as in
Claude Code), and adds one toolbox per server, ``mcp__<server>``, whose tools are named
``mcp__<server>__<tool>`` as Claude Code names them, so permission rules and behavior rules see those names.

A tool call runs ``tools/call`` through the portal from the dispatcher's thread (``MCP_TOOL_TIMEOUT`` ms,
no limit by default). Its text (and structured content, when no text block already carries it) becomes the
tool result; ``isError`` makes it an error result. A server that failed to start, or stopped, answers every
call of its tools with an error result saying so (its toolbox keeps claiming the names); the run goes on.
``close()`` (when the loop closes, also after Ctrl-C) stops every server: stdin closed, then SIGTERM and
SIGKILL to its process group, as the SDK does; then what a server left outside its group (a ``setsid``
child, a daemon) is killed as the bash tool's leftovers are: each server's environment carries a
``ROUTEDRIVER_PROC`` mark and bhrain is the subreaper its orphans come to (``routedriver.leftovers``).

A server names its own tools, and a third party's naming is not the user's fault: tools whose names clash
(two of one name, names equal after the 64-character cut, a name another toolbox holds) are skipped with a
warning naming them, never the end of the run (``usable_tools``).

Servers get the SDK's safe environment (``HOME``, ``LOGNAME``, ``PATH``, ``SHELL``, ``TERM``, ``USER``) plus
their ``env``: a secret reaches a server only when the configuration passes it (``"${ANTHROPIC_API_KEY}"``).
Their stderr is kept in a temporary file; its last line explains a server that failed.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
import logging
import os
import re
import tempfile
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from routedriver import leftovers
from routedriver.brain.hooks import LoopHook, ToolOutcome
from routedriver.brain.toolbox import Toolbox, ToolRegistry
from routedriver.brain.tools.base import Tool, ToolContext, fail
from routedriver.errors import Refused
from routedriver.mcp.servers_config import ServerSpec

log = logging.getLogger("bhrain")

DEFAULT_STARTUP_S = 30.0
_WIRE_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
INSTRUCTIONS_LIMIT = 2_000  # characters of a server's instructions put into the system prompt


def tool_name(server: str, tool: str) -> str:
    """``mcp__<server>__<tool>``, as Claude Code names MCP tools (64 characters at most, the API's limit)."""
    return f"mcp__{server}__{_WIRE_UNSAFE.sub('_', tool)}"[:64]


def _timeout_s(environ: Mapping[str, str], name: str, default: float | None) -> float | None:
    raw = environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw) / 1000
    except ValueError:
        raise Refused(f"{name}={raw!r} is not a number of milliseconds", f"e.g. {name}=60000") from None
    return value if value > 0 else default


class _Server:
    """One configured server, as the portal's event loop sees it."""

    def __init__(self, spec: ServerSpec, workdir: Path) -> None:
        self.spec = spec
        self.cwd = spec.cwd or workdir
        # Its environment carries this mark (after the marks bhrain itself runs under), as every command proc
        # starts does: what the server leaves behind, even in a session of its own, is found and killed.
        self.mark = leftovers.new_mark()
        self.session: Any = None  # the ClientSession while the server runs
        self.problem = ""  # why its tools cannot be called: "failed to start: …", "stopped: …"
        self.instructions = ""
        # Closed by McpServers.close(); a file, not a pipe, so a chatty server can never block on it. "a+":
        # the server shares the file's offset, and appending keeps our reads from moving its writes.
        self.stderr: TextIO = tempfile.TemporaryFile("a+", encoding="utf-8", errors="replace")  # noqa: SIM115

    def said(self) -> str:
        """The last line the server wrote on stderr, for a message that says why it failed."""
        try:
            self.stderr.flush()
            self.stderr.seek(0)
            lines = [line.strip() for line in self.stderr.read()[-4000:].splitlines() if line.strip()]
        except (OSError, ValueError):
            return ""
        return f" (its stderr: {lines[-1][:300]})" if lines else ""


class McpServers(LoopHook):
    def __init__(self, specs: Sequence[ServerSpec], *, workdir: Path, environ: Mapping[str, str]) -> None:
        # Expanded now: an unset ${VAR} is refused before any server (or model call) starts.
        self.servers = [_Server(spec.expanded(environ), workdir) for spec in specs]
        self.startup_s = _timeout_s(environ, "MCP_TIMEOUT", DEFAULT_STARTUP_S) or DEFAULT_STARTUP_S
        self.call_s = _timeout_s(environ, "MCP_TOOL_TIMEOUT", None)
        self._stack = contextlib.ExitStack()
        self._portal: Any = None
        self._started = False

    # -- LoopHook --------------------------------------------------------------------------------------------
    def system_prompt(self) -> str:
        lines = []
        for server in self.servers:
            if server.problem:
                lines.append(f"- MCP server {server.spec.name}: {server.problem}; its tools are unavailable.")
            elif server.instructions:
                lines.append(
                    f"- MCP server {server.spec.name} says: {server.instructions[:INSTRUCTIONS_LIMIT]}"
                )
        return "## MCP servers\n" + "\n".join(lines) if lines else ""

    def close(self) -> None:
        """Stop every server (cancelling whatever call is still running) and the portal's thread."""
        portal, self._portal = self._portal, None
        try:
            if portal is not None:
                with contextlib.suppress(RuntimeError):  # the portal is already gone
                    portal.call(portal.stop, True)
        finally:
            self._stack.close()
            for server in self.servers:
                server.stderr.close()
            # The SDK stopped each server's process group; what left it (a `setsid` child, a daemon) came to
            # us, the subreaper, when the server died, and carries the server's mark.
            if self._started:
                leftovers.sweep([server.mark for server in self.servers], ())

    # -- starting --------------------------------------------------------------------------------------------
    def connect(self, registry: ToolRegistry) -> None:
        """Start every server, wait until each answered (or failed), and add one toolbox per server."""
        # the MCP SDK and anyio (~0.7 s), here and below: only a run with MCP servers loads them
        from anyio.from_thread import start_blocking_portal

        # Before any server starts: its orphans must come to us (the subreaper), not to init.
        leftovers.enable()
        self._started = True
        self._portal = self._stack.enter_context(start_blocking_portal(name="bhrain-mcp"))
        pending = []
        for server in self.servers:
            ready: concurrent.futures.Future[list[Any]] = concurrent.futures.Future()
            self._portal.start_task_soon(self._serve, server, ready)
            pending.append((server, ready))
        for server, ready in pending:
            try:
                # The server's own task enforces startup_s; this bound only guards against a wedged loop.
                tools = ready.result(timeout=self.startup_s + 15)
            except Exception as exc:  # noqa: BLE001 - a server that cannot start is a problem, not a crash
                server.problem = f"failed to start: {_describe(exc, self.startup_s)}{server.said()}"
                log.warning("mcp server %s %s; its tools are unavailable", server.spec.name, server.problem)
                tools = []
            registry.add(self._toolbox(server, tools, registry))
            if tools:
                log.info("mcp server %s: %d tools", server.spec.name, len(tools))

    async def _serve(self, server: _Server, ready: concurrent.futures.Future[list[Any]]) -> None:
        # mcp and anyio (~0.7 s): only a bhrain run that names MCP servers
        import anyio
        from mcp import ClientSession, StdioServerParameters
        from mcp.client.stdio import stdio_client

        spec = server.spec
        env = {**dict(spec.env), leftovers.ENV: os.environ.get(leftovers.ENV, "")}
        leftovers.marked(env, server.mark)
        params = StdioServerParameters(command=spec.command, args=list(spec.args), env=env, cwd=server.cwd)
        try:
            async with (
                stdio_client(params, errlog=server.stderr) as (read, write),
                ClientSession(read, write) as session,
            ):
                with anyio.fail_after(self.startup_s):
                    started = await session.initialize()
                    tools = await _all_tools(session)
                server.instructions = " ".join((started.instructions or "").split())
                server.session = session
                ready.set_result(tools)
                await anyio.sleep_forever()  # until close() cancels it
        except Exception as exc:  # noqa: BLE001 - reported through ``ready`` or on the next call
            if not ready.done():
                ready.set_exception(exc)
            else:
                server.problem = f"stopped: {_describe(exc, self.startup_s)}{server.said()}"
        finally:
            server.session = None

    def _toolbox(self, server: _Server, tools: list[Any], registry: ToolRegistry) -> Toolbox:
        name = server.spec.name
        box = Toolbox(
            f"mcp__{name}",
            description=f"the MCP server {name} ({' '.join([server.spec.command, *server.spec.args])})",
        )
        for listed in usable_tools(name, tools, taken=lambda called: registry.find(called) is not None):
            box.add(self._tool(server, listed))
        prefix = f"mcp__{name}__"
        # While the server is down (it failed to start, or stopped), a name of its own that it did not list
        # gets an answer saying so, rather than a bare "tool not found".
        box.fallback = lambda called: (
            self._down(server, called) if server.problem and called.startswith(prefix) else None
        )
        return box

    def _tool(self, server: _Server, listed: Any) -> Tool:
        original = listed.name

        def run(arguments: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
            return self._call(server, original, arguments)

        schema = dict(listed.input_schema or {"type": "object"})
        annotations = listed.annotations
        return Tool(
            tool_name(server.spec.name, original),
            listed.description or listed.title or f"the tool {original} of the MCP server {server.spec.name}",
            schema,
            run,
            read_only=bool(annotations and annotations.read_only_hint),
            restores_secrets=("*",) if server.spec.restore_secrets else (),
        )

    def _down(self, server: _Server, called: str) -> Tool:
        def run(arguments: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
            return fail(f"mcp server {server.spec.name} {server.problem}; {called} was not run")

        return Tool(called, "", {"type": "object"}, run)

    # -- calling ---------------------------------------------------------------------------------------------
    def _call(self, server: _Server, tool: str, arguments: Mapping[str, Any]) -> ToolOutcome:
        portal = self._portal
        if portal is None:
            return fail(f"mcp server {server.spec.name} is stopped (the run is ending); {tool} was not run")
        try:
            outcome: ToolOutcome = portal.call(self._call_async, server, tool, dict(arguments))
        except RuntimeError as exc:  # the portal stopped under us (the run is ending)
            return fail(f"mcp server {server.spec.name} is stopped ({exc}); {tool} was not run")
        return outcome

    async def _call_async(self, server: _Server, tool: str, arguments: dict[str, Any]) -> ToolOutcome:
        # mcp: loaded by _serve already; imported here for the names
        from mcp.shared.exceptions import MCPError
        from mcp.types import CONNECTION_CLOSED

        session = server.session
        if session is None or server.problem:
            return fail(f"mcp server {server.spec.name} {server.problem or 'stopped'}; {tool} was not run")
        try:
            result = await session.call_tool(tool, arguments, read_timeout_seconds=self.call_s)
        except MCPError as exc:
            if exc.code == CONNECTION_CLOSED:
                if not server.problem:
                    server.problem = f"stopped: its connection closed{server.said()}"
                return fail(f"mcp server {server.spec.name} {server.problem}; {tool} did not finish")
            return fail(f"mcp server {server.spec.name}: {tool} failed: {exc.message} (error {exc.code})")
        except Exception as exc:  # noqa: BLE001 - whatever the transport raises is this call's error result
            return fail(f"mcp server {server.spec.name}: {tool} failed: {_describe(exc, self.startup_s)}")
        return outcome_of(result)


def usable_tools(server: str, tools: Sequence[Any], *, taken: Callable[[str], bool]) -> list[Any]:
    """The tools a server listed that can be told apart by their names, in its order; the others skipped.

    A server's naming is not the user's doing, so a clash ends nothing: two tools of one name, or of names
    equal once made ``mcp__<server>__<tool>`` (characters replaced, cut at 64), could each be called by that
    name, and so neither is offered; nor is a tool whose name another toolbox already holds. A warning names
    them. One pass over the tools, counting names in a dict, so 20,000 tools load as fast as 20.
    """
    named = [(tool_name(server, str(listed.name)), listed) for listed in tools]
    counts = Counter(called for called, _ in named)
    usable, clashing, held = [], [], []
    for called, listed in named:
        if counts[called] > 1:
            clashing.append(str(listed.name))
        elif taken(called):
            held.append(called)
        else:
            usable.append(listed)
    if clashing:
        log.warning(
            "mcp server %s lists %d tools whose names clash as bhrain's tool names (two of one name, or "
            "names equal once cut to 64 characters): %s; none of them is offered",
            server,
            len(clashing),
            _some(clashing),
        )
    if held:
        log.warning(
            "mcp server %s lists %d tools whose names another toolbox already holds: %s; "
            "they are not offered",
            server,
            len(held),
            _some(held),
        )
    return usable


def _some(names: Sequence[str], limit: int = 10) -> str:
    shown = ", ".join(repr(name[:80]) for name in names[:limit])
    return shown + (f" and {len(names) - limit:,} more" if len(names) > limit else "")


async def _all_tools(session: Any) -> list[Any]:
    # mcp: loaded by _serve already; imported here for the names
    from mcp import types

    tools: list[Any] = []
    cursor = None
    for _page in range(100):  # a server that pages forever cannot hang the start
        listed = await session.list_tools(
            params=types.PaginatedRequestParams(cursor=cursor) if cursor else None
        )
        tools.extend(listed.tools)
        cursor = listed.next_cursor
        if not cursor:
            break
    return tools


def outcome_of(result: Any) -> ToolOutcome:
    """A ``CallToolResult`` as bhrain's tool result: the text of its blocks, what cannot be shown named, and
    its structured content as JSON unless a text block already says the same."""
    # mcp: loaded by _serve already; imported here for the names
    from mcp import types

    parts: list[str] = []
    for block in result.content:
        if isinstance(block, types.TextContent):
            parts.append(block.text)
        elif isinstance(block, types.ImageContent | types.AudioContent):
            kind = "image" if isinstance(block, types.ImageContent) else "audio"
            size = len(block.data.rstrip("=")) * 3 // 4  # base64: 4 characters for 3 bytes
            parts.append(f"[{kind} {block.mime_type}, {size:,} bytes: not shown]")
        elif isinstance(block, types.ResourceLink):
            parts.append(f"[resource link: {block.uri} ({block.name})]")
        elif isinstance(block, types.EmbeddedResource):
            contents = block.resource
            if isinstance(contents, types.TextResourceContents):
                parts.append(f"[resource {contents.uri}]\n{contents.text}")
            else:
                parts.append(f"[resource {contents.uri}: {contents.mime_type or 'binary'}, not shown]")
    structured = result.structured_content
    data: dict[str, Any] = {}
    if structured is not None:
        data["structured_content"] = structured
        if not _carried(parts, structured):
            parts.append("structured content:\n" + json.dumps(structured, ensure_ascii=False, indent=2))
    return ToolOutcome(not result.is_error, "\n".join(parts), data)


def _carried(parts: Sequence[str], structured: Any) -> bool:
    """Whether a text block already says what the structured content says: the same JSON, or (the SDK's
    wrapping of a plain return value) ``{"result": value}`` whose value a text block shows."""
    candidates = [structured]
    if isinstance(structured, dict) and set(structured) == {"result"}:
        candidates.append(structured["result"])
    for part in parts:
        for candidate in candidates:
            if isinstance(candidate, str) and part == candidate:
                return True
            try:
                if json.loads(part) == candidate:
                    return True
            except ValueError:
                continue
    return False


def _describe(exc: BaseException, startup_s: float) -> str:
    """One readable line for what a transport raised (task groups wrap it in exception groups)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, TimeoutError):
        return f"no answer within {startup_s:g} s (set MCP_TIMEOUT in milliseconds to wait longer)"
    if isinstance(exc, FileNotFoundError):
        return f"command not found: {exc.filename or exc}"
    if isinstance(exc, OSError):
        return f"cannot run it: {exc.strerror or exc}"
    # mcp: only once a server was started (see _serve)
    from mcp.types import CONNECTION_CLOSED

    if getattr(exc, "code", None) == CONNECTION_CLOSED:
        return "it exited (or closed its output) before answering"
    message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return " ".join(str(message).split())[:300]
