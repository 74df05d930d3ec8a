"""The papercuts a newcomer hit following the README (issue 21 §3), each through the installed commands."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.behaviorci.helpers import write_bundle
from tests.conftest import run_cli

README = Path(__file__).resolve().parents[2] / "README.md"


def test_behaviorci_validate_says_where_a_json_line_breaks_in_plain_words(tmp_path: Path) -> None:
    """Python's "Unterminated string starting at" already ends with "at": the place follows it once."""
    bundle = write_bundle(tmp_path / "b", cases=['{"id": "q1", "input": {"question": "unterminated'])
    ran = run_cli(["behaviorci", "validate", str(bundle)], tmp_path)
    assert ran.code == 2 and ran.out == ""
    assert "at at" not in ran.err
    assert "malformed JSON (Unterminated string starting at column 36)" in ran.err, ran.err
    assert len(ran.err.splitlines()) == 1


def test_a_hook_event_that_is_not_json_names_the_place_once(tmp_path: Path) -> None:
    ran = run_cli(["route.bounce"], tmp_path, input='{"tool_name": "Edit')
    assert "at at" not in ran.err
    assert "Unterminated string starting at line 1 column 15" in ran.err, ran.err


def test_malformed_json_elsewhere_reads_the_same(tmp_path: Path) -> None:
    from routedriver import userfile

    try:
        json.loads('{"a": [1, 2')
    except json.JSONDecodeError as exc:
        assert userfile.json_problem(exc) == "Expecting ',' delimiter at line 1 column 12"
    try:
        json.loads('["x')
    except json.JSONDecodeError as exc:
        assert userfile.json_problem(exc, line=False) == "Unterminated string starting at column 2"


def _readme_section(title: str) -> str:
    text = README.read_text(encoding="utf-8")
    start = text.index(f"## {title}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end >= 0 else len(text)]


def test_the_readme_says_where_behaviorci_differs_from_the_exit_code_rule(tmp_path: Path) -> None:
    """The README's rule is "2 refused, 1 malfunction"; behaviorci run exits 1 for a failed threshold, and
    the README says so next to the rule, as the command really does."""
    section = " ".join(_readme_section("Exit codes and errors").split())
    assert "`behaviorci run` keeps BehaviorCI 0.1.0's codes: **1 when a threshold failed**" in section
    assert "Claude Code hooks" in section and "exit 1" in section
    failing = {"id": "q1", "input": {"question": "q?"}, "mock_output": {"answer": "no confidence"}}
    bundle = write_bundle(tmp_path / "b", cases=[failing])
    ran = run_cli(["behaviorci", "run", str(bundle)], tmp_path)
    assert ran.code == 1, ran.err
    assert "passed: false" in ran.out  # what a route judge reads before the exit code


def test_no_doc_tells_a_newcomer_to_install_a_package_that_is_not_published() -> None:
    """Until routedriver is on PyPI, every install line says where it comes from (a clone)."""
    root = README.parent
    texts = [README, *sorted((root / "docs").glob("*.md")), *sorted((root / "examples").glob("*/README.md"))]
    for path in texts:
        for line in path.read_text(encoding="utf-8").splitlines():
            published = re.search(r"pipx? install routedriver(?![/\w.-])", line)
            assert not published, f"{path.name}: {line.strip()}"
    assert "It is not on PyPI yet: install it\n   from a clone." in README.read_text(encoding="utf-8")
