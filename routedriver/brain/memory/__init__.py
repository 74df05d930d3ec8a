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
# The built-ins' numeric options, checked before the run: a NaN ratio compares false with everything (the
# memory would act on every turn), a string fails deep in the loop.
RATIOS = ("trigger_ratio", "target_ratio")  # fractions of the context window
COUNTS = ("condense_chars", "summary_tokens")


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
    if name in BUILTIN_MEMORY:
        _check_options(options)
    try:
        manager = factory(**options)
    except TypeError as exc:
        raise Refused(
            f"memory manager {name} rejected its options: {exc}", "check the memory options"
        ) from None
    if not isinstance(manager, MemoryManagerLike):
        raise Refused(f"memory manager {name} has no consult(state) method", "see docs/bhrain.md")
    return manager


def _check_options(options: Mapping[str, Any]) -> None:
    for key, value in options.items():
        number = not isinstance(value, bool) and isinstance(value, int | float)
        if key in RATIOS and not (number and 0 < value <= 1):
            raise Refused(
                f"memory option {key} must be a number above 0 and at most 1, not {value!r}", "fix it"
            )
        if key in COUNTS and not (number and isinstance(value, int) and value > 0):
            raise Refused(f"memory option {key} must be a positive whole number, not {value!r}", "fix it")
