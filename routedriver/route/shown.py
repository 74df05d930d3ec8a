"""Text taken from the repository, made inert for each place it is shown. The one place that does it.

Route paths, stone and artifact names, an approver's name and what a judge recorded are the repository's
text: a pull request chooses them, and ``route.verify`` and ``route.status`` show them in a CI log, a JUnit
file, a JSON document and GitHub's step summary. Shown as they are, they could speak in those places for
the gate: a newline starts a line of the repository's choosing (``::stop-commands::`` would hide every
``::error`` after it), ``<!--`` in a step summary hides the rows below it, a quote ends a Mermaid label.

- ``line``: inside one line of output (stdout, stderr, a log GitHub Actions reads for workflow commands).
  Control characters and line separators become escapes a person can read (``\\n``, ``\\x1b``,
  ``\\u2028``; a byte that is not UTF-8, held as a surrogate escape, ``\\xNN``), so the text never ends the
  line; and ``##[``, which the runner reads as a command anywhere in a line (the old syntax, still
  honoured: ``##[stop-commands]…``), becomes ``##\\[``. Our own words start every line, so nothing taken
  from the repository starts one.
- ``json_text``: one JSON document, lossless (a parser reads back exactly the text): what ``json.dumps``
  leaves raw and a log would misread is written as a ``\\uXXXX`` escape (``#`` of ``##[``, C1 controls,
  line separators, lone surrogates).
- ``markdown``: a table cell or heading of GitHub Markdown: control characters escaped as ``line`` does,
  then the characters Markdown gives a meaning inline (HTML and comments, links and images, code spans,
  emphasis, math, cell pipes, entities) backslash-escaped, which CommonMark allows for any ASCII
  punctuation (so ``##[`` is written ``\\#\\#\\[``, and reads as itself).
- ``mermaid``: inside a quoted Mermaid label: control characters escaped, then Mermaid's own ``#name;``
  entities for what would end the label, start markup or open a ``%%{init}%%`` directive (found anywhere
  in the text).
- ``command_data`` and ``command_property``: the data and a property of a workflow command (``::error
  file=…,title=…::data``), escaped as the runner unescapes them.

XML needs nothing more than ``line``: ElementTree escapes ``<``, ``&``, ``>`` and quotes itself, and ``line``
leaves no character XML 1.0 cannot hold.
"""

from __future__ import annotations

import json

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
OLD_COMMAND = "##["  # the runner's first workflow-command syntax, matched anywhere in a line


def _unsafe(code: int) -> bool:
    """Cc (C0, DEL, C1), the line and paragraph separators, surrogates (a lone one is no character at all)
    and the two non-characters XML 1.0 excludes."""
    return (
        code < 0x20
        or 0x7F <= code <= 0x9F
        or code in (0x2028, 0x2029, 0xFFFE, 0xFFFF)
        or 0xD800 <= code <= 0xDFFF
    )


def _escape(char: str) -> str:
    code = ord(char)
    if not _unsafe(code):
        return char
    if char in _NAMED:
        return _NAMED[char]
    if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8 (os.fsdecode's surrogate escape)
        return f"\\x{code - 0xDC00:02x}"
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def _printable(text: str) -> str:
    # isprintable() is False for every unsafe character (and for a few harmless ones, kept as they are).
    return text if text.isprintable() else "".join(_escape(char) for char in text)


def line(text: str) -> str:
    """``text`` as part of one output line: it cannot end the line or be read as a workflow command."""
    return _printable(text).replace(OLD_COMMAND, "##\\[")


def json_text(document: object) -> str:
    """``document`` as indented JSON (non-ASCII text kept readable), ending in a newline; see the module."""
    text = json.dumps(document, ensure_ascii=False, indent=2)
    if not text.isascii():
        # json.dumps escapes the C0 controls in strings (a newline left is the indentation's) and writes
        # the structure in ASCII, so what is left stands inside strings: each becomes the escape a JSON
        # reader turns back into the same character.
        text = "".join(
            f"\\u{ord(char):04x}" if ord(char) >= 0x7F and _unsafe(ord(char)) else char for char in text
        )
    return text.replace(OLD_COMMAND, "#\\u0023[") + "\n"


# ASCII punctuation Markdown reads inline: \ ` * _ ~ (code, emphasis, strike-through), [ ] ! (links and
# images), < > & (HTML, comments, autolinks, entities), | (table cells), # (a heading's closing run),
# $ (math).
_MARKDOWN = frozenset("\\`*_~[]!<>&|#$")


def markdown(text: str) -> str:
    """``text`` as a Markdown table cell or heading, read as the characters it holds."""
    return "".join("\\" + char if char in _MARKDOWN else char for char in _printable(text))


# Inside a quoted label: " ends it, < > & ` start HTML, entities or Markdown strings, # starts an entity,
# % a %%{init}%% directive.
_MERMAID = {'"': "#quot;", "#": "#35;", "%": "#37;", "<": "#lt;", ">": "#gt;", "`": "#96;", "&": "#amp;"}


def mermaid(text: str) -> str:
    """``text`` inside a quoted Mermaid label (``["…"]``)."""
    return "".join(_MERMAID.get(char, char) for char in _printable(text))


def command_data(text: str) -> str:
    """The data of a workflow command: ``%``, CR and LF escaped as the runner unescapes them."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def command_property(text: str) -> str:
    """A property value of a workflow command: the data's escapes, and ``:`` and ``,``, which end it."""
    return command_data(text).replace(":", "%3A").replace(",", "%2C")
