"""What one review or judge command produced, as the store records it."""

from __future__ import annotations

from typing import NamedTuple


class CommandOutcome(NamedTuple):
    status: str  # reviews: ok | failed | timeout; judges: passed | failed | malfunction
    exit_code: int
    duration_s: float
    stdout: str
    stderr: str = ""
