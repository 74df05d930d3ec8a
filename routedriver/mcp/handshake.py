"""``route.mcp``'s first answers, given before the MCP SDK has loaded: a client connects in milliseconds.

A client such as Claude Code starts its MCP servers and its first model request side by side, and sends
that request with the tools of the servers connected by then (``claude -p`` waits about two seconds). The
SDK takes ~0.7 s to import on an idle machine, several seconds on a loaded one: long enough for a robot's
first turn to go without the route tools. So ``route.mcp`` answers the handshake itself while the SDK loads
in the background:

- ``initialize``: the server's capabilities, name, version and ``instructions``, and the protocol version
  the SDK would choose (the client's, when it is one the handshake speaks);
- ``notifications/initialized``; ``tools/list`` (the table ``route_tools.TOOLS``, as the SDK renders it);
  ``ping``.

Everything else, and every message once one arrives that it does not answer, goes to the SDK's server,
which also gets the ``initialize`` and ``initialized`` messages first (so its session is in the state the
client believes), its own answer to that ``initialize`` dropped. Tests hold these answers equal to the
SDK's (``tests/mcp/test_handshake.py``). Nothing here imports the SDK or the route driver.

The wire is JSON-RPC, one message per line (MCP's stdio transport). ``claim_stdio`` takes stdin and stdout
for the wire and points file descriptors 0 and 1 elsewhere (the null device, stderr), as the SDK's own
transport does: a review command or a stray print can neither read the client's messages nor write into
the protocol.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable
from typing import IO, Any, NamedTuple

from routedriver import __version__
from routedriver.mcp import route_tools
from routedriver.userfile import escape_surrogates

# The SDK's HANDSHAKE_PROTOCOL_VERSIONS (mcp_types.version), oldest first; a test keeps them equal.
PROTOCOL_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
CAPABILITIES = {"resources": {"listChanged": False, "subscribe": False}, "tools": {"listChanged": False}}
SERVER_NAME = "route.mcp"
INSTRUCTIONS = (
    "route.mcp drives a route: a directory of numbered stones (instructions, in order). For each stone you "
    "write the artifact it asks for, then run its guard (reviews and judges) until it passes. Loop: "
    "route_next (or route_drive) says what to do next, with the stone's instructions and the exact "
    "commands; write the artifact; route_set_passed runs the guard; when it is rejected, fix what the "
    "judges' feedback says and call it again; go on until every stone has passed. route_status shows the "
    "whole board. Only a human approves a stone, at a terminal: no tool approves, and when a stone waits for "
    "approval, stop and say which command the human runs. Route files (*.stone, *.guard, .route/) are not "
    "yours to edit."
)


class Handshake(NamedTuple):
    """What the early answers leave for the SDK's server."""

    replay: list[bytes]  # messages the SDK must see first (initialize, initialized, the first it must answer)
    answered: set[str]  # request ids already answered (JSON text of the id): the SDK's answers are dropped
    ended: bool  # the client closed stdin during the handshake


def claim_stdio() -> tuple[IO[bytes], IO[bytes]]:
    """The process's stdin and stdout for the wire, and fds 0 and 1 moved off it."""
    wire_in = os.fdopen(os.dup(0), "rb")
    wire_out = os.fdopen(os.dup(1), "wb")
    null = os.open(os.devnull, os.O_RDONLY)
    try:
        os.dup2(null, 0)
    finally:
        os.close(null)
    os.dup2(2, 1)
    return wire_in, wire_out


def initialize_result(params: Any) -> dict[str, Any]:
    requested = params.get("protocolVersion") if isinstance(params, dict) else None
    return {
        "capabilities": CAPABILITIES,
        "instructions": INSTRUCTIONS,
        "protocolVersion": requested,
        "serverInfo": {"name": SERVER_NAME, "version": __version__},
    }


def tool_json(tool: route_tools.RouteTool) -> dict[str, Any]:
    """A tool as ``tools/list`` lists it (the SDK's rendering of ``server._tool``)."""
    return {
        "annotations": {
            "destructiveHint": False,
            "idempotentHint": True,  # set_passed again reuses every result whose inputs did not change
            "openWorldHint": False,
            "readOnlyHint": not tool.runs_commands,
            "title": tool.title,
        },
        "description": tool.description,
        "inputSchema": tool.input_schema,
        "name": tool.name,
        "title": tool.title,
    }


def answer_early(wire_in: IO[bytes], wire_out: IO[bytes], after_first: Callable[[], object]) -> Handshake:
    """Answer what this module can, until the first message it cannot (or the end of stdin).
    ``after_first`` runs once the tools are listed, or when a message is handed on (it starts loading the
    SDK: an import holds the interpreter's lock most of the time, so starting it earlier would delay the
    answers a client waits for before its first model request)."""
    started = False
    replay: list[bytes] = []
    answered: set[str] = set()
    initialized = False
    while True:
        line = wire_in.readline()
        if not line:
            return Handshake(replay, answered, ended=True)
        if not line.strip():
            continue
        message = _parse(line)
        method = message.get("method") if message is not None else None
        has_id = message is not None and "id" in message and isinstance(message["id"], str | int)
        result: dict[str, Any] | None = None
        if method == "initialize" and has_id and not initialized:
            params = message.get("params") if message is not None else None
            if isinstance(params, dict) and params.get("protocolVersion") in PROTOCOL_VERSIONS:
                result, initialized = initialize_result(params), True
                replay.append(line)
        elif method == "notifications/initialized" and initialized and not has_id:
            replay.append(line)
            continue
        elif method == "tools/list" and has_id and initialized:
            result = {"tools": [tool_json(tool) for tool in route_tools.TOOLS]}
        elif method == "ping" and has_id:
            result = {}
        if result is None or message is None:
            replay.append(line)  # the SDK answers this one, and everything after it
            if not started:
                after_first()
            return Handshake(replay, answered, ended=False)
        if method == "initialize":
            answered.add(json.dumps(message["id"]))
        _send(wire_out, {"jsonrpc": "2.0", "id": message["id"], "result": result})
        if method == "tools/list" and not started:
            started = True
            after_first()


def _parse(line: bytes) -> dict[str, Any] | None:
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):  # nested deeper than the parser goes: the SDK answers it
        return None
    return message if isinstance(message, dict) and message.get("jsonrpc") == "2.0" else None


def _send(wire_out: IO[bytes], message: dict[str, Any]) -> None:
    wire_out.write(json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8") + b"\n")
    wire_out.flush()


class ReplayReader:
    """The SDK transport's stdin (it only reads lines): the handshake's messages again, then the rest of
    the wire."""

    def __init__(self, replay: list[bytes], wire_in: IO[bytes]) -> None:
        self._pending = list(replay)
        self._wire = wire_in

    def readline(self) -> str:
        data = self._pending.pop(0) if self._pending else self._wire.readline()
        return _without_lone_surrogates(data.decode("utf-8", errors="replace"))


def _without_lone_surrogates(line: str) -> str:
    """``line`` with U+FFFD for each lone surrogate escape in it (``"\\ud800"``: valid JSON, but no
    character). The SDK's parser refuses such a message whole and answers nothing, so its caller would wait
    for ever; this way the call is answered (a route or stone by that name is not found)."""
    if "\\ud" not in line.lower():
        return line
    try:
        text = json.dumps(json.loads(line), ensure_ascii=False)
    except (ValueError, RecursionError):
        return line
    if not any("\ud800" <= char <= "\udfff" for char in text):
        return line
    return "".join("\ufffd" if "\ud800" <= char <= "\udfff" else char for char in text) + "\n"


class AnsweredFilter:
    """The SDK transport's stdout (it only writes and flushes): every message it writes, but its answers to
    requests the handshake answered already (one JSON-RPC message per line)."""

    def __init__(self, answered: set[str], wire_out: IO[bytes]) -> None:
        self._answered = set(answered)
        self._wire = wire_out
        self._partial = ""
        self._lock = threading.Lock()

    def write(self, text: str) -> int:
        with self._lock:
            self._partial += text
            *lines, self._partial = self._partial.split("\n")
            for line in lines:
                if line.strip() and not self._already_answered(line):
                    # A lone surrogate (a "\ud800" a client sent back in an answer's text) has no UTF-8
                    # bytes: unescaped, the answer would never be written and its caller wait for ever.
                    self._wire.write(escape_surrogates(line).encode("utf-8") + b"\n")
        return len(text)

    def flush(self) -> None:
        with self._lock:
            self._wire.flush()

    def _already_answered(self, line: str) -> bool:
        if not self._answered:
            return False
        message = _parse(line.encode("utf-8"))
        if message is None or "method" in message or "id" not in message:
            return False
        key = json.dumps(message["id"])
        if key in self._answered:
            self._answered.discard(key)
            return True
        return False
