"""Behavior engine speed (issue 5).

- evaluating the dev profile's rules for one tool call (pre_tool + post_tool), in-process: median ≤ 50 µs
- ``bhrain behave`` as a Claude Code PreToolUse hook (a real payload on stdin, warm compiled-config cache):
  ≤ 8× bare python start-up
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from tests.benchmarks._harness import (  # noqa: E402
    command,
    commands_dir,
    exit_code,
    report_absolute,
    versus_bare,
)

CONFIG = "security:\n  behavior:\n    profile: dev\n"


def engine_per_call_us(workdir: Path) -> float:
    from routedriver.brain.behavior.engine import BehaviorEngine
    from routedriver.brain.behavior.resolve import resolve_behavior

    resolved, _ = resolve_behavior({"profile": "dev"}, config_path=workdir / "config.yaml")
    engine = BehaviorEngine(resolved, cwd=str(workdir))
    state = engine.new_state("bench")
    engine.start_turn(state, "fix the bug")
    calls = [
        ("read", {"file_path": "src/app.py"}),
        ("grep", {"pattern": "def main", "path": "src"}),
        ("edit", {"file_path": "src/app.py", "old_string": "a - b", "new_string": "a + b"}),
        ("bash", {"command": "python -m pytest -q tests/test_app.py"}),
        ("write", {"file_path": "src/new_module.py", "content": "X = 1\n"}),
    ]
    outcome = {"lint": [{"severity": "warning", "message": "W291"}]}
    batch, samples, number = 200, [], 0
    for _ in range(60):
        started = time.perf_counter()
        for index in range(batch):
            tool, params = calls[index % len(calls)]
            number += 1
            call_id = f"c{number}"
            engine.pre_tool(state, call_id=call_id, tool=tool, params=params, text_before="Working on it.")
            engine.post_tool(
                state,
                call_id=call_id,
                tool=tool,
                params=params,
                ok=True,
                output="ok",
                data=outcome,
                text_before="Working on it.",
            )
        samples.append((time.perf_counter() - started) / batch)
        if number % 2000 == 0:
            engine.start_turn(state, "next")  # keep per-turn counters realistic
    return statistics.median(samples[5:]) * 1e6


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        report_absolute(
            "behavior: dev profile rules, one tool call (pre + post), in-process",
            engine_per_call_us(root),
            max_value=50.0,
            unit="us",
        )

        config = root / "config.yaml"
        config.write_text(CONFIG, encoding="utf-8")
        payload = json.dumps(
            {
                "session_id": "bench-session",
                "transcript_path": str(root / "t.jsonl"),
                "cwd": str(root),
                "permission_mode": "default",
                "hook_event_name": "PreToolUse",
                "tool_name": "Edit",
                "tool_input": {
                    "file_path": str(root / "src" / "app.py"),
                    "old_string": "a - b",
                    "new_string": "a + b",
                },
                "tool_use_id": "toolu_bench",
            }
        )
        hook = command(
            [
                str(commands_dir() / "bhrain"),
                "behave",
                "--config",
                str(config),
                "--hook",
                "pre_tool",
                "--state-dir",
                str(root / "state"),
            ],
            cwd=root,
            stdin=payload,
        )
        hook()  # the first call validates the config and writes the compiled cache
        versus_bare("behavior: bhrain behave as a PreToolUse hook", hook, max_ratio=8.0)
    return exit_code()


if __name__ == "__main__":
    sys.exit(main())
