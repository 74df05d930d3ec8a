"""Guard validation: every mistake is one refusal that names the file and the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from routedriver.errors import Refused
from routedriver.route.guardfile import check_guard, parse_guard
from routedriver.route.model import DEFAULT_TIMEOUT_S

P = Path("/r/1.x.guard")
SHOWN = "route/1.x.guard"


def refusal(text: str) -> str:
    with pytest.raises(Refused) as caught:
        parse_guard(text, P, SHOWN, "1.x")
    line = caught.value.line()
    assert "\n" not in line
    return line


def test_a_full_guard_parses() -> None:
    guard = parse_guard(
        "artifacts: ['$route/1.x*.md', docs/*.md]\nreviews:\n  - python3 r.py $route\njudges:\n"
        "  - reviewed? --allow-blockers 0 --allow-nitpicks=2\n  - approved?\n  - pytest -q\n"
        "timeout: 30\nprotect: ['src/**']\n",
        P,
        SHOWN,
        "1.x",
    )
    assert guard.artifacts == ("$route/1.x*.md", "docs/*.md")
    assert guard.reviews == ("python3 r.py $route",)
    assert guard.judges == ("reviewed? --allow-blockers 0 --allow-nitpicks=2", "approved?", "pytest -q")
    assert guard.timeout_s == 30.0
    assert guard.protect == ("src/**",)


def test_defaults() -> None:
    guard = parse_guard("", P, SHOWN, "1.x")
    assert guard.artifacts == ("$route/${stone}*.md",)
    assert (guard.reviews, guard.judges, guard.protect, guard.timeout_s) == ((), (), (), DEFAULT_TIMEOUT_S)
    assert parse_guard("artifacts: []\n", P, SHOWN, "1.x").artifacts == ()


def test_unknown_key() -> None:
    assert refusal("reviews: []\nfoo: 1\n") == (
        f"error: {SHOWN}: unknown key 'foo'; allowed: artifacts, inputs, judges, protect, reviews, timeout"
    )


def test_malformed_yaml_names_the_line() -> None:
    line = refusal("reviews:\n  - a\n judges: [\n")
    assert line.startswith(f"error: {SHOWN}: line 3: malformed YAML (")
    assert line.endswith("; fix the YAML syntax")


@pytest.mark.parametrize("hidden", ["\u2028", "\u2029", "\x85", "\r"])
def test_a_line_break_a_reader_does_not_see_is_refused(hidden: str) -> None:
    # `git show` and a diff show "# note<U+2028>  - true" as one comment line; YAML reads a second one there,
    # so a human approving the guard would approve a judge they never saw.
    text = f"reviews: [r]\njudges:\n  - reviewed?\n# a note{hidden}  - approved?\n"
    assert refusal(text) == (
        f"error: {SHOWN}: line 4: a line break git and most editors do not show as one "
        f"(U+{ord(hidden):04X}), which YAML reads as a new line; remove it: the file would mean other than "
        "what a reader of it sees"
    )
    assert parse_guard("reviews: [r]\r\njudges:\r\n  - reviewed?\r\n", P, SHOWN, "1.x").judges == (
        "reviewed?",
    )


def test_bare_builtin_in_a_flow_list_gets_a_hint() -> None:
    line = refusal("reviews: [r]\njudges: [reviewed?, approved?]\n")
    assert line.startswith(f"error: {SHOWN}: line 2: malformed YAML (")
    assert line.endswith(
        "; quote entries that end in '?' inside [ ] (['approved?']) or write a '- approved?' list"
    )


def test_duplicate_keys_are_refused() -> None:
    said = refusal("reviews: [a]\nreviews: [b]\n")
    assert "line 2: key 'reviews' appears twice (line 1 and line 2)" in said


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "- a\n",
            f"error: {SHOWN}: expected a mapping with keys artifacts, inputs, judges, protect, reviews, "
            "timeout; got list",
        ),
        ("reviews: echo hi\n", f"error: {SHOWN}: reviews: expected a list of strings, got str"),
        ("reviews:\n", f"error: {SHOWN}: reviews: expected a list of strings, got null"),
        ("judges: ['approved?', 3]\n", f"error: {SHOWN}: judges[2]: expected a string, got int; quote it"),
        ("reviews: ['  ']\n", f"error: {SHOWN}: reviews[1]: empty command; write one or remove the entry"),
        ("artifacts: ['']\n", f"error: {SHOWN}: artifacts[1]: empty glob; write one or remove the entry"),
        (
            'judges: ["tr\\0ue"]\n',
            f"error: {SHOWN}: judges[1]: holds U+0000, which no command or file name can hold; remove it",
        ),
        (
            'reviews: ["echo \\ud800"]\n',
            f"error: {SHOWN}: reviews[1]: holds U+D800, which no command or file name can hold; remove it",
        ),
        (
            'artifacts: ["a\\0.md"]\n',
            f"error: {SHOWN}: artifacts[1]: holds U+0000, which no command or file name can hold; remove it",
        ),
        ("protect: {a: 1}\n", f"error: {SHOWN}: protect: expected a list of strings, got dict"),
        (
            "timeout: 0\n",
            f"error: {SHOWN}: timeout: expected a positive number of seconds, got 0; write timeout: 1200",
        ),
        (
            "timeout: yes\n",
            f"error: {SHOWN}: timeout: expected a positive number of seconds, got True; write timeout: 1200",
        ),
        (
            "timeout: '5'\n",
            f"error: {SHOWN}: timeout: expected a positive number of seconds, got '5'; write timeout: 1200",
        ),
    ],
)
def test_wrong_types(text: str, expected: str) -> None:
    assert refusal(text).startswith(expected)


def test_unknown_judge_mechanism() -> None:
    assert refusal("judges: ['foo?']\n") == (
        f"error: {SHOWN}: judges[1]: unknown judge mechanism 'foo?'; built-ins: approved?, reviewed?"
    )


@pytest.mark.parametrize(
    ("judge", "fragment"),
    [
        ("reviewed? --allow-blocker 1", "judges[1]: reviewed?: unknown flag '--allow-blocker'"),
        ("reviewed? --allow-blockers", "judges[1]: reviewed?: --allow-blockers needs a number"),
        (
            "reviewed? --allow-nitpicks -1",
            "judges[1]: reviewed?: --allow-nitpicks '-1' is not a whole number",
        ),
        (
            "reviewed? --allow-nitpicks two",
            "judges[1]: reviewed?: --allow-nitpicks 'two' is not a whole number",
        ),
        (
            "approved? --allow-blockers 1",
            "judges[1]: approved?: unknown flag '--allow-blockers'; allowed: no flags",
        ),
    ],
)
def test_builtin_flags_are_validated(judge: str, fragment: str) -> None:
    assert fragment in refusal(f"reviews: [r]\njudges: ['{judge}']\n")


def test_reviewed_needs_reviews() -> None:
    assert "judges[1]: reviewed? needs reviews to read" in refusal("judges: ['reviewed?']\n")


def test_check_guard_lists_every_problem_and_parse_guard_refuses_with_the_first() -> None:
    text = (
        "timeout: -1\nrevews: [x]\njudges:\n  - approvedd?\n  - ''\n  - 7\nprotect: ['  ']\nartifacts: no\n"
    )
    guard, problems = check_guard(text, P, SHOWN, "1.x")
    assert guard is None
    assert [problem.line() for problem in problems] == [
        f"error: {SHOWN}: unknown key 'revews'; allowed: artifacts, inputs, judges, protect, reviews, "
        "timeout",
        f"error: {SHOWN}: judges[1]: unknown judge mechanism 'approvedd?'; built-ins: approved?, reviewed?",
        f"error: {SHOWN}: judges[2]: empty command; write one or remove the entry",
        f"error: {SHOWN}: judges[3]: expected a string, got int; quote it",
        f"error: {SHOWN}: artifacts: expected a list of strings, got bool; write artifacts: "
        "[\"...\"] or a '- item' list (artifacts: [] for none)",
        f"error: {SHOWN}: protect[1]: empty glob; write one or remove the entry",
        f"error: {SHOWN}: timeout: expected a positive number of seconds, got -1; write timeout: 1200",
    ]
    assert refusal(text) == problems[0].line()


def test_check_guard_of_a_valid_guard_has_no_problem() -> None:
    text = "reviews: [r]\njudges: ['reviewed?', 'approved?']\ntimeout: 5\n"
    assert check_guard(text, P, SHOWN, "1.x") == (parse_guard(text, P, SHOWN, "1.x"), ())


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("judges: ['reviewed?']\nreviews: []\n", ["judges[1]: reviewed? needs reviews to read"]),
        ("judges: ['reviewed?']\nreviews: ['']\n", ["reviews[1]: empty command"]),
        ("judges: ['reviewed?']\nreviews: r\n", ["reviews: expected a list of strings, got str"]),
        ("judges: [\n", ["line 2: malformed YAML ("]),
        ("- a\n- b\n", ["expected a mapping with keys"]),
    ],
)
def test_a_problem_is_not_echoed_by_the_problems_it_causes(text: str, expected: list[str]) -> None:
    problems = check_guard(text, P, SHOWN, "1.x").problems
    assert len(problems) == len(expected)
    for problem, fragment in zip(problems, expected, strict=True):
        assert problem.line().startswith(f"error: {SHOWN}: {fragment}")
