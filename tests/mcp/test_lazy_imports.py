"""The MCP SDK (~0.9 s to import) is loaded only by what serves or uses MCP: no other route.* command, no
bhrain run without MCP servers, not even ``route.mcp --help``."""

from __future__ import annotations

import re
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


def test_serving_mcp_does_import_it(git_repo: Path) -> None:
    """The check above can see an import: route.mcp, serving (until its stdin closes), loads the SDK."""
    vision_route(git_repo)
    assert "mcp" in _imported_mcp(["route.mcp", "--route", "route"], git_repo, stdin="")
