"""What a GitHub runner reads as a workflow command in a line of a step's output, as the runner decides it.

The runner (actions/runner, ``ActionCommand.TryParseV2`` then ``TryParse``) tries two syntaxes on every line
of stdout and stderr:

- ``::name key=value,key=value::data``: the line, its leading whitespace trimmed, starts with ``::``; the
  command ends at the next ``::``; properties split on ``,`` and ``=`` (the first ``=``), unescaped
  ``%0D %0A %3A %2C %25``; the data unescaped ``%0D %0A %25``.
- ``##[name key=value;key=value]data``: ``##[`` ANYWHERE in the line; the command ends at the next ``]``;
  properties split on ``;``.

Only registered names are commands (the ones below; ``stop-commands`` pauses the reading of every other
command until a line names its token). The tests read every line a command printed through ``parse`` and
check that only the commands the gate means to send are there.
"""

from __future__ import annotations

from typing import NamedTuple

REGISTERED = frozenset(
    {
        "add-mask",
        "add-matcher",
        "add-path",
        "debug",
        "echo",
        "endgroup",
        "error",
        "group",
        "notice",
        "remove-matcher",
        "save-state",
        "set-env",
        "set-output",
        "stop-commands",
        "warning",
    }
)


class Command(NamedTuple):
    name: str
    properties: dict[str, str]
    data: str


def _unescape(text: str, pairs: tuple[tuple[str, str], ...]) -> str:
    for escaped, char in pairs:
        text = text.replace(escaped, char)
    return text


_DATA = (("%0D", "\r"), ("%0A", "\n"), ("%25", "%"))
_PROPERTY = (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%"))
_OLD = (("%3B", ";"), ("%0D", "\r"), ("%0A", "\n"), ("%5D", "]"), ("%25", "%"))


def _split(info: str, separator: str, pairs: tuple[tuple[str, str], ...]) -> tuple[str, dict[str, str]]:
    name, _, rest = info.partition(" ")
    properties = {}
    for item in rest.split(separator):
        key, equals, value = item.strip().partition("=")
        if key and equals and value:
            properties[key] = _unescape(value, pairs)
    return name, properties


def parse(line: str) -> Command | None:
    """The workflow command ``line`` is to the runner, or None."""
    trimmed = line.lstrip()
    if trimmed.startswith("::"):
        end = trimmed.find("::", 2)
        if end >= 0:
            name, properties = _split(trimmed[2:end], ",", _PROPERTY)
            if name in REGISTERED:
                return Command(name, properties, _unescape(trimmed[end + 2 :], _DATA))
    start = line.find("##[")
    if start >= 0:
        end = line.find("]", start)
        if end >= 0:
            name, properties = _split(line[start + 3 : end], ";", _OLD)
            if name in REGISTERED:
                return Command(name, properties, _unescape(line[end + 1 :], _OLD))
    return None


def commands(output: str) -> list[Command]:
    """Every workflow command in ``output``, line by line (the runner splits on CR, LF and CRLF)."""
    found = []
    for line in output.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        command = parse(line)
        if command is not None:
            found.append(command)
    return found
