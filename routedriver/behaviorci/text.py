"""Lone surrogates: JSON (and YAML) can spell them (``"\\ud83d"``), UTF-8 cannot carry them.

Such a string passes ``json.loads`` but breaks every later step that encodes it (a request body, a cache
entry, a report). Bundle files are refused with the place named; a model's answer is kept, each lone
surrogate replaced by U+FFFD at the provider boundary, so reports and the cache see the same text.
"""

from __future__ import annotations

import re
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")
REPLACEMENT = "\ufffd"


def lone_surrogate_at(value: Any, where: str = "") -> str | None:
    """The key path (``input.question``, ``[2]``) of the first string in ``value`` holding a lone surrogate,
    ``"(top)"`` for ``value`` itself, or None when there is none. Parsed JSON pairs valid surrogates into one
    character, so any surrogate left in a string is a lone one."""
    if isinstance(value, str):
        return (where or "(top)") if _SURROGATE.search(value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and _SURROGATE.search(key):
                return f"{where}.{key!a}" if where else f"{key!a}"
            found = lone_surrogate_at(item, f"{where}.{key}" if where else str(key))
            if found:
                return found
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            found = lone_surrogate_at(item, f"{where}[{index}]")
            if found:
                return found
    return None


def without_surrogates(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD."""
    return _SURROGATE.sub(REPLACEMENT, text)
