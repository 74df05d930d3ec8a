"""examples/claude-code/.claude/settings.json: valid, and every hook command it wires works as a hook."""

from __future__ import annotations

import json
import shlex
from collections.abc import Callable
from pathlib import Path

from tests.conftest import Ran, git
from tests.route.routes import run_route
from tests.route_gate.gate import (
    denied,
    gated_route,
    pre_tool_event,
    sent_back,
    session_start_event,
    stop_event,
)

SETTINGS = Path(__file__).resolve().parents[2] / "examples" / "claude-code" / ".claude" / "settings.json"


def test_settings_wire_drive_and_bounce_to_the_right_events(git_repo: Path) -> None:
    settings = json.loads(SETTINGS.read_text(encoding="utf-8"))["hooks"]
    assert set(settings) == {"SessionStart", "Stop", "PreToolUse"}
    assert settings["PreToolUse"][0]["matcher"] == "Write|Edit|MultiEdit|NotebookEdit|Bash"
    gated_route(git_repo)
    git(git_repo, "switch", "-q", "-c", "feature/vision")
    assert run_route(["route.bind", "--set", "route"], git_repo).code == 0
    events: dict[str, list[tuple[str, Callable[[Ran], object]]]] = {
        "SessionStart": [(session_start_event(git_repo), lambda done: "## 1.vision (ready)" in done.out)],
        "Stop": [(stop_event(git_repo, active=False), lambda done: "1.vision" in sent_back(done))],
        "PreToolUse": [
            (pre_tool_event(git_repo, tool, "route/1.vision.stone"), lambda done: "read-only" in denied(done))
            for tool in ("Edit", "Bash")
        ],
    }
    for event, groups in settings.items():
        for group in groups:
            for entry in group["hooks"]:
                assert entry["type"] == "command" and entry["timeout"] > 0
                for payload, expected in events[event]:
                    done = run_route(shlex.split(entry["command"]), git_repo, input=payload)
                    assert done.code == 0 and expected(done), (event, done)
