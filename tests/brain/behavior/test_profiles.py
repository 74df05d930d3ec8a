"""The six built-in profiles, overrides by id, legacy custom rules, ``{{behavior.NAME}}`` profile files."""

from __future__ import annotations

from pathlib import Path

import pytest

from routedriver.brain.behavior.errors import BehaviorConfigError
from tests.brain.behavior.helpers import Session, engine_from, fired, resolved_from

ALL_RULES = {
    "read_before_edit",
    "read_before_write_existing",
    "search_before_read",
    "verify_after_edit",
    "test_after_changes",
    "no_bash_for_files",
    "no_blind_exploration",
    "confirm_destructive",
    "plan_before_execute",
    "web_search_when_unknown",
    "delegate_complex",
    "delegate_large_reads",
    "max_sequential_same_tool",
    "always_lint_check",
}


def rule_ids(block: dict) -> set[str]:  # type: ignore[type-arg]
    return {rule["id"] for rule in resolved_from(block)["rules"]}


def test_dev_turns_everything_on_with_tight_thresholds() -> None:
    resolved = resolved_from({"profile": "dev"})
    assert {rule["id"] for rule in resolved["rules"]} == ALL_RULES
    settings = resolved["settings"]
    assert (settings["max_blind_reads"], settings["changes_before_test_reminder"], settings["autonomy"]) == (
        2,
        2,
        "medium",
    )
    assert len(resolved["profile"]["prompt"]) > 4000  # the long senior-developer prompt section
    threshold = next(r for r in resolved["rules"] if r["id"] == "search_before_read")["condition"]
    assert threshold == {"counter_gte": {"name": "reads_since_search", "value": 2}}


def test_coding_is_dev_without_web_search_and_looser() -> None:
    resolved = resolved_from({"profile": "coding"})
    assert {rule["id"] for rule in resolved["rules"]} == ALL_RULES - {"web_search_when_unknown"}
    assert (resolved["settings"]["max_blind_reads"], resolved["settings"]["autonomy"]) == (3, "high")
    assert len(resolved["profile"]["prompt"]) < len(resolved_from({"profile": "dev"})["profile"]["prompt"])


def test_research_drops_code_discipline() -> None:
    resolved = resolved_from({"profile": "research"})
    ids = {rule["id"] for rule in resolved["rules"]}
    assert not ids & {"read_before_edit", "test_after_changes", "verify_after_edit", "always_lint_check"}
    assert {"web_search_when_unknown", "delegate_complex"} <= ids
    assert resolved["settings"]["max_blind_reads"] == 10


def test_data_is_strict_with_web_search_and_read_delegation() -> None:
    resolved = resolved_from({"profile": "data"})
    ids = {rule["id"] for rule in resolved["rules"]}
    assert {
        "read_before_edit",
        "test_after_changes",
        "always_lint_check",
        "web_search_when_unknown",
        "delegate_large_reads",
    } <= ids
    assert resolved["settings"]["autonomy"] == "medium"


def test_creative_is_low_autonomy_detailed_and_plans() -> None:
    resolved = resolved_from({"profile": "creative"})
    ids = {rule["id"] for rule in resolved["rules"]}
    assert {"plan_before_execute", "web_search_when_unknown"} <= ids
    assert (resolved["settings"]["autonomy"], resolved["settings"]["verbosity"]) == ("low", "detailed")
    assert "Autonomy: low" in resolved["profile"]["prompt"]


def test_assistant_is_minimal() -> None:
    assert rule_ids({"profile": "assistant"}) == {
        "read_before_edit",
        "read_before_write_existing",
        "confirm_destructive",
        "web_search_when_unknown",
    }


def test_no_profile_means_no_built_in_rules() -> None:
    resolved = resolved_from({})
    assert resolved["rules"] == [] and resolved["profile"] is None
    assert resolved["state_tracking"] == {"sets": {}, "counters": {}, "flags": {}}


def test_unknown_profile_lists_the_profiles() -> None:
    with pytest.raises(BehaviorConfigError) as caught:
        resolved_from({"profile": "paranoid"})
    line = caught.value.line()
    assert "unknown behavior profile 'paranoid'" in line
    for name in ("assistant", "coding", "creative", "data", "dev", "research"):
        assert name in line


def test_flags_and_thresholds_override_the_profile() -> None:
    resolved = resolved_from(
        {
            "profile": "dev",
            "rules": {"plan_before_execute": False, "max_blind_reads": 1, "max_sequential_same_tool": 5},
        }
    )
    ids = {rule["id"] for rule in resolved["rules"]}
    assert "plan_before_execute" not in ids
    rules = {rule["id"]: rule for rule in resolved["rules"]}
    assert rules["search_before_read"]["condition"]["counter_gte"]["value"] == 1
    assert rules["max_sequential_same_tool"]["condition"] == {"consecutive_gte": 5}
    assert "max_sequential_same_tool" not in rule_ids(
        {"profile": "dev", "rules": {"max_sequential_same_tool": False}}
    )


def test_a_definition_with_a_built_in_id_replaces_it_even_when_flagged_off() -> None:
    block = {
        "profile": "dev",
        "rules": {"confirm_destructive": False},
        "rule_definitions": [
            {
                "id": "confirm_destructive",
                "trigger": "bash",
                "action": "block",
                "condition": {"param_contains": {"param": "command", "value": "deploy"}},
                "message": "Deploys need a human.",
            }
        ],
    }
    session = Session(engine_from(block))
    session.turn()
    assert not session.pre("bash", command="rm -rf build").block  # the built-in version is gone
    decision = session.pre("bash", command="./deploy prod")
    assert decision.block and "Deploys need a human." in decision.reason
    ids = [rule["id"] for rule in resolved_from(block)["rules"]]
    assert ids.count("confirm_destructive") == 1


def test_legacy_custom_rules_convert() -> None:
    block = {
        "custom": [
            {
                "id": "protect_migrations",
                "trigger": "edit",
                "action": "block",
                "condition": {"param_contains": {"param": "file_path", "value": "migration"}},
                "message": "Migration files are protected.",
            },
            {
                "id": "no_curl",
                "trigger": ["bash"],
                "param": "command",
                "pattern": r"\bcurl\b",
                "message": "Use the fetch tool.",
            },
        ]
    }
    resolved = resolved_from(block)
    assert resolved["rules"][0] == {
        "id": "protect_migrations",
        "description": "",
        "trigger": ["edit"],
        "when": "pre_tool",
        "action": "block",
        "condition": {"param_contains": {"param": "file_path", "value": "migration"}},
        "message": "Migration files are protected.",
    }
    session = Session(engine_from(block))
    session.turn()
    assert session.pre("Edit", file_path="db/migrations/0001.py").block
    assert fired(session.pre("bash", command="curl https://x")) == ["no_curl"]


def test_rule_definitions_win_over_custom_with_the_same_id() -> None:
    block = {
        "custom": [{"id": "r", "message": "custom"}],
        "rule_definitions": [{"id": "r", "message": "defined"}],
    }
    assert [rule["message"] for rule in resolved_from(block)["rules"]] == ["defined"]


def write_profile(root: Path, name: str, text: str) -> Path:
    (root / "behavior").mkdir(exist_ok=True)
    (root / "behavior" / f"{name}.yaml").write_text(text, encoding="utf-8")
    config = root / "config.yaml"
    config.write_text("security:\n  behavior:\n    profile: '{{behavior." + name + "}}'\n", encoding="utf-8")
    return config


STRICT_DEV = """\
name: strict_dev
description: "Ultra-strict developer discipline for production code"
extends: dev
rules:
  max_blind_reads: 1
  changes_before_test_reminder: 1
prompt: |
  You follow strict discipline:
  - NEVER edit a file you haven't read in this session
custom:
  - id: protect_migrations
    trigger: edit
    when: pre_tool
    action: block
    condition:
      param_contains: { param: file_path, value: "migration" }
    message: "Migration files are protected. Ask the user first."
"""


def test_profile_file_extends_a_built_in(tmp_path: Path) -> None:
    config = write_profile(tmp_path, "strict_dev", STRICT_DEV)
    resolved = resolved_from({"profile": "{{behavior.strict_dev}}"}, config_path=config)
    ids = [rule["id"] for rule in resolved["rules"]]
    assert set(ids) == ALL_RULES | {"protect_migrations"}
    assert (
        resolved["settings"]["max_blind_reads"] == 1
        and resolved["settings"]["changes_before_test_reminder"] == 1
    )
    assert resolved["profile"]["title"] == "strict_dev"
    assert resolved["profile"]["description"].startswith("Ultra-strict")
    prompt = resolved["profile"]["prompt"]
    assert "NEVER edit a file" in prompt and "careful senior engineer" in prompt  # dev's section is kept
    engine = engine_from({"profile": "{{behavior.strict_dev}}"}, config_path=config)
    assert "## Behavior profile: strict_dev" in engine.system_prompt()
    session = Session(engine)
    session.turn()
    assert session.pre("edit", file_path="app/migrations/0002.py").block


def test_config_rules_override_the_profile_file(tmp_path: Path) -> None:
    config = write_profile(tmp_path, "strict_dev", STRICT_DEV)
    resolved = resolved_from(
        {"profile": "{{behavior.strict_dev}}", "rules": {"max_blind_reads": 4}}, config_path=config
    )
    assert resolved["settings"]["max_blind_reads"] == 4


def test_profile_file_without_extends_has_only_its_rules(tmp_path: Path) -> None:
    config = write_profile(tmp_path, "tiny", "prompt: Be brief.\nrules:\n  confirm_destructive: true\n")
    resolved = resolved_from({"profile": "{{behavior.tiny}}"}, config_path=config)
    assert [rule["id"] for rule in resolved["rules"]] == ["confirm_destructive"]
    assert resolved["profile"]["prompt"] == "Be brief."


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("extends: paranoid\n", "extends: unknown built-in profile 'paranoid'"),
        ("extend: dev\n", "extend: extra inputs are not permitted"),
        ("rules:\n  max_blind_raeds: 1\n", "rules.max_blind_raeds: unknown rule or setting"),
        ("custom:\n  - id: x\n    acton: block\n", "custom[0].acton: extra inputs are not permitted"),
        ("rules: [1, 2\n", "broken.yaml: line 2: malformed YAML (expected ','"),
        (
            "- a\n- b\n",
            "broken.yaml: the file must be a mapping of settings, not a list; write it as key: value",
        ),
        ("just words\n", "broken.yaml: the file must be a mapping of settings, not a string"),
    ],
)
def test_profile_file_errors_name_the_file(tmp_path: Path, text: str, expected: str) -> None:
    config = write_profile(tmp_path, "broken", text)
    with pytest.raises(BehaviorConfigError) as caught:
        resolved_from({"profile": "{{behavior.broken}}"}, config_path=config)
    line = caught.value.line()
    assert "broken.yaml" in line and expected in line, line
    assert "\n" not in line


def test_missing_profile_file(tmp_path: Path) -> None:
    with pytest.raises(BehaviorConfigError) as caught:
        resolved_from({"profile": "{{behavior.nowhere}}"}, config_path=tmp_path / "config.yaml")
    assert "behavior/nowhere.yaml not found" in caught.value.line()
