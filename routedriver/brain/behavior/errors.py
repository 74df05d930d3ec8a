"""Errors of the behavior engine's configuration (kept apart so the hot path can import them cheaply)."""

from __future__ import annotations

from routedriver.errors import Refused


class BehaviorConfigError(Refused):
    """The behavior configuration (or a profile/prompt file it names) is invalid; the message names the
    file and the key path."""
