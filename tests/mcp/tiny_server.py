"""A tiny MCP stdio server written with the official SDK (its high-level MCPServer), for bhrain's tests.

Tools: ``echo`` (text), ``shape`` (structured content), ``env`` (one variable of its environment),
``big`` (a long text), ``picture`` (an image block), ``sleep`` (writes its pid, then sleeps), ``crash``
(the process exits at once), ``refuse`` (an isError result). It writes its pid to ``$TINY_PID_FILE``.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ImageContent

app = MCPServer("tiny", instructions="A tiny server for tests: echo what you are given.")


@app.tool()
def echo(text: str) -> str:
    """Repeat the text."""
    return f"echo: {text}"


@app.tool()
def shape(sides: int) -> dict[str, object]:
    """Describe a regular polygon (structured content)."""
    return {"sides": sides, "name": {3: "triangle", 4: "square"}.get(sides, "polygon")}


@app.tool()
def env(name: str) -> str:
    """The value of one environment variable of this server ('(unset)' when it has none)."""
    return os.environ.get(name, "(unset)")


@app.tool()
def big(lines: int) -> str:
    """Many numbered lines."""
    return "\n".join(f"line {n}" for n in range(lines))


@app.tool()
def picture() -> list[object]:
    """A 4-byte image and a caption."""
    return [ImageContent(type="image", data="AAAAAA==", mime_type="image/png"), "a caption"]


@app.tool()
def sleep(seconds: float) -> str:
    """Sleep (writes this process's pid to $TINY_SLEEP_FILE first)."""
    marker = os.environ.get("TINY_SLEEP_FILE")
    if marker:
        Path(marker).write_text(str(os.getpid()), encoding="utf-8")
    time.sleep(seconds)
    return "slept"


@app.tool()
def crash() -> str:
    """End this server's process at once."""
    sys.stderr.write("tiny: crashing on purpose\n")
    sys.stderr.flush()
    os._exit(3)


@app.tool()
def refuse(why: str) -> str:
    """Always fails with an error result."""
    raise ToolError(f"refused: {why}")


if __name__ == "__main__":
    pid_file = os.environ.get("TINY_PID_FILE")
    if pid_file:
        Path(pid_file).write_text(str(os.getpid()), encoding="utf-8")
    if os.environ.get("TINY_FAIL_AT_START"):
        sys.stderr.write("tiny: cannot start: TINY_FAIL_AT_START is set\n")
        sys.exit(1)
    app.run()
