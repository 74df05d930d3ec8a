"""The turn classifier with a scripted in-test model: rendering, vocabularies, thresholds, frequency modes,
follow-up skipping, timeout and failures (which never block the agent)."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from routedriver.brain.behavior import load_behavior_hook
from routedriver.brain.behavior.classifier import is_followup
from routedriver.brain.behavior.hook import BehaviorHook
from routedriver.brain.hooks import ToolEvent, ToolOutcome
from tests.brain.behavior.helpers import ScriptedChat


def verdict(
    complexity: str = "moderate",
    approach: str = "explore_first",
    risk: str = "low",
    directives: list[str] | None = None,
    **extra: Any,
) -> str:
    return json.dumps(
        {
            "complexity": complexity,
            "approach": approach,
            "risk": risk,
            "directives": directives if directives is not None else ["Find the handler first."],
            **extra,
        }
    )


def hook_with(model: ScriptedChat, tmp_path: Path, **block: Any) -> BehaviorHook:
    block.setdefault("classify_turns", True)
    return load_behavior_hook(block, config_path=tmp_path / "config.yaml", agent_model=model)


def test_directive_block_with_default_vocabularies(tmp_path: Path) -> None:
    model = ScriptedChat(verdict(directives=["Find the login handler first.", "Run the auth tests."]))
    hook = hook_with(model, tmp_path)
    (directive,) = hook.on_user_message("Fix the login bug")
    assert directive.splitlines() == [
        "[BEHAVIOR DIRECTIVE - moderate complexity, low risk]",
        "- Approach: explore_first",
        "- Search and read before changing anything.",
        "- Find the login handler first.",
        "- Run the auth tests.",
        "Follow these directives for this turn; they come from the behavior engine.",
    ]
    call = model.calls[0]
    assert "Fix the login bug" in call["messages"][0].text
    assert "complexity (pick one):" in call["system"] and "plan_and_confirm" in call["system"]
    assert call["temperature"] == 0.0


def test_fenced_json_and_case_insensitive_names(tmp_path: Path) -> None:
    model = ScriptedChat("Here you go:\n```json\n" + verdict("Complex", "DIRECT", "Medium") + "\n```")
    (directive,) = hook_with(model, tmp_path).on_user_message("Refactor the parser")
    assert directive.startswith("[BEHAVIOR DIRECTIVE - complex complexity, medium risk]")


def test_high_risk_warning_at_or_above_the_threshold(tmp_path: Path) -> None:
    answers = [verdict(risk=risk) for risk in ("low", "medium", "high")]
    hook = hook_with(ScriptedChat(*answers), tmp_path)
    blocks = [hook.on_user_message(f"task {index}")[0] for index in range(3)]
    warned = ["Risk level:" in block for block in blocks]
    assert warned == [False, True, True]
    assert "Risk level: high. Confirm destructive" in blocks[2]


DATABASE = """
classify_turns: true
classifier:
  complexity_levels:
    - { name: query, when: "Single SELECT, no side effects", behavior: "Execute directly" }
    - { name: transform, when: "UPDATE/INSERT affecting rows", behavior: "Verify row count after execution" }
    - { name: migration, when: "ALTER/DROP/CREATE schema changes",
        behavior: "MUST get user approval, run in transaction" }
  approaches:
    - { name: direct, label: "Execute directly", when: "Safe read-only query" }
    - { name: dry_run_first, label: "Dry-run before executing", when: "Bulk data modification",
        behavior: "Run with LIMIT 10 first, then full query" }
    - { name: plan_and_confirm, label: "Plan and get approval", when: "Schema changes or data deletion",
        behavior: "Show the SQL plan, wait for user approval" }
  risk_levels:
    - { name: read_only, when: "SELECT queries" }
    - { name: write, when: "INSERT/UPDATE operations" }
    - { name: destructive, when: "DELETE/DROP/TRUNCATE", behavior: "MUST confirm with user" }
  directive_prefix: "[DATA DIRECTIVE - {complexity}, {risk} risk]"
  directive_footer: "Approach: {approach_label} ({approach})."
  high_risk_threshold: write
  max_directives: 2
"""


def test_vocabulary_dicts_labels_behaviors_and_max_directives(tmp_path: Path) -> None:
    model = ScriptedChat(
        verdict("transform", "dry_run_first", "write", ["one", "two", "three", "four"]),
        verdict("query", "direct", "read_only", []),
    )
    hook = hook_with(model, tmp_path, **yaml.safe_load(DATABASE))
    (first,) = hook.on_user_message("Raise all prices by 10%")
    assert first.splitlines() == [
        "[DATA DIRECTIVE - transform, write risk]",
        "Risk level: write. Confirm destructive or irreversible actions with the user before proceeding.",
        "- Approach: Dry-run before executing",
        "- Run with LIMIT 10 first, then full query",
        "- Verify row count after execution",
        "- one",
        "- two",
        "Approach: Dry-run before executing (dry_run_first).",
    ]
    (second,) = hook.on_user_message("How many users signed up today?")
    assert "Risk level" not in second and "- Approach: Execute directly" in second
    system = model.calls[0]["system"]
    assert "- migration: ALTER/DROP/CREATE schema changes" in system and "Give at most 2 directives" in system


def test_values_outside_the_vocabulary_give_no_directive(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    hook = hook_with(ScriptedChat(verdict(risk="catastrophic")), tmp_path)
    with caplog.at_level(logging.WARNING, logger="routedriver.brain.behavior"):
        assert hook.on_user_message("drop the prod db") == ()
    assert "risk 'catastrophic' is not one of none, low, medium, high" in caplog.text


@pytest.mark.parametrize(
    "answer",
    [
        "not json at all",
        "[1, 2]",
        verdict(directives="do it"),  # type: ignore[arg-type]
        json.dumps({"complexity": "simple"}),
        RuntimeError("provider exploded"),
    ],
)
def test_any_failure_means_no_directive_and_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, answer: Any
) -> None:
    hook = hook_with(ScriptedChat(answer), tmp_path, profile="dev")
    with caplog.at_level(logging.WARNING, logger="routedriver.brain.behavior"):
        assert hook.on_user_message("Fix the bug") == ()
    assert "classifier failed" in caplog.text and "the agent proceeds without a directive" in caplog.text
    # the agent proceeds: tool calls are still judged normally
    event = ToolEvent("c1", "bash", {"command": "rm -rf /"}, 1, 0, "Cleaning up.")
    assert hook.pre_tool(event).block


def test_a_skip_reason_from_the_model_means_no_directive(tmp_path: Path) -> None:
    hook = hook_with(ScriptedChat(json.dumps({"skip_reason": "greeting"})), tmp_path)
    assert hook.on_user_message("hello there") == ()


def test_timeout(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    model = ScriptedChat(verdict(), delay_s=30)
    hook = hook_with(model, tmp_path, classifier={"timeout": 0.2})
    started = time.monotonic()
    with caplog.at_level(logging.WARNING, logger="routedriver.brain.behavior"):
        assert hook.on_user_message("Fix the bug") == ()
    elapsed = time.monotonic() - started
    model.released.set()  # let the abandoned worker finish
    assert elapsed < 10  # it did not wait for the 30 s model
    assert "no answer within 0.2 s" in caplog.text


def classified_turns(tmp_path: Path, messages: list[str], **classifier: Any) -> list[int]:
    model = ScriptedChat(*[verdict() for _ in messages])
    hook = hook_with(model, tmp_path, classifier=classifier)
    return [index + 1 for index, message in enumerate(messages) if hook.on_user_message(message)]


def test_frequency_every_turn(tmp_path: Path) -> None:
    assert classified_turns(tmp_path, ["a one", "b two", "c three"]) == [1, 2, 3]


def test_frequency_first_turn(tmp_path: Path) -> None:
    assert classified_turns(tmp_path, ["a one", "b two", "c three"], frequency="first_turn") == [1]


def test_frequency_every_n_turns(tmp_path: Path) -> None:
    messages = [f"task number {index}" for index in range(7)]
    assert classified_turns(tmp_path, messages, frequency="every_n_turns", frequency_n=3) == [1, 4, 7]


def test_frequency_on_new_message(tmp_path: Path) -> None:
    messages = ["fix the bug", "fix the bug", "  ", "now add a test", "now add a test"]
    assert classified_turns(tmp_path, messages, frequency="on_new_message") == [1, 4]


@pytest.mark.parametrize("message", ["ok", "OK!", "yes", "continue", "Oui", "valide", "go ahead.", "merci !"])
def test_follow_ups_are_skipped(tmp_path: Path, message: str) -> None:
    assert is_followup(message)
    model = ScriptedChat(verdict())
    assert hook_with(model, tmp_path).on_user_message(message) == ()
    assert model.calls == []  # no classifier call spent on an acknowledgement


def test_follow_ups_are_classified_when_skipping_is_off(tmp_path: Path) -> None:
    assert classified_turns(tmp_path, ["ok", "yes"], skip_followups=False) == [1, 2]
    assert not is_followup("ok, now delete the old tables")


def test_the_snapshot_comes_from_state_tracking(tmp_path: Path) -> None:
    model = ScriptedChat(verdict(), verdict())
    hook = hook_with(model, tmp_path, profile="dev")
    hook.on_user_message("Look at auth")
    for index, (tool, params) in enumerate(
        [
            ("websearch", {"query": "jwt"}),
            ("grep", {"pattern": "auth"}),
            ("read", {"file_path": "src/auth.ts"}),
            ("read", {"file_path": "src/models.ts"}),
            ("edit", {"file_path": "src/auth.ts"}),
        ]
    ):
        event = ToolEvent(f"c{index}", tool, params, 1, 0, "Working.")
        hook.pre_tool(event)
        hook.post_tool(event, ToolOutcome(True, "ok"))
    hook.on_user_message("Now fix the token expiry")
    prompt = model.calls[1]["messages"][0].text
    assert "Turn: 2" in prompt and "Total tool calls: 5" in prompt
    assert "Files read: 2 (recent: src/models.ts, src/auth.ts)" in prompt
    assert "Edited files: 1 (recent: src/auth.ts)" in prompt
    assert "Changes since test: 1" in prompt and "Reads since search: 2" in prompt
    assert "Active flags: has_web_searched" in prompt
    assert (
        "Recent actions: websearch(jwt), grep(auth), read(src/auth.ts), read(src/models.ts), "
        "edit(src/auth.ts)"
    ) in prompt
    assert prompt.count("Recent actions") == 1
    assert "Agent profile: Senior developer discipline" in prompt


def test_context_switches_and_a_custom_system_prompt(tmp_path: Path) -> None:
    model = ScriptedChat(verdict())
    hook = hook_with(
        model,
        tmp_path,
        profile="dev",
        classifier={
            "system_prompt": "You decide how the agent should approach each request. Output JSON.",
            "context": {
                "session_state": False,
                "workspace_info": False,
                "recent_history": False,
                "tool_inventory": False,
            },
        },
    )
    hook.on_user_message("Fix it")
    call = model.calls[0]
    assert call["system"] == "You decide how the agent should approach each request. Output JSON."
    prompt = call["messages"][0].text
    assert "Session state" not in prompt and "Workspace" not in prompt and "Recent actions" not in prompt
    assert "Allowed values - complexity: trivial" in prompt  # the vocabulary is always given


def test_a_prompt_file_reference(tmp_path: Path) -> None:
    (tmp_path / "prompts").mkdir()
    (tmp_path / "prompts" / "classifier.md").write_text("Classify. JSON only.\n", encoding="utf-8")
    model = ScriptedChat(verdict())
    hook_with(model, tmp_path, classifier={"system_prompt": "{{prompt.classifier}}"}).on_user_message(
        "Fix it"
    )
    assert model.calls[0]["system"] == "Classify. JSON only.\n"


def test_no_classifier_without_classify_turns_or_without_a_model(tmp_path: Path) -> None:
    model = ScriptedChat(verdict())
    assert hook_with(model, tmp_path, classify_turns=False).on_user_message("Fix it") == ()
    assert hook_with(model, tmp_path, use_agent_brain=False).on_user_message("Fix it") == ()
    assert (
        load_behavior_hook(
            {"classify_turns": True}, config_path=tmp_path / "c.yaml", agent_model=None
        ).on_user_message("Fix it")
        == ()
    )
    assert model.calls == []
