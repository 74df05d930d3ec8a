"""Artifact manifests (path → content id), and how two of them differ, in words a person can act on."""

from __future__ import annotations

from collections.abc import Mapping


def changes(before: Mapping[str, str], after: Mapping[str, str]) -> list[str]:
    """``["changed a.md", "added b.md", "removed c.md"]``: what differs from ``before`` to ``after``."""
    found = [f"changed {path}" for path in sorted(before) if path in after and after[path] != before[path]]
    found += [f"added {path}" for path in sorted(after) if path not in before]
    found += [f"removed {path}" for path in sorted(before) if path not in after]
    return found


def describe(before: Mapping[str, str], after: Mapping[str, str], limit: int = 5) -> str:
    """``changed a.md, added b.md (+3 more)``; empty when nothing differs."""
    found = changes(before, after)
    text = ", ".join(found[:limit])
    if len(found) > limit:
        text += f" (+{len(found) - limit} more)"
    return text
