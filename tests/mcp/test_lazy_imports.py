"""The MCP SDK (~0.9 s to import) is loaded only by what serves or uses MCP: no other route.* command, no
bhrain run without MCP servers, not even ``route.mcp --help``."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.brain.helpers import write_script
from tests.conftest import run_cli
from tests.mcp.helpers import vision_route

BIN = Path(sys.executable).parent
_MCP_MODULE = re.compile(r"^import time:.*\|\s+(mcp|mcp_types)(\.\S+)?\s*$", re.MULTILINE)

COMMANDS = [
    ["route.stone.get", "--route", "route", "--say"],
    ["route.stone.set", "--route", "route", "--stone", "1.vision", "--as", "passed"],
    ["route.stone.judge", "--mechanism", "reviewed?", "--route", "route", "--stone", "1.vision"],
    ["route.stone.del", "--route", "route", "--stone", "9.*"],
    ["route.drive", "--route", "route"],
    ["route.lint", "--route", "route"],
    ["route.verify", "--route", "route"],
    ["route.bind", "--get"],
    ["route.mcp", "--help"],
    ["bhrain", "--help"],
    ["bhrain", "run", "--skill", "act", "--atom", "scripted", "--script", "SCRIPT", "--input", "go"],
]


def _imported_mcp(argv: list[str], cwd: Path, stdin: str | None = None) -> list[str]:
    done = run_cli([sys.executable, "-X", "importtime", str(BIN / argv[0]), *argv[1:]], cwd, input=stdin)
    return [match.group(0).rsplit("|", 1)[1].strip() for match in _MCP_MODULE.finditer(done.err)]


@pytest.mark.parametrize("argv", COMMANDS, ids=lambda argv: " ".join(argv[:2]))
def test_commands_that_do_not_serve_mcp_never_import_it(argv: list[str], git_repo: Path) -> None:
    vision_route(git_repo)
    script = write_script(git_repo.parent / "script.json", [{"text": "done"}])
    argv = [str(script) if arg == "SCRIPT" else arg for arg in argv]
    assert _imported_mcp(argv, git_repo) == []


INITIALIZE = (
    '{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",'
    '"capabilities":{},"clientInfo":{"name":"test","version":"1"}}}\n'
    '{"jsonrpc":"2.0","method":"notifications/initialized"}\n'
    '{"jsonrpc":"2.0","id":1,"method":"tools/list"}\n'
)
CALL = '{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"route_status","arguments":{}}}\n'


def _imported(argv: list[str], cwd: Path, stdin: str, prefix: str, *, answers: int = 2) -> list[str]:
    """The modules under ``prefix`` that ``argv`` imported, fed ``stdin`` and closed once it gave as many
    answers as asked (a call whose client is gone is never run)."""
    command = [sys.executable, "-X", "importtime", str(BIN / argv[0]), *argv[1:]]
    server = subprocess.Popen(
        command, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write(stdin)
    server.stdin.flush()
    for _ in range(answers):
        assert server.stdout.readline().startswith('{"jsonrpc":"2.0"')
    _, err = server.communicate(timeout=60)
    assert server.returncode == 0, err[-2000:]
    names = [line.rsplit("|", 1)[1].strip() for line in err.splitlines() if line.startswith("import time:")]
    return [name for name in names if name == prefix or name.startswith(prefix + ".")]


def test_the_handshake_imports_nothing_of_the_route_driver(git_repo: Path) -> None:
    """initialize and tools/list are answered before the driver is loaded (it loads for a tool call). The one
    module of ``routedriver.route`` they read is the table of built-in judges that route_judge's schema lists:
    data, whose judges import what they need when one is asked (the package's ``__init__`` loads nothing)."""
    vision_route(git_repo)
    handshake = _imported(["route.mcp"], git_repo, INITIALIZE, "routedriver.route")
    assert sorted(handshake) == ["routedriver.route", "routedriver.route.builtin_judges"]
    serving = _imported(["route.mcp"], git_repo, INITIALIZE + CALL, "routedriver.route", answers=3)
    assert "routedriver.route.status" in serving  # route_status's own module


def test_serving_mcp_does_import_it(git_repo: Path) -> None:
    """The check above can see an import: route.mcp, serving a tool call, loads the SDK."""
    vision_route(git_repo)
    serving = _imported(["route.mcp", "--route", "route"], git_repo, INITIALIZE + CALL, "mcp", answers=3)
    assert "mcp" in serving
