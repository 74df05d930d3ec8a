"""The bash lexer: a command line cut into tokens that say what each piece of text is and where it stands.

``lex("echo \\"$(cat <<X\\n$route\\nX\\n)\\" # it's")`` → a flat list of ``Token``: a ``literal`` ``echo``, a
``blank``, an ``open`` of ``"`` whose ``partner`` is its ``close``, inside it an ``open`` of ``$(`` (context
``double``), the ``operator`` ``<<`` and the heredoc's ``delimiter``, a ``newline``, the heredoc's ``body``
followed by the body's own tokens (``$route`` is a ``dollar`` in context ``heredoc``), the ``close`` of
``$(``, and a ``comment``. Every token keeps its span in the text, so a caller can rewrite the text around
it (``route.subst``) or read the words it makes (``shellsyntax.words``).

What it follows, as bash does: quotes (``'…'``, ``"…"``, ``$'…'``, ``$"…"``), backslashes and line
continuations, ``$name``, ``${ … }``, ``$( … )``, backticks, ``$(( … ))`` and ``(( … ))``, ``<( … )``,
comments (a ``#`` at the start of a word; inside backticks it ends at the closing backtick), operators and
redirections, and here-documents: the body starts after the newline that ends the ``<<`` line, its
delimiter may be quoted (then nothing in it expands), ``<<-`` strips leading tabs, backslash-newline joins
lines of an unquoted body before the comparison, and inside ``$( … )`` or backticks ``DELIM)`` /
``DELIM``` ends the body and closes the substitution.

It never fails: an unclosed construct runs to the end of the text and its ``open`` (or ``single``/``ansi``
token) has ``partner == -1``, so a caller can say what is unbalanced. Nothing is imported beyond ``re``: the
route driver lexes every guard command it runs.
"""

from __future__ import annotations

import re
from typing import Literal, NamedTuple

Context = Literal["plain", "subshell", "backtick", "arith", "param", "double", "heredoc"]
Kind = Literal[
    "literal",  # ordinary text (a word's characters typed bare, or text inside a construct)
    "escape",  # a backslash and the character it quotes
    "continuation",  # backslash-newline: nothing (outside single quotes)
    "single",  # '…' (partner -1: unterminated)
    "ansi",  # $'…' (decode its text with decode_ansi_c)
    "dollar",  # $name, $1, $$, $@ …
    "open",  # ", $", $(, `, ${, $((, ((, <(, >(: the text of the opener; partner = its close
    "close",
    "blank",
    "operator",  # ; & && || | |& ;; ;& ;;& ( ) and redirections (< > >> <& >& &> <> >| << <<- <<<)
    "newline",
    "comment",
    "delimiter",  # the word after << (heredoc holds what it says)
    "body",  # a here-document's body; an unquoted body's tokens follow it, up to partner
]
COMMANDS: frozenset[Context] = frozenset({"plain", "subshell", "backtick"})  # where words and operators are
SUBSTITUTIONS = frozenset({"$(", "`", "<(", ">("})  # openers of a command that runs to make text
METACHARS = frozenset(" \t\n;&|()<>")
_WORD_BOUNDARY = METACHARS | {"`"}  # a '#' after one of these starts a comment
_OPERATORS = (
    ";;&",
    "&>>",
    "&&",
    "||",
    ";;",
    ";&",
    "|&",
    "&>",
    ">>",
    ">&",
    ">|",
    "<&",
    "<>",
    ";",
    "&",
    "|",
    "<",
    ">",
)  # longest first
REDIRECTIONS = frozenset({"<", ">", ">>", "<&", ">&", "&>", "&>>", "<>", ">|"})
_CLOSER = {"subshell": ")", "backtick": "`"}  # bash also ends a heredoc at "DELIM)" / "DELIM`"
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*|[0-9@*#?$!-]")
_LITERAL_RUN: dict[Context, re.Pattern[str]] = {
    "plain": re.compile(r"[^ \t\n;&|()<>\\'\"$`#]+"),
    "subshell": re.compile(r"[^ \t\n;&|()<>\\'\"$`#]+"),
    "backtick": re.compile(r"[^ \t\n;&|()<>\\'\"$`#]+"),
    "double": re.compile(r"[^\\$`\"]+"),
    "heredoc": re.compile(r"[^\\$`]+"),
    "arith": re.compile(r"[^\\$`\"'()]+"),
    "param": re.compile(r"[^\\$`\"'{}]+"),
}
_BLANKS = re.compile(r"[ \t]+")
_SPECIAL = frozenset(" \t\n;&|()<>\\'\"$`#")  # what a command's text may hold beside its words' characters


class Heredoc(NamedTuple):
    delimiter: str  # the word without its quotes
    quoted: bool  # <<'X', <<"X", <<\X: the body expands nothing
    strip_tabs: bool  # <<-
    in_backticks: bool  # the << stands inside backticks (escapes there need a second layer)
    word: tuple[int, int]  # where the delimiter word is, as written
    closed: bool = True  # the body ended at its delimiter (False: it ran to the end of the text)


class Token(NamedTuple):
    kind: Kind
    start: int
    end: int
    context: Context  # the construct the token stands in
    value: str = ""  # escape: the character it stands for; open/close/operator: the operator's text
    partner: int = -1  # open ↔ close; single/ansi: its own index when terminated; body: the end of its tokens
    heredoc: Heredoc | None = None  # delimiter and body


def lex(text: str, base: Context = "plain") -> list[Token]:
    """The tokens of ``text`` (``base``: ``"heredoc"`` for text expanded like an unquoted heredoc body)."""
    tokens: list[Token] = []
    _Lexer(text, tokens, 0, len(text), base, in_backticks=False).run()
    return tokens


def _unquote_word(text: str, start: int, end: int) -> str:
    """A heredoc delimiter as bash compares it: its quotes and backslashes removed."""
    out: list[str] = []
    position = start
    while position < end:
        char = text[position]
        if char == "\\":
            out.append(text[position + 1 : position + 2])
            position += 2
        elif char == "'":
            close = text.find("'", position + 1, end)
            out.append(text[position + 1 : close])
            position = close + 1
        elif char == '"':
            close = _closing_double(text, position, end)
            out.append(re.sub(r'\\([\\"$`])', r"\1", text[position + 1 : close]))
            position = close + 1
        else:
            out.append(char)
            position += 1
    return "".join(out)


def _closing_double(text: str, open_index: int, end: int) -> int:
    position = open_index + 1
    while position < end and text[position] != '"':
        position += 2 if text[position] == "\\" else 1
    return position


def _odd_backslashes(line: str) -> bool:
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


class _Lexer:
    """Lexes ``text[start:end]``, appending to ``tokens`` (shared with the lexers of heredoc bodies)."""

    def __init__(
        self, text: str, tokens: list[Token], start: int, end: int, base: Context, *, in_backticks: bool
    ) -> None:
        self.text, self.tokens, self.start, self.end = text, tokens, start, end
        self.in_backticks = in_backticks
        self.stack: list[Context] = [base]  # the construct at each nesting level
        self.depths = [0]  # open brackets in each level (subshells, arithmetic and ${ } count them)
        self.opens = [-1]  # the index of each level's open token
        self.pending: list[Token] = []  # heredoc delimiters whose body starts after the next newline
        self.index = start

    def run(self) -> None:
        while self.index < self.end:
            context = self.stack[-1]
            if context in COMMANDS:
                self._command(context)
            elif context == "double" and self.text[self.index] == '"':
                self._close(1)
            else:
                self._inside(context)

    # -- emitting --------------------------------------------------------------------------------------------
    def _emit(self, kind: Kind, length: int, value: str = "", partner: int = -1) -> None:
        end = min(self.index + length, self.end)
        self.tokens.append(Token(kind, self.index, end, self.stack[-1], value, partner))
        self.index = end

    def _open(self, opener: str, context: Context, depth: int = 0) -> None:
        self.opens.append(len(self.tokens))
        self._emit("open", len(opener), opener)
        self.stack.append(context)
        self.depths.append(depth)

    def _close(self, length: int) -> None:
        """Close the innermost construct (an unbalanced closer is the shell's problem: kept as text)."""
        if len(self.stack) == 1:
            self._emit("literal", length)
            return
        opened = self.opens.pop()
        self.stack.pop()
        self.depths.pop()
        self.tokens[opened] = self.tokens[opened]._replace(partner=len(self.tokens))
        self._emit("close", length, self.text[self.index : self.index + length], opened)

    def _count(self, step: int, length: int = 1) -> None:
        """A bracket inside ``(( ))``, ``$( )`` or ``${ }``: the last one closes the construct."""
        self.depths[-1] += step
        if self.depths[-1] == 0:
            self._close(length)
        elif self.stack[-1] in COMMANDS:
            self._emit("operator", length, self.text[self.index : self.index + length])
        else:
            self._emit("literal", length)

    def _literal_run(self, context: Context) -> None:
        match = _LITERAL_RUN[context].match(self.text, self.index, self.end)
        self._emit("literal", match.end() - self.index if match else 1)

    # -- contexts --------------------------------------------------------------------------------------------
    def _quotes_work(self) -> bool:
        """Whether ``'`` starts a quote here: not inside ``"…"`` or a heredoc body, even within ``${ … }``."""
        outer = next((level for level in reversed(self.stack) if level != "param"), "plain")
        return outer not in ("double", "heredoc")

    def _at_word_start(self) -> bool:
        """Is ``index`` the start of a word: after a boundary no backslash quotes, line continuations (which
        bash removes first) skipped?"""
        text, position = self.text, self.index
        while position - 2 >= self.start and text.startswith("\\\n", position - 2):
            if self._escaped(position - 2):
                break
            position -= 2
        if position == self.start:
            return True
        return text[position - 1] in _WORD_BOUNDARY and not self._escaped(position - 1)

    def _escaped(self, position: int) -> bool:
        """Is the character at ``position`` quoted by an odd run of backslashes before it?"""
        count = 0
        while position - count - 1 >= self.start and self.text[position - count - 1] == "\\":
            count += 1
        return count % 2 == 1

    def _expansion(self, context: Context) -> bool:
        """A backslash, ``$…`` or a backtick, which mean the same in every context but single quotes."""
        text, index = self.text, self.index
        char = text[index]
        if char == "\\":
            after = text[index + 1 : index + 2] if index + 1 < self.end else ""
            if after == "\n":
                self._emit("continuation", 2)
            elif context in ("double", "heredoc") and after not in (
                "$",
                "`",
                "\\",
                '"' if context == "double" else "",
            ):
                self._emit("escape", 2, "\\" + after)  # the backslash stays: "\q" is \q
            else:
                self._emit("escape", 2, after or "\\")
            return True
        if char == "`":
            if context == "backtick":
                self._close(1)
            else:
                self._open("`", "backtick")
            return True
        if char != "$":
            return False
        after = text[index + 1 : index + 2] if index + 1 < self.end else ""
        if text.startswith("$((", index):
            self._open("$((", "arith", 2)
        elif after == "(":
            self._open("$(", "subshell", 1)
        elif after == "{":
            self._open("${", "param", 1)
        elif after == "'" and context not in ("double", "heredoc") and self._quotes_work():
            self._quoted(2, ansi=True)
        elif after == '"' and context not in ("double", "heredoc"):
            self._open('$"', "double")
        else:
            name = _NAME.match(text, index + 1, self.end)
            if name:
                self._emit("dollar", name.end() - index)
            else:
                self._emit("literal", 1)
        return True

    def _quoted(self, opener: int, *, ansi: bool) -> None:
        """``'…'`` or ``$'…'`` (where ``\\'`` does not end it): one token, partner -1 if unterminated."""
        position = self.index + opener
        while position < self.end and self.text[position] != "'":
            position += 2 if ansi and self.text[position] == "\\" else 1
        closed = position < self.end
        self._emit(
            "ansi" if ansi else "single",
            position + 1 - self.index,
            partner=len(self.tokens) if closed else -1,
        )

    def _inside(self, context: Context) -> None:
        """One step inside ``"…"``, a heredoc body, ``$(( … ))`` or ``${ … }``."""
        char = self.text[self.index]
        if self._expansion(context):
            return
        if context in ("double", "heredoc"):
            self._literal_run(context)
        elif char == '"':
            self._open('"', "double")
        elif char == "'" and self._quotes_work():
            self._quoted(1, ansi=False)
        elif context == "param" and char in "{}":
            self._count(1 if char == "{" else -1)
        elif context == "arith" and char in "()":
            self._count(1 if char == "(" else -1)
        else:
            self._literal_run(context)

    def _command(self, context: Context) -> None:
        """One step where words and operators are: the top level, ``$( … )``, ``<( … )`` and backticks."""
        text, index = self.text, self.index
        char = text[index]
        if char not in _SPECIAL:  # most of a command: the characters of plain words
            self._literal_run(context)
        elif char in " \t":
            match = _BLANKS.match(text, index, self.end)
            self._emit("blank", match.end() - index if match else 1)
        elif self._expansion(context):
            return
        elif char == "'":
            self._quoted(1, ansi=False)
        elif char == '"':
            self._open('"', "double")
        elif char == "#" and self._at_word_start():
            self._comment(context)
        elif char == "\n":
            self._emit("newline", 1)
            if self.pending:
                self._bodies(context)
        elif text.startswith("<<", index) and not text.startswith("<<<", index):
            self._heredoc_operator()
        elif text.startswith(("<(", ">("), index):
            self._open(text[index : index + 2], "subshell", 1)
        elif text.startswith("((", index) and self._at_word_start():
            self._open("((", "arith", 2)
        elif char in "()":
            if context == "subshell":
                self._count(1 if char == "(" else -1)
            else:
                self._emit("operator", 1, char)
        elif text.startswith("<<<", index):
            self._emit("operator", 3, "<<<")
        elif char in ";&|<>":
            operator = next(op for op in _OPERATORS if text.startswith(op, index))
            self._emit("operator", len(operator), operator)
        else:
            self._literal_run(context)

    def _comment(self, context: Context) -> None:
        end = self.text.find("\n", self.index, self.end)
        end = self.end if end < 0 else end
        if context == "backtick":  # the substitution's text ends at the next unescaped backtick
            position = self.index
            while position < end and self.text[position] != "`":
                position += 2 if self.text[position] == "\\" else 1
            end = min(position, end)
        self._emit("comment", end - self.index)

    # -- here-documents -------------------------------------------------------------------------------------
    def _heredoc_operator(self) -> None:
        text = self.text
        strip_tabs = text.startswith("<<-", self.index)
        self._emit("operator", 3 if strip_tabs else 2, "<<-" if strip_tabs else "<<")
        match = _BLANKS.match(text, self.index, self.end)
        if match:
            self._emit("blank", match.end() - self.index)
        word = self._delimiter_word(self.index)
        if word is None:
            return  # no delimiter the lexer understands: what follows is read as ordinary text
        delimiter, quoted, end = word
        in_backticks = self.in_backticks or "backtick" in self.stack
        heredoc = Heredoc(delimiter, quoted, strip_tabs, in_backticks, (self.index, end))
        token = Token("delimiter", self.index, end, self.stack[-1], delimiter, heredoc=heredoc)
        self.tokens.append(token)
        self.pending.append(token)
        self.index = end

    def _delimiter_word(self, start: int) -> tuple[str, bool, int] | None:
        """A heredoc's delimiter at ``start``: ``(delimiter, quoted, end)``, None if there is none."""
        text, position, end = self.text, start, self.end
        quoted = False
        while position < end and text[position] not in METACHARS:
            char = text[position]
            if char == "'":
                close = text.find("'", position + 1, end)
                if close < 0:
                    return None
                position = close + 1
            elif char == '"':
                position = _closing_double(text, position, end)
                if position >= end:
                    return None
                position += 1
            elif char == "\\":
                position += 2
            else:
                position += 1
                continue
            quoted = True
        position = min(position, end)
        delimiter = _unquote_word(text, start, position)
        if position == start or "\n" in delimiter:
            return None
        return delimiter, quoted, position

    def _bodies(self, context: Context) -> None:
        """The pending heredocs' bodies, which start here (after the newline that ended their line)."""
        pending, self.pending = self.pending, []
        for delimiter in pending:
            assert delimiter.heredoc is not None
            doc = delimiter.heredoc
            body_end, resume, closed, found = self._body_end(doc, context)
            at = len(self.tokens)
            self.tokens.append(
                Token("body", self.index, body_end, "heredoc", heredoc=doc._replace(closed=found))
            )
            if not doc.quoted:
                _Lexer(
                    self.text, self.tokens, self.index, body_end, "heredoc", in_backticks=doc.in_backticks
                ).run()
            self.tokens[at] = self.tokens[at]._replace(partner=len(self.tokens))
            self.index = resume
            if closed:
                return  # it ended at "DELIM)": the rest of that line is the command again

    def _body_end(self, doc: Heredoc, context: Context) -> tuple[int, int, bool, bool]:
        """Where the body ends, where reading resumes after its delimiter, whether a ``)`` or backtick right
        after the delimiter closed the enclosing substitution, and whether the delimiter was found."""
        text, position = self.text, self.index
        closer = _CLOSER.get(context)
        while position < self.end:
            line_start, logical, joined = position, "", False
            while True:  # bash joins backslash-newline in an unquoted heredoc before it compares
                newline = text.find("\n", position, self.end)
                stop = self.end if newline < 0 else newline
                physical = text[position:stop]
                if doc.strip_tabs:
                    physical = physical.lstrip("\t")
                if doc.quoted or newline < 0 or not _odd_backslashes(physical):
                    logical += physical
                    break
                logical, joined, position = logical + physical[:-1], True, newline + 1
            after = self.end if newline < 0 else newline + 1
            if logical == doc.delimiter:
                return line_start, after, False, True
            if closer and not joined and logical.startswith(doc.delimiter + closer):
                delimiter_end = stop - len(logical) + len(doc.delimiter)
                return line_start, delimiter_end, True, True
            position = after
        return self.end, self.end, False, False  # bash warns and takes the end of the text as the delimiter


# -- $'…' ----------------------------------------------------------------------------------------------------
_SIMPLE_ESCAPES = {
    "a": 7, "b": 8, "e": 27, "E": 27, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11,
    "\\": 92, "'": 39, '"': 34, "?": 63,
}  # fmt: skip
_HEX = "0123456789abcdefABCDEF"


class Decoded(NamedTuple):
    text: str
    certain: (
        bool  # False: bash makes bytes here that are no text (invalid UTF-8, a code point beyond Unicode)
    )


def decode_ansi_c(token_text: str) -> Decoded:
    """The word bash makes of ``$'…'`` (the token's text, with ``$'`` and, if present, the closing ``'``).

    As bash does it: ``\\n \\t \\e \\a …``, ``\\NNN`` octal (one to three digits), ``\\xHH`` (one or two hex
    digits, or ``\\x{H…}``), ``\\uHHHH`` and ``\\UHHHHHHHH`` (ASCII only: beyond it what bash makes depends on
    the locale), ``\\cX`` (control-X); an unknown escape keeps its backslash; the bytes are cut at the first
    NUL, as bash's C strings are. ``certain`` is False where the result is not known text.
    """
    body = token_text[2:-1] if token_text.endswith("'") and len(token_text) > 2 else token_text[2:]
    out = bytearray()
    certain = True
    index = 0
    while index < len(body):
        char = body[index]
        if char != "\\" or index + 1 >= len(body):
            out += char.encode("utf-8", "surrogateescape")
            index += 1
            continue
        code, index, sure = _escape(body, index + 1)
        certain = certain and sure
        out += code
    cut = out.split(b"\0", 1)[0]
    try:
        return Decoded(cut.decode("utf-8"), certain)
    except UnicodeDecodeError:
        return Decoded(cut.decode("utf-8", "replace"), False)


def _escape(body: str, index: int) -> tuple[bytes, int, bool]:
    """The bytes of the escape whose letter is at ``index``, the index after it, and whether it is text."""
    letter = body[index]
    if letter in _SIMPLE_ESCAPES:
        return bytes([_SIMPLE_ESCAPES[letter]]), index + 1, True
    if letter in "01234567":
        digits = _run(body, index, "01234567", 3)
        return bytes([int(digits, 8) & 0xFF]), index + len(digits), True
    if letter == "x":
        if body.startswith("{", index + 1):
            digits = _run(body, index + 2, _HEX, len(body))
            after = index + 2 + len(digits)
            after += 1 if body.startswith("}", after) else 0
            return bytes([int(digits or "0", 16) & 0xFF]), after, True
        digits = _run(body, index + 1, _HEX, 2)
        if not digits:
            return b"\\x", index + 1, True
        return bytes([int(digits, 16)]), index + 1 + len(digits), True
    if letter in "uU":
        digits = _run(body, index + 1, _HEX, 4 if letter == "u" else 8)
        if not digits:
            return ("\\" + letter).encode(), index + 1, True
        number = int(digits, 16)
        if number >= 0x80:  # bash writes it in the locale's encoding, or as \uXXXX where it has none
            return b"?", index + 1 + len(digits), False
        return bytes([number]), index + 1 + len(digits), True
    if letter == "c" and index + 1 < len(body):
        control = body[index + 1]
        after = index + 2
        if control == "\\" and body.startswith("\\", after):
            after += 1  # \c\\ is control-backslash
        if not control.isascii():
            return b"?", after, False
        return bytes([0x7F if control == "?" else ord(control.upper()) & 0x1F]), after, True
    return ("\\" + letter).encode("utf-8", "surrogateescape"), index + 1, True


def _run(body: str, index: int, allowed: str, limit: int) -> str:
    end = index
    while end < len(body) and end - index < limit and body[end] in allowed:
        end += 1
    return body[index:end]
