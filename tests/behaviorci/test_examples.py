"""The shipped examples keep working: the qa bundle passes under its mock as written."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "behaviorci"


def test_qa_example_runs_and_shows_repeat(tmp_path: Path) -> None:
    assert run_cli(["behaviorci", "validate", str(EXAMPLES / "qa")], tmp_path).code == 0
    ran = run_cli(["behaviorci", "run", str(EXAMPLES / "qa"), "--format", "json", "--verbose"], tmp_path)
    assert ran.code == 0, ran.err
    report = json.loads(ran.out)
    cases = {case["id"]: case for case in report["cases"]}
    assert report["repeat"] == 3 and report["passed"] is True
    assert (cases["boiling-point"]["passed_runs"], cases["boiling-point"]["passed"]) == (2, True)
    assert cases["largest-planet"]["evaluation"]["schema_valid"] is True  # a fenced JSON answer
