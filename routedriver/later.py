"""``Later``: one piece of work started now on a daemon thread of its own (a ``threads.Batch`` of one), its
outcome collected when it is needed (``get``), or waited for with a deadline (``wait``).

Used for a slow, independent query run beside other work (git commands in ``gitops``, ``provenance``,
``policy`` and ``verify``; route.mcp loading the SDK while it answers the handshake), for work with a
deadline (the behavior classifier's model call) and for work off a loop's critical path (route.mcp's event
loop, bhrain's background memory). Everything ``threads`` says about stopping holds: the thread is a daemon,
and no wait here keeps a Ctrl-C from being seen.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

from routedriver.threads import Batch

T = TypeVar("T")


class Later(Generic[T]):
    """Runs ``fn`` in a daemon thread at once; ``get()`` waits for it and returns (or raises) its outcome, the
    same every time and to every thread that asks."""

    def __init__(self, fn: Callable[[], T]) -> None:
        self._batch: Batch[None, T] = Batch(lambda _: fn(), (None,), workers=1, name="later")

    def wait(self, timeout: float | None = None) -> bool:
        """Whether ``fn`` has finished, waiting at most ``timeout`` seconds for it (it goes on if not)."""
        return self._batch.wait(timeout)

    def get(self) -> T:
        return self._batch.results()[0]
