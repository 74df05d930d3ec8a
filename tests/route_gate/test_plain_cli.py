"""route.stone.* and route.verify read plain command lines themselves (no click import) and hand the rest to
click: both readings must agree on every plain command line, from each command's one table of options."""

from __future__ import annotations

from pathlib import Path

import pytest

from routedriver.cli import _plain
from routedriver.cli.route_stone import DEL, GET, JUDGE, SET
from routedriver.cli.route_verify import VERIFY

PLAIN = [
    (VERIFY, []),
    (VERIFY, ["--all"]),
    (VERIFY, ["--all", "--json", "--allow-incomplete", "--require-signed"]),
    (VERIFY, ["--route", "a", "--route=b c", "--route", "ü/ß"]),
    (
        VERIFY,
        ["--route=r", "--approvers", "who.txt", "--allowed-signers=signers", "--junit", "out/junit.xml"],
    ),
    (VERIFY, ["--approvers", "first.txt", "--approvers", "last.txt"]),  # the last one wins, as in click
    (VERIFY, ["--junit=x.xml", "--all", "--json"]),
    (GET, []),
    (GET, ["--say"]),
    (GET, ["--stone", "@next-all", "--json"]),
    (GET, ["--route=r", "--stone=1.*", "--say", "--json"]),
    (GET, ["--stone", "a", "--stone", "b"]),  # the last one wins, as in click
    (GET, ["--route", "ü/ß b", "--stone", "2.plan"]),
    (SET, ["--stone", "1.vision", "--as", "passed"]),
    (SET, ["--as=approved", "--stone=2.b", "--no-commit", "--json", "--route", "r"]),
    (SET, ["--stone", "1.x", "--as", "passed", "--rerun", "--rerun"]),
    (DEL, ["--stone", "3.*"]),
    (DEL, ["--route", "r", "--stone", "3.x", "--json"]),
    (JUDGE, ["--mechanism", "reviewed?", "--stone", "1.a"]),
    (JUDGE, ["--mechanism=approved?", "--stone", "1.a", "--route", "r"]),
    (JUDGE, ["--mechanism", "reviewed?", "--stone", "1.a", "--allow-blockers", "0", "--allow-nitpicks=12"]),
    (JUDGE, ["--mechanism", "reviewed?", "--stone", "1.a", "--allow-blockers", "007"]),
]

# Not plain: click decides (help, usage errors, its own reading of odd values).
NOT_PLAIN = [
    (VERIFY, ["--help"]),
    (VERIFY, ["--al"]),
    (VERIFY, ["route"]),
    (VERIFY, ["--route"]),
    (VERIFY, ["--route="]),
    (VERIFY, ["--route", "--all"]),
    (VERIFY, ["--all=yes"]),
    (VERIFY, ["--", "--all"]),
    (VERIFY, ["-h"]),
    (VERIFY, ["--approvers", "."]),  # a directory: click says so
    (GET, ["--help"]),
    (GET, ["--version"]),
    (GET, ["--stone"]),
    (GET, ["--stone", "--say"]),
    (GET, ["--say=1"]),
    (GET, ["1.vision"]),
    (GET, ["--sa"]),
    (SET, ["--stone", "1.a"]),  # --as is required
    (SET, ["--as", "passed"]),  # --stone is required
    (SET, ["--stone", "1.a", "--as", "pass"]),  # not one of the choices
    (SET, ["--stone", "1.a", "--as", "Passed"]),
    (DEL, []),
    (JUDGE, ["--stone", "1.a"]),
    (JUDGE, ["--mechanism", "reviewed", "--stone", "1.a"]),
    (JUDGE, ["--mechanism", "reviewed?", "--stone", "1.a", "--allow-blockers", "-1"]),
    (JUDGE, ["--mechanism", "reviewed?", "--stone", "1.a", "--allow-blockers", "two"]),
    (JUDGE, ["--mechanism", "reviewed?", "--stone", "1.a", "--allow-blockers", "١"]),  # a digit, not ASCII
    (JUDGE, ["--mechanism", "reviewed?", "--stone", "1.a", "--allow-nitpicks", "+3"]),
    (JUDGE, ["--mechanism", "reviewed?", "--stone", "1.a", "--allow-nitpicks", "9" * 5000]),
]


def _ids(case: tuple[_plain.PlainCommand, list[str]]) -> str:
    shown = (word if len(word) < 30 else f"{word[:10]}…({len(word)})" for word in case[1])
    return f"{case[0].prog} {' '.join(shown)}"


def _click_reading(command: _plain.PlainCommand, argv: list[str]) -> dict[str, object]:
    clicked = command.click()
    with clicked.make_context(command.prog, list(argv)) as context:
        return dict(context.params)


@pytest.mark.parametrize("case", PLAIN, ids=_ids)
def test_plain_command_lines_are_read_as_click_reads_them(
    case: tuple[_plain.PlainCommand, list[str]],
) -> None:
    command, argv = case
    mine = _plain.parse(command.options, argv)
    assert mine is not None
    assert mine == _click_reading(command, argv)
    assert set(mine) == {option.dest for option in command.options}


@pytest.mark.parametrize("case", NOT_PLAIN, ids=_ids)
def test_anything_else_goes_to_click(case: tuple[_plain.PlainCommand, list[str]]) -> None:
    command, argv = case
    assert _plain.parse(command.options, argv) is None


def test_paths_are_paths_in_both_readings() -> None:
    argv = ["--junit", "j.xml", "--approvers", "a.txt", "--allowed-signers", "s"]
    mine = _plain.parse(VERIFY.options, argv)
    assert mine is not None
    for key in ("junit_path", "approvers", "allowed_signers"):
        assert isinstance(mine[key], Path) and mine[key] == _click_reading(VERIFY, argv)[key]


def test_help_shows_defaults_choices_and_what_is_required() -> None:
    get, judge = GET.click(), JUDGE.click()
    with get.make_context(GET.prog, []) as context:
        assert "[default: @next-one]" in get.get_help(context)
    with judge.make_context(JUDGE.prog, ["--mechanism", "approved?", "--stone", "x"]) as context:
        shown = judge.get_help(context)
    assert "--mechanism [reviewed?|approved?]" in shown and "[required]" in shown


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["route.stone.set", "--stone", "1.a"], "error: Missing option '--as'"),
        (["route.stone.set", "--stone", "1.a", "--as", "pass"], "error: Invalid value for '--as'"),
        (
            ["route.stone.judge", "--mechanism", "reviewed?", "--stone", "1.a", "--allow-blockers", "-1"],
            "error: Invalid value for '--allow-blockers'",
        ),
        (["route.stone.get", "--bogus"], "error: No such option '--bogus'"),
        (
            [
                "route.stone.judge",
                "--mechanism",
                "reviewed?",
                "--stone",
                "1.a",
                "--allow-blockers",
                "9" * 5000,
            ],
            "error: Invalid value for '--allow-blockers'",
        ),
    ],
)
def test_a_command_line_click_judges_is_refused_in_one_line(
    argv: list[str], line: str, tmp_path: Path
) -> None:
    from tests.conftest import run_cli

    done = run_cli(argv, tmp_path)
    assert done.code == 2 and done.out == ""
    assert done.err.startswith(line) and done.err.count("\n") == 1, done.err
    assert done.err.rstrip().endswith(f"see {argv[0]} --help")


@pytest.mark.parametrize(
    "argv",
    [
        ["route.stone.get", "--route", "nowhere"],
        ["route.stone.set", "--route", "nowhere", "--stone", "1.a", "--as", "passed"],
        ["route.stone.del", "--route", "nowhere", "--stone", "1.a"],
        ["route.stone.judge", "--mechanism", "reviewed?", "--route", "nowhere", "--stone", "1.a"],
    ],
    ids=lambda argv: argv[0],
)
def test_a_plain_command_line_never_imports_click(argv: list[str], tmp_path: Path) -> None:
    import sys

    from tests.conftest import run_cli

    probe = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('click loaded:', 'click' in sys.modules, file=sys.stderr))\n"
        f"sys.argv = {argv!r}\n"
        "from routedriver.cli import route_stone\n"
        f"route_stone.{argv[0].rpartition('.')[2]}_main()\n"
    )
    done = run_cli([sys.executable, "-c", probe], tmp_path)
    assert done.code == 2 and done.err.startswith("error: route not found: nowhere"), done.err
    assert done.err.endswith("click loaded: False\n")
