"""Externalized memory: content moved out of the context, kept here, and readable again with ``recall``."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Mapping
from typing import Any

from routedriver.brain.hooks import ToolOutcome
from routedriver.brain.toolbox import Toolbox, ToolboxConflict, ToolRegistry
from routedriver.brain.tools.base import Tool, ToolContext, fail, ok, schema, truncate

RECALL_TOOLBOX = "memory"


class MemoryStore:
    """Thread-safe key → text store; keys are short (``mem-1``) so the model can quote them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._items: dict[str, tuple[str, str]] = {}

    def put(self, content: str, label: str = "") -> str:
        with self._lock:
            key = f"mem-{len(self._items) + 1}"
            self._items[key] = (label, content)
            return key

    def get(self, key: str) -> str | None:
        with self._lock:
            item = self._items.get(key.strip())
            return item[1] if item else None

    def labels(self) -> dict[str, str]:
        with self._lock:
            return {key: label for key, (label, _) in self._items.items()}

    def __len__(self) -> int:
        return len(self._items)


def recall_toolbox(store: MemoryStore) -> Toolbox:
    def recall(args: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
        content = store.get(str(args["key"]))
        if content is None:
            known = ", ".join(store.labels()) or "none yet"
            return fail(f"no stored memory {args['key']!r}; stored keys: {known}")
        return ok(
            truncate(content, ctx.max_output_chars, hint="the stored text is longer than one result")[0]
        )

    tool = Tool(
        "recall",
        "Read content that was moved out of the conversation to save space (keys look like mem-1).",
        schema(
            {"key": {"type": "string", "description": "The key named in the memory notice, e.g. mem-1."}},
            ("key",),
        ),
        recall,
        read_only=True,
    )
    return Toolbox(RECALL_TOOLBOX, [tool], description="content moved out of the context")


def ensure_recall(registry: ToolRegistry, store: MemoryStore) -> None:
    """Offer ``recall`` from the next iteration on (idempotent; added only once something is stored)."""
    if RECALL_TOOLBOX in registry.toolbox_names():
        return
    with contextlib.suppress(ToolboxConflict):  # a user toolbox already has these names: theirs wins
        registry.add(recall_toolbox(store))
