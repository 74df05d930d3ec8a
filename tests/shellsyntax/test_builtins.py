"""``shellsyntax.builtins``: what echo and printf print, checked against bash itself."""

from __future__ import annotations

import subprocess

import pytest

from routedriver.shellsyntax.builtins import echo_output, printf_output

PRINTF = [
    ["r\\x6d -rf x"],
    ["%s -rf x", "rm"],
    ["\\162\\155 -rf x"],
    ["r\\u006d x"],
    ["%b", "r\\x6d x"],
    ["a%sb\\n", "1", "2", "3"],  # the format again while arguments are left
    ["%s %s\\n", "a"],  # missing arguments are empty
    ["%%x%c", "yes"],
    ["--", "r\\x6d"],
    ["\\'\\\"\\?\\q"],
    ["%b", "a\\cb"],  # \c in a %b argument ends all output
    ["%b%s", "a\\cb", "zz"],
    ["x\\cy"],  # ... and is no escape in the format
    ["%b", "\\0155"],
    ["\\0155"],
    ["\\x{72}"],
]
ECHO = [
    ["-e", "r\\x6d -rf x"],
    ["-ne", "r\\x6d"],
    ["-n", "-e", "r\\0155"],
    ["-E", "a\\x41"],
    ["a\\x41"],
    ["-e", "a\\cb"],
    ["-en", "x\\ty"],
    ["-x", "y"],
    ["--", "-e"],
    ["-e", "\\u0072m", "\\U0000006d"],
]


def bash(builtin: str, args: list[str], prefix: str = "") -> str:
    done = subprocess.run(
        ["bash", "-c", f'{prefix}{builtin} "$@"', "_", *args], capture_output=True, check=True
    )
    return done.stdout.decode("utf-8", errors="surrogateescape")


@pytest.mark.parametrize("args", PRINTF)
def test_printf_prints_what_bash_prints(args: list[str]) -> None:
    assert printf_output(list(args)) == bash("printf", args)


@pytest.mark.parametrize("args", ECHO)
def test_echo_prints_what_bash_prints(args: list[str]) -> None:
    assert echo_output(list(args)) == bash("echo", args)
    assert echo_output(list(args), escapes=True) == bash("echo", args, prefix="shopt -s xpg_echo; ")


@pytest.mark.parametrize("args", [["%d", "3"], ["%5s", "x"], ["-v", "x", "y"], ["%q", "a b"]])
def test_printf_says_what_it_cannot_work_out(args: list[str]) -> None:
    assert printf_output(list(args)) is None
