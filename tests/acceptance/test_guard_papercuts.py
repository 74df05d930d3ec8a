"""Two traps a newcomer's first guard falls into, through the installed commands: the YAML colon trap (a
`: ` in an unquoted command) and a bare `pytest` judge (failing tests exit 1: a malfunction, not a no)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.route.routes import make_route, run_route, stone_set, write

TRAP_FIX = "quote the whole command (- 'echo blockers: 0') or write it as a block (- |, then the command on"


@pytest.mark.parametrize(
    "guard, expected",
    [
        (
            "reviews:\n  - echo blockers: 0\njudges:\n  - reviewed?\n",
            "error: route/1.a.guard: reviews[1]: a ': ' inside an unquoted command makes YAML read a mapping "
            "instead of the command (echo blockers: 0); " + TRAP_FIX,
        ),
        (  # quotes in the middle of a plain scalar do not protect the ': '
            'judges:\n  - grep -q "status: done" $route/1.a.md   # done?\n',
            "error: route/1.a.guard: judges[1]: a ': ' inside an unquoted command makes YAML read a mapping "
            'instead of the command (grep -q "status: done" $route/1.a.md); quote the whole command '
            "(- 'grep -q \"status: done\" $route/1.a.md') or write it as a block",
        ),
        (  # a flow list has the same trap
            "judges: [echo passed: true]\n",
            "error: route/1.a.guard: judges[1]: a ': ' inside an unquoted command makes YAML read a mapping "
            "instead of the command (echo passed: true); quote the whole command (- 'echo passed: true')",
        ),
        (  # an apostrophe in the command: the fix shown uses double quotes
            "judges:\n  - echo it's: fine\n",
            "error: route/1.a.guard: judges[1]: a ': ' inside an unquoted command makes YAML read a mapping "
            "instead of the command (echo it's: fine); quote the whole command (- \"echo it's: fine\")",
        ),
        (  # two ': ' and YAML cannot read it at all: the syntax error names the same trap and fix
            "judges:\n  - echo a: b: c\n",
            "error: route/1.a.guard: line 2: malformed YAML (mapping values are not allowed here); a ': ' "
            "inside an unquoted command makes YAML read a mapping; " + TRAP_FIX,
        ),
    ],
)
def test_the_colon_trap_is_refused_with_its_fix(git_repo: Path, guard: str, expected: str) -> None:
    route = make_route(git_repo, {"1.a": "Write 1.a.md.\n"}, {"1.a": guard})
    write(route / "1.a.md", "status: done\n")
    ran = run_route(["route.stone.set", "--route", "route", "--stone", "1.a", "--as", "passed"], git_repo)
    assert ran.code == 2
    assert ran.err.startswith(expected) and ran.err.count("\n") == 1, ran.err
    assert not (route / ".route").exists()  # refused before anything ran or was written
    lint = run_route(["route.lint", "--route", "route"], git_repo)
    assert lint.code == 2 and expected.removeprefix("error: ") in lint.out.replace(": error: ", ": ", 1)


def test_both_fixes_the_message_shows_run_as_meant(git_repo: Path) -> None:
    guard = (
        "reviews:\n"
        "  - 'echo blockers: 0; echo nitpicks: 0'\n"
        "judges:\n"
        "  - reviewed?\n"
        "  - |\n"
        "    grep -q 'status: done' $route/1.a.md || exit 2\n"
    )
    route = make_route(git_repo, {"1.a": "Write 1.a.md.\n"}, {"1.a": guard})
    assert run_route(["route.lint", "--route", "route"], git_repo).out == "ok\n"
    write(route / "1.a.md", "status: open\n")
    rejected = stone_set(git_repo, route, "1.a")
    assert rejected.code == 2 and "j2 grep -q 'status: done'" in rejected.out  # the block ran: a no
    write(route / "1.a.md", "status: done\n")
    assert stone_set(git_repo, route, "1.a").code == 0


# ---------------------------------------------------------------- route.lint and bare pytest

PYTEST_WARNING = (
    "pytest exits 1 on failing tests, which the driver reads as a malfunction, not a rejection; write it as "
    "'pytest -q || exit 2'"
)

# judge → whether route.lint warns about it
BARE_PYTEST = [
    ("pytest", True),
    ("pytest -q tests/unit", True),
    ("python -m pytest -q", True),
    ("python3.11 -m pytest", True),
    (".venv/bin/pytest -x", True),
    ("uv run pytest", True),
    ("CI=1 pytest -q", True),
    ("cd app && pytest -q", True),
    ("(pytest -q)", True),
    ("pytest -q || exit 2", False),
    ("python -m pytest -q tests || exit 2", False),
    ("pytest -q; test $? -eq 0 || exit 2", False),
    ("pytest -q && echo 'passed: true' || echo 'passed: false'", False),
    ("echo pytest", False),
    ("grep -q pytest setup.cfg", False),
    ("pytest-watch", False),
    ("make test", False),
    # Read as bash reads it (shellsyntax), not by a pattern over the text: what only looks like a mapping
    # (in a comment, inside a word) maps nothing.
    ("pytest -q  # || exit 2", True),
    ("echo 'exit 2'; pytest -q", True),
    ("pytest -q || { echo failing; exit 2; }", False),
]


@pytest.mark.parametrize("judge, warns", BARE_PYTEST)
def test_lint_warns_about_a_bare_pytest_judge(git_repo: Path, judge: str, warns: bool) -> None:
    (git_repo / "app").mkdir()
    quoted = "'" + judge.replace("'", "''") + "'"  # a YAML single-quoted scalar: ' is written ''
    make_route(git_repo, {"1.a": "Write 1.a.md.\n"}, {"1.a": f"judges:\n  - {quoted}\n"})
    ran = run_route(["route.lint", "--route", "route"], git_repo)
    assert ran.code == 0, ran.out + ran.err
    warning = f"route/1.a.guard: warning: judges[1]: {PYTEST_WARNING}"
    assert (warning in ran.out.splitlines()) is warns, ran.out


def test_a_bare_pytest_judge_really_is_a_malfunction_and_the_fix_a_rejection(git_repo: Path) -> None:
    """Why the warning exists: the same failing test, judged both ways."""
    write(git_repo / "tests" / "test_x.py", "def test_x():\n    assert 1 == 2\n")
    route = make_route(git_repo, {"1.a": "Write 1.a.md.\n"}, {"1.a": "judges:\n  - pytest -q tests\n"})
    write(route / "1.a.md", "done\n")
    assert stone_set(git_repo, route, "1.a").code == 1
    write(route / "1.a.guard", "judges:\n  - pytest -q tests || exit 2\n")
    assert stone_set(git_repo, route, "1.a").code == 2
