"""Keep secrets out of everything bhrain writes: logs, traces, JSON output and tool results.

A secret is the value of an environment variable whose name contains KEY, TOKEN, SECRET or PASSWORD (the
API keys of every provider and search backend). Values shorter than ``MIN_SECRET_LEN`` are ignored: "1" or
"true" would redact half the output and protect nothing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

SECRET_NAME_PARTS = ("KEY", "TOKEN", "SECRET", "PASSWORD")
MIN_SECRET_LEN = 6


class Redactor:
    def __init__(self, environ: Mapping[str, str] | None = None, extra: tuple[str, ...] = ()) -> None:
        env = os.environ if environ is None else environ
        secrets: dict[str, str] = {}
        for name, value in env.items():
            if any(part in name.upper() for part in SECRET_NAME_PARTS) and len(value) >= MIN_SECRET_LEN:
                secrets[value] = name
        for value in extra:
            if len(value) >= MIN_SECRET_LEN:
                secrets.setdefault(value, "secret")
        self._names = secrets
        # Longest first, so a secret that contains another is replaced whole.
        ordered = sorted(secrets, key=len, reverse=True)
        self._pattern = re.compile("|".join(re.escape(value) for value in ordered)) if ordered else None

    def text(self, text: str) -> str:
        if self._pattern is None or not text:
            return text
        return self._pattern.sub(lambda m: f"[REDACTED:{self._names[m.group(0)]}]", text)

    def value(self, value: Any) -> Any:
        """Redact every string inside a JSON-like value (dicts, lists, tuples, strings)."""
        if self._pattern is None:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {self.text(str(k)): self.value(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [self.value(v) for v in value]
        return value


NO_REDACTION = Redactor(environ={})
