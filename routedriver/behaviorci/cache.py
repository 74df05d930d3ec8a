"""The response cache: answers of real providers on disk, so an unchanged bundle reruns without calls.

Key: sha256 of the canonical JSON of the provider's identity (name, model, base URL, temperature,
max_tokens), the rendered prompt and the repeat index (``repeat: 5`` makes five distinct calls, not one
cached five times). Entries are JSON files ``<dir>/<key[:2]>/<key>.json`` written atomically; only
successful answers are stored; an entry that cannot be read or does not match its key is a miss and is
overwritten by the next answer. Default directory: ``$XDG_CACHE_HOME/routedriver/behaviorci`` (falling back
to ``~/.cache``), outside the repository so nothing needs ignoring; only ``--cache-dir`` moves it (a cached
answer is taken as the model's, so a bundle does not choose where they are read from).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from routedriver import userfile
from routedriver.fsutil import atomic_write, cache_dir

FORMAT_VERSION = 1


@dataclass(frozen=True)
class CachedAnswer:
    text: str
    input_tokens: int
    output_tokens: int
    latency_ms: float
    model: str


def default_cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    return cache_dir(environ) / "behaviorci"


def cache_key(identity: Mapping[str, Any], prompt: str, repeat_index: int) -> str:
    payload = {"v": FORMAT_VERSION, "identity": dict(identity), "prompt": prompt, "repeat": repeat_index}
    canonical = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    # surrogatepass: a --model given as bytes that are not UTF-8 arrives with surrogate escapes; a key only
    # needs to be stable, not readable.
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


class ResponseCache:
    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.write_errors = 0

    def _path(self, key: str) -> Path:
        return self.directory / key[:2] / f"{key}.json"

    def get(self, key: str) -> CachedAnswer | None:
        try:
            data = json.loads(userfile.read_record(self._path(key)))  # a FIFO there: a miss, not a hang
            if data.get("key") != key or data.get("v") != FORMAT_VERSION:
                return None
            return CachedAnswer(
                text=_typed(data["text"], str),
                input_tokens=_typed(data["input_tokens"], int),
                output_tokens=_typed(data["output_tokens"], int),
                latency_ms=float(_typed(data["latency_ms"], (int, float))),
                model=_typed(data.get("model", ""), str),
            )
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None  # missing, unreadable or corrupt: a miss, never a crash

    def put(self, key: str, answer: CachedAnswer) -> None:
        entry = {
            "v": FORMAT_VERSION,
            "key": key,
            "text": answer.text,
            "input_tokens": answer.input_tokens,
            "output_tokens": answer.output_tokens,
            "latency_ms": answer.latency_ms,
            "model": answer.model,
        }
        try:
            atomic_write(
                self._path(key), json.dumps(entry, ensure_ascii=False, sort_keys=True) + "\n", fsync=False
            )
        except (OSError, UnicodeError):  # UnicodeError: text no UTF-8 file can hold (a lone surrogate)
            self.write_errors += 1  # a cache that cannot be written only costs the next run its calls


def _typed(value: Any, kind: type | tuple[type, ...]) -> Any:
    if isinstance(value, bool) or not isinstance(value, kind):
        raise TypeError("unexpected type in cache entry")
    return value
