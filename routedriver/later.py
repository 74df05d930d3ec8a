"""``Later``: start a slow, independent query (a git command) now and collect its answer when needed."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Later(Generic[T]):
    """Runs ``fn`` in a daemon thread at once; ``get()`` waits for it and returns (or raises) its outcome."""

    def __init__(self, fn: Callable[[], T]) -> None:
        self._value: list[T] = []
        self._error: list[BaseException] = []
        self._thread = threading.Thread(target=self._run, args=(fn,), daemon=True)
        self._thread.start()

    def _run(self, fn: Callable[[], T]) -> None:
        try:
            self._value.append(fn())
        except BaseException as exc:  # re-raised by get() in the caller's thread
            self._error.append(exc)

    def get(self) -> T:
        self._thread.join()
        if self._error:
            raise self._error[0]
        return self._value[0]
