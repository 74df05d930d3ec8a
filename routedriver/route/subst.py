"""Put ``$route``, ``$stone`` and ``$hash`` into a guard's shell command; no value ever enters its text.

The command runs with the values exported as ``ROUTE``, ``STONE`` and ``HASH`` (``guard._run``), so each
``$route`` becomes a *reference* to that variable, written for the place it stands in; the shell expands a
reference but never parses what it expands to as code, whatever the value holds. A small scanner follows the
shell's quoting to pick the form:

- outside quotes (also inside ``$( … )``, ``$(( … ))``, backticks and ``${ … }``) → ``"${ROUTE}"``
- inside double quotes and in the body of a heredoc with an unquoted delimiter → ``${ROUTE}``
- inside single quotes → close the quote, ``"${ROUTE}"``, reopen (``$'…'`` likewise)
- in the body of a heredoc with a quoted delimiter (``<<'X'``, ``<<"X"``, ``<<\\X``), which expands nothing:
  the delimiter loses its quotes and the body's backslashes, dollars and backticks are escaped, which prints
  the same text and lets ``${ROUTE}`` expand there too (the heredoc is left as written when its delimiter
  needs its quotes or it stands inside backticks)
- in a ``#`` comment: nothing; its text is kept and its quotes change nothing.

No value is ever spliced into the text, so a context read wrong gives a wrong string, not a value run as code.
``${route}`` works too; ``$routes``, ``$ROUTE`` and every other ``$VAR`` are left for the shell.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping
from dataclasses import dataclass

NAMES = ("route", "stone", "hash")
ENV = {"route": "ROUTE", "stone": "STONE", "hash": "HASH"}  # the variables the command must have exported
VARIABLE = re.compile(r"\$(?:\{(route|stone|hash)\}|(route|stone|hash)(?![A-Za-z0-9_]))")
_ESCAPE_IN_HEREDOC = re.compile(VARIABLE.pattern + r"|[\\`$]")

# Contexts on the scanner's stack.
_PLAIN, _SUBSHELL, _BACKTICK = "plain", "subshell", "tick"  # commands: comments and heredocs live here
_ARITH, _PARAM = "arith", "param"  # $(( … )) or (( … )), ${ … }
_DOUBLE, _SINGLE, _ANSI, _HEREDOC = "double", "single", "ansi", "heredoc"
_COMMANDS = (_PLAIN, _SUBSHELL, _BACKTICK)
_METACHARS = frozenset(" \t\n;&|()<>")
_WORD_BOUNDARY = _METACHARS | {"`"}  # a '#' after one of these starts a comment
_CLOSER = {_SUBSHELL: ")", _BACKTICK: "`"}  # bash also ends a heredoc at "DELIM)" / "DELIM`"
# A delimiter that reads the same without its quotes (and that '<<-' cannot swallow a '-' of).
_BARE_DELIMITER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.,:+%@/=-]*\Z")


def environment(values: Mapping[str, str]) -> dict[str, str]:
    """The variables a substituted command needs in its environment: ``{"ROUTE": …, "STONE": …}``."""
    return {ENV[name]: value for name, value in values.items() if name in ENV}


def substitute(command: str, names: Collection[str] = NAMES) -> str:
    """``command`` with each of ``names`` (``$route``, ``${stone}`` …) replaced by a reference to its
    environment variable (``ENV``), written for where it stands. A mapping of values works as ``names``."""
    wanted = frozenset(name for name in names if name in ENV)
    return _Scanner(command, wanted, _PLAIN, in_backticks=False).run()


def _reference(name: str, context: str) -> str:
    reference = "${" + ENV[name] + "}"
    if context == _SINGLE:
        return "'\"" + reference + "\"'"
    if context == _ANSI:
        return "'\"" + reference + "\"$'"
    if context in (_DOUBLE, _HEREDOC):
        return reference  # no word splitting happens here, and '"' would be printed
    return '"' + reference + '"'


def _odd_backslashes(line: str) -> bool:
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


@dataclass(frozen=True)
class _Heredoc:
    slot: int  # where the delimiter word is in the output, to unquote it
    delimiter: str  # the word without its quotes
    quoted: bool
    strip_tabs: bool  # <<-
    in_backticks: bool


class _Scanner:
    def __init__(self, text: str, names: frozenset[str], base: str, in_backticks: bool) -> None:
        self.text = text
        self.names = names
        self.in_backticks = in_backticks
        self.out: list[str] = []
        self.stack = [base]  # the quoting context at each nesting level
        self.depths = [0]  # open brackets in each level (subshells, arithmetic and ${ } count them)
        self.pending: list[_Heredoc] = []  # heredocs whose body starts after the next newline
        self.index = 0

    def run(self) -> str:
        text = self.text
        while self.index < len(text):
            context = self.stack[-1]
            char = text[self.index]
            match = VARIABLE.match(text, self.index) if char == "$" else None
            if match and (match[1] or match[2]) in self.names:
                self.out.append(_reference(match[1] or match[2], context))
                self.index = match.end()
            elif context == _SINGLE:
                if char == "'":
                    self._pop()
                self._copy(1)
            elif context == _ANSI:
                if char == "'":
                    self._pop()
                self._copy(2 if char == "\\" else 1)
            else:
                self._expanding(context, char)
        return "".join(self.out)

    def _copy(self, count: int) -> None:
        self.out.append(self.text[self.index : self.index + count])
        self.index += count

    def _push(self, context: str, depth: int = 0) -> None:
        self.stack.append(context)
        self.depths.append(depth)

    def _pop(self) -> None:
        # An unbalanced closer is the shell's problem; never drop the outermost context.
        if len(self.stack) > 1:
            self.stack.pop()
            self.depths.pop()

    def _quotes_work(self, context: str) -> bool:
        """Whether ``'`` starts a quote here: not inside ``"…"`` or a heredoc body, even within ``${ … }``."""
        if context in (_DOUBLE, _HEREDOC):
            return False
        outer = next((level for level in reversed(self.stack) if level != _PARAM), _PLAIN)
        return outer not in (_DOUBLE, _HEREDOC)

    def _at_word_start(self) -> bool:
        return self.index == 0 or self.text[self.index - 1] in _WORD_BOUNDARY

    def _expanding(self, context: str, char: str) -> None:
        """One step where ``$`` expands: commands, ``"…"``, heredoc bodies, ``$(( … ))``, ``${ … }``."""
        text, index = self.text, self.index
        if char == "\\":
            self._copy(2)
            return
        if char == "$":
            after = text[index + 1 : index + 2]
            if text.startswith("$((", index):
                self._push(_ARITH, 2)
                self._copy(3)
            elif after in ("(", "{"):
                self._push(_SUBSHELL if after == "(" else _PARAM, 1)
                self._copy(2)
            elif after == "'" and self._quotes_work(context):
                self._push(_ANSI)
                self._copy(2)
            else:
                self._copy(2 if after == "$" else 1)  # $$stone is the PID, then "stone"
            return
        if char == "`":
            if context == _BACKTICK:
                self._pop()
            else:
                self._push(_BACKTICK)
            self._copy(1)
            return
        if context in (_DOUBLE, _HEREDOC):
            if char == '"' and context == _DOUBLE:
                self._pop()
            self._copy(1)
            return
        if char == '"':
            self._push(_DOUBLE)
        elif char == "'" and self._quotes_work(context):
            self._push(_SINGLE)
        elif context == _PARAM and char in "{}":
            self._count(1 if char == "{" else -1)
        elif context in (_ARITH, _SUBSHELL) and char in "()":
            if context == _SUBSHELL and text.startswith("((", index) and self._at_word_start():
                self._push(_ARITH, 2)
                self._copy(2)
                return
            self._count(1 if char == "(" else -1)
        elif context in _COMMANDS:
            self._command(context, char)
            return
        self._copy(1)

    def _count(self, step: int) -> None:
        self.depths[-1] += step
        if self.depths[-1] == 0:
            self._pop()

    def _command(self, context: str, char: str) -> None:
        """Comments, heredocs, ``((`` and newlines: what only a command (not a quoted string) has."""
        text, index = self.text, self.index
        if char == "#" and self._at_word_start():
            end = text.find("\n", index)
            end = len(text) if end < 0 else end
            if context == _BACKTICK:  # the substitution's text ends at the next unescaped backtick
                position = index
                while position < end and text[position] != "`":
                    position += 2 if text[position] == "\\" else 1
                end = min(position, end)
            self._copy(end - index)
        elif text.startswith("<<", index):
            self._heredoc_operator()
        elif text.startswith("((", index) and self._at_word_start():
            self._push(_ARITH, 2)
            self._copy(2)
        elif char == "\n":
            self._copy(1)
            if self.pending:
                self._bodies(context)
        else:
            self._copy(1)

    def _heredoc_operator(self) -> None:
        text, index = self.text, self.index
        if text.startswith("<<<", index):  # a here-string: an ordinary word follows
            self._copy(3)
            return
        strip_tabs = text.startswith("<<-", index)
        start = index + (3 if strip_tabs else 2)
        while start < len(text) and text[start] in " \t":
            start += 1
        word = self._read_word(start)
        if word is None:  # no delimiter the scanner understands: read on as ordinary text
            self._copy(start - index)
            return
        delimiter, quoted, end = word
        self.out.append(text[index:start])
        in_backticks = self.in_backticks or _BACKTICK in self.stack
        self.pending.append(_Heredoc(len(self.out), delimiter, quoted, strip_tabs, in_backticks))
        self.out.append(text[start:end])
        self.index = end

    def _read_word(self, start: int) -> tuple[str, bool, int] | None:
        """A heredoc's delimiter at ``start``: ``(delimiter, quoted, end)``, None if there is none."""
        text, position = self.text, start
        parts: list[str] = []
        quoted = False
        while position < len(text) and text[position] not in _METACHARS:
            char = text[position]
            if char == "'":
                close = text.find("'", position + 1)
                if close < 0:
                    return None
                parts.append(text[position + 1 : close])
                position = close + 1
            elif char == '"':
                position += 1
                while position < len(text) and text[position] != '"':
                    if text[position] == "\\" and text[position + 1 : position + 2] in ('"', "\\", "$", "`"):
                        position += 1
                    parts.append(text[position : position + 1])
                    position += 1
                if position >= len(text):
                    return None
                position += 1
            elif char == "\\":
                parts.append(text[position + 1 : position + 2])
                position += 2
            else:
                parts.append(char)
                position += 1
                continue
            quoted = True
        delimiter = "".join(parts)
        if position == start or "\n" in delimiter:
            return None
        return delimiter, quoted, position

    def _bodies(self, context: str) -> None:
        """Read the pending heredocs' bodies, which start here (after the newline that ended their line)."""
        pending, self.pending = self.pending, []
        for doc in pending:
            body_end, resume, closed = self._body_end(doc, context)
            self.out.append(self._body(doc, self.text[self.index : body_end]))
            self.out.append(self.text[body_end:resume])  # the delimiter line, as written
            self.index = resume
            if closed:
                return  # it ended at "DELIM)": the rest of that line is the command again

    def _body_end(self, doc: _Heredoc, context: str) -> tuple[int, int, bool]:
        """Where the body ends, where reading resumes after its delimiter, and whether a ``)`` or backtick
        right after the delimiter closed the enclosing substitution."""
        text, position = self.text, self.index
        closer = _CLOSER.get(context)
        while position < len(text):
            line_start, logical, joined = position, "", False
            while True:  # bash joins backslash-newline in an unquoted heredoc before it compares
                newline = text.find("\n", position)
                stop = len(text) if newline < 0 else newline
                physical = text[position:stop]
                if doc.strip_tabs:
                    physical = physical.lstrip("\t")
                if doc.quoted or newline < 0 or not _odd_backslashes(physical):
                    logical += physical
                    break
                logical, joined, position = logical + physical[:-1], True, newline + 1
            after = len(text) if newline < 0 else newline + 1
            if logical == doc.delimiter:
                return line_start, after, False
            if closer and not joined and logical.startswith(doc.delimiter + closer):
                delimiter_end = stop - len(logical) + len(doc.delimiter)
                return line_start, delimiter_end, True
            position = after
        return len(text), len(text), False  # bash warns and takes the end of the command as the delimiter

    def _body(self, doc: _Heredoc, body: str) -> str:
        if not doc.quoted:
            return _Scanner(body, self.names, _HEREDOC, doc.in_backticks).run()
        mentions = any((match[1] or match[2]) in self.names for match in VARIABLE.finditer(body))
        if not mentions or doc.in_backticks or not _BARE_DELIMITER.match(doc.delimiter):
            return body  # backticks would need a second layer of escapes; left as written
        self.out[doc.slot] = doc.delimiter

        def escaped(match: re.Match[str]) -> str:
            name = match[1] or match[2]
            if name in self.names:
                return "${" + ENV[name] + "}"
            return "\\" + match[0]  # '$stone' when stone is not wanted: the '$' escaped, the rest plain

        return _ESCAPE_IN_HEREDOC.sub(escaped, body)
