"""Keep secrets out of everything bhrain writes: logs, traces, JSON output and tool results.

A secret is the value of an environment variable whose name contains KEY, TOKEN, SECRET or PASSWORD (the
API keys of every provider and search backend). Values shorter than ``MIN_SECRET_LEN`` are ignored: "1" or
"true" would redact half the output and protect nothing. A secret is replaced by ``[REDACTED:NAME]``.

The model sees tool results only through ``shown``, which remembers each placeholder it put in front of the
model; ``restore_arguments`` maps exactly those back to the real values in the arguments a tool takes secrets
in (``Tool.restores_secrets``: the content ``write`` and ``edit`` put into a file, so a file the model reads
and writes back keeps its secrets; every argument of an MCP server configured with ``restoreSecrets``), and
nowhere else: a path, a command or another server's arguments keep the placeholder. The permission rules then
check the arguments as restored, which are exactly what the tool gets. A placeholder that also occurs
literally in a tool's raw output (a file that documents redaction, say) is ambiguous and never mapped back.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

SECRET_NAME_PARTS = ("KEY", "TOKEN", "SECRET", "PASSWORD")
MIN_SECRET_LEN = 6
# What a placeholder looks like, to find the ones the model sent back (only those ``shown`` produced count).
_PLACEHOLDER = re.compile(r"\[REDACTED:[^\[\]\s]+\]")


class Redactor:
    def __init__(self, environ: Mapping[str, str] | None = None, extra: tuple[str, ...] = ()) -> None:
        env = os.environ if environ is None else environ
        secrets: dict[str, str] = {}
        for name, value in env.items():
            if any(part in name.upper() for part in SECRET_NAME_PARTS) and len(value) >= MIN_SECRET_LEN:
                secrets[value] = name
        for value in extra:
            if len(value) >= MIN_SECRET_LEN and value not in secrets:
                # Distinct names keep every placeholder standing for one value, so it can be mapped back.
                count = sum(1 for name in secrets.values() if name.startswith("secret"))
                secrets[value] = f"secret_{count + 1}" if count else "secret"
        self._names = secrets
        # Longest first, so a secret that contains another is replaced whole.
        ordered = sorted(secrets, key=len, reverse=True)
        self._pattern = re.compile("|".join(re.escape(value) for value in ordered)) if ordered else None
        self._shown: dict[str, str | None] = {}  # placeholder → value; None: ambiguous, never mapped back

    def text(self, text: str) -> str:
        if self._pattern is None or not text:
            return text
        return self._pattern.sub(lambda m: self._placeholder(m.group(0)), text)

    def shown(self, text: str) -> str:
        """``text`` redacted for the model, remembering each placeholder it put in for ``restore``."""
        if self._pattern is None or not text:
            return text
        return self._pattern.sub(self._remember, text)

    def note_raw(self, output: str) -> None:
        """Mark the placeholders that occur literally in a tool's raw ``output`` as never to be mapped back.

        The model cannot tell such a literal from one ``shown`` produced, so writing it back must keep it.
        """
        if self._pattern is not None:
            for literal in _PLACEHOLDER.findall(output):
                self._shown[literal] = None

    def restore(self, value: Any) -> Any:
        """``value`` (JSON-like) with the placeholders ``shown`` produced replaced by their real values."""
        if not self._shown:
            return value
        if isinstance(value, str):
            return _PLACEHOLDER.sub(lambda m: self._shown.get(m.group(0)) or m.group(0), value)
        if isinstance(value, Mapping):
            return {k: self.restore(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.restore(v) for v in value]
        if isinstance(value, tuple):
            return tuple(self.restore(v) for v in value)
        return value

    def restore_arguments(self, arguments: Mapping[str, Any], names: Sequence[str]) -> dict[str, Any]:
        """A tool call's ``arguments`` with ``restore`` applied to those named in ``names`` (``"*"``: all),
        the only ones the tool takes secrets in. Everything else keeps the placeholder the model sent, so what
        the permission rules check (a path, a command, an MCP server's arguments) is what the tool gets."""
        if not names or not self._shown:
            return dict(arguments)
        every = "*" in names
        return {key: self.restore(v) if every or key in names else v for key, v in arguments.items()}

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

    def _placeholder(self, secret: str) -> str:
        return f"[REDACTED:{self._names[secret]}]"

    def _remember(self, match: re.Match[str]) -> str:
        placeholder = self._placeholder(match.group(0))
        self._shown.setdefault(placeholder, match.group(0))
        return placeholder


NO_REDACTION = Redactor(environ={})
