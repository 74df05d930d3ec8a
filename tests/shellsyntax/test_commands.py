"""``words.commands``: every simple command a script runs, substitutions read in turn."""

from __future__ import annotations

import pytest

from routedriver.shellsyntax.words import commands


@pytest.mark.parametrize(
    ("script", "expected", "unsure"),
    [
        ("pytest -q", [["pytest", "-q"]], []),
        ("cd app && pytest -q || exit 2", [["cd", "app"], ["pytest", "-q"], ["exit", "2"]], []),
        ("(pytest -q)", [["pytest", "-q"]], []),
        ("x=$(git rev-parse HEAD) make", [["x=$(…)", "make"], ["git", "rev-parse", "HEAD"]], []),
        ("echo 'exit 2' # || exit 2", [["echo", "exit 2"]], []),
        ('route.drive --when "hook.onStop"', [["route.drive", "--when", "hook.onStop"]], []),
        ('echo "open', [["echo", "open"]], ["unterminated double quote"]),
        ("", [], []),
    ],
)
def test_commands_are_the_simple_commands_bash_runs(
    script: str, expected: list[list[str]], unsure: list[str]
) -> None:
    found, problems = commands(script)
    assert [[word.text for word in simple.words] for simple in found] == expected
    assert problems == unsure


def test_depth_zero_reads_only_the_script_itself() -> None:
    found, _ = commands("a $(b $(c))", depth=0)
    assert [[word.text for word in simple.words] for simple in found] == [["a", "$(…)"]]
    deep, _ = commands("a $(b $(c))")
    assert [simple.words[0].text for simple in deep] == ["a", "b", "c"]
