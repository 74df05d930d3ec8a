"""What bash's ``echo`` and ``printf`` builtins print, worked out from their words (already decoded by
``words``), for a reader that must know the text they pipe into a shell (``printf 'r\\x6d x' | bash``).

``echo_output(args, escapes=…)``: ``-n``, ``-e`` and ``-E`` options as bash reads them (a word made only
of those letters after a ``-``), and with ``-e`` (or ``shopt -s xpg_echo``) the escapes ``\\a \\b \\c \\e
\\E \\f \\n \\r \\t \\v \\\\ \\0NNN \\xHH \\uHHHH \\UHHHHHHHH``; ``\\c`` ends the output.

``printf_output(args)``: the format's escapes (as ``$'…'``, octal as ``\\NNN``), its ``%s``, ``%b`` (the
argument's escapes decoded as ``echo -e`` does), ``%c`` and ``%%`` directives, the format used again while
arguments are left; None for what it does not work out (other directives, widths, ``-v``), so a caller
can say it is unsure rather than guess.
"""

from __future__ import annotations

import re

_SIMPLE = {
    "a": "\a",
    "b": "\b",
    "e": "\x1b",
    "E": "\x1b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
    "v": "\v",
    "\\": "\\",
}
_ECHO_OPTION = re.compile(r"^-[neE]+$")
_HEX_DIGITS = {"u": re.compile(r"[0-9A-Fa-f]{1,4}"), "U": re.compile(r"[0-9A-Fa-f]{1,8}")}
_DIRECTIVE = re.compile(r"%(?P<spec>[-+ #0-9.*]*)(?P<conv>.?)")


class _Stop(Exception):
    """``\\c``: no more output."""


def _escape(text: str, index: int, *, echo: bool) -> tuple[str, int]:
    r"""The character(s) the escape at ``text[index]`` (just after the backslash) stands for, and where the
    text goes on. ``echo``: echo's escapes (``echo -e``, ``%b``: octal is ``\0NNN`` and ``\c`` ends all
    output, raising ``_Stop``); otherwise printf's format (octal is ``\NNN``, ``\"`` ``\'`` ``\?`` are the
    character, ``\c`` is no escape)."""
    char = text[index] if index < len(text) else ""
    if char in _SIMPLE:
        return _SIMPLE[char], index + 1
    if char == "c" and echo:
        raise _Stop
    if not echo and char in "\"'?":
        return char, index + 1
    if char == "x":
        digits = re.match(r"[0-9A-Fa-f]{1,2}", text[index + 1 :])
        if digits:
            return chr(int(digits.group(0), 16)), index + 1 + len(digits.group(0))
        return "\\x", index + 1
    if char in "uU":
        digits = re.match(_HEX_DIGITS[char], text[index + 1 :])
        if digits:
            value = int(digits.group(0), 16)
            return (chr(value) if value < 0x110000 else ""), index + 1 + len(digits.group(0))
        return "\\" + char, index + 1
    if echo and char == "0":
        digits = re.match(r"[0-7]{0,3}", text[index + 1 :])
        assert digits is not None
        return chr(int(digits.group(0) or "0", 8) & 0xFF), index + 1 + len(digits.group(0))
    if not echo and char in "01234567":
        digits = re.match(r"[0-7]{1,3}", text[index:])
        assert digits is not None
        return chr(int(digits.group(0), 8) & 0xFF), index + len(digits.group(0))
    return "\\" + char, index + 1  # not an escape: the backslash stays


def _decode(text: str, out: list[str], *, echo: bool) -> None:
    r"""``text`` with its escapes decoded, into ``out`` (echo's raise ``_Stop`` after a ``\c``)."""
    index = 0
    while index < len(text):
        char = text[index]
        if char != "\\":
            out.append(char)
            index += 1
            continue
        decoded, index = _escape(text, index + 1, echo=echo)
        out.append(decoded)


def echo_output(args: list[str], *, escapes: bool = False) -> str:
    """What ``echo ARGS`` prints (``escapes``: ``-e`` is the default, as with ``shopt -s xpg_echo``)."""
    newline = True
    while args and _ECHO_OPTION.match(args[0]):
        for letter in args[0][1:]:
            if letter == "n":
                newline = False
            else:
                escapes = letter == "e"
        args = args[1:]
    text = " ".join(args)
    if not escapes:
        return text + ("\n" if newline else "")
    out: list[str] = []
    try:
        _decode(text, out, echo=True)
    except _Stop:
        return "".join(out)
    return "".join(out) + ("\n" if newline else "")


def printf_output(args: list[str]) -> str | None:
    """What ``printf ARGS`` prints, or None when it cannot be worked out here (see the module docstring)."""
    if args[:1] == ["--"]:
        args = args[1:]
    if not args or args[0].startswith("-") and args[0] != "-":
        return None  # -v NAME (assigns, prints nothing) or an option we do not know
    fmt, rest = args[0], args[1:]
    out: list[str] = []
    try:
        while True:
            used = _format_once(fmt, rest, out)
            rest = rest[used:]
            if not rest or used == 0:
                break
    except _Stop:  # a %b argument's \c: nothing more is printed
        pass
    except ValueError:
        return None
    return "".join(out)


def _format_once(fmt: str, args: list[str], out: list[str]) -> int:
    """Print ``fmt`` once into ``out``, taking arguments from ``args``; how many it took."""
    used = 0
    index = 0
    while index < len(fmt):
        char = fmt[index]
        if char == "\\":
            decoded, index = _escape(fmt, index + 1, echo=False)
            out.append(decoded)
            continue
        if char != "%":
            out.append(char)
            index += 1
            continue
        directive = _DIRECTIVE.match(fmt, index)
        assert directive is not None
        spec, conv = directive.group("spec"), directive.group("conv")
        index = directive.end()
        if conv == "%" and not spec:
            out.append("%")
            continue
        if spec or conv not in ("s", "b", "c"):
            raise ValueError(f"printf directive %{spec}{conv}")
        value = args[used] if used < len(args) else ""
        used += 1 if used < len(args) else 0
        if conv == "s":
            out.append(value)
        elif conv == "c":
            out.append(value[:1])
        else:
            _decode(value, out, echo=True)  # %b: echo -e's escapes (\c stops all output)
    return used
