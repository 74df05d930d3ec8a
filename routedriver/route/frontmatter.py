"""The format of every file under ``.route/``: ``---`` front matter of ``key: value`` lines, then a body.

Values that are not plain one-line text are written as JSON strings, so commands with quotes, newlines or
leading spaces round-trip exactly, and the file stays readable. Parsing is strict about shape (a truncated
or mangled file is None) so callers can treat anything odd as a cache miss.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

FENCE = "---"

Value = str | int | float | None
Fields = dict[str, list[str]]  # a key may repeat (e.g. ``file:`` in a .passed marker)


def _render_value(value: Value) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    plain = value and value == value.strip() and value != "null" and value[0] != '"' and value.isprintable()
    if plain:
        return value

    return json.dumps(value, ensure_ascii=False)


def render_document(fields: Sequence[tuple[str, Value]], body: str = "") -> str:
    """Front matter then ``body`` verbatim."""
    lines = [FENCE, *(f"{key}: {_render_value(value)}" for key, value in fields), FENCE]
    return "\n".join(lines) + "\n" + body


def parse_document(text: str) -> tuple[Fields, str] | None:
    """``(fields, body)``, or None when ``text`` is not one whole front-matter document."""
    split = split_document(text)
    if split is None:
        return None
    lines, body = split
    fields: Fields = {}
    for line in lines:
        if not add_line(fields, line):
            return None
    return fields, body


def split_document(text: str) -> tuple[list[str], str] | None:
    """``(front-matter lines, body)``, or None when the fences are missing (truncated)."""
    if not text.startswith(FENCE + "\n"):
        return None
    end = text.find("\n" + FENCE + "\n", len(FENCE))
    if end < 0:
        return None  # no closing fence: truncated
    # One split for the whole head (a .passed marker lists hundreds of artifacts); end == len(FENCE) is an
    # empty front matter ("---\n---\n").
    lines = text[len(FENCE) + 1 : end].split("\n") if end > len(FENCE) else []
    return lines, text[end + len(FENCE) + 2 :]


def add_line(fields: Fields, line: str) -> bool:
    """Add one ``key: value`` line to ``fields``; False when it is not one."""
    key, colon, value = line.partition(":")
    if not colon or not key or key != key.strip():
        return False
    value = value.strip()
    if value.startswith('"'):
        try:
            value = json.loads(value)
        except ValueError:
            return False
        if not isinstance(value, str):
            return False
    fields.setdefault(key, []).append(value)
    return True


def one(fields: Fields, key: str) -> str | None:
    values = fields.get(key)
    return values[-1] if values else None


def integer(fields: Fields, key: str) -> int | None:
    value = one(fields, key)
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def number(fields: Fields, key: str) -> float | None:
    value = one(fields, key)
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None
