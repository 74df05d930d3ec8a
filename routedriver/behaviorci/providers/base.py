"""What every behaviorci provider offers the runner: one prompt in, one ``Generation`` out."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from routedriver.behaviorci.dataset import Case
from routedriver.llm.types import Usage

# on_retry(case_id, note): a provider announces each retry so the CLI can say so on stderr.
RetryNotice = Callable[[str, str], None]


@dataclass(frozen=True)
class Generation:
    text: str
    usage: Usage
    latency_ms: float  # wall time of the call, retries included
    attempts: int  # requests sent
    model: str = ""


class ProviderCallError(Exception):
    """A call failed for good (after its retries). ``auth`` failures stop the whole run: all would fail."""

    def __init__(
        self, message: str, *, attempts: int = 1, auth: bool = False, fix: str | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.attempts = attempts
        self.auth = auth
        self.fix = fix


class Provider(Protocol):
    name: str  # "openai", "anthropic", "mock"
    model: str
    cacheable: bool  # whether responses are worth keeping in the on-disk cache

    def identity(self) -> Mapping[str, Any]:
        """What, besides the prompt, decides the answer: the cache key is built from it."""
        ...

    def generate(self, prompt: str, case: Case, repeat_index: int) -> Generation:
        """Answer ``prompt``; raises ``ProviderCallError`` when the call failed for good."""
        ...
