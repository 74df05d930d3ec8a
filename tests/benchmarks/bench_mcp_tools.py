"""bhrain loading an MCP server's tools (issue 22 §3): linear in the number of tools.

Each tool a server lists was compared with every earlier one (4,000 tools took ~10 s, 20,000 3 min 45 s).
Timed here: what bhrain does with the ``tools/list`` answer of one server (the SDK's own ``Tool`` objects):
names made, clashes found, the toolbox built and added to the session's registry, and the first tool list
and system prompt of the loop.

- 20,000 tools load in ≤ 0.5 s (the best of 5 runs);
- ten times as many tools take at most 25 times as long: linear, with room for noise and for the garbage
  collector's work growing with the heap (comparing every tool with every earlier one made it 100 times);
- 20,000 tools of which a thousand clash in pairs load as fast, the clashing ones skipped.
"""

from __future__ import annotations

import logging
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from _harness import exit_code, report_absolute

from routedriver.brain.toolbox import ToolRegistry
from routedriver.mcp.client import McpServers
from routedriver.mcp.servers_config import ServerSpec

logging.getLogger("bhrain").setLevel(logging.ERROR)  # the clash warning is expected here


def listed(count: int, *, clashing: int = 0) -> list[object]:
    from mcp import types

    schema = {"type": "object", "properties": {"text": {"type": "string"}}}
    names = [f"tool_{n}" for n in range(count - clashing)] + [f"dup_{n // 2}" for n in range(clashing)]
    return [types.Tool(name=name, description=f"the tool {name}", input_schema=schema) for name in names]


def load(tools: list[object]) -> tuple[float, int]:
    """Seconds to turn one server's listed tools into its toolbox in a registry, and how many it offers."""
    servers = McpServers([ServerSpec("big", "big-server")], workdir=Path.cwd(), environ={})
    try:
        registry = ToolRegistry()
        started = time.process_time()  # CPU time: other processes on a busy machine do not count
        registry.add(servers._toolbox(servers.servers[0], tools, registry))  # the unit timed
        snapshot = registry.snapshot()
        elapsed = time.process_time() - started
    finally:
        servers.close()
    return elapsed, len(snapshot.specs)


def best(tools: list[object], repeat: int = 5) -> tuple[float, int]:
    runs = [load(tools) for _ in range(repeat)]
    return min(seconds for seconds, _ in runs), runs[0][1]


def main() -> int:
    small, offered_small = best(listed(2_000))
    large, offered_large = best(listed(20_000))
    assert (offered_small, offered_large) == (2_000, 20_000), (offered_small, offered_large)
    report_absolute("bhrain: an MCP server's 20,000 tools loaded", large, max_value=0.5)
    report_absolute("bhrain: 10x the MCP tools, times as long", large / small, max_value=25, unit="x")
    clashing, offered = best(listed(20_000, clashing=1_000))
    assert offered == 19_000, offered
    report_absolute("bhrain: 20,000 MCP tools, 1,000 of them clashing", clashing, max_value=0.5)
    return int(exit_code())


if __name__ == "__main__":
    sys.exit(main())
