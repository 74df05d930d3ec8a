"""Bash brace expansion of one word, for the word reader (``words``) and so the permission reader.

``{rm,-rf,x}`` is three words to bash (``rm -rf x``), so the reader expands braces the way bash does before it
looks at what runs: ``a{b,c}d`` → ``abd acd``, ``{1..3}`` → ``1 2 3``, ``{a..c..2}`` → ``a c``, nested and
side by side. Only unquoted, unescaped braces and commas count, which is why a word comes as characters each
marked "active" (typed bare) or not (quoted, escaped or produced by a substitution).
"""

from __future__ import annotations

import re

MAX_WORDS = 1024  # more than this and the reader gives up and says it is unsure
_INT_SEQUENCE = re.compile(r"^([+-]?\d+)\.\.([+-]?\d+)(?:\.\.([+-]?\d+))?$")
_CHAR_SEQUENCE = re.compile(r"^([A-Za-z])\.\.([A-Za-z])(?:\.\.([+-]?\d+))?$")

Chars = list[tuple[str, bool]]  # (character, active)


class TooManyWords(Exception):
    """The expansion would make more than ``MAX_WORDS`` words."""


def has_braces(chars: Chars) -> bool:
    return any(active and ch == "{" for ch, active in chars) and any(
        active and ch == "}" for ch, active in chars
    )


def expand(chars: Chars) -> list[str]:
    """The words bash makes of one word by brace expansion (the word itself when there is nothing to expand).

    Empty results are dropped, as bash drops unquoted empty words. Raises ``TooManyWords``.
    """
    return [word for word in _expand(chars) if word]


def _expand(chars: Chars) -> list[str]:
    start = 0
    while True:
        found = _next_expression(chars, start)
        if found is None:
            return ["".join(ch for ch, _ in chars)]
        open_index, close_index, alternatives = found
        if alternatives is not None:
            break
        start = open_index + 1
    head, tail = chars[:open_index], chars[close_index + 1 :]
    results: list[str] = []
    for alternative in alternatives:
        for word in _expand(head + alternative + tail):
            results.append(word)
            if len(results) > MAX_WORDS:
                raise TooManyWords
    return results


def _next_expression(chars: Chars, start: int) -> tuple[int, int, list[Chars] | None] | None:
    """The first active ``{`` from ``start`` that has a matching ``}``: its index, the ``}``'s index and the
    alternatives it stands for (None when it is not a brace expression: no top-level comma, no sequence)."""
    for open_index in range(start, len(chars)):
        if chars[open_index] != ("{", True):
            continue
        depth = 0
        commas: list[int] = []
        for index in range(open_index + 1, len(chars)):
            ch, active = chars[index]
            if not active:
                continue
            if ch == "{":
                depth += 1
            elif ch == "}":
                if depth == 0:
                    return open_index, index, _alternatives(chars[open_index + 1 : index], commas, open_index)
                depth -= 1
            elif ch == "," and depth == 0:
                commas.append(index)
    return None


def _alternatives(body: Chars, commas: list[int], open_index: int) -> list[Chars] | None:
    if commas:
        cuts = [c - open_index - 1 for c in commas]
        bounds = [-1, *cuts, len(body)]
        return [body[a + 1 : b] for a, b in zip(bounds, bounds[1:], strict=False)]
    if not all(active for _, active in body):
        return None
    sequence = _sequence("".join(ch for ch, _ in body))
    if sequence is None:
        return None
    return [[(ch, False) for ch in item] for item in sequence]


def _sequence(text: str) -> list[str] | None:
    """``1..5``, ``05..1..2``, ``a..e``: the items of a sequence expression; None if ``text`` is none."""
    if match := _INT_SEQUENCE.match(text):
        first, last = int(match.group(1)), int(match.group(2))
        step = abs(int(match.group(3) or 1)) or 1
        count = abs(last - first) // step + 1
        if count > MAX_WORDS:
            raise TooManyWords
        numbers = range(first, last + 1, step) if first <= last else range(first, last - 1, -step)
        padded = any(re.match(r"^[+-]?0\d", part) for part in (match.group(1), match.group(2)))
        width = max(len(match.group(1)), len(match.group(2))) if padded else 0
        return [_zero_padded(n, width) for n in numbers]
    if match := _CHAR_SEQUENCE.match(text):
        first, last = ord(match.group(1)), ord(match.group(2))
        step = abs(int(match.group(3) or 1)) or 1
        codes = range(first, last + 1, step) if first <= last else range(first, last - 1, -step)
        return [chr(code) for code in codes]
    return None


def _zero_padded(number: int, width: int) -> str:
    if number < 0:
        return "-" + str(-number).zfill(width - 1)
    return str(number).zfill(width)
