"""Counted words, the one way every command says them ("1 stone", "all 3 stones passed")."""

from __future__ import annotations


def count(number: int, noun: str, plural: str | None = None) -> str:
    """``1 judge``, ``2 judges`` (``plural`` when adding an s is wrong)."""
    return f"{number} {noun if number == 1 else plural or noun + 's'}"


def stones_passed(passed: int, total: int) -> str:
    """``all 3 stones passed``, ``its one stone passed``, ``1 of 2 stones passed``."""
    if passed == total:
        return "its one stone passed" if total == 1 else f"all {total} stones passed"
    return f"{passed} of {count(total, 'stone')} passed"
