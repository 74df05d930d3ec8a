"""What a newcomer to behaviorci meets first, through the installed command: `--help` that is not cut off,
`validate --json`, a directory given as a file, and a BehaviorCI 0.1.0 dataset with keys we do not read."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.behaviorci.helpers import write_bundle
from tests.conftest import run_cli


def test_help_lists_every_command_with_a_whole_sentence(tmp_path: Path) -> None:
    ran = run_cli(["behaviorci", "--help"], tmp_path, env={"COLUMNS": "80"})
    assert ran.code == 0
    commands = ran.out.split("Commands:\n", 1)[1].splitlines()
    assert [line.split()[0] for line in commands] == ["init", "run", "validate"]
    for line in commands:
        description = line.split(maxsplit=1)[1]
        assert description.endswith(".") and not description.endswith("..."), line  # click cuts with "..."


def test_validate_json_describes_a_valid_bundle(tmp_path: Path) -> None:
    write_bundle(tmp_path / "b")
    ran = run_cli(["behaviorci", "validate", "b", "--json"], tmp_path)
    assert ran.code == 0 and ran.err == ""
    facts = json.loads(ran.out)
    assert facts == {
        "valid": True,
        "bundle": "b/bundle.yaml",
        "name": "test-bundle",
        "version": "1.0",
        "provider": {"name": "mock", "model": "mock-v1", "model_is_default": True},
        "prompt": "b/prompt.md",
        "dataset": {"path": "b/dataset.jsonl", "cases": 3},
        "schema": "b/schema.json",
        "invariants": 0,
        "thresholds": [{"metric": "pass_rate", "operator": ">=", "value": 1.0, "default": False}],
        "runs": {"repeat": 1, "concurrency": 8, "timeout_s": 30.0, "retries": 2},
        "warnings": [],
    }
    text = run_cli(["behaviorci", "validate", "b"], tmp_path)
    assert text.out.startswith("valid: test-bundle (b/bundle.yaml)\n")  # the text form is unchanged


def test_validate_json_of_an_invalid_bundle_says_so_on_stdout_and_stderr(tmp_path: Path) -> None:
    write_bundle(tmp_path / "b", {"provider": {"name": "mock", "temprature": 0}})
    ran = run_cli(["behaviorci", "validate", "b", "--json"], tmp_path)
    assert ran.code == 2
    verdict = json.loads(ran.out)
    assert verdict["valid"] is False and verdict["bundle"] == "b"
    assert verdict["error"].startswith("b/bundle.yaml: unknown key 'provider.temprature'")
    assert ran.err == f"error: {verdict['error']}\n"


@pytest.mark.parametrize(
    "key, expected",
    [
        ("prompt_path", "error: prompt b/prompts is a directory; point prompt_path in bundle.yaml at a"),
        ("dataset_path", "error: dataset b/prompts is a directory; point dataset_path in bundle.yaml at"),
    ],
)
def test_a_directory_where_a_file_belongs_is_called_a_directory(
    tmp_path: Path, key: str, expected: str
) -> None:
    bundle = write_bundle(tmp_path / "b", {key: "prompts"})
    (bundle.parent / "prompts").mkdir()
    ran = run_cli(["behaviorci", "validate", "b"], tmp_path)
    assert ran.code == 2
    assert ran.err.startswith(expected) and ran.err.count("\n") == 1, ran.err


def test_a_schema_directory_is_called_a_directory(tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "b", {"output_contract": {"schema_path": "schemas"}})
    (bundle.parent / "schemas").mkdir()
    ran = run_cli(["behaviorci", "validate", "b"], tmp_path)
    assert ran.code == 2 and ran.err.startswith("error: schema b/schemas is a directory; point ")


def test_keys_behaviorci_0_1_0_accepted_load_with_one_warning_per_key(tmp_path: Path) -> None:
    cases = [
        {
            "id": f"q{i}",
            "input": {"question": f"q{i}?"},
            "tags": ["smoke"],
            "mock_output": {"answer": "a", "confidence": 1},
        }
        for i in range(1, 8)
    ]
    cases[2]["expected_ouput"] = {"answer": "a"}  # a typo: still loads, and the warning says what it may be
    write_bundle(tmp_path / "b", cases=cases)
    warnings = [
        "behaviorci: warning: b/dataset.jsonl lines 1, 2, 3, 4, 5 and 2 more: key 'tags' is not read; put "
        'data that invariants should see under "metadata"',
        "behaviorci: warning: b/dataset.jsonl line 3: key 'expected_ouput' is not read (did you mean "
        "'expected_output'?); put data that invariants should see under \"metadata\"",
    ]
    validated = run_cli(["behaviorci", "validate", "b"], tmp_path)
    assert validated.code == 0 and validated.err.splitlines() == warnings
    assert "(7 cases)" in validated.out
    as_json = json.loads(run_cli(["behaviorci", "validate", "b", "--json"], tmp_path).out)
    assert as_json["warnings"] == [line.removeprefix("behaviorci: warning: ") for line in warnings]

    ran = run_cli(["behaviorci", "run", "b", "-f", "json"], tmp_path)
    assert ran.code == 0, ran.err
    assert json.loads(ran.out)["passed"] is True
    assert [line for line in ran.err.splitlines() if "warning" in line] == warnings  # CI logs show it
    quiet = run_cli(["behaviorci", "run", "b", "-q"], tmp_path)
    assert quiet.code == 0 and quiet.err == ""
