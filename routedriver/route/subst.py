"""Put ``$route``, ``$stone`` and ``$hash`` into a guard's shell command; no value ever enters its text.

The command runs with the values exported as ``ROUTE``, ``STONE`` and ``HASH`` (``guard._run``), so each
``$route`` becomes a *reference* to that variable, written for the place it stands in; the shell expands a
reference but never parses what it expands to as code, whatever the value holds. The one bash lexer
(``shellsyntax.lexer``) tells where each one stands:

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

from routedriver.route.model import VARIABLE
from routedriver.shellsyntax.lexer import Context, Token, lex

NAMES = ("route", "stone", "hash")
ENV = {"route": "ROUTE", "stone": "STONE", "hash": "HASH"}  # the variables the command must have exported
_ESCAPE_IN_HEREDOC = re.compile(VARIABLE.pattern + r"|[\\`$]")
# A delimiter that reads the same without its quotes (and that '<<-' cannot swallow a '-' of).
_BARE_DELIMITER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.,:+%@/=-]*\Z")

Edit = tuple[int, int, str]  # replace text[start:end] with this


def environment(values: Mapping[str, str]) -> dict[str, str]:
    """The variables a substituted command needs in its environment: ``{"ROUTE": …, "STONE": …}``."""
    return {ENV[name]: value for name, value in values.items() if name in ENV}


def substitute(command: str, names: Collection[str] = NAMES) -> str:
    """``command`` with each of ``names`` (``$route``, ``${stone}`` …) replaced by a reference to its
    environment variable (``ENV``), written for where it stands. A mapping of values works as ``names``."""
    wanted = frozenset(name for name in names if name in ENV)
    if not wanted or "$" not in command:
        return command

    edits: list[Edit] = []
    for token in lex(command):
        edits.extend(_edits(command, token, wanted))
    out: list[str] = []
    done = 0
    for start, end, replacement in sorted(edits):
        out.append(command[done:start])
        out.append(replacement)
        done = end
    out.append(command[done:])
    return "".join(out)


def _edits(text: str, token: Token, names: frozenset[str]) -> list[Edit]:
    """What to replace in one token: a ``$route``, every ``$route`` inside quotes that do not expand it, or a
    quoted heredoc whose body mentions one."""
    if token.kind == "dollar" and text[token.start + 1 : token.end] in names:
        return [(token.start, token.end, _reference(text[token.start + 1 : token.end], token.context))]
    if token.kind == "open" and token.value == "${":
        match = VARIABLE.match(text, token.start)
        if match and match[1] in names:
            return [(token.start, match.end(), _reference(match[1], token.context))]
    elif token.kind in ("single", "ansi"):
        return _inside_quotes(text, token, names)
    elif token.kind == "body" and token.heredoc is not None and token.heredoc.quoted:
        return _quoted_heredoc(text, token, names)
    return []


def _reference(name: str, context: Context | str) -> str:
    reference = "${" + ENV[name] + "}"
    if context == "single":
        return "'\"" + reference + "\"'"
    if context == "ansi":
        return "'\"" + reference + "\"$'"
    if context in ("double", "heredoc"):
        return reference  # no word splitting happens here, and '"' would be printed
    return '"' + reference + '"'


def _inside_quotes(text: str, token: Token, names: frozenset[str]) -> list[Edit]:
    """``'…$route…'``: close the quote around a reference (in ``$'…'``, ``\\`` keeps the next character)."""
    edits: list[Edit] = []
    position = token.start + (2 if token.kind == "ansi" else 1)
    while position < token.end:
        char = text[position]
        match = VARIABLE.match(text, position, token.end) if char == "$" else None
        if match and (match[1] or match[2]) in names:
            edits.append((position, match.end(), _reference(match[1] or match[2], token.kind)))
            position = match.end()
        else:
            position += 2 if char == "\\" and token.kind == "ansi" else 1
    return edits


def _quoted_heredoc(text: str, token: Token, names: frozenset[str]) -> list[Edit]:
    """A heredoc with a quoted delimiter expands nothing, so its delimiter loses its quotes and its body's
    backslashes, dollars and backticks are escaped: it prints the same text, and ``${ROUTE}`` expands."""
    doc = token.heredoc
    assert doc is not None
    body = text[token.start : token.end]
    mentions = any((match[1] or match[2]) in names for match in VARIABLE.finditer(body))
    if not mentions or doc.in_backticks or not _BARE_DELIMITER.match(doc.delimiter):
        return []  # backticks would need a second layer of escapes; left as written

    def escaped(match: re.Match[str]) -> str:
        name = match[1] or match[2]
        if name in names:
            return "${" + ENV[name] + "}"
        return "\\" + match[0]  # '$stone' when stone is not wanted: the '$' escaped, the rest plain

    return [(*doc.word, doc.delimiter), (token.start, token.end, _ESCAPE_IN_HEREDOC.sub(escaped, body))]
