"""A fast path for reading the YAML of ordinary guards without importing PyYAML.

``load(text)`` understands a deliberately small subset, the shape nearly every guard has: top-level
``key:`` lines whose value is a number, a one-line flow list (``['a', "b", c]``) or a block list of
``- item`` lines, with items that are quoted strings or plain words. For anything outside that subset
(comments after values, escapes, multi-line scalars, anchors, duplicate keys, words YAML would read as
booleans, numbers or null…) it returns None and the caller parses the text with PyYAML, which also produces
every error message. So a guard means exactly what PyYAML says it means; this only saves the import
(~15 ms) and the pure-Python parse (~0.5 ms per guard) on paths that read many guards (route.verify).
"""

from __future__ import annotations

import re
from typing import Any

_KEY = re.compile(r"([a-z_]+):(?:[ ]+(.*?))?[ ]*\Z")
_ITEM = re.compile(r"([ ]+)-[ ]+(.*?)[ ]*\Z")
# At most 15 digits a side: a longer number goes to PyYAML, where userfile refuses an integer too long.
_NUMBER = re.compile(r"[1-9][0-9]{0,14}(?:\.[0-9]{1,15})?\Z")
# A plain (unquoted) scalar we are sure PyYAML reads as this very string: no indicator at the start, no
# ': ' or ' #' inside, and not a word YAML 1.1 resolves to something else (bool, null, number, date, …).
_PLAIN_START_FORBIDDEN = set("-?:,[]{}#&*!|>'\"%@`~=<+.0123456789")
_YAML11_WORDS = "y Y yes Yes YES n N no No NO true True TRUE false False FALSE on On ON off Off OFF null Null"
_YAML11_WORDS += " NULL"
_RESOLVED_WORDS = frozenset(_YAML11_WORDS.split())


def _plain(value: str, in_flow: bool) -> str | None:
    if not value or value[0] in _PLAIN_START_FORBIDDEN or value in _RESOLVED_WORDS:
        return None
    if ": " in value or " #" in value or value.endswith(":") or "\t" in value or "\\" in value:
        return None
    if in_flow and any(char in value for char in ",[]{}?:#"):
        return None
    return value


def _scalar(value: str, in_flow: bool) -> str | None:
    """A quoted or plain scalar that is exactly ``value``, or None when unsure."""
    if not value.isprintable():
        return None  # YAML's idea of printable differs from Python's: let PyYAML decide
    if len(value) >= 2 and value[0] == value[-1] == "'":
        inner = value[1:-1]
        if "'" in inner.replace("''", ""):
            return None
        return inner.replace("''", "'")
    if len(value) >= 2 and value[0] == value[-1] == '"':
        return _double_quoted(value[1:-1])
    if value[:1] in ("'", '"'):
        return None
    return _plain(value, in_flow)


_ESCAPES = {"\\": "\\", '"': '"', "/": "/", "n": "\n", "t": "\t", "r": "\r", "0": "\0"}


def _double_quoted(inner: str) -> str | None:
    """The value of a one-line double-quoted YAML scalar using only the common escapes, or None."""
    out: list[str] = []
    index = 0
    while True:  # from one backslash to the next: the text between them is taken as it is
        slash = inner.find("\\", index)
        plain = inner[index:] if slash < 0 else inner[index:slash]
        if '"' in plain:
            return None  # an unescaped quote ends the scalar early: not one scalar
        out.append(plain)
        if slash < 0:
            return "".join(out)
        escaped = _ESCAPES.get(inner[slash + 1 : slash + 2])
        if escaped is None:
            return None
        out.append(escaped)
        index = slash + 2


def _flow_list(value: str) -> list[str] | None:
    inner = value[1:-1].strip()
    if not inner:
        return []
    items: list[str] = []
    index, length = 0, len(inner)
    while index < length:
        if inner[index] in "'\"":
            quote = inner[index]
            end = index + 1
            while True:
                end = inner.find(quote, end)
                if end < 0:
                    return None
                if quote == "'" and inner[end + 1 : end + 2] == "'":
                    end += 2  # '' is an escaped quote
                    continue
                break
            token, index = inner[index : end + 1], end + 1
        else:
            end = inner.find(",", index)
            end = length if end < 0 else end
            token, index = inner[index:end].strip(), end
        item = _scalar(token, in_flow=True)
        if item is None:
            return None
        items.append(item)
        rest = inner[index:].lstrip(" ")
        if not rest:
            break
        if rest[0] != ",":
            return None
        index = length - len(rest) + 1
        while index < length and inner[index] == " ":
            index += 1
        if index >= length:
            return None  # a trailing comma: leave it to PyYAML
    return items


def load(text: str) -> dict[str, Any] | None:
    """The mapping PyYAML would read from ``text``, or None when ``text`` is outside the subset."""
    if "\t" in text or "\r" in text or text.startswith("\ufeff"):
        return None
    data: dict[str, Any] = {}
    lines = text.split("\n")
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        match = _KEY.match(line)
        if match is None or match[1] in data:
            return None
        key, value = match[1], match[2] or ""
        if value.startswith("[") and value.endswith("]"):
            items = _flow_list(value)
            if items is None:
                return None
            data[key] = items
        elif _NUMBER.match(value):
            data[key] = float(value) if "." in value else int(value)
        elif value:
            return None
        else:
            block: list[str] = []
            indent = None
            while index < len(lines):
                item_line = lines[index]
                if not item_line.strip():
                    index += 1
                    continue
                item = _ITEM.match(item_line)
                if item is None:
                    if item_line[:1] in (" ", "-"):
                        return None  # something nested or odd under the key
                    break
                if indent is None:
                    indent = item[1]
                elif item[1] != indent:
                    return None
                scalar = _scalar(item[2], in_flow=False)
                if scalar is None:
                    return None
                block.append(scalar)
                index += 1
            if not block:
                return None  # "key:" alone is null in YAML
            data[key] = block
    return data
