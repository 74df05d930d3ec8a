"""Reading JSON out of model output: the whole text, or the first ```json (or bare ```) fence in it.

Models often wrap JSON in a Markdown fence even when told not to; BehaviorCI 0.1.0 then reported a schema
failure for a correct answer. A fenced block is used only when the whole text is not JSON itself.
"""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```[ \t]*(?:json|JSON)?[ \t]*\r?\n(.*?)\r?\n?```", re.DOTALL)


def parse_output(text: str) -> tuple[Any, bool]:
    """``(value, True)`` when ``text`` is JSON or holds a fenced JSON block, else ``(None, False)``."""
    stripped = text.strip()
    if stripped:
        try:
            return json.loads(stripped), True
        except (json.JSONDecodeError, RecursionError):
            pass
    for match in _FENCE.finditer(text):
        try:
            return json.loads(match.group(1)), True
        except (json.JSONDecodeError, RecursionError):
            continue
    return None, False
