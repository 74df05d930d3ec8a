"""Under GITHUB_ACTIONS=true: annotations on stderr, the Markdown summary appended to $GITHUB_STEP_SUMMARY."""

from __future__ import annotations

from pathlib import Path

from tests.behaviorci.helpers import answer, invoke, one_error_line, write_bundle
from tests.conftest import run_cli

CASES = [
    {"id": "good", "input": {"question": "a"}, "mock_output": answer("yes")},
    {"id": "bad, really: 100%", "input": {"question": "b"}, "mock_output": "no json\nat all"},
]


def test_failed_thresholds_and_cases_are_annotated(tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "b", cases=CASES)
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n", encoding="utf-8")
    result = invoke(["run", str(bundle)], env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)})
    assert result.exit_code == 1
    annotations = [line for line in result.stderr.splitlines() if line.startswith("::")]
    assert len(annotations) == 2
    error, warning = annotations
    assert error.startswith("::error title=behaviorci test-bundle,file=")
    assert error.endswith("::threshold failed: pass_rate 0.5 fails >= 1")
    assert ",line=2::" in warning and "dataset.jsonl" in warning
    assert "case bad, really: 100%25 failed: schema: output is not JSON" in warning  # data escaping
    assert "\n" not in warning
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("earlier step\n# BehaviorCI report: test-bundle")  # appended, not replaced
    assert "**Status**: ❌ FAILED" in text
    # The report itself is unchanged on stdout.
    assert result.stdout.splitlines()[-2] == "passed: false"


def test_nothing_github_specific_outside_actions(tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "b", cases=CASES)
    summary = tmp_path / "summary.md"
    result = invoke(["run", str(bundle)], env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert "::" not in result.stderr
    assert not summary.exists()


def test_configuration_errors_are_annotated_too(tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "b", {"provider": {"name": "openai"}})
    result = invoke(["run", str(bundle)], env={"GITHUB_ACTIONS": "true"})
    assert result.exit_code == 2
    assert "OPENAI_API_KEY is not set" in one_error_line(result)
    assert "::error title=behaviorci::OPENAI_API_KEY is not set" in result.stderr


def test_passing_run_has_no_annotations_but_a_summary(tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "b")
    summary = tmp_path / "summary.md"
    result = invoke(
        ["run", str(bundle), "--format", "json"],
        env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)},
    )
    assert result.exit_code == 0
    assert "::" not in result.stderr
    assert "✅ PASSED" in summary.read_text(encoding="utf-8")


def test_annotation_files_are_relative_to_the_workspace(tmp_path: Path) -> None:
    workspace = tmp_path / "repo"
    bundle = write_bundle(workspace / "bundles" / "b", cases=CASES)
    (workspace / "sub").mkdir()
    ran = run_cli(
        ["behaviorci", "run", str(bundle)],
        workspace / "sub",  # run from elsewhere: the report names the files from there (../bundles/…)
        env={"GITHUB_ACTIONS": "true", "GITHUB_WORKSPACE": str(workspace)},
    )
    assert ran.code == 1, ran.err
    annotations = [line for line in ran.err.splitlines() if line.startswith("::")]
    assert "file=bundles/b/bundle.yaml::" in annotations[0]
    assert "file=bundles/b/dataset.jsonl,line=2::" in annotations[1]
