"""examples/claude-code-behavior/: the settings wire every event to `bhrain behave`, and the commands, run
through a shell exactly as Claude Code runs them, enforce the example's rules."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.brain.behavior.helpers import denial

EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "claude-code-behavior"


def settings() -> Any:
    return json.loads((EXAMPLE / ".claude" / "settings.json").read_text(encoding="utf-8"))


def command_for(event: str) -> str:
    (group,) = settings()["hooks"][event]
    (hook,) = group["hooks"]
    assert hook["type"] == "command"
    return str(hook["command"])


@pytest.fixture
def project(tmp_path: Path) -> Path:
    target = tmp_path / "project"
    shutil.copytree(EXAMPLE, target)
    return target


def run(project: Path, event: str, payload: dict, state: Path) -> subprocess.CompletedProcess[str]:  # type: ignore[type-arg]
    env = {"CLAUDE_PROJECT_DIR": str(project), "XDG_STATE_HOME": str(state)}
    full = {
        "session_id": "example",
        "transcript_path": str(project / "t.jsonl"),
        "cwd": str(project),
        "permission_mode": "default",
        "hook_event_name": event,
        **payload,
    }
    return subprocess.run(
        ["bash", "-c", command_for(event)],
        cwd=project,
        input=json.dumps(full),
        text=True,
        capture_output=True,
        env={**os.environ, **env},
        timeout=60,
        check=False,
    )


def test_every_event_is_wired() -> None:
    hooks = settings()["hooks"]
    assert set(hooks) == {"UserPromptSubmit", "PreToolUse", "PostToolUse", "SessionEnd"}
    for event, flag in [
        ("UserPromptSubmit", "user_prompt"),
        ("PreToolUse", "pre_tool"),
        ("PostToolUse", "post_tool"),
        ("SessionEnd", "session_end"),
    ]:
        assert command_for(event).startswith("bhrain behave --config ") and f"--hook {flag}" in command_for(
            event
        )
    assert hooks["PreToolUse"][0]["matcher"] == "*"


def test_the_example_rules_through_the_settings_commands(project: Path, tmp_path: Path) -> None:
    state = tmp_path / "xdg-state"
    (project / "db" / "migrations").mkdir(parents=True)
    migration = project / "db" / "migrations" / "0001_init.py"
    migration.write_text("# init\n", encoding="utf-8")
    assert run(project, "UserPromptSubmit", {"prompt": "Add a users table"}, state).returncode == 0

    blocked = run(
        project,
        "PreToolUse",
        {
            "tool_name": "Edit",
            "tool_use_id": "toolu_1",
            "tool_input": {"file_path": str(migration), "old_string": "#", "new_string": "##"},
        },
        state,
    )
    assert blocked.returncode == 0 and "[BEHAVIOR BLOCKED] protect_migrations" in denial(blocked.stdout)

    pushed = run(
        project,
        "PreToolUse",
        {"tool_name": "Bash", "tool_use_id": "toolu_2", "tool_input": {"command": "git push origin main"}},
        state,
    )
    assert pushed.returncode == 0 and "no_force_push_main" in denial(pushed.stdout)  # the team profile file

    warned = run(
        project,
        "PreToolUse",
        {"tool_name": "Edit", "tool_use_id": "toolu_3", "tool_input": {"file_path": str(project / "app.py")}},
        state,
    )
    assert warned.returncode == 0
    assert "read_before_edit" in json.loads(warned.stdout)["hookSpecificOutput"]["additionalContext"]

    state_file = state / "routedriver" / "behavior" / "example.json"
    assert state_file.exists()
    assert run(project, "SessionEnd", {"reason": "exit"}, state).returncode == 0
    assert not state_file.exists()
