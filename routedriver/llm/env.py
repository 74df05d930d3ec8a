"""Environment look-ups for provider settings, e.g. ``QWEN_API_KEY`` then ``DASHSCOPE_API_KEY``."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence


def first_env(names: Sequence[str], environ: Mapping[str, str] | None = None) -> tuple[str, str] | None:
    """The ``(name, value)`` of the first variable in ``names`` that is set to something non-blank.

    The value is stripped: a key pasted with a trailing newline (``export K="$(cat key.txt)"``) would
    otherwise be sent verbatim and fail as a mysterious 401. Blank variables are skipped so an exported but
    empty ``QWEN_API_KEY=`` does not hide a real ``DASHSCOPE_API_KEY``.
    """
    env = os.environ if environ is None else environ
    for name in names:
        value = env.get(name)
        if value is not None and value.strip():
            return name, value.strip()
    return None
