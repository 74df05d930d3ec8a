"""bhrain speed targets (issue 4), with the scripted atom so no network or key is involved.

- 5 tool calls in one response that each run ``sleep 1`` in bash finish in ≤ 1.5 s (they run concurrently);
- the loop's own overhead per iteration (no real tool work) is ≤ 2 ms;
- ``bhrain --help`` costs ≤ 6× a bare ``python -c pass``, and importing the CLI module loads no LLM SDK.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from _harness import command, commands_dir, exit_code, median_wall, report_absolute, versus_bare

from routedriver.brain.atoms.scripted import parse_script
from routedriver.brain.loop import Limits, Loop
from routedriver.brain.memory import create_memory
from routedriver.brain.permissions.guard import PermissionHook
from routedriver.brain.toolbox import Toolbox, ToolRegistry
from routedriver.brain.tools import builtin_tools
from routedriver.brain.tools.base import Tool, ToolContext, ToolSettings, schema

logging.getLogger("bhrain").setLevel(logging.ERROR)


def parallel_sleeps(workdir: Path) -> float:
    calls = [{"name": "bash", "arguments": {"command": "sleep 1"}} for _ in range(5)]
    model = parse_script([{"tool_calls": calls}, "slept"], source="bench")
    registry = ToolRegistry([Toolbox("default", builtin_tools(["bash"], ToolSettings(workdir=workdir)))])
    loop = Loop(model, registry, workdir=workdir, hooks=[PermissionHook([])], memory=create_memory(None))
    started = time.perf_counter()
    result = loop.run("sleep five times")
    elapsed = time.perf_counter() - started
    loop.close()
    assert result.text == "slept" and all(c.ok for c in result.tool_calls), result
    return elapsed


def noop(args: Mapping[str, Any], ctx: ToolContext) -> str:
    return "ok"


def loop_overhead(workdir: Path, iterations: int = 400) -> float:
    """Seconds per iteration of a loop whose model answers instantly and whose tool does nothing."""
    turns = [{"tool_calls": [{"name": "noop", "arguments": {}}]}] * (iterations - 1) + ["done"]
    model = parse_script(turns, source="bench")
    registry = ToolRegistry([Toolbox("bench", [Tool("noop", "Does nothing.", schema({}), noop)])])
    loop = Loop(
        model,
        registry,
        workdir=workdir,
        hooks=[PermissionHook([])],
        memory=create_memory(None),
        limits=Limits(max_iterations=iterations),
    )
    started = time.perf_counter()
    result = loop.run("spin")
    elapsed = time.perf_counter() - started
    loop.close()
    assert result.iterations == iterations, result.stop_reason
    return elapsed / iterations


def one_shot(workdir: Path) -> None:
    model = parse_script(["an answer"], source="bench")
    loop = Loop(
        model, ToolRegistry(), workdir=workdir, hooks=[PermissionHook([])], memory=create_memory(None)
    )
    loop.run("a question")
    loop.close()


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        report_absolute(
            "bhrain: 5 concurrent tool calls sleeping 1 s each",
            min(parallel_sleeps(workdir) for _ in range(3)),
            max_value=1.5,
        )
        loop_overhead(workdir, 50)  # warm-up
        per_iteration = sorted(loop_overhead(workdir) for _ in range(5))[2]
        report_absolute(
            "bhrain: loop overhead per iteration (no-op tool)", per_iteration * 1e6, max_value=2000, unit="us"
        )
        report_absolute(
            "bhrain: one-shot session, no tools (setup + 1 iteration)",
            median_wall(lambda: one_shot(workdir), repeat=50) * 1e6,
            max_value=2000,
            unit="us",
        )
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, routedriver.cli.bhrain; "
            "print(int(any(m in sys.modules for m in ('anthropic', 'openai'))))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    if probe.stdout.strip() != "0":
        print("MISSED bhrain: importing the CLI module loaded an LLM SDK")
        return 1
    versus_bare("bhrain --help", command([str(commands_dir() / "bhrain"), "--help"]), max_ratio=6)
    return int(exit_code())


if __name__ == "__main__":
    sys.exit(main())
