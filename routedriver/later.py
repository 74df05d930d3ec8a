"""``Later``: start a slow, independent query (a git command) now and collect its answer when needed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from routedriver.threads import Batch

T = TypeVar("T")


class Later(Generic[T]):
    """Runs ``fn`` in a daemon thread at once (a ``threads.Batch`` of one); ``get()`` waits for it and
    returns (or raises) its outcome, the same every time it is asked."""

    def __init__(self, fn: Callable[[], T]) -> None:
        self._batch: Batch[None, T] = Batch(lambda _: fn(), (None,), workers=1, name="later")

    def wait(self, timeout: float | None = None) -> bool:
        """Whether ``fn`` has finished, waiting at most ``timeout`` seconds for it (it goes on if not)."""
        return self._batch.wait(timeout)

    def get(self) -> T:
        return self._batch.results()[0]
