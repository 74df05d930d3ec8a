"""route.verify reads plain command lines itself (no click import) and hands the rest to click: both must
read every plain command line the same way, from the one ``OPTIONS`` table."""

from __future__ import annotations

from pathlib import Path

import pytest

from routedriver.cli.route_verify import OPTIONS, click_command, parse_simple

PLAIN = [
    [],
    ["--all"],
    ["--all", "--json", "--allow-incomplete", "--require-signed"],
    ["--route", "a", "--route=b c", "--route", "ü/ß"],
    ["--route=r", "--approvers", "who.txt", "--allowed-signers=signers", "--junit", "out/junit.xml"],
    ["--approvers", "first.txt", "--approvers", "last.txt"],  # the last one wins, as in click
    ["--junit=x.xml", "--all", "--json"],
]

# Not plain: click decides (help, usage errors, its own reading of odd values).
NOT_PLAIN = [
    ["--help"],
    ["--al"],
    ["route"],
    ["--route"],
    ["--route="],
    ["--route", "--all"],
    ["--all=yes"],
    ["--", "--all"],
    ["-h"],
    ["--approvers", "."],  # a directory: click says so
]


def _click_reading(argv: list[str]) -> dict[str, object]:
    command = click_command()
    with command.make_context("route.verify", list(argv)) as context:
        return dict(context.params)


@pytest.mark.parametrize("argv", PLAIN, ids=lambda argv: " ".join(argv) or "nothing")
def test_plain_command_lines_are_read_as_click_reads_them(argv: list[str]) -> None:
    mine = parse_simple(argv)
    assert mine is not None
    assert mine == _click_reading(argv)
    assert set(mine) == {option.dest for option in OPTIONS}


@pytest.mark.parametrize("argv", NOT_PLAIN, ids=" ".join)
def test_anything_else_goes_to_click(argv: list[str]) -> None:
    assert parse_simple(argv) is None


def test_paths_are_paths_in_both_readings() -> None:
    argv = ["--junit", "j.xml", "--approvers", "a.txt", "--allowed-signers", "s"]
    mine = parse_simple(argv)
    assert mine is not None
    for key in ("junit_path", "approvers", "allowed_signers"):
        assert isinstance(mine[key], Path) and mine[key] == _click_reading(argv)[key]
