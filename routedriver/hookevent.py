"""One Claude Code hook event, read from stdin strictly: the event as a JSON object, or why it cannot be read.

Claude Code writes one JSON object to a command hook's stdin. ``route.bounce``, ``route.drive --when …``
and ``bhrain behave`` all read it here, and this module never guesses: input that is not UTF-8, not JSON,
JSON that is not an object, an object naming one key twice (two parsers could read two different events
from it), ``NaN``/``Infinity``, a document nested too deep for the parser or larger than ``MAX_BYTES`` is
``UnreadableEvent`` with a one-line reason. What an unreadable event MEANS is each hook's decision: a gate
fails closed (bounce and behave block a tool call they cannot read), a Stop hook decides from the route
alone.

``read_stdin`` returns None when stdin is a terminal or closed (a person ran the hook by hand: there is no
event), so hooks can tell "no event" apart from "an empty one". It imports nothing but json and sys: it
runs before every tool call.

The answers hooks give in Claude Code's JSON (exit 0, one object on stdout) are written here too:
``deny_tool`` (a ``PreToolUse`` hook refusing the call: the model reads only the reason, as the tool's
result) and ``block_stop`` (a ``Stop`` hook sending the robot back: the model reads the reason). Exit 2
with stderr says the same to Claude Code, but the model then reads it as "<event> hook error: [command]:
…", a failure of the hook rather than an answer; hooks keep exit 2 for what they cannot read.
"""

from __future__ import annotations

import json
import sys
from typing import Any, Final

from routedriver.errors import Refused
from routedriver.userfile import json_problem

# Far above any real event (a Write's whole file content travels in it), far below what would exhaust memory.
MAX_BYTES = 64 << 20
FIX = "Claude Code passes the hook event as one JSON object on stdin"


class UnreadableEvent(Refused):
    """The hook's stdin is not one readable JSON object; ``what`` says why, in one line."""


def read_stdin() -> bytes | None:
    """stdin's bytes (at most ``MAX_BYTES``), or None when stdin is a terminal or closed."""
    stream = sys.stdin
    if stream is None or getattr(stream, "closed", False) or stream.isatty():
        return None
    try:
        binary = getattr(stream, "buffer", None)
        if binary is not None:
            data: bytes = binary.read(MAX_BYTES + 1)
        else:  # a text stream without bytes below it (an embedding caller): what it holds, as UTF-8
            data = stream.read(MAX_BYTES + 1).encode("utf-8", "surrogateescape")
    except OSError as exc:
        raise UnreadableEvent(f"cannot read the hook event from stdin ({exc.strerror or exc})", FIX) from None
    if len(data) > MAX_BYTES:
        raise UnreadableEvent(f"the hook event is larger than {MAX_BYTES >> 20} MiB", FIX)
    return data


def parse_event(data: bytes | str) -> dict[str, Any]:
    """The event as a dict; ``UnreadableEvent`` for anything that is not exactly one JSON object."""
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise UnreadableEvent(f"the hook event is not UTF-8 (byte {exc.start})", FIX) from None
    else:
        text = data
    if not text.strip():
        raise UnreadableEvent("the hook event is empty", FIX)
    try:
        payload = json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
    except _Ambiguous as exc:
        raise UnreadableEvent(f"the hook event is ambiguous: {exc}", FIX) from None
    except ValueError as exc:  # JSONDecodeError, and an integer too long to convert
        reason = json_problem(exc) if isinstance(exc, json.JSONDecodeError) else str(exc).split(";")[0]
        raise UnreadableEvent(f"the hook event is not JSON ({reason})", FIX) from None
    except RecursionError:
        raise UnreadableEvent("the hook event is nested too deeply to read", FIX) from None
    if not isinstance(payload, dict):
        raise UnreadableEvent(wrong("the hook event", payload, "a JSON object"), FIX)
    return payload


class _Ambiguous(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise _Ambiguous(f"the key {key!r} appears twice in one object")
        found[key] = value
    return found


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def deny_tool(reason: str) -> str:
    """A ``PreToolUse`` hook's refusal, as Claude Code reads it from stdout (exit 0): the tool does not
    run and the model reads ``reason`` as the call's result."""
    decision = {
        "hookEventName": "PreToolUse",
        "permissionDecision": "deny",
        "permissionDecisionReason": reason,
    }
    return json.dumps({"hookSpecificOutput": decision}, ensure_ascii=False) + "\n"


def block_stop(reason: str) -> str:
    """A ``Stop`` hook's "do not stop yet", as Claude Code reads it from stdout (exit 0): the model goes on,
    reading ``reason``."""
    return json.dumps({"decision": "block", "reason": reason}, ensure_ascii=False) + "\n"


MISSING: Final = object()  # ``payload.get(key, MISSING)``: a field the event does not have


def kind(value: object) -> str:
    """What a JSON value is, for a message: 'a JSON array', 'null', 'a number', 'missing' …"""
    if value is MISSING:
        return "missing"
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a JSON array"
    return "an object"


def wrong(name: str, value: object, wanted: str) -> str:
    """'tool_input is a string, not an object', or 'tool_input is missing'."""
    return f"{name} is missing" if value is MISSING else f"{name} is {kind(value)}, not {wanted}"


def text_problem(name: str, value: object, wanted: str) -> str:
    """Why a field is not a non-blank string ('' when it is): 'tool_name is a number, not a tool's name'."""
    if not isinstance(value, str):
        return wrong(name, value, wanted)
    return "" if value.strip() else f"{name} is empty"


def path_problem(name: str, value: object) -> str:
    """Why a field is not one usable path ('' when it is): not a string, empty, or holding a NUL (which no
    file system accepts, and which would make the checks below fail instead of answer)."""
    if not isinstance(value, str):
        return wrong(name, value, "a path")
    if not value:
        return f"{name} is empty"
    if "\0" in value:
        return f"{name} holds a NUL character"
    return ""
