"""Dataset parsing: line numbers in every error, stable case ids, the optional keys."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from routedriver.behaviorci.bundle import load_bundle
from tests.behaviorci.helpers import invoke, one_error_line, write_bundle
from tests.conftest import run_cli

GOOD = '{"input": {"question": "q"}}'

BAD_LINES: list[tuple[str, list[str], str]] = [
    ("invalid JSON", [GOOD, "", '{"input": {"question": "q"'], "line 3: malformed JSON"),
    ("not an object", [GOOD, '["input"]'], "line 2: expected a JSON object, got an array"),
    ("missing input", ['{"id": "a"}'], "line 1: missing required key 'input'"),
    ("input not an object", ['{"input": "what?"}'], "line 1: 'input' must be an object"),
    (
        "metadata not an object",
        ['{"input": {"question": "q"}, "metadata": [1]}'],
        "'metadata' must be an object",
    ),
    (
        "duplicate id",
        ['{"id": "a", "input": {"question": "q"}}', GOOD, '{"id": "a", "input": {"question": "r"}}'],
        "line 3: case id 'a' is already used on line 1",
    ),
    (
        "explicit id clashing with a line id",
        [GOOD, '{"id": "line-1", "input": {"question": "q"}}'],
        "line 2: case id 'line-1' is already used on line 1",
    ),
    ("id of a bad type", ['{"id": [1], "input": {"question": "q"}}'], "'id' must be a string or an integer"),
    ("blank id", ['{"id": " ", "input": {"question": "q"}}'], "'id' must be a non-empty single line"),
    (
        "bad min_pass_rate",
        ['{"input": {"question": "q"}, "min_pass_rate": 2}'],
        "'min_pass_rate' must be a number",
    ),
    ("boolean min_pass_rate", ['{"input": {"question": "q"}, "min_pass_rate": true}'], "'min_pass_rate'"),
    ("empty dataset", ["", "  "], "has no cases"),
    (
        "lone surrogate",
        [GOOD, '{"input": {"question": "caf\\ud83d"}}'],
        "line 2: input.question holds a lone surrogate",
    ),
    ("lone surrogate in a key", ['{"input": {"\\udc80": 1}}'], "line 1: input.'\\udc80' holds a lone"),
]


@pytest.mark.parametrize(("label", "lines", "expected"), BAD_LINES, ids=[b[0] for b in BAD_LINES])
def test_bad_dataset_line_is_named(tmp_path: Path, label: str, lines: list[str], expected: str) -> None:
    bundle = write_bundle(tmp_path / "b", cases=lines, schema=None)
    result = invoke(["validate", str(bundle)])
    assert result.exit_code == 2, result.stdout
    line = one_error_line(result)
    assert "dataset.jsonl" in line and expected in line, line


def test_ids_come_from_id_or_the_line_number(tmp_path: Path) -> None:
    lines = [
        GOOD,
        "",
        '{"id": 7, "input": {"question": "q"}}',
        '{"id": "named", "input": {"question": "q"}}',
        GOOD,
    ]
    bundle = load_bundle(str(write_bundle(tmp_path / "b", cases=lines, schema=None)))
    assert [(case.id, case.line) for case in bundle.cases] == [
        ("line-1", 1),
        ("7", 3),
        ("named", 4),
        ("line-5", 5),
    ]


def test_case_ids_are_identical_across_processes(tmp_path: Path) -> None:
    # BehaviorCI 0.1.0 derived ids from hash(), which changes with every interpreter (PYTHONHASHSEED).
    bundle = write_bundle(tmp_path / "b", cases=[GOOD, '{"input": {"question": "other"}}'], schema=None)
    ids = []
    for seed in ("1", "2"):
        ran = run_cli(
            ["behaviorci", "run", str(bundle), "--format", "json"], tmp_path, env={"PYTHONHASHSEED": seed}
        )
        ids.append([case["id"] for case in json.loads(ran.out)["cases"]])
    assert ids[0] == ids[1] == ["line-1", "line-2"]


def test_optional_keys_are_read(tmp_path: Path) -> None:
    row = {
        "id": "c",
        "input": {"question": "q"},
        "expected_output": {"a": 1},
        "metadata": {"k": "v"},
        "mock_output": "hello",
        "min_pass_rate": 0.5,
    }
    bundle = load_bundle(
        str(write_bundle(tmp_path / "b", {"min_pass_rate": 0.9}, cases=[row, GOOD], schema=None))
    )
    first, second = bundle.cases
    assert (first.expected_output, first.metadata, first.mock_output, first.min_pass_rate) == (
        {"a": 1},
        {"k": "v"},
        "hello",
        0.5,
    )
    assert second.min_pass_rate == 0.9  # the bundle's default
    assert not second.has_mock_output


def test_byte_order_mark_and_crlf_are_accepted(tmp_path: Path) -> None:
    root = tmp_path / "b"
    bundle = write_bundle(root, schema=None)
    (root / "dataset.jsonl").write_bytes(b"\xef\xbb\xbf" + (GOOD + "\r\n" + GOOD + "\r\n").encode())
    assert [case.id for case in load_bundle(str(bundle)).cases] == ["line-1", "line-2"]


def test_unicode_line_separators_inside_strings_are_not_line_breaks(tmp_path: Path) -> None:
    # json.dumps(ensure_ascii=False) writes U+2028, U+2029 and U+0085 raw; they are not JSONL line breaks.
    root = tmp_path / "b"
    bundle = write_bundle(root, schema=None)
    odd = "a\u2028b\u2029c\u0085d"
    rows = [{"id": "odd", "input": {"question": odd}}, {"input": {"question": "plain"}}]
    text = "\n".join(json.dumps(row, ensure_ascii=False) for row in rows) + "\n"
    (root / "dataset.jsonl").write_text(text, encoding="utf-8")
    cases = load_bundle(str(bundle)).cases
    assert [(case.id, case.line, case.input["question"]) for case in cases] == [
        ("odd", 1, odd),
        ("line-2", 2, "plain"),
    ]
    result = invoke(["validate", str(bundle)])
    assert result.exit_code == 0, result.stderr
