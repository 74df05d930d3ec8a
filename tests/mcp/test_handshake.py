"""route.mcp answers the handshake before the SDK loads: the same answers the SDK gives, in milliseconds.

The early answers (``routedriver.mcp.handshake``) are compared with what the SDK's own server says to the
same messages, so an SDK upgrade that changes them fails here; and the process is driven over a raw pipe
to check that each request gets exactly one answer, the SDK's answers to what was answered early dropped.
"""

from __future__ import annotations

import io
import json
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from routedriver.mcp import handshake, server
from tests.mcp.helpers import BIN, vision_route


def _initialize(version: str, ident: int = 0) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": ident,
        "method": "initialize",
        "params": {
            "protocolVersion": version,
            "capabilities": {"roots": {"listChanged": True}},
            "clientInfo": {"name": "test", "version": "1"},
        },
    }


INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}
TOOLS_LIST = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}


class _Wire:
    """A wire for the SDK's server alone: the given lines, then (once ``expected`` answers came) the end."""

    def __init__(self, lines: list[dict[str, Any]], expected: int) -> None:
        self.lines = [json.dumps(line).encode() + b"\n" for line in lines]
        self.answers: list[dict[str, Any]] = []
        self.expected = expected
        self.done = threading.Event()

    def readline(self) -> bytes:
        if self.lines:
            return self.lines.pop(0)
        self.done.wait(30)
        return b""

    def write(self, data: bytes) -> int:
        for line in data.decode().splitlines():
            self.answers.append(json.loads(line))
        if len(self.answers) >= self.expected:
            self.done.set()
        return len(data)

    def flush(self) -> None:
        pass


def _sdk_answers(lines: list[dict[str, Any]], expected: int) -> list[dict[str, Any]]:
    """The SDK's server (route.mcp's, built as it serves) answering ``lines``, with nothing answered early."""
    wire = _Wire(lines, expected)
    nothing = handshake.Handshake(replay=[], answered=set(), ended=False)
    anyio.run(server._serve, None, nothing, wire, wire)
    return wire.answers


def _early_answers(lines: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], handshake.Handshake]:
    wire_in = io.BytesIO(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
    wire_out = io.BytesIO()
    started: list[bool] = []
    shook = handshake.answer_early(wire_in, wire_out, lambda: started.append(True))
    assert started == [True]  # the SDK starts loading once the tools are listed, or a message needs it
    return [json.loads(line) for line in wire_out.getvalue().splitlines()], shook


def test_the_handshake_speaks_the_versions_the_sdk_speaks() -> None:
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    assert handshake.PROTOCOL_VERSIONS == HANDSHAKE_PROTOCOL_VERSIONS


@pytest.mark.parametrize("version", handshake.PROTOCOL_VERSIONS)
def test_early_answers_are_the_sdks_answers(version: str) -> None:
    messages = [_initialize(version), INITIALIZED, TOOLS_LIST]
    early, shook = _early_answers(messages)
    assert early == _sdk_answers(messages, expected=2)
    assert early[0]["result"]["protocolVersion"] == version
    assert [tool["name"] for tool in early[1]["result"]["tools"]] == [
        "route_next",
        "route_status",
        "route_drive",
        "route_set_passed",
        "route_judge",
    ]
    assert "Only a human approves a stone" in early[0]["result"]["instructions"]
    assert shook.ended and shook.answered == {"0"}
    assert [json.loads(line) for line in shook.replay] == [_initialize(version), INITIALIZED]


@pytest.mark.parametrize(
    "first",
    [
        _initialize("1999-01-01"),  # a version the handshake does not speak: the SDK chooses
        {"jsonrpc": "2.0", "id": 5, "method": "resources/list"},  # before initialize
        TOOLS_LIST,  # before initialize
        {"jsonrpc": "2.0", "id": 1, "method": "initialize"},  # no params
        {"not": "json-rpc"},
    ],
)
def test_what_the_handshake_does_not_answer_goes_to_the_sdk_first(first: dict[str, Any]) -> None:
    early, shook = _early_answers([first, TOOLS_LIST])
    assert early == [] and not shook.ended and shook.answered == set()
    assert [json.loads(line) for line in shook.replay] == [first]


def _read_answers(process: subprocess.Popen[str], count: int) -> list[dict[str, Any]]:
    assert process.stdout is not None
    return [json.loads(process.stdout.readline()) for _ in range(count)]


def _route_mcp(git_repo: Path) -> subprocess.Popen[str]:
    """route.mcp on the route, its stdio in pipes: the test speaks the wire itself."""
    return subprocess.Popen(
        [str(BIN / "route.mcp"), "--route", "route"],
        cwd=git_repo,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_every_request_gets_one_answer_and_a_tool_call_goes_to_the_sdk(git_repo: Path) -> None:
    vision_route(git_repo)
    started = time.monotonic()
    process = _route_mcp(git_repo)
    assert process.stdin is not None
    call = {"jsonrpc": "2.0", "id": "c", "method": "tools/call", "params": {"name": "route_next"}}
    for message in (_initialize("2025-06-18"), INITIALIZED, TOOLS_LIST, call, {**TOOLS_LIST, "id": 2}):
        process.stdin.write(json.dumps(message) + "\n")
    process.stdin.flush()
    answers = _read_answers(process, 4)
    rest, err = process.communicate(timeout=60)  # closes stdin: the end
    assert process.returncode == 0, err
    by_id = {json.dumps(answer["id"]): answer for answer in answers}
    assert [answer["id"] for answer in answers[:2]] == [0, 1] and sorted(by_id) == ['"c"', "0", "1", "2"]
    assert rest == ""  # no second answer to initialize
    assert "Write the vision." in by_id['"c"']["result"]["content"][0]["text"]
    assert by_id["2"]["result"] == by_id["1"]["result"]  # the SDK's tools/list is the early one
    assert time.monotonic() - started < 60


def test_hostile_messages_neither_kill_the_server_nor_go_unanswered(git_repo: Path) -> None:
    # A message nested deeper than Python's JSON parser goes (it killed the server before the SDK took
    # over), a lone surrogate escape in a call's arguments (valid JSON the SDK's parser drops whole, so its
    # caller waited for ever) and a NUL in a route: each gets its answer, and the next call is served.
    vision_route(git_repo)
    process = _route_mcp(git_repo)
    assert process.stdin is not None
    lines = [json.dumps(_initialize("2025-06-18")), json.dumps(INITIALIZED), "[" * 100_000 + "]" * 100_000]
    for ident, route in ((1, "route\ud800"), (2, "route\0")):
        params = {"name": "route_next", "arguments": {"route": route}}
        lines.append(json.dumps({"jsonrpc": "2.0", "id": ident, "method": "tools/call", "params": params}))
    call = {"jsonrpc": "2.0", "id": "c", "method": "tools/call", "params": {"name": "route_next"}}
    process.stdin.write("\n".join([*lines, json.dumps(call)]) + "\n")
    process.stdin.flush()
    answers = {json.dumps(answer.get("id")): answer for answer in _read_answers(process, 4)}
    _rest, err = process.communicate(timeout=60)
    assert process.returncode == 0 and "internal error" not in err and "Traceback" not in err, err
    assert sorted(answers) == ['"c"', "0", "1", "2"], answers
    for ident in ("1", "2"):
        result = answers[ident]["result"]
        assert result["isError"] is True and result["content"][0]["text"].startswith("refused: error: "), (
            result
        )
    assert "Write the vision." in answers['"c"']["result"]["content"][0]["text"]


def test_a_client_that_leaves_right_after_a_call_does_not_keep_the_server_running(git_repo: Path) -> None:
    """stdin closed while a call waits for a worker thread: the SDK drops the call, and the server ends
    (it used to wait forever for a thread that never started)."""
    vision_route(git_repo)
    lines = [_initialize("2025-11-25"), INITIALIZED, TOOLS_LIST]
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "route_status"}}
    text = "".join(json.dumps(line) + "\n" for line in [*lines, call])
    done = subprocess.run(
        [str(BIN / "route.mcp"), "--route", "route"],
        cwd=git_repo,
        input=text,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert [json.loads(line)["id"] for line in done.stdout.splitlines()][:2] == [0, 1]
