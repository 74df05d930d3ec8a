"""Configuration errors: one line naming the file and the key path, for every kind of mistake."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from routedriver.brain.behavior import load_behavior_hook
from routedriver.brain.behavior.errors import BehaviorConfigError
from routedriver.brain.behavior.resolve import load_behavior_file
from routedriver.errors import ExitCode
from tests.brain.behavior.helpers import resolved_from

CASES: list[tuple[dict[str, Any], str]] = [
    (
        {"rule_definitions": [{"id": "r", "acton": "block"}]},
        "config.yaml: security.behavior.rule_definitions[0].acton: extra inputs are not permitted",
    ),
    ({"profle": "dev"}, "config.yaml: security.behavior.profle: extra inputs are not permitted"),
    (
        {"rule_definitions": [{"id": "r", "when": "pre"}]},
        "config.yaml: security.behavior.rule_definitions[0].when: input should be 'pre_tool', 'post_tool' "
        "or 'on_text'",
    ),
    (
        {"rule_definitions": [{"id": "r", "action": "deny"}]},
        "config.yaml: security.behavior.rule_definitions[0].action: input should be 'block', 'warn' "
        "or 'remind'",
    ),
    (
        {"rule_definitions": [{"id": "r", "when": "post_tool", "action": "block"}]},
        "security.behavior.rule_definitions[0]: rule r: action block needs when: pre_tool",
    ),
    (
        {"rule_definitions": [{"message": "no id"}]},
        "security.behavior.rule_definitions[0].id: field required",
    ),
    (
        {"rule_definitions": [{"id": "a"}, {"id": "a"}]},
        "security.behavior.rule_definitions[1].id: duplicate rule id 'a'",
    ),
    (
        {"rule_definitions": [{"id": "r", "condition": {"counter_gte": {"name": "c"}}}]},
        "config.yaml: security.behavior.rule_definitions[0].condition.counter_gte: missing value",
    ),
    (
        {
            "rule_definitions": [
                {"id": "r", "condition": {"all": [{"flag_is": {"name": "f", "value": "no"}}]}}
            ]
        },
        "security.behavior.rule_definitions[0].condition.all[0].flag_is.value: needs true or false",
    ),
    (
        {"custom": [{"id": "c", "pattern": "x"}]},
        "security.behavior.custom[0]: custom rule c: pattern/contains need param",
    ),
    (
        {"state_tracking": {"counters": {"changes": {"reset_on": ["bash"]}}}},
        "security.behavior.state_tracking.counters.changes.increment_on: a counter needs increment_on",
    ),
    (
        {"state_tracking": {"flags": {"backup_created": {"unset_on": ["x"]}}}},
        "security.behavior.state_tracking.flags.backup_created.set_on: a flag needs set_on",
    ),
    (
        {"state_tracking": {"sets": {"s": {"add_on": ["read"], "target_param": "x"}}}},
        "security.behavior.state_tracking.sets.s.target_param: extra inputs are not permitted",
    ),
    (
        {
            "state_tracking": {
                "counters": {
                    "c": {
                        "increment_on": "edit",
                        "reset_when": {"tool": "bash", "param": "command", "matches": "(pytest"},
                    }
                }
            }
        },
        "security.behavior.state_tracking.counters.c.reset_when.matches: invalid regex",
    ),
    (
        {"rules": {"max_blind_reads": "two"}},
        "security.behavior.rules: max_blind_reads must be true, false or an integer",
    ),
    ({"rules": {"autonomy": "total"}}, "security.behavior.rules: autonomy must be one of low, medium, high"),
    (
        {"rule_definitions": [{"id": "r", "condition": {"param_matches": {"param": "q", "pattern": "(x"}}}]},
        "security.behavior.rule_definitions[0].condition.param_matches.pattern: invalid regex '(x'",
    ),
    (
        {"custom": [{"id": "c", "param": "command", "pattern": "[z-a]"}]},
        "security.behavior.custom[0].condition.param_matches.pattern: invalid regex '[z-a]'",
    ),
    (
        {"rules": {"read_befor_edit": False}},
        "security.behavior.rules.read_befor_edit: unknown rule or setting",
    ),
    ({"classifier": {"frequency": "hourly"}}, "security.behavior.classifier.frequency: input should be"),
    (
        {"classifier": {"approaches": ["direct", {"name": "direct"}]}},
        "security.behavior.classifier.approaches: duplicate name direct",
    ),
    (
        {"classifier": {"risk_levels": [{"name": "low", "risk": "x"}]}},
        "security.behavior.classifier.risk_levels[0].risk: extra inputs are not permitted",
    ),
    (
        {"classifier": {"risk_levels": ["a", "b"], "high_risk_threshold": "c"}},
        "security.behavior.classifier: high_risk_threshold 'c' is not one of the risk_levels (a, b)",
    ),
    (
        {"classifier": {"context": {"history_depht": 3}}},
        "security.behavior.classifier.context.history_depht: extra inputs are not permitted",
    ),
    (
        {"brain": {"provider": "deepseek", "model": "m", "config": {"apikey": "x"}}},
        "security.behavior.brain.config: unknown key apikey",
    ),
    ({"brain": {"provider": "deepseek"}}, "security.behavior.brain.model: field required"),
    ({"profile": "{{prompt.x}}"}, "security.behavior.profile: {{prompt.x}} is not a behavior profile"),
    ({"classify_turns": "sometimes"}, "security.behavior.classify_turns: input should be a valid boolean"),
]


@pytest.mark.parametrize(("block", "expected"), CASES)
def test_errors_are_one_line_with_file_and_key_path(block: dict[str, Any], expected: str) -> None:
    with pytest.raises(BehaviorConfigError) as caught:
        resolved_from(block)
    line = caught.value.line()
    assert line.startswith("error: config.yaml: security.behavior"), line
    assert expected in line, line
    assert "\n" not in line and "Traceback" not in line
    assert caught.value.exit_code == ExitCode.REFUSED


def test_extra_key_error_lists_the_allowed_keys() -> None:
    with pytest.raises(BehaviorConfigError) as caught:
        resolved_from({"rule_definitions": [{"id": "r", "acton": "block"}]})
    assert "(allowed: id, description, trigger, when, action, condition, message)" in caught.value.line()


def test_several_problems_are_counted_on_the_one_line() -> None:
    with pytest.raises(BehaviorConfigError) as caught:
        resolved_from({"profle": "dev", "clasify_turns": True})
    assert "(and 1 more problem)" in caught.value.line()


def test_load_behavior_hook_reports_the_config_path(tmp_path: Path) -> None:
    config = tmp_path / "bhrain.yaml"
    with pytest.raises(BehaviorConfigError) as caught:
        load_behavior_hook(
            {"rule_definitions": [{"id": "r", "acton": "x"}]}, config_path=config, agent_model=None
        )
    assert f"{config}: security.behavior.rule_definitions[0].acton" in caught.value.line()


def test_a_config_file_without_a_behavior_block(tmp_path: Path) -> None:
    config = tmp_path / "bhrain.yaml"
    config.write_text("atom: scripted\n", encoding="utf-8")
    with pytest.raises(BehaviorConfigError) as caught:
        load_behavior_file(config)
    assert "no security.behavior block" in caught.value.line()


def test_the_seed_quick_start_is_valid() -> None:
    text = """
profile: dev
classify_turns: true
rule_definitions:
  - id: backup_before_modify
    trigger: [database.execute]
    when: pre_tool
    action: block
    condition:
      all:
        - param_matches: { param: query, pattern: "(UPDATE|DELETE|DROP)" }
        - flag_is: { name: backup_created, value: false }
    message: "Create a backup before running '{param:query}'."
state_tracking:
  flags:
    backup_created:
      set_on: [database.backup]
"""
    resolved = resolved_from(text)
    assert resolved["rules"][-1]["id"] == "backup_before_modify"
    # the config's tracking is added to what the profile's rules need
    assert set(resolved["state_tracking"]["flags"]) == {"has_web_searched", "backup_created"}
    assert "read_files" in resolved["state_tracking"]["sets"]


def test_user_tracking_replaces_a_default_of_the_same_name() -> None:
    resolved = resolved_from(
        {
            "profile": "dev",
            "state_tracking": {
                "counters": {"changes_since_test": {"increment_on": ["edit"], "reset_on": ["run_tests"]}}
            },
        }
    )
    assert resolved["state_tracking"]["counters"]["changes_since_test"]["increment_on"] == ["edit"]


def test_untracked_references_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("WARNING", logger="routedriver.brain.behavior"):
        resolved_from(
            {"rule_definitions": [{"id": "r", "condition": {"counter_gte": {"name": "ghost", "value": 1}}}]}
        )
    assert "rule r refers to counter 'ghost', which state_tracking does not declare" in caplog.text


def test_a_behavior_file_that_is_not_utf8_is_refused(tmp_path: Path) -> None:
    from routedriver.errors import Refused

    config = tmp_path / "behavior.yaml"
    config.write_bytes("rules: caf\xe9\n".encode("latin-1"))
    with pytest.raises(Refused) as caught:
        load_behavior_file(config)
    assert caught.value.line() == (f"error: {config}: line 1: not UTF-8 text (byte 11); save it as UTF-8")
    assert caught.value.exit_code == ExitCode.REFUSED
