"""The words and simple commands bash makes of a script, from the lexer's tokens.

``read(script, sink)`` hands ``sink`` each line's simple commands (``SimpleCommand``: its words after quote
removal, brace expansion and ``$'…'`` decoding, what it is fed on stdin, the files its stdin is redirected
from, the command it is piped from), the text of every command substitution, process substitution and
backtick command it meets (``sink.nested``, to be read in turn), and every reason it cannot be sure of what
it read (``sink.unsure``). A sink that also has ``expansion(kind, text)`` is told the text of every
arithmetic expansion or command (``$(( … ))``, ``(( … ))``, ``$[ … ]``: kind ``"arith"``) and parameter
expansion (``${ … }``: kind ``"param"``), wherever it stands: bash evaluates what they name at run time. A
word whose value is only known at run time (``$x``, ``$( … )``, ``$[ … ]``, a glob) is marked ``expanded``;
the lexer's tokens stay its only view of the syntax.

It does not know what programs do: which words of ``sudo -u x rm`` are a command is for the reader of
permissions (``brain.permissions.shell``); ``route.lint`` takes the first word.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import NamedTuple, Protocol

from routedriver.shellsyntax import braces
from routedriver.shellsyntax.lexer import REDIRECTIONS, SUBSTITUTIONS, Token, decode_ansi_c, lex

ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?\+?=")
_GLOB_CHARS = re.compile(r"[*?[]")
_PLACEHOLDER = {"$(": "$(…)", "`": "`…`", "<(": "/dev/fd/63", ">(": "/dev/fd/63"}  # a substitution's text
_UNBALANCED = {
    '"': "unterminated double quote",
    '$"': "unterminated double quote",
    "$(": "unbalanced $(",
    "`": "unterminated backtick",
    "${": "unbalanced ${",
    "$((": "unbalanced $((",
    "((": "unbalanced ((",
    "<(": "unbalanced process substitution",
    ">(": "unbalanced process substitution",
}


@dataclass
class Word:
    text: str = ""
    expanded: bool = False  # holds an unquoted $var, $( ), ` `, glob or <( ): its value is unknown here
    started: bool = False
    braced: bool = False  # made by brace expansion: known, but a command name made so is suspicious
    chars: list[tuple[str, bool]] = field(default_factory=list)  # each character, and whether typed bare
    first_quote: int = -1  # where the first quote or escape stands in text ("" counts too); -1: none


def is_assignment(word: Word) -> bool:
    """``NAME=value`` (``NAME[i]=``, ``NAME+=``) with its name typed bare: ``"x"=1`` is a command name."""
    match = ASSIGNMENT.match(word.text)
    return match is not None and not word.braced and not 0 <= word.first_quote < match.end()


def after_time(found: list[Word]) -> list[Word]:
    """The words after bash's reserved word ``time`` (``found[0]``, typed bare where a reserved word may
    stand) and its options ``-p`` and ``--``: the pipeline it times, which may start with a reserved word of
    its own (``time -p { rm x; }``, ``time ! cmd``, ``time function f { …; }``)."""
    found = found[1:]
    for option in ("-p", "--"):
        if found[:1] and is_bare(found[0]) and found[0].text == option:
            found = found[1:]
    return found


def _globs(chars: list[tuple[str, bool]]) -> bool:
    """Does bash expand this word as a file name pattern (a bare ``*``, ``?`` or ``[…]``)?"""
    last_bracket = max((index for index, (char, _) in enumerate(chars) if char == "]"), default=-1)
    return any(
        bare and (char in "*?" or (char == "[" and index < last_bracket))
        for index, (char, bare) in enumerate(chars)
    )


def is_bare(word: Word) -> bool:
    """Typed without quotes, escapes or expansions: only then can it be a reserved word (``if``, ``{``)."""
    return bool(word.text) and not (word.expanded or word.braced) and word.first_quote < 0


class ShellOptions(NamedTuple):
    """What a shell's own options (``bash``, ``sh``, ``zsh`` … before its first operand) say about where its
    script comes from."""

    operands: list[Word]  # after the options: the script (with -c), or a script file, then its arguments
    script_given: bool  # -c: the first operand is the script itself
    reads_stdin: bool  # -s: the script is read from stdin, whatever the operands


def shell_options(args: list[Word]) -> ShellOptions:
    """A shell's arguments (its words after its name) read as bash reads its options: ``-c``/``-s`` may be
    grouped (``-ec``), ``-o NAME``/``-O NAME`` and ``--rcfile``/``--init-file FILE`` take a value, ``--``
    or ``-`` end them."""
    index, script_given, reads_stdin = 0, False, False
    while index < len(args):
        text = args[index].text
        if text in ("--", "-"):
            index += 1
            break
        if text.startswith("--"):
            index += 2 if text in ("--rcfile", "--init-file") else 1
        elif text[:1] in "-+" and len(text) > 1:
            script_given = script_given or "c" in text[1:]
            reads_stdin = reads_stdin or "s" in text[1:]
            index += 1 + sum(letter in "oO" for letter in text[1:])  # -o NAME, -O NAME take a value
        else:
            break
    return ShellOptions(args[index:], script_given, reads_stdin)


@dataclass
class SimpleCommand:
    words: list[Word]
    feed: list[str]  # here-strings and here-document bodies given to it on stdin
    piped_from: list[Word] | None  # the words of the command whose output it reads (after `|`)
    keywords: bool = True  # its first word may be a reserved word (no redirection stands before it)
    # Its stdin's redirections other than here-documents and here-strings: (operator, target word), e.g.
    # ("<", file), ("<&", "3"), ("<", "/dev/fd/63") for `< <( … )`.
    inputs: list[tuple[str, Word]] = field(default_factory=list)


class Sink(Protocol):
    def nested(self, script: str) -> None:
        """A script run to make text (``$( … )``, backticks, ``<( … )``)."""

    def unsure(self, reason: str) -> None:
        """Something that makes what runs uncertain (an unbalanced quote, a brace expansion too large …)."""

    def line(self, commands: list[SimpleCommand]) -> None:
        """The simple commands of one line, after its here-documents' bodies were read."""


_ARITH_WORD = re.compile(r"\$\[")


def read(script: str, sink: Sink) -> None:
    """Read ``script``, telling ``sink`` what it finds (see the module's docstring)."""
    _Reader(script, lex(script), sink).read()


class _Collector:
    def __init__(self) -> None:
        self.commands: list[SimpleCommand] = []
        self.scripts: list[str] = []
        self.problems: list[str] = []

    def nested(self, script: str) -> None:
        self.scripts.append(script)

    def unsure(self, reason: str) -> None:
        self.problems.append(reason)

    def line(self, commands: list[SimpleCommand]) -> None:
        self.commands.extend(commands)


def commands(script: str, *, depth: int = 4) -> tuple[list[SimpleCommand], list[str]]:
    """Every simple command ``script`` runs, in the order met, then those of the command and process
    substitutions in it (read in turn, at most ``depth`` levels down); and every reason the reading was
    unsure of (``Sink.unsure``)."""
    found = _Collector()
    pending = [script]
    for _ in range(depth + 1):
        found.scripts = []
        for each in pending:
            read(each, found)
        pending = found.scripts
        if not pending:
            break
    return found.commands, found.problems


def substitutions(text: str, sink: Sink) -> None:
    """The commands inside ``$( … )`` or backticks of text that bash expands later like a here-document body
    (a prompt string such as ``PS4``): each goes to ``sink.nested``."""
    _Reader(text, lex(text, "heredoc"), sink).substitutions(0, None)


def unescape_backticks(inner: str) -> str:
    """The command inside backticks as bash runs it: ``\\```, ``\\\\`` and ``\\$`` lose their backslash."""
    return re.sub(r"\\([\\`$])", r"\1", inner)


class _Reader:
    def __init__(self, text: str, tokens: list[Token], sink: Sink) -> None:
        self.text, self.tokens, self.sink = text, tokens, sink
        self._expansion = getattr(sink, "expansion", None)  # optional: see the module's docstring
        self.words: list[Word] = []
        self.word = Word()
        self.feed: list[str] = []
        self.inputs: list[tuple[str, Word]] = []
        self.input_op = ""  # the stdin redirection whose target is the next word
        self.skip_next_word = False  # the word after a redirection is a file name, not an argument
        self.here_string = False  # the next word is fed on stdin (<<<)
        self.heredocs: list[list[str]] = []  # the feeds waiting for a here-document's body, in order
        self.keywords = True  # no redirection before the command's first word
        self.line: list[SimpleCommand] = []  # commands are handed over at the end of each line
        self.line_ended = False
        self.piped = False

    def read(self) -> None:
        index = 0
        while index < len(self.tokens):
            token = self.tokens[index]
            if self.line_ended and token.kind != "body":
                self.flush_line()
            index = self.token(index, token)
        self.end_command()
        if self.heredocs:
            self.sink.unsure("here-document without its body")
        self.flush_line()

    def token(self, index: int, token: Token) -> int:
        """Take in one token at the top level; returns the index of the next one."""
        kind = token.kind
        if kind == "literal":
            self.add(self.text[token.start : token.end], bare=True)
        elif kind == "escape":
            self.add(token.value)
        elif kind in ("single", "ansi"):
            self.quoted(token)
        elif kind == "dollar":
            self.add(self.text[token.start : token.end])
            self.word.expanded = True
        elif kind == "open":
            return self.construct(index, token)
        elif kind == "blank":
            self.end_word()
        elif kind == "operator":
            self.operator(index, token)
        elif kind == "newline":
            self.end_command()
            self.piped = False
            self.line_ended = True
        elif kind == "delimiter":
            self.end_word()
            self.heredocs.append(self.feed)
        elif kind == "body":
            return self.body(index, token)
        return index + 1

    # -- words --------------------------------------------------------------------------------------------
    def add(self, text: str, *, bare: bool = False) -> None:
        """Append to the current word; ``bare`` text was typed unquoted, so braces in it expand."""
        if not bare and self.word.first_quote < 0:
            self.word.first_quote = len(self.word.text)
        self.word.text += text
        self.word.chars.extend((char, bare) for char in text)
        self.word.started = True

    def end_word(self) -> None:
        if not self.word.started:
            return
        word, self.word = self.word, Word()
        word.expanded = word.expanded or (_GLOB_CHARS.search(word.text) is not None and _globs(word.chars))
        if "$[" in word.text:
            self.old_arithmetic(word)
        if self.skip_next_word:
            self.skip_next_word = False
            if self.input_op:
                self.inputs.append((self.input_op, word))
                self.input_op = ""
        elif self.here_string:
            self.here_string = False
            self.feed.append(word.text)
        else:
            self.words.extend(self.brace_expanded(word))

    def old_arithmetic(self, word: Word) -> None:
        """``$[ … ]``, bash's old arithmetic expansion (typed bare): the lexer reads it as text."""
        text = "".join(char for char, _ in word.chars)
        for match in _ARITH_WORD.finditer(text):
            start = match.start()
            if word.chars[start][1] and word.chars[start + 1][1]:
                word.expanded = True
                close = text.find("]", start)
                self.report("arith", text[start + 2 : close if close >= 0 else len(text)])

    def report(self, kind: str, text: str) -> None:
        if self._expansion is not None:
            self._expansion(kind, text)

    def report_construct(self, token: Token, close: int) -> None:
        """Tell the sink of an arithmetic or parameter expansion opening at ``token``."""
        if token.value in ("$((", "((", "${"):
            end = self.tokens[close].start if close < len(self.tokens) else len(self.text)
            self.report("param" if token.value == "${" else "arith", self.text[token.end : end])

    def brace_expanded(self, word: Word) -> list[Word]:
        if "{" not in word.text or not braces.has_braces(word.chars):
            return [word]
        try:
            texts = braces.expand(word.chars)
        except braces.TooManyWords:
            self.sink.unsure(f"brace expansion of {word.text[:40]!r} makes too many words")
            word.expanded = True
            return [word]
        if texts == [word.text]:
            return [word]
        return [Word(text, word.expanded, True, True) for text in texts]

    def quoted(self, token: Token) -> None:
        """``'…'`` and ``$'…'``: their text, decoded as bash decodes it."""
        raw = self.text[token.start : token.end]
        if token.partner < 0:
            self.sink.unsure(
                "unterminated single quote" if token.kind == "single" else "unterminated $' quote"
            )
        if token.kind == "single":
            self.add(raw[1:-1] if token.partner >= 0 else raw[1:])
            return
        decoded = decode_ansi_c(raw if token.partner >= 0 else raw + "'")
        if not decoded.certain:
            self.sink.unsure(f"{raw[:40]} decodes to what the locale makes of it, or to no text")
            self.word.expanded = True
        self.add(decoded.text)

    def construct(self, index: int, token: Token) -> int:
        """A quote or an expansion that opens at ``index``; returns the index after its close."""
        end = token.partner if token.partner >= 0 else len(self.tokens)
        if token.partner < 0:
            self.sink.unsure(_UNBALANCED[token.value])
        if token.value in ('"', '$"'):
            self.double_quoted(index + 1, end)
        elif token.value in SUBSTITUTIONS:
            self.substitution(token, end)
            self.add(_PLACEHOLDER[token.value])
            self.word.expanded = True  # what a reader of that file or text gets is computed at run time
        elif token.value == "((" and not self.word.started and not self.words:
            self.report_construct(token, end)
            self.substitutions(index + 1, end)  # an arithmetic command: runs only its substitutions
        else:  # ${ … }, $(( … )): a value computed at run time, with the commands of its substitutions
            self.report_construct(token, end)
            self.substitutions(index + 1, end)
            self.add(self.text[token.start : self._end_of(end)])
            self.word.expanded = True
        return end + 1

    def _end_of(self, close: int) -> int:
        return self.tokens[close].end if close < len(self.tokens) else len(self.text)

    def substitution(self, token: Token, close: int) -> None:
        inner = self.text[
            token.end : self.tokens[close].start if close < len(self.tokens) else len(self.text)
        ]
        self.sink.nested(unescape_backticks(inner) if token.value == "`" else inner)

    def double_quoted(self, start: int, end: int) -> None:
        self.add("")  # "" is a word, even empty
        index = start
        while index < end:
            token = self.tokens[index]
            if token.kind == "escape":
                self.add(token.value)
            elif token.kind == "open" and token.partner >= 0:
                self.word.expanded = True
                if token.value in SUBSTITUTIONS:
                    self.substitution(token, token.partner)
                    self.add(_PLACEHOLDER[token.value])
                else:
                    self.report_construct(token, token.partner)
                    self.substitutions(index + 1, token.partner)
                    self.add(self.text[token.start : self.tokens[token.partner].end])
                index = token.partner
            elif token.kind == "open":  # unbalanced: the rest is inside it
                self.sink.unsure(_UNBALANCED[token.value])
                self.substitutions(index, end)
                self.word.expanded = True
                return
            elif token.kind != "continuation":
                self.word.expanded = self.word.expanded or token.kind == "dollar"
                self.add(self.text[token.start : token.end])
            index += 1

    def substitutions(self, start: int, end: int | None) -> None:
        """The commands inside ``$( … )``, backticks and ``<( … )`` among the tokens from ``start`` to
        ``end`` (text that is otherwise data: arithmetic, ``${ … }``, here-document bodies)."""
        end = len(self.tokens) if end is None else end
        index = start
        while index < end:
            token = self.tokens[index]
            if token.kind == "open" and token.value in SUBSTITUTIONS:
                close = token.partner if token.partner >= 0 else len(self.tokens)
                if token.partner < 0:
                    self.sink.unsure(_UNBALANCED[token.value])
                self.substitution(token, close)
                index = close
            elif token.kind == "open":  # ${ … }, $(( … )) inside: reported, and their insides read on
                self.report_construct(token, token.partner if token.partner >= 0 else len(self.tokens))
            index += 1

    # -- commands -----------------------------------------------------------------------------------------
    def operator(self, index: int, token: Token) -> None:
        op = token.value
        if op in REDIRECTIONS or op in ("<<", "<<-", "<<<"):
            fd = None
            if self.word.started and self.word.text.isdigit() and is_bare(self.word):
                fd = int(self.word.text)
                self.word = Word()  # in "2>" the fd number belongs to the redirection
            self.end_word()
            self.keywords = self.keywords and bool(self.words)
            if op == "<<<":
                self.here_string = True
            elif op in ("<<", "<<-"):
                if not any(t.kind == "delimiter" for t in self.tokens[index + 1 : index + 3]):
                    self.sink.unsure("here-document without a delimiter")
            else:
                self.skip_next_word = True
                if op in ("<", "<&", "<>") and fd in (None, 0):
                    self.input_op = op  # the next word is where stdin comes from
            return
        self.end_command()
        self.piped = op in ("|", "|&")

    def end_command(self) -> None:
        self.end_word()
        self.skip_next_word = self.here_string = False
        self.input_op = ""
        words, self.words = self.words, []
        feed, self.feed = self.feed, []
        inputs, self.inputs = self.inputs, []
        previous = self.line[-1].words if self.piped and self.line else None
        if words or feed or inputs:
            self.line.append(SimpleCommand(words, feed, previous, self.keywords, inputs))
        self.keywords = True

    def body(self, index: int, token: Token) -> int:
        doc = token.heredoc
        assert doc is not None
        feed = self.heredocs.pop(0) if self.heredocs else []
        feed.append(self.text[token.start : token.end])
        if not doc.closed:
            self.sink.unsure("here-document not terminated")
        self.substitutions(index + 1, token.partner)
        return max(token.partner, index + 1)

    def flush_line(self) -> None:
        line, self.line = self.line, []
        self.line_ended = False
        if line:
            self.sink.line(line)


# -- redirections --------------------------------------------------------------------------------------------
@dataclass
class Redirection:
    """A redirection of a simple command: its operator and the word it names (a file; for ``>&``/``<&`` a
    descriptor number or ``-`` as well)."""

    operator: str  # one of lexer.REDIRECTIONS: < > >> <& >& &> &>> <> >|
    target: Word


class RedirectionSink(Sink, Protocol):
    def redirection(self, redirection: Redirection) -> None:
        """A redirection, handed over as soon as its word is read (before the line holding its command)."""


def read_with_redirections(script: str, sink: RedirectionSink) -> None:
    """``read``, also handing ``sink.redirection`` every redirection and its target word (``read`` drops
    them: a file name is not an argument). Here-documents and here-strings are not redirections here: their
    text is the command's ``feed``."""
    _RedirectionReader(script, lex(script), sink).read()


class _RedirectionReader(_Reader):
    def __init__(self, text: str, tokens: list[Token], sink: RedirectionSink) -> None:
        super().__init__(text, tokens, sink)
        self.redirections = sink
        self.pending = ""  # the operator whose word is being read

    def operator(self, index: int, token: Token) -> None:
        if token.value in REDIRECTIONS:
            self.pending = token.value
        super().operator(index, token)

    def end_word(self) -> None:
        word, naming = self.word, self.skip_next_word and self.word.started
        super().end_word()  # decides whether the word is a glob (``expanded``) before it is handed over
        if naming:
            self.redirections.redirection(Redirection(self.pending, word))
