"""Match a relative POSIX path against a glob the way ``glob.glob(..., recursive=True)`` reads it.

``*`` and ``?`` stay within one path component, ``[…]`` is a character class, ``**`` as a whole component
spans any number of directories (``src/**`` is everything under ``src``; ``**/x.py`` is ``x.py`` anywhere)
and a trailing ``/`` means "everything under this directory". Used by ``route.bounce`` to test ``protect:``
globs against one path without touching the disk.
"""

from __future__ import annotations

import re
from functools import lru_cache


@lru_cache(maxsize=512)
def compile_glob(pattern: str) -> re.Pattern[str]:
    if pattern.endswith("/"):
        pattern += "**"
    parts = pattern.split("/")
    out: list[str] = []
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        if part == "**":
            # Zero or more whole components; as the last component, also everything below.
            out.append(".*" if last else "(?:[^/]*/)*")
            continue
        out.append(_component(part) + ("" if last else "/"))
    return re.compile("".join(out) + r"\Z", re.DOTALL)


def _component(part: str) -> str:
    out: list[str] = []
    index, length = 0, len(part)
    while index < length:
        char = part[index]
        if char == "*":
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
        elif char == "[":
            end = part.find("]", index + 2 if part[index + 1 : index + 2] in ("!", "]") else index + 1)
            if end < 0:
                out.append(re.escape(char))
            else:
                body = part[index + 1 : end]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\").replace("[", "\\[") + "]")
                index = end
        else:
            out.append(re.escape(char))
        index += 1
    return "".join(out)


def matches(path: str, pattern: str) -> bool:
    """Whether the relative POSIX ``path`` matches ``pattern``."""
    return compile_glob(pattern).match(path) is not None
