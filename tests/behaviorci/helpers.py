"""Building bundles on disk for behaviorci tests, and running the command in-process or installed."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml
from click.testing import CliRunner, Result

from routedriver.cli.behaviorci import behaviorci_group

PROMPT = "Answer as JSON.\nQuestion: {{ question }}\n"
SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["answer", "confidence"],
    "properties": {"answer": {"type": "string"}, "confidence": {"type": "number"}},
}


def answer(text: str, confidence: float = 0.9) -> str:
    return json.dumps({"answer": text, "confidence": confidence})


def default_cases(count: int = 3) -> list[dict[str, Any]]:
    return [
        {
            "id": f"q{i}",
            "input": {"question": f"question {i}?"},
            "mock_output": {"answer": f"a{i}", "confidence": 0.9},
        }
        for i in range(1, count + 1)
    ]


def write_bundle(
    root: Path,
    config: Mapping[str, Any] | None = None,
    *,
    cases: Sequence[Mapping[str, Any] | str] | None = None,
    prompt: str = PROMPT,
    schema: Mapping[str, Any] | None = SCHEMA,
    raw_yaml: str | None = None,
) -> Path:
    """Write bundle.yaml, prompt.md, dataset.jsonl (and schema.json) under ``root``; return bundle.yaml."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "prompt.md").write_text(prompt, encoding="utf-8")
    rows = default_cases() if cases is None else cases
    (root / "dataset.jsonl").write_text(
        "".join((row if isinstance(row, str) else json.dumps(row)) + "\n" for row in rows), encoding="utf-8"
    )
    data: dict[str, Any] = {
        "name": "test-bundle",
        "prompt_path": "prompt.md",
        "dataset_path": "dataset.jsonl",
        "provider": {"name": "mock"},
        "thresholds": [{"metric": "pass_rate", "operator": ">=", "value": 1.0}],
    }
    if schema is not None:
        (root / "schema.json").write_text(json.dumps(schema), encoding="utf-8")
        data["output_contract"] = {"schema_path": "schema.json", "invariants": []}
    data.update(config or {})
    path = root / "bundle.yaml"
    path.write_text(
        raw_yaml if raw_yaml is not None else yaml.safe_dump(data, sort_keys=False), encoding="utf-8"
    )
    return path


def invoke(args: Sequence[str], env: Mapping[str, str] | None = None) -> Result:
    """Run ``behaviorci`` in-process (click's CliRunner), stdout and stderr kept apart."""
    return CliRunner().invoke(behaviorci_group, list(args), env=dict(env or {}), catch_exceptions=False)


def one_error_line(result: Result) -> str:
    """The single ``error: …`` line on stderr (asserting there is exactly one and no traceback)."""
    lines = result.stderr.splitlines()
    errors = [line for line in lines if line.startswith("error: ")]
    assert len(errors) == 1, result.stderr
    assert "Traceback" not in result.stderr
    return errors[0]
