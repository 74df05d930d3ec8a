"""Artifact manifests (path → content id): how two of them differ, in words a person can act on, and the
manifest a marker or pass record lists."""

from __future__ import annotations

from collections.abc import Mapping

from routedriver.route import frontmatter as fm


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


def manifest_in(text: str, key: str = "artifact") -> tuple[tuple[str, str], ...]:
    """The sorted ``(path, content id)`` pairs of a marker's ``artifact: <content id> <path>`` lines (the id
    first: paths may hold spaces; ``key="input"``: a pass record's ``input:`` lines, the guard's inputs);
    empty when ``text`` is not a whole front-matter document."""
    split = fm.split_document(text)
    if split is None:
        return ()
    fields: fm.Fields = {}
    for line in split[0]:
        fm.add_line(fields, line)
    entries = []
    for value in fields.get(key, ()):
        content_id, _, path = value.partition(" ")
        if path:
            entries.append((path, content_id))
    return tuple(sorted(entries))
