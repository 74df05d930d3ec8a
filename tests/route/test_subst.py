"""$route/$stone/$hash substitution: every value round-trips through bash and nothing in it ever runs."""

from __future__ import annotations

from pathlib import Path

import pytest

from routedriver import proc
from routedriver.route.subst import substitute

HOSTILE = [
    "plain",
    "with space",
    "it's",
    'say "hi"',
    "$(touch PWNED)",
    "`touch PWNED`",
    "back\\slash",
    "${HOME}",
    "a;touch PWNED",
    "ünï côdé ✓",
    "-starts-with-dash",
    "new\nline",
    "'",
    "\\'",
    "$'x'",
    "",
]

# Each template prints the value alone on its stdout, wrapped in [ ].
TEMPLATES = [
    "printf '[%s]' $route",
    "printf '[%s]' ${route}",
    'printf "[%s]" "$route"',
    'printf "[%s]" "${route}"',
    "printf '[%s]' '$route'",
    'printf "[%s]" "$(printf \'%s\' $route)"',
    "printf '[%s]' \"$(printf '%s' \"$route\")\"",
    "printf '[%s]' $'$route'",
]


@pytest.mark.parametrize("value", HOSTILE)
@pytest.mark.parametrize("template", TEMPLATES)
def test_values_round_trip_and_never_execute(tmp_path: Path, value: str, template: str) -> None:
    command = substitute(template, {"route": value, "stone": "s", "hash": "h"})
    result = proc.run(command, shell="bash", cwd=tmp_path, timeout=10)
    assert not (tmp_path / "PWNED").exists(), command
    assert result.stdout == f"[{value}]", command


@pytest.mark.parametrize("value", [v for v in HOSTILE if v and not any(c.isspace() for c in v)])
def test_values_inside_backticks(tmp_path: Path, value: str) -> None:
    # An unquoted command substitution is word-split by the shell, so only values without spaces compare.
    command = substitute("printf '[%s]' `printf '%s' $route`x", {"route": value})
    result = proc.run(command, shell="bash", cwd=tmp_path, timeout=10)
    assert not (tmp_path / "PWNED").exists(), command
    assert result.stdout == f"[{value}x]", command


def test_other_variables_and_longer_names_are_left_for_the_shell() -> None:
    values = {"route": "R", "stone": "S", "hash": "H"}
    assert substitute("echo $routes $ROUTE $stone_x ${stones} $HOME", values) == (
        "echo $routes $ROUTE $stone_x ${stones} $HOME"
    )
    assert substitute("echo $route/$stone.md ${hash}x", values) == "echo R/S.md Hx"


def test_quoting_per_context() -> None:
    values = {"route": "a b"}
    assert substitute("cat $route", values) == "cat 'a b'"
    assert substitute('cat "$route/x"', values) == 'cat "a b/x"'
    assert substitute("cat '$route/x'", values) == "cat '''a b''/x'"
    assert substitute('cat "$route"', {"route": 'q"$`\\'}) == 'cat "q\\"\\$\\`\\\\"'


def test_escaped_dollar_is_not_substituted() -> None:
    assert substitute(r"echo \$route", {"route": "R"}) == r"echo \$route"
