"""Shared by the MCP tests: the installed ``route.mcp`` behind the SDK's own stdio client, real routes."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TypeVar

import anyio
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client

from tests.route.routes import make_route, review

BIN = Path(sys.executable).parent
TINY_SERVER = Path(__file__).with_name("tiny_server.py")
# The hermetic settings of tests/conftest.py; the SDK passes a server only HOME, PATH, … plus ``env``.
HERMETIC = ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM", "XDG_CACHE_HOME", "NO_COLOR")
T = TypeVar("T")


def hermetic_env() -> dict[str, str]:
    return {name: os.environ[name] for name in HERMETIC if name in os.environ}


@asynccontextmanager
async def route_mcp(cwd: Path, *args: str, errlog: Path | None = None) -> AsyncIterator[ClientSession]:
    """An initialized SDK client session with ``route.mcp ARGS`` started in ``cwd``."""
    params = StdioServerParameters(
        command=str(BIN / "route.mcp"), args=list(args), cwd=cwd, env=hermetic_env()
    )
    log_path = errlog or cwd.parent / "route.mcp.stderr"
    with log_path.open("a", encoding="utf-8") as log:
        async with stdio_client(params, errlog=log) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            yield session


def run(fn: Callable[[], Awaitable[T]]) -> T:
    return anyio.run(fn)


def text(result: Any) -> str:
    """The text of a tool result (route.mcp answers with one text block)."""
    assert len(result.content) == 1, result.content
    value: str = result.content[0].text
    return value


def vision_route(repo: Path, guard: str | None = None, artifact: str | None = "# Vision\n") -> Path:
    """``repo/route`` with stone 1.vision (guarded by the steerable review r1 and reviewed?) and 2.plan."""
    guard_text = guard if guard is not None else f"reviews:\n  - {review('r1')}\njudges:\n  - reviewed?\n"
    route = make_route(
        repo, {"1.vision": "Write the vision.\n", "2.plan": "Plan it.\n"}, {"1.vision": guard_text}
    )
    if artifact is not None:
        (route / "1.vision.md").write_text(artifact, encoding="utf-8")
    return route


def ancestor(pid: int, marker: bytes) -> int:
    """The nearest ancestor of ``pid`` whose command line contains ``marker`` (e.g. route.mcp above the
    review it runs: review → bash -c → route.mcp)."""
    for _ in range(6):
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            pid = int(handle.read().rsplit(")", 1)[1].split()[1])
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            if marker in handle.read():
                return pid
    raise AssertionError(f"no ancestor runs {marker!r}")


def model_reads(result: Any) -> str:
    """What Claude Code (2.1.x) puts in the tool_result its model reads: a successful result's structured
    content when it has one, as JSON.stringify writes it (the text blocks are then dropped), else the text
    blocks. Codex (0.171) does the same."""
    import json

    if result.structured_content is not None and not result.is_error:
        return json.dumps(result.structured_content, separators=(",", ":"), ensure_ascii=False)
    return "\n".join(block.text for block in result.content if block.type == "text")
