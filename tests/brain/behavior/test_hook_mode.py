"""`bhrain behave` as a Claude Code command hook, through the installed ``bhrain`` console script, fed the
JSON Claude Code sends (PreToolUse, PostToolUse, PostToolUseFailure, UserPromptSubmit, SessionEnd)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from tests.brain.behavior.helpers import denial
from tests.conftest import BIN_DIR, Ran, run_cli
from tests.fakes.llm_servers import OpenAIServer, Reply

SESSION = "9b2c6e0a-5d1f-4c0e-9a57-3f1d2e4b8c71"
CONFIG = """\
atom: claude
security:
  behavior:
    profile: dev
    rules:
      plan_before_execute: false
    rule_definitions:
      - id: protect_migrations
        trigger: [edit, write]
        action: block
        condition:
          param_contains: { param: file_path, value: "migrations/" }
        message: "Migration files are protected. Ask the user first."
"""


def with_classifier(base_url: str, api_key: str) -> str:
    """CONFIG with turn classification on, by an OpenAI-compatible brain at ``base_url``."""
    return CONFIG.replace(
        "    profile: dev\n",
        "    profile: dev\n    classify_turns: true\n"
        "    brain:\n      provider: openai\n      model: gpt-mini\n"
        f"      config: {{api_key: {api_key}, base_url: '{base_url}'}}\n",
    )


class Hook:
    """Runs ``bhrain behave`` the way Claude Code does: one process per event, JSON on stdin."""

    def __init__(self, root: Path, config_text: str = CONFIG) -> None:
        self.root = root
        self.project = root / "project"
        self.project.mkdir(exist_ok=True)
        self.config = root / "behavior-config.yaml"
        self.config.write_text(config_text, encoding="utf-8")
        self.state_dir = root / "state"
        self.transcript = root / "transcript.jsonl"
        self.calls = 0

    def payload(self, event: str, session: str = SESSION, **fields: Any) -> dict[str, Any]:
        return {
            "session_id": session,
            "transcript_path": str(self.transcript),
            "cwd": str(self.project),
            "permission_mode": "default",
            "hook_event_name": event,
            **fields,
        }

    def run(self, payload: dict[str, Any] | str, *args: str, env: dict[str, str] | None = None) -> Ran:
        text = payload if isinstance(payload, str) else json.dumps(payload)
        return run_cli(
            ["bhrain", "behave", "--config", str(self.config), "--state-dir", str(self.state_dir), *args],
            self.project,
            input=text,
            env=env,
        )

    def pre(self, tool: str, session: str = SESSION, **tool_input: Any) -> Ran:
        self.calls += 1
        return self.run(
            self.payload(
                "PreToolUse",
                session,
                tool_name=tool,
                tool_input=tool_input,
                tool_use_id=f"toolu_{self.calls:04d}",
            ),
            "--hook",
            "pre_tool",
        )

    def post(
        self,
        tool: str,
        response: Any = None,
        session: str = SESSION,
        event: str = "PostToolUse",
        **tool_input: Any,
    ) -> Ran:
        return self.run(
            self.payload(
                event,
                session,
                tool_name=tool,
                tool_input=tool_input,
                tool_response=response if response is not None else {"success": True},
                tool_use_id=f"toolu_{self.calls:04d}",
            ),
            "--hook",
            "post_tool",
        )

    def prompt(self, text: str, session: str = SESSION) -> Ran:
        return self.run(self.payload("UserPromptSubmit", session, prompt=text), "--hook", "user_prompt")

    def state(self, session: str = SESSION) -> Any:
        return json.loads((self.state_dir / f"{session}.json").read_text(encoding="utf-8"))


def context_of(ran: Ran, event: str) -> str:
    assert ran.code == 0, ran
    body = json.loads(ran.out)
    assert body["hookSpecificOutput"]["hookEventName"] == event
    return str(body["hookSpecificOutput"]["additionalContext"])


@pytest.fixture
def hook(tmp_path: Path) -> Hook:
    return Hook(tmp_path)


def test_block_is_claude_codes_json_deny_so_the_model_reads_only_the_reason(hook: Hook) -> None:
    ran = hook.pre("Bash", command="rm -rf node_modules dist", description="Clean build output")
    assert ran.code == 0
    assert json.loads(ran.out)["hookSpecificOutput"]["permissionDecision"] == "deny"
    assert denial(ran.out).startswith(
        "[BEHAVIOR BLOCKED] confirm_destructive: 'rm -rf node_modules dist' is destructive"
    )


def test_a_custom_rule_blocks_too(hook: Hook) -> None:
    ran = hook.pre("Write", file_path=str(hook.project / "db/migrations/0007_users.py"), content="x")
    assert ran.code == 0 and "Migration files are protected" in denial(ran.out)


def test_warn_is_pre_tool_use_additional_context(hook: Hook) -> None:
    target = str(hook.project / "src" / "app.py")
    ran = hook.pre("Edit", file_path=target, old_string="a = 1", new_string="a = 2")
    assert "[BEHAVIOR WARNING] read_before_edit:" in context_of(ran, "PreToolUse")
    assert ran.err == ""


def test_state_carries_across_calls_read_then_edit_is_silent(hook: Hook) -> None:
    target = str(hook.project / "src" / "app.py")
    assert hook.pre("Read", file_path=target) == Ran(0, "", "")
    assert hook.post(
        "Read", {"type": "text", "file": {"filePath": target, "content": "a = 1\n"}}, file_path=target
    ) == Ran(0, "", "")
    assert hook.pre("Edit", file_path=target, old_string="a = 1", new_string="a = 2") == Ran(0, "", "")
    state = hook.state()
    assert state["sets"]["read_files"] == [target]
    assert state["total_tool_calls"] == 2


def test_remind_is_post_tool_use_additional_context(hook: Hook) -> None:
    target = str(hook.project / "a.py")
    hook.pre("Edit", file_path=target, old_string="x", new_string="y")
    ran = hook.post(
        "Edit",
        {"filePath": target, "oldString": "x", "newString": "y"},
        file_path=target,
        old_string="x",
        new_string="y",
    )
    text = context_of(ran, "PostToolUse")
    assert text.startswith("[BEHAVIOR REMINDER] verify_after_edit: You edited")


def test_post_tool_use_failure_is_understood(hook: Hook) -> None:
    hook.pre("Bash", command="pytest -q")
    ran = hook.run(
        hook.payload(
            "PostToolUseFailure",
            tool_name="Bash",
            tool_input={"command": "pytest -q"},
            tool_use_id=f"toolu_{hook.calls:04d}",
            error="exit code 1",
        )
    )
    assert ran.code == 0
    assert hook.state()["counters"]["changes_since_test"] == 0


def test_a_failed_edit_gets_no_reminder_and_counts_as_no_change(hook: Hook) -> None:
    target = str(hook.project / "a.py")
    edit = {"file_path": target, "old_string": "missing", "new_string": "y"}
    hook.pre("Edit", **edit)
    ran = hook.run(
        hook.payload(
            "PostToolUseFailure",
            tool_name="Edit",
            tool_input=edit,
            tool_use_id=f"toolu_{hook.calls:04d}",
            error="String to replace not found in file.",
        )
    )
    assert ran == Ran(0, "", "")  # no "[BEHAVIOR REMINDER] verify_after_edit: You edited …"
    state = hook.state()
    assert state["sets"]["edited_files"] == [] and state["counters"]["changes_since_test"] == 0
    hook.pre("Edit", **edit)
    ran = hook.post("Edit", {"is_error": True, "error": "String to replace not found"}, **edit)
    assert ran == Ran(0, "", "")  # an error response of a PostToolUse is a failure too
    assert hook.state()["counters"]["changes_since_test"] == 0


def test_the_event_name_picks_the_hook_when_hook_is_omitted(hook: Hook) -> None:
    ran = hook.run(
        hook.payload(
            "PreToolUse", tool_name="Bash", tool_input={"command": "git push --force"}, tool_use_id="toolu_x"
        )
    )
    assert ran.code == 0 and "confirm_destructive" in denial(ran.out)


def test_user_prompt_starts_a_turn(hook: Hook) -> None:
    hook.pre("Grep", pattern="def main")
    hook.post("Grep", pattern="def main")
    assert hook.state()["turn"] == 1 and hook.state()["tool_calls_this_turn"] == 1
    ran = hook.prompt("Now add a --verbose flag")
    assert ran == Ran(0, "", "")  # no classifier configured: nothing to say
    state = hook.state()
    assert (state["turn"], state["tool_calls_this_turn"], state["last_message"]) == (
        2,
        0,
        "Now add a --verbose flag",
    )


def test_user_prompt_gets_a_directive_from_the_classifier_brain(tmp_path: Path) -> None:
    with OpenAIServer() as server:
        server.enqueue(
            Reply.text(
                json.dumps(
                    {
                        "complexity": "complex",
                        "approach": "plan_and_confirm",
                        "risk": "high",
                        "directives": ["Back up the table first."],
                    }
                )
            )
        )
        hook = Hook(tmp_path, with_classifier(server.base_url, "'{{secret.CLASSIFIER_KEY}}'"))
        ran = hook.run(
            hook.payload("UserPromptSubmit", prompt="Drop the legacy users table"),
            env={"CLASSIFIER_KEY": "sk-classifier"},
        )
    directive = context_of(ran, "UserPromptSubmit")
    assert directive.startswith("[BEHAVIOR DIRECTIVE - complex complexity, high risk]")
    assert "Risk level: high." in directive and "- Back up the table first." in directive
    assert server.requests[0].headers["authorization"] == "Bearer sk-classifier"
    assert "Drop the legacy users table" in json.dumps(server.requests[0].json)
    # the secret never reaches the cache or the state on disk
    for path in hook.state_dir.rglob("*.json"):
        assert "sk-classifier" not in path.read_text(encoding="utf-8")


def test_a_classifier_failure_never_blocks_the_prompt(tmp_path: Path) -> None:
    with OpenAIServer() as server:
        server.enqueue(Reply.error(500), Reply.error(500))
        hook = Hook(tmp_path, with_classifier(server.base_url, "sk-x"))
        ran = hook.prompt("Refactor the parser")
    assert ran.code == 0 and ran.out == ""
    assert "classifier failed" in ran.err


def test_session_end_removes_the_state(hook: Hook) -> None:
    hook.pre("Read", file_path=str(hook.project / "a"))
    assert (hook.state_dir / f"{SESSION}.json").exists()
    ran = hook.run(hook.payload("SessionEnd", reason="prompt_input_exit"))
    assert ran == Ran(0, "", "")
    assert not (hook.state_dir / f"{SESSION}.json").exists()


def test_sessions_are_isolated_and_ids_are_sanitized(hook: Hook) -> None:
    target = str(hook.project / "a.py")
    hook.pre("Read", file_path=target, session="first")
    hook.post("Read", file_path=target, session="first")
    assert hook.pre("Edit", file_path=target, session="first").out == ""
    assert "read_before_edit" in hook.pre("Edit", file_path=target, session="second").out
    hook.pre("Read", file_path=target, session="../../escape/me")
    names = sorted(path.name for path in hook.state_dir.iterdir() if path.suffix == ".json")
    assert "first.json" in names and "second.json" in names
    escaped = [name for name in names if "escape_me-" in name]
    assert len(escaped) == 1 and not escaped[0].startswith(".") and "/" not in escaped[0]
    assert not (hook.root / "escape").exists()


def test_old_sessions_are_swept(hook: Hook) -> None:
    hook.pre("Read", file_path=str(hook.project / "a"), session="stale")
    stale = hook.state_dir / "stale.json"
    old = time.time() - 30 * 86400
    os.utime(stale, (old, old))
    os.utime(hook.state_dir / "stale.lock", (old, old))
    hook.prompt("hello")
    assert not stale.exists() and not (hook.state_dir / "stale.lock").exists()
    assert (hook.state_dir / f"{SESSION}.json").exists()


def test_concurrent_hooks_for_one_session_lose_no_update(hook: Hook) -> None:
    target = str(hook.project / "a.py")

    def one(index: int) -> int:
        payload = hook.payload(
            "PostToolUse",
            tool_name="Edit",
            tool_input={"file_path": target},
            tool_response={"filePath": target},
            tool_use_id=f"toolu_c{index}",
        )
        return hook.run(payload, "--hook", "post_tool").code

    hook.pre("Read", file_path=target)  # warm the compiled-config cache: the processes race on the state only
    with ThreadPoolExecutor(max_workers=8) as pool:
        codes = list(pool.map(one, range(16)))
    assert codes == [0] * 16
    state = hook.state()
    assert state["counters"]["changes_since_test"] == 16
    assert state["total_tool_calls"] == 17


# Malformed and rule-less events: tests/brain/behavior/test_hook_events.py.


def test_a_broken_config_is_a_non_blocking_error_naming_the_key(hook: Hook) -> None:
    hook.config.write_text(
        "security:\n  behavior:\n    rule_definitions:\n      - id: r\n        acton: block\n",
        encoding="utf-8",
    )
    ran = hook.pre("Bash", command="rm -rf /")
    assert ran.code == 1 and ran.out == ""
    assert ran.err == (
        f"error: {hook.config}: security.behavior.rule_definitions[0].acton: extra inputs are not "
        "permitted (allowed: id, description, trigger, when, action, condition, message); "
        "fix the behavior configuration\n"
    )


@pytest.mark.parametrize(
    "args",
    [
        ["--hook", "pre-tool"],
        ["--ttl-days", "soon"],
        ["--ttl-days", "nan"],
        ["--ttl-days", "-1"],
        ["--bogus"],
    ],
)
def test_bad_flags_are_exit_1_not_2(hook: Hook, args: list[str]) -> None:
    ran = hook.run(hook.payload("PreToolUse", tool_name="Read", tool_input={}), *args)
    assert ran.code == 1 and ran.err.startswith("error: ")


def test_missing_config_flag(hook: Hook) -> None:
    ran = run_cli(["bhrain", "behave", "--hook", "pre_tool"], hook.project, input="{}")
    assert ran.code == 1 and "--config FILE is required" in ran.err


def test_an_unwritable_state_dir_is_a_non_blocking_error(hook: Hook) -> None:
    hook.state_dir.parent.mkdir(parents=True, exist_ok=True)
    hook.state_dir.write_text("a file where the state directory should be", encoding="utf-8")
    ran = hook.pre("Read", file_path=str(hook.project / "a"))
    assert ran.code == 1 and ran.out == ""
    assert ran.err.startswith(f"error: cannot keep behavior state in {hook.state_dir}")


def test_a_corrupt_state_file_starts_afresh(hook: Hook) -> None:
    hook.state_dir.mkdir(parents=True)
    (hook.state_dir / f"{SESSION}.json").write_text("{not json", encoding="utf-8")
    ran = hook.pre("Read", file_path=str(hook.project / "a"))
    assert ran.code == 0 and "unreadable" in ran.err
    assert hook.state()["total_tool_calls"] == 1


def test_the_compiled_config_is_cached_and_invalidated(hook: Hook) -> None:
    hook.pre("Read", file_path=str(hook.project / "a"))
    (cached,) = (hook.state_dir / "compiled").glob("*.json")
    payload = hook.payload("PreToolUse", tool_name="Bash", tool_input={"command": "ls"})
    probe = (
        "import json, sys\n"
        "from pathlib import Path\n"
        "from routedriver.brain.behavior.claude_code import run_hook\n"
        f"payload = json.loads({json.dumps(json.dumps(payload))})\n"
        f"answer = run_hook(payload, config_path=Path({str(hook.config)!r}), hook='pre_tool',\n"
        f"                  state_dir=Path({str(hook.state_dir)!r}))\n"
        "print(json.dumps({'pydantic': 'pydantic' in sys.modules, 'yaml': 'yaml' in sys.modules}))\n"
    )
    warm = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert json.loads(warm.stdout) == {"pydantic": False, "yaml": False}
    # an edit to the config is seen on the very next call
    hook.config.write_text(
        CONFIG + "      - id: no_ls\n        trigger: bash\n        action: block\n"
        "        message: no ls here\n",
        encoding="utf-8",
    )
    ran = hook.pre("Bash", command="ls")
    assert ran.code == 0 and "no ls here" in denial(ran.out)
    assert cached.exists()


def test_bhrain_help_lists_behave() -> None:
    ran = run_cli([str(BIN_DIR / "bhrain"), "behave", "--help"], Path.cwd())
    assert ran.code == 0 and "--config FILE" in ran.out and "--hook" in ran.out
