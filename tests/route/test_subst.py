"""$route/$stone/$hash substitution: every value round-trips through bash and nothing in it ever runs.

The substituted command refers to the exported ROUTE/STONE/HASH variables (as ``guard._run`` exports them),
so these tests run it with the value in that environment, in every quoting context the scanner knows."""

from __future__ import annotations

from pathlib import Path

import pytest

from routedriver import proc
from routedriver.route.subst import environment, substitute
from tests.conftest import git
from tests.route.routes import make_route, stone_set, write

HOSTILE = [
    "plain",
    "with space",
    "it's",
    'say "hi"',
    "$(touch PWNED)",
    "`touch PWNED`",
    " ` $(touch PWNED) ` ",
    "back\\slash",
    "trailing\\",
    "${HOME}",
    "a;touch PWNED",
    "ünï côdé ✓",
    "-starts-with-dash",
    "new\nline",
    "EOF\ntouch PWNED\nEOF",  # would end a heredoc early if it were spliced into one
    "'",
    "\\'",
    "$'x'",
    "*",
    "",
]

# Each template prints the value alone, wrapped in [ ] (a trailing newline is ignored).
TEMPLATES = [
    "printf '[%s]' $route",
    "printf '[%s]' ${route}",
    'printf "[%s]" "$route"',
    'printf "[%s]" "${route}"',
    "printf '[%s]' '$route'",
    'printf "[%s]" "$(printf \'%s\' $route)"',
    "printf '[%s]' \"$(printf '%s' \"$route\")\"",
    "printf '[%s]' $'$route'",
    "printf '[%s]' \"${unset_variable:-$route}\"",
    "printf '[%s]' ${unset_variable:-$route}",
    # comments: their quotes and $(…) mean nothing
    "# don't mind me $(touch PWNED)\nprintf '[%s]' \"$route\"",
    "printf '[%s]' $route # it's $route, `touch PWNED`",
    "printf '[%s]' \"$(# it's here )\nprintf '%s' $route)\"",
    # backticks, also inside double quotes
    "printf '%s' \"`printf '[%s]' $route`\"",
    "printf '%s' \"`printf '[%s]' \"$route\"`\"",
    # heredocs: unquoted (expanding), quoted (literal), tab-stripped, inside $( … ) and backticks
    "cat <<EOF\n[$route]\nEOF",
    "cat <<EOF\n[${route}]\nEOF\n",
    "cat <<'EOF'\n[$route]\nEOF",
    'cat <<"EOF"\n[$route]\nEOF',
    "cat <<\\EOF\n[$route]\nEOF",
    "cat <<-'EOF'\n\t[$route]\n\tEOF",
    "cat <<- EOF\n\t\t[$route]\n\tEOF",
    "printf '%s' \"$(cat <<EOF\n[$route]\nEOF\n)\"",
    "printf '%s' \"$(cat <<'EOF'\n[$route]\nEOF\n)\"",
    "printf '%s' \"`cat <<EOF\n[$route]\nEOF\n`\"",
    "cat <<EOF # it's a comment\n[$(printf '%s' \"$route\")]\nEOF",
    # the review from the audit: a comment with an apostrophe, a double-quoted echo, an unquoted heredoc
    '# don\'t lint here\necho "reviewing" >&2\ncat <<PROMPT\n[$route]\nPROMPT',
]


def run_substituted(template: str, value: str, cwd: Path) -> proc.ProcResult:
    values = {"route": value, "stone": "s", "hash": "h"}
    return proc.run(
        substitute(template, values), shell="bash", cwd=cwd, timeout=10, extra_env=environment(values)
    )


@pytest.mark.parametrize("value", HOSTILE)
@pytest.mark.parametrize("template", TEMPLATES)
def test_values_round_trip_and_never_execute(tmp_path: Path, value: str, template: str) -> None:
    result = run_substituted(template, value, tmp_path)
    command = substitute(template)
    assert not (tmp_path / "PWNED").exists(), command
    assert result.returncode == 0, (command, result.stderr)
    assert result.stdout.removesuffix("\n") == f"[{value}]", command


@pytest.mark.parametrize("value", [v for v in HOSTILE if v and not any(c.isspace() for c in v) and v != "*"])
def test_values_inside_backticks(tmp_path: Path, value: str) -> None:
    # An unquoted command substitution is word-split (and globbed) by the shell, so only such values compare.
    result = run_substituted("printf '[%s]' `printf '%s' $route`x", value, tmp_path)
    assert not (tmp_path / "PWNED").exists()
    assert result.stdout == f"[{value}x]"


def test_no_value_ever_enters_the_command_text() -> None:
    values = {"route": "$(touch MARK)", "stone": "`touch MARK`", "hash": "h"}
    for template in TEMPLATES:
        assert "MARK" not in substitute(template.replace("$route", "$route $stone $hash"), values)


def test_several_heredocs_on_one_line(tmp_path: Path) -> None:
    template = "cat <<A; cat <<'B' ; cat <<-C\n1 $route\nA\n2 $stone\nB\n\t3 ${hash}\n\tC\necho \"4 $route\""
    values = {"route": "r $(touch PWNED)", "stone": "s 'q' `x`", "hash": "h\\"}
    result = proc.run(substitute(template, values), shell="bash", cwd=tmp_path, extra_env=environment(values))
    assert not (tmp_path / "PWNED").exists()
    assert result.stdout == "1 r $(touch PWNED)\n2 s 'q' `x`\n3 h\\\n4 r $(touch PWNED)\n"


def test_a_quoted_heredoc_prints_its_own_text_unchanged(tmp_path: Path) -> None:
    # The delimiter loses its quotes so that $route can expand; the rest of the body must still print as is.
    template = "cat <<'EOF'\ncost: $5 `not run` \\ \\$ $HOME $routes for $route\\\nEOF\n"
    result = run_substituted(template, "R", tmp_path)
    assert result.stdout == "cost: $5 `not run` \\ \\$ $HOME $routes for R\\\n"


def test_a_heredoc_closed_by_its_substitution(tmp_path: Path) -> None:
    # bash ends a heredoc at "DELIM)" inside $( … ), and the ')' closes the substitution
    result = run_substituted('echo "$(cat <<C\n[$route]\nC)" "$route"', "a 'b'", tmp_path)
    assert result.stdout == "[a 'b'] a 'b'\n"


def test_other_variables_and_longer_names_are_left_for_the_shell() -> None:
    values = {"route": "R", "stone": "S", "hash": "H"}
    assert substitute("echo $routes $ROUTE $stone_x ${stones} $HOME $$stone \\$route", values) == (
        "echo $routes $ROUTE $stone_x ${stones} $HOME $$stone \\$route"
    )
    assert substitute("echo $route/$stone.md ${hash}x", values) == 'echo "${ROUTE}"/"${STONE}".md "${HASH}"x'
    assert substitute("echo $route $stone", {"route": "R"}) == 'echo "${ROUTE}" $stone'


def test_reference_per_context() -> None:
    assert substitute("cat $route") == 'cat "${ROUTE}"'
    assert substitute('cat "$route/x"') == 'cat "${ROUTE}/x"'
    assert substitute("cat '$route/x'") == "cat ''\"${ROUTE}\"'/x'"
    assert substitute("cat $'$route'") == "cat $''\"${ROUTE}\"$''"
    assert substitute("cat <<X\n$route\nX") == "cat <<X\n${ROUTE}\nX"
    assert substitute("cat <<'X'\n$route\nX") == "cat <<X\n${ROUTE}\nX"
    assert substitute("cat <<'X y'\n$route\nX y") == "cat <<'X y'\n$route\nX y"  # needs its quotes: as is
    assert substitute("cat <<'X'\nno names\nX") == "cat <<'X'\nno names\nX"  # nothing to expand: as is
    assert substitute("x # it's $route\necho $route") == 'x # it\'s $route\necho "${ROUTE}"'
    assert substitute("echo a#$route") == 'echo a#"${ROUTE}"'  # '#' inside a word is no comment
    assert substitute("echo ${x#$route} $((1<<2)) $route") == 'echo ${x#"${ROUTE}"} $((1<<2)) "${ROUTE}"'


def test_the_audit_repro_runs_nothing_and_prints_the_names(git_repo: Path) -> None:
    """Stone names with $(…) and backticks, in a review with a comment, double quotes, backticks and a
    heredoc, through route.stone.set: nothing runs, and the review's text holds the exact names."""
    review = (
        'reviews:\n  - |\n    # don\'t lint here\n    echo "reviewing $stone"\n'
        '    echo "`echo $stone`"\n    cat <<PROMPT\n    Review $stone in $route.\n    PROMPT\n'
        "    cat <<'RAW'\n    raw: $stone\n    RAW\n"
        '    echo "blockers: 0"; echo "nitpicks: 0"\n'
    )
    names = ["1.x $(touch PWNED)", "1.z ` $(touch P2) `", "1.q it's"]
    route = make_route(git_repo, {name: "x\n" for name in names}, {name: review for name in names})
    for name in names:
        write(route / f"{name}.md", "a\n")
    git(git_repo, "add", "-A")
    for name in names:
        result = stone_set(git_repo, route, name)
        assert result.code == 0, result.err
        assert not (git_repo / "PWNED").exists() and not (git_repo / "P2").exists()
        recorded = next(
            (route / ".route").glob(f"{name.replace('[', '[[]')}.guard.review.*.r1.md")
        ).read_text()
        output = recorded.split("\n---\n", 1)[1]
        assert output == (
            f"reviewing {name}\n{name}\nReview {name} in route.\nraw: {name}\nblockers: 0\nnitpicks: 0\n"
        )
