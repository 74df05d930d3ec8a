"""The lexer and the word reader on what bash decodes and where words end, with bash itself as the judge."""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from routedriver.shellsyntax import words
from routedriver.shellsyntax.lexer import decode_ansi_c, lex

ANSI_C = [
    "$'\\x72\\x6d'",
    "$'\\162\\155'",
    "$'\\0162'",
    "$'\\400x'",
    "$'\\u0072m'",
    "$'\\U00000072m'",
    "$'\\x{72}m'",
    "$'\\x{4172}'",
    "$'\\x{72'",
    "$'\\x{}x'",
    "$'\\x7z'",
    "$'\\x'",
    "$'\\xZ'",
    "$'\\u'",
    "$'a\\0b'",
    "$'\\cA\\c?\\ca'",
    "$'\\c\\\\x'",
    "$'\\c'",
    "$'\\a\\b\\e\\E\\f\\n\\r\\t\\v'",
    "$'\\\\\\'\\\"\\?'",
    "$'\\q\\8'",
    "$'a\\\nb'",
    "$'\\xc3\\xa9'",
]


def bash_word(word: str, cwd: Path) -> bytes:
    bash = shutil.which("bash") or "bash"
    done = subprocess.run(
        [bash, "-c", f"printf '%s' {word}"], capture_output=True, cwd=cwd, env={}, check=True
    )
    return done.stdout


@pytest.mark.parametrize("word", ANSI_C)
def test_ansi_c_quoting_decodes_as_bash_does(tmp_path: Path, word: str) -> None:
    decoded = decode_ansi_c(word)
    assert decoded.certain, word
    assert decoded.text.encode() == bash_word(word, tmp_path), word


@pytest.mark.parametrize("word", ["$'\\u00e9'", "$'\\U0001F600'", "$'\\U110000'", "$'\\xff'", "$'\\c\u00e9'"])
def test_what_the_locale_decides_is_not_certain(word: str) -> None:
    assert not decode_ansi_c(word).certain


class Lines:
    def __init__(self) -> None:
        self.lines: list[list[list[str]]] = []
        self.nested_scripts: list[str] = []
        self.reasons: list[str] = []

    def nested(self, script: str) -> None:
        self.nested_scripts.append(script)

    def unsure(self, reason: str) -> None:
        self.reasons.append(reason)

    def line(self, commands: list[words.SimpleCommand]) -> None:
        self.lines.append([[word.text for word in command.words] for command in commands])


def read(script: str) -> Lines:
    sink = Lines()
    words.read(script, sink)
    return sink


@pytest.mark.parametrize(
    ("script", "lines"),
    [
        ("a 'b c' \"d $e\" f\\ g", [[["a", "b c", "d $e", "f g"]]]),
        ("a; b && c | d\ne", [[["a"], ["b"], ["c"], ["d"]], [["e"]]]),
        ("x\\\ny z", [[["xy", "z"]]]),  # a continuation joins the word
        ("echo a#b #c\nd", [[["echo", "a#b"]], [["d"]]]),
        ("echo \\;#b", [[["echo", ";#b"]]]),
        ("echo a \\\n#b\nc", [[["echo", "a"]], [["c"]]]),  # the continuation goes, the comment stays
        ("2>err cmd 3>&1 <in arg", [[["cmd", "arg"]]]),
        ("cat <<A <<'B'\n$x\nA\n$y\nB\nnext", [[["cat"]], [["next"]]]),
        ('cat <<<"$x" more', [[["cat", "more"]]]),
        ("a{b,c}d", [[["abd", "acd"]]]),
    ],
)
def test_words_and_lines(script: str, lines: list[list[list[str]]]) -> None:
    assert read(script).lines == lines


def test_substitutions_are_handed_over_to_be_read_in_turn() -> None:
    sink = read('echo $(a "$(b)") `c \\`d\\`` "$(e)" <(f) ${x:-$(g)} $(( $(h) )) <<E\n$(i)\nE')
    assert sink.nested_scripts == ['a "$(b)"', "c `d`", "e", "f", "g", "h", "i"]
    assert sink.reasons == []


@pytest.mark.parametrize(
    ("script", "reason"),
    [
        ("echo 'x", "unterminated single quote"),
        ('echo "x', "unterminated double quote"),
        ("echo $'x", "unterminated $' quote"),
        ("echo $(x", "unbalanced $("),
        ("echo `x", "unterminated backtick"),
        ("echo ${x", "unbalanced ${"),
        ("cat <<E\nx", "here-document not terminated"),
        ("cat <<E", "here-document without its body"),
        ("cat << ;", "here-document without a delimiter"),
    ],
)
def test_what_cannot_be_read_is_said(script: str, reason: str) -> None:
    assert read(script).reasons[:1] == [reason]


def test_assignments_and_reserved_words_only_when_typed_bare_and_first() -> None:
    def first(script: str) -> words.SimpleCommand:
        commands: list[words.SimpleCommand] = []
        sink = Lines()
        sink.line = commands.extend  # type: ignore[method-assign]
        words.read(script, sink)
        return commands[0]

    assert words.is_assignment(first("A=1 x").words[0])
    assert not words.is_assignment(first('"A"=1 x').words[0])  # bash runs a program named A=1
    assert not words.is_assignment(first("\\A=1 x").words[0])
    assert words.is_bare(first("if x").words[0])
    assert not words.is_bare(first('""if x').words[0])  # a quoted if is a program name
    assert first("if x").keywords and not first(">out if x").keywords  # after a redirection too


def test_lexing_is_linear_on_long_hostile_lines() -> None:
    for text in ("rm " * 20000, ";#" * 30000, "\\ #" * 20000, "'a'\"b\"$c" * 8000, "$(" * 3000 + ")" * 3000):
        started = time.perf_counter()
        lex(text)
        read(text)
        assert time.perf_counter() - started < 5.0, text[:20]  # quadratic would take minutes


def test_every_token_keeps_its_span() -> None:
    text = "a \"b $(c 'd') e\" <<X # f\n${g}\nX\n"
    tokens = lex(text)
    assert all(0 <= token.start <= token.end <= len(text) for token in tokens)
    assert "".join(text[token.start : token.end] for token in tokens if token.kind == "comment") == "# f"
    body = next(token for token in tokens if token.kind == "body")
    assert text[body.start : body.end] == "${g}\n"


def test_the_runtime_never_imports_tree_sitter() -> None:
    code = (
        "import sys\n"
        "from routedriver.brain.permissions.shell import split_command\n"
        "from routedriver.route.subst import substitute\n"
        "split_command('ls $(x)'); substitute('echo $route')\n"
        "assert not [name for name in sys.modules if name.startswith('tree_sitter')], sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
