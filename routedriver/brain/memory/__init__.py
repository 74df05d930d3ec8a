"""Memory managers: ``summarize-on-limit`` (default), ``truncate``, ``none`` and ``MODULE:OBJ`` plugins."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from routedriver.brain.memory.base import MemoryManagerLike
from routedriver.brain.memory.summarize import SummarizeOnLimit
from routedriver.brain.memory.truncate import TruncateMemory
from routedriver.brain.plugins import is_import_path, load_object
from routedriver.errors import Refused

BUILTIN_MEMORY = ("summarize-on-limit", "truncate", "none")


def create_memory(spec: str | Mapping[str, Any] | None) -> MemoryManagerLike | None:
    """A memory manager from a name, ``MODULE:OBJ``, or a mapping ``{strategy: NAME, option: value, …}``."""
    options: dict[str, Any] = {}
    if isinstance(spec, Mapping):
        options = dict(spec)
        spec = options.pop("strategy", None)
    name = str(spec or "summarize-on-limit")
    if name == "none":
        return None
    if name == "truncate":
        factory: Any = TruncateMemory
    elif name == "summarize-on-limit":
        factory = SummarizeOnLimit
    elif is_import_path(name):
        obj = load_object(name, what="memory manager")
        if isinstance(obj, MemoryManagerLike) and not isinstance(obj, type):
            if options:
                raise Refused(
                    f"memory manager {name} is an object, it takes no options", "remove the options"
                )
            return obj
        factory = obj
    else:
        raise Refused(f"unknown memory manager {name!r}", f"use {', '.join(BUILTIN_MEMORY)} or MODULE:OBJ")
    try:
        manager = factory(**options)
    except TypeError as exc:
        raise Refused(
            f"memory manager {name} rejected its options: {exc}", "check the memory options"
        ) from None
    if not isinstance(manager, MemoryManagerLike):
        raise Refused(f"memory manager {name} has no consult(state) method", "see docs/bhrain.md")
    return manager
