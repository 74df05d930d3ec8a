"""The Jinja2 sandbox that user templates render in (bhrain's review rubric, behaviorci's prompts), bounded.

Jinja2's sandbox keeps a template away from Python's internals and caps ``range()`` at 100,000 items, but not
the size of what an operator builds, and it folds constant expressions while the template compiles: the
20-byte ``{{ 'x' * 10**9 }}`` took 36 s and 3.9 GB before anything ran. Here ``*``, ``**``, ``+`` and ``%``
are intercepted (Jinja2 then never folds them, and calls ``call_binop`` at run time), and a result longer
than ``MAX_TEXT`` characters or items, or an integer of more than ``MAX_INT_BITS`` bits, is refused before
it is built. ``render`` caps the whole text the same way as it streams out, which bounds loops
(``range(100000)`` times a long string). A refusal is Jinja2's ``SecurityError``, which the callers already
report in one line naming the template.

Import this module where a template is rendered, not at the top: it imports jinja2 (~25 ms).
"""

from __future__ import annotations

import math
import re
from typing import Any

from jinja2.exceptions import SecurityError
from jinja2.sandbox import ImmutableSandboxedEnvironment, SandboxedEnvironment

MAX_TEXT = 8 << 20  # characters: the size of the largest file the project reads as text (userfile.MAX_BYTES)
MAX_INT_BITS = 14_000  # about 4,300 digits, the longest integer Python itself turns into text
_TEXT = f" (a template may make {MAX_TEXT:,})"
_BITS = f" (a template may make {MAX_INT_BITS:,})"
# printf-style conversions of ``text % args``: a width or precision makes that much text ("%999999999s").
_PRINTF = re.compile(r"%(?:\([^)]*\))?[#0 +-]*(\*|\d*)(?:\.(\*|\d*))?")


def _size(value: Any) -> int | None:
    return len(value) if isinstance(value, str | bytes | list | tuple) else None


def _bits(value: Any) -> int | None:
    return abs(value).bit_length() if isinstance(value, int) else None


def _too_large(operator: str, left: Any, right: Any) -> str | None:
    """Why ``left operator right`` would be too large to build, or None."""
    if operator == "+":
        sizes = (_size(left), _size(right))
        if sizes[0] is not None and sizes[1] is not None and sizes[0] + sizes[1] > MAX_TEXT:
            return f"'+' would make {sizes[0] + sizes[1]:,} characters or items{_TEXT}"
    elif operator == "*":
        for seq, count in ((left, right), (right, left)):
            size, n = _size(seq), count if isinstance(count, int) else None
            if size is not None and n is not None and size * n > MAX_TEXT:
                return f"'*' would make {size * n:,} characters or items{_TEXT}"
        bits = (_bits(left), _bits(right))
        if bits[0] is not None and bits[1] is not None and bits[0] + bits[1] > MAX_INT_BITS:
            return f"'*' would make an integer of about {bits[0] + bits[1]:,} bits{_BITS}"
    elif operator == "**":
        if isinstance(left, int) and isinstance(right, int) and right > 0 and abs(left) > 1:
            power = right * math.log2(abs(left))
            if power > MAX_INT_BITS:
                return f"'**' would make an integer of about {power:,.0f} bits{_BITS}"
    elif operator == "%" and isinstance(left, str):
        args = right if isinstance(right, tuple) else (right,)
        for match in _PRINTF.finditer(left):
            for number in match.groups(""):  # "" for a precision not given
                star = number == "*" and any(isinstance(a, int) and abs(a) > MAX_TEXT for a in args)
                wide = number.isdigit() and (len(number) > 9 or int(number) > MAX_TEXT)
                if star or wide:
                    return f"'%' would make a field wider than a template may make ({MAX_TEXT:,} characters)"
    return None


class _Bounded(SandboxedEnvironment):
    intercepted_binops = frozenset({"*", "**", "+", "%"})

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        problem = _too_large(operator, left, right)
        if problem is not None:
            raise SecurityError(problem)
        return super().call_binop(context, operator, left, right)


class BoundedSandbox(_Bounded):
    """``SandboxedEnvironment`` with the operators bounded."""


class BoundedImmutableSandbox(_Bounded, ImmutableSandboxedEnvironment):
    """``ImmutableSandboxedEnvironment`` (lists and dicts passed in stay as they are), operators bounded."""


def render(template: Any, *args: Any, **variables: Any) -> str:
    """``template.render(...)``, refused with a ``SecurityError`` once the text passes ``MAX_TEXT``."""
    parts, size = [], 0
    for part in template.generate(*args, **variables):
        size += len(part)
        if size > MAX_TEXT:
            raise SecurityError(
                f"the rendered text is longer than a template may make ({MAX_TEXT:,} characters)"
            )
        parts.append(part)
    return "".join(parts)
