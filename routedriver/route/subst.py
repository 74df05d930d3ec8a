"""Put ``$route``, ``$stone`` and ``$hash`` into a guard's shell command; no value is ever run as shell.

A small scanner follows the shell's quoting as it reads the command and quotes each value for the context
it lands in:

- outside quotes (also inside ``$( … )`` and backticks) → ``shlex.quote(value)``
- inside double quotes → backslash before ``\\ " $ `````
- inside single quotes → close the quote, splice ``shlex.quote(value)``, reopen (``$'…'`` likewise)

``${route}`` works too; ``$routes``, ``$ROUTE`` and every other ``$VAR`` are left for the shell.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping

NAMES = ("route", "stone", "hash")
VARIABLE = re.compile(r"\$(?:\{(route|stone|hash)\}|(route|stone|hash)(?![A-Za-z0-9_]))")

# Contexts on the scanner's stack.
_PLAIN, _DOUBLE, _SINGLE, _ANSI, _SUBSHELL, _BACKTICK = (
    "plain",
    "double",
    "single",
    "ansi",
    "subshell",
    "tick",
)


def _double_quoted(value: str) -> str:
    return re.sub(r'([\\"$`])', r"\\\1", value)


def _pop(stack: list[str], depths: list[int]) -> None:
    if len(stack) > 1:  # an unbalanced closer is the shell's problem; never drop the outermost context
        stack.pop()
        depths.pop()


def substitute(command: str, values: Mapping[str, str]) -> str:
    """``command`` with each known variable replaced by its value, quoted for where it stands."""
    out: list[str] = []
    stack = [_PLAIN]  # the quoting context at each nesting level
    depths = [0]  # open parentheses in each level (only subshells count them)
    index, length = 0, len(command)
    while index < length:
        context = stack[-1]
        char = command[index]
        match = VARIABLE.match(command, index) if char == "$" else None
        if match and (match[1] or match[2]) in values:
            value = values[match[1] or match[2]]
            if context == _SINGLE:
                out.append("'" + shlex.quote(value) + "'")
            elif context == _ANSI:
                out.append("'" + shlex.quote(value) + "$'")
            elif context == _DOUBLE:
                out.append(_double_quoted(value))
            else:
                out.append(shlex.quote(value))
            index = match.end()
            continue
        if context == _SINGLE:
            if char == "'":
                _pop(stack, depths)
            out.append(char)
            index += 1
            continue
        if char == "\\" and context in (_ANSI, _DOUBLE, _PLAIN, _SUBSHELL, _BACKTICK):
            out.append(command[index : index + 2])
            index += 2
            continue
        if context == _ANSI:
            if char == "'":
                _pop(stack, depths)
        elif command.startswith("$(", index):
            stack.append(_SUBSHELL)
            depths.append(1)
            out.append("$(")
            index += 2
            continue
        elif char == "`":
            if context == _BACKTICK:
                _pop(stack, depths)
            else:
                stack.append(_BACKTICK)
                depths.append(0)
        elif context == _DOUBLE:
            if char == '"':
                _pop(stack, depths)
        elif char == '"':
            stack.append(_DOUBLE)
            depths.append(0)
        elif command.startswith("$'", index):
            stack.append(_ANSI)
            depths.append(0)
            out.append("$'")
            index += 2
            continue
        elif char == "'":
            stack.append(_SINGLE)
            depths.append(0)
        elif context == _SUBSHELL and char in "()":
            depths[-1] += 1 if char == "(" else -1
            if depths[-1] == 0:
                _pop(stack, depths)
        out.append(char)
        index += 1
    return "".join(out)
