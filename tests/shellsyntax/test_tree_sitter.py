"""The bash reader checked against an independent parser: tree-sitter-bash (a test-only dependency).

For every command of the corpus, the program words tree-sitter finds (its ``command`` nodes' names, decoded
by bash itself) must be the program words the reader finds (``shellsyntax.words``, recursing into
substitutions). Where the two disagree, the command is listed in ``DISAGREEMENTS`` with the words each side
reads and why; bash is then the judge (``test_bash_runs_the_words_the_reader_reads``), and the permission
tables (tests/brain/test_permission_rules.py) hold a case for it.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import tree_sitter
import tree_sitter_bash

from routedriver.shellsyntax import words
from tests.brain.test_permission_rules import BYPASSES, GIT_HIDDEN_PUSHES, GIT_PUSHES, HARMLESS, UNSURE

COMPUTED = "<computed>"  # a program word known only at run time ($x, $( ), a glob)
# Words that start a construct, not a program (tree-sitter has other nodes for them).
_KEYWORDS = frozenset(
    {"!", "{", "}", "then", "else", "elif", "fi", "do", "done", "if", "while", "until", "esac"}
)
_NOT_COMMANDS = frozenset(
    {"for", "select", "case", "[", "[[", "export", "declare", "typeset", "local", "readonly"}
)
_RUNS_SOMETHING = re.compile(r"`|\$\(|[<>]\(")  # a raw word bash cannot be asked to print safely

# Forms bash decodes into words, and forms where a reader may lose track of where a word ends.
DECODING = [
    "$'\\x72\\x6d' -rf x",
    "$'\\162\\155' -rf x",
    "$'\\u0072m' -rf x",
    "$'\\U0001F600x' y",
    "$'\\x{72}m' x",
    "$'\\x{4172}m' x",
    "$'a\\0b' x",
    "$'\\cA' x",
    "$'\\q\\x' x",
    "$'\\e[0m' x",
    '$"rm" -rf x',
    "r$'\\x6d'\"\"'' x",
    "'r'\"m\"\\ x y",
    "x=1 y=$'\\x72' rm x",
    '"x"=1 rm',
    "\\if x",
    '""do x',
    "r\\\nm x",
    "echo a \\\n#b; rm x",
    "echo \\;#b; rm x",
    "cat <<EOF\n$(rm x)\nEOF\nls",
    "cat <<'EOF'\n$(rm x)\nEOF\nls",
    'echo "$(cat <<X\nhi\nX)" && ls',
    "echo $(( $(rm x) + 1 ))",
    "(( x = $(rm y) ))",
    "echo ${x:-$(rm y)} `ls`",
    "echo \"`rm x`\" '$(ls)'",
    "f() { rm x; }; f",
    "if true; then rm x; elif false; then ls; fi",
    "a=1 b=2 rm x 2>/dev/null",
    "echo hi # it's a comment $(rm x)",
]
CORPUS = sorted({*BYPASSES, *UNSURE, *HARMLESS, *GIT_PUSHES, *GIT_HIDDEN_PUSHES, *DECODING})

# command → (what tree-sitter reads, what the reader reads, why they differ).
_BRACES = "tree-sitter makes no command of a brace expansion; bash runs its first word"
_JOINED = "bash removes a line continuation before it reads words, so the word goes on (no comment starts)"
_TIME = "tree-sitter reads bash's reserved word time as a command name; bash times the pipeline after it"
_LOCALE = "what bash makes of it depends on the locale or is no text: the reader says so, and rules ask"
DISAGREEMENTS: dict[str, tuple[set[str], set[str], str]] = {
    "{rm,-rf,build}": (set(), {"rm"}, _BRACES),
    "{/bin/rm,-rf,build}": (set(), {"/bin/rm"}, _BRACES),
    "{$'\\x72m',-rf,build}": (set(), {"rm"}, _BRACES),
    "r\\\nm -rf build": ({"r"}, {"rm"}, _JOINED),
    "r\\\nm x": ({"r"}, {"rm"}, _JOINED),
    "echo a\\\n#b; rm -rf build": ({"echo"}, {"echo", "rm"}, _JOINED),
    "echo \\ #b; rm -rf build": ({"echo"}, {"echo", "rm"}, "an escaped blank does not start a comment"),
    "'r'\"m\"\\ x y": ({"rm"}, {"rm x"}, "an escaped blank is part of the word"),
    "cat <<-EOF\n\t$(rm -rf build)\n\tEOF": ({"cat"}, {"cat", "rm"}, "tree-sitter does not read <<- bodies"),
    "$'\\U0001F600x' y": ({"\\U0001F600x"}, {COMPUTED}, _LOCALE),
    "$'\\U110000' -rf build": ({"\\U00110000"}, {COMPUTED}, _LOCALE),
    "$'\\xff\\xfe' -rf build": ({"\udcff\udcfe"}, {COMPUTED}, _LOCALE),
    "time rm -rf build": ({"time"}, {"rm"}, _TIME),
    "time -p -- rm -rf build": ({"time"}, {"rm"}, _TIME),
    "time -p pytest -q": ({"time"}, {"pytest"}, _TIME),
    "time { rm -rf build; }": ({"time", "}"}, {"rm"}, _TIME),
    "time -p { rm -rf build; }": ({"time", "}"}, {"rm"}, _TIME),
    "! time { rm -rf build; }": ({"time", "}"}, {"rm"}, _TIME),
    "time ! { rm -rf build; }": ({"time", "}"}, {"rm"}, _TIME),
    "exec 3>&1; time { rm -rf build; } 2>&3": ({"exec", "time", "}"}, {"exec", "rm"}, _TIME),
    "time function f { rm -rf build; }; f": ({"time", "}", "f"}, {"rm", "f"}, _TIME),
    "time coproc rm -rf build; wait": ({"time", "wait"}, {"rm", "wait"}, _TIME),
}


def _tree_sitter_names(command: str) -> list[str]:
    parser = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))
    names: list[str] = []
    stack = [parser.parse(command.encode()).root_node]
    while stack:
        node = stack.pop()
        if node.type == "command":
            name = node.child_by_field_name("name")
            if name is not None and name.text is not None:
                names.append(name.text.decode())
        stack.extend(node.children)
    return names


def _bash_word(raw: str, cwd: Path) -> str:
    """The first word bash makes of ``raw`` (COMPUTED when it holds an expansion or a glob)."""
    if _RUNS_SOMETHING.search(raw):
        return COMPUTED
    script = f"set -u; shopt -s failglob\nprintf '%s\\037' {raw}"
    done = subprocess.run(["bash", "-c", script], capture_output=True, cwd=cwd, env={"PATH": "/usr/bin:/bin"})
    if done.returncode != 0 or not done.stdout:
        return COMPUTED
    return done.stdout.decode(errors="surrogateescape").split("\x1f")[0]


def tree_sitter_program_words(command: str, cwd: Path) -> set[str]:
    return {_bash_word(raw, cwd) for raw in _tree_sitter_names(command)}


class _ProgramWords:
    """A word reader's sink that collects the program word of every simple command, substitutions too."""

    def __init__(self, depth: int = 0) -> None:
        self.found: set[str] = set()
        self.depth = depth

    def nested(self, script: str) -> None:
        inner = _ProgramWords(self.depth + 1)
        if self.depth < 6:
            words.read(script, inner)
        self.found |= inner.found

    def unsure(self, reason: str) -> None:
        pass

    def line(self, commands: list[words.SimpleCommand]) -> None:
        for command in commands:
            found, keywords = command.words, command.keywords
            while found:
                keyword = found[0].text if keywords and words.is_bare(found[0]) else ""
                if keyword in _KEYWORDS or keyword == "function":  # `function NAME { …`
                    found = found[2:] if keyword == "function" else found[1:]
                elif keyword == "time":  # bash's reserved word: `time -p { rm x; }` runs rm
                    found = words.after_time(found)
                elif keyword == "coproc":  # `coproc cmd` runs cmd (`coproc NAME { …; }` is not in the corpus)
                    found = found[1:]
                elif words.is_assignment(found[0]):
                    found, keywords = found[1:], False
                else:
                    break
            if not found or (keywords and words.is_bare(found[0]) and found[0].text in _NOT_COMMANDS):
                continue
            self.found.add(COMPUTED if found[0].expanded else found[0].text)


def reader_program_words(command: str) -> set[str]:
    sink = _ProgramWords()
    words.read(command, sink)
    return sink.found


@pytest.mark.parametrize("command", CORPUS)
def test_the_reader_and_tree_sitter_agree_on_program_words(tmp_path: Path, command: str) -> None:
    theirs, ours = tree_sitter_program_words(command, tmp_path), reader_program_words(command)
    if command in DISAGREEMENTS:
        expected_theirs, expected_ours, _ = DISAGREEMENTS[command]
        assert (theirs, ours) == (expected_theirs, expected_ours), command
    else:
        assert theirs == ours, command


def test_every_listed_disagreement_is_in_the_corpus() -> None:
    assert set(DISAGREEMENTS) <= set(CORPUS)


_JUDGED = [
    command
    for command, (_, ours, _) in DISAGREEMENTS.items()
    if COMPUTED not in ours and not any(word.startswith("/") for word in ours)
]


@pytest.mark.parametrize("command", _JUDGED)
def test_bash_runs_the_words_the_reader_reads(tmp_path: Path, command: str) -> None:
    """Where the two parsers disagree, bash decides: with an empty PATH every program it tries is reported
    by command_not_found_handle (echo, a builtin, reports itself). Other builtins and the functions the
    command defines (listed after it) run without a PATH search, so they are not reported."""
    log, functions = tmp_path / "ran.log", tmp_path / "functions"
    script = (
        'command_not_found_handle() { printf "%s\\n" "$1" >> "$RAN"; }\n'
        'echo() { printf "%s\\n" echo >> "$RAN"; }\n' + command + '\ncompgen -bA function > "$FUNCTIONS"\n'
    )
    bash = shutil.which("bash") or "bash"
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {"PATH": str(empty), "RAN": str(log), "FUNCTIONS": str(functions)}
    subprocess.run([bash, "-c", script], cwd=tmp_path, env=env, timeout=10)
    ran = set(log.read_text().splitlines()) if log.exists() else set()
    unsearched = set(functions.read_text().split()) - {"echo"} if functions.exists() else set()
    assert ran == reader_program_words(command) - unsearched, command
