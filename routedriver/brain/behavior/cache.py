"""The resolved configuration cached on disk, so a hook call pays for json, not for yaml + pydantic.

``bhrain behave`` runs on every tool call of a Claude Code session. The first call (and the first after any
of the source files changed: the config, a ``behavior/NAME.yaml`` profile, a prompt file, the built-in
rule and profile files) validates with pydantic and writes ``<state dir>/compiled/<hash of the config
path>.json``; later calls compare each source's mtime, size and content hash with what the cache recorded
and read the JSON. A corrupt or stale cache is a miss, never an error. The cache never holds secrets:
``{{secret.X}}`` stays unresolved in it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from routedriver import userfile
from routedriver.errors import Refused
from routedriver.fsutil import atomic_write, real_path

CACHE_FORMAT = 1  # bump when the resolved form or the resolution rules change


def _fingerprint(path: str) -> list[Any] | None:
    # Content hash as well as mtime: an edit within the file system's timestamp granularity that keeps
    # the size must still invalidate. The files are small; hashing them costs microseconds.
    try:
        mtime = os.stat(path).st_mtime_ns
        content = userfile.read_bytes(Path(path), what="behavior file")  # a FIFO now: a miss, not a hang
    except (OSError, Refused):
        return None
    return [path, mtime, len(content), hashlib.sha256(content).hexdigest()]


def cache_file(config_path: Path, cache_dir: Path) -> Path:
    key = hashlib.sha256(str(real_path(config_path)).encode("utf-8")).hexdigest()[:20]
    return cache_dir / f"{key}.json"


def load_resolved(config_path: Path, cache_dir: Path) -> dict[str, Any]:
    """The resolved behavior config of ``config_path``, from the cache when every source is unchanged."""
    target = cache_file(config_path, cache_dir)
    try:
        cached = json.loads(userfile.read_record(target))  # a FIFO put there: a miss, not a hang
        if (
            cached.get("format") == CACHE_FORMAT
            and cached.get("sources")
            and all(_fingerprint(entry[0]) == entry for entry in cached["sources"])
        ):
            resolved: dict[str, Any] = cached["resolved"]
            return resolved
    except (OSError, ValueError, TypeError, KeyError, IndexError, AttributeError):
        pass  # missing, corrupt or foreign: resolve again
    from routedriver.brain.behavior.resolve import load_behavior_file  # pydantic + yaml: only on a miss

    resolved, sources = load_behavior_file(config_path)
    fingerprints = [fp for fp in (_fingerprint(path) for path in sources) if fp is not None]
    # No fsync: the cache is derived data; a torn write after a power cut is a miss, not a loss. An
    # unwritable state dir costs speed, not correctness.
    with contextlib.suppress(OSError):
        atomic_write(
            target,
            json.dumps({"format": CACHE_FORMAT, "sources": fingerprints, "resolved": resolved}),
            fsync=False,
        )
    return resolved
