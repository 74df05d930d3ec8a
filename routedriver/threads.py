"""Run work concurrently, and stop on Ctrl-C without waiting for it: the one way routedriver makes threads
(``tests/test_doors.py`` holds the code to it and names the exceptions: a child's pipe readers in ``proc``,
the MCP SDK's anyio threads).

``Batch(work, jobs, workers=N)`` calls ``work(job)`` for every job in at most ``N`` daemon threads, starting
at once. Then either:

- ``batch.results()``: every job's value in job order; or, when a job raised, the first exception (in the
  order the jobs finished), once the jobs already running are done (so nothing they do, like a review
  writing its record, is cut off by the exit);
- ``for done in batch``: each ``Finished`` job (its value, or the exception it raised) as it finishes, for
  a caller that reports progress or stops early (every iterator sees every job: two loops over one batch
  do not share its jobs out between them); or
- ``batch.wait(timeout)``: whether every job started has finished within ``timeout`` seconds (the jobs go
  on if not); or
- ``later.Later(fn)``: one job started now, its value (or exception) collected by ``get()`` when needed, or
  waited for with a deadline (``wait``).

Stopping: a job that raises stops the batch, and so does ``batch.stop()`` (also called on leaving ``with
Batch(...) as batch:``, however the block ends): no job starts after it; the jobs running go on, and
nobody waits for them unless they ask (``results()``, iterating, ``wait``). The threads are daemon threads
and no pool joins them at exit (a ``ThreadPoolExecutor``'s are joined), so a Ctrl-C (the signal handler
raising in the waiting thread: every wait here is in short steps, and can be interrupted) exits at once,
while ``proc.kill_running`` takes down the commands they were running. Workers run in a copy of the
caller's ``contextvars`` context.

Any number of threads may wait on one batch at once (``results()``, ``wait``, ``Later.get()``, iterating):
the workers compute, the waiters all see the same outcome. Nothing a waiter does changes what another one
sees.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Generic, TypeVar, cast

J = TypeVar("J")
_SIGNAL_CHECK_S = 0.2  # how long a Ctrl-C that landed on a worker thread may wait to be seen
R = TypeVar("R")


class Finished(Generic[J, R]):
    """One job that finished: its value, or the exception it raised (``error``; then ``value`` is None)."""

    __slots__ = ("error", "index", "job", "value")

    def __init__(self, job: J, index: int, value: R | None, error: BaseException | None) -> None:
        self.job, self.index, self.value, self.error = job, index, value, error


class Batch(Generic[J, R]):
    """``work(job)`` for each of ``jobs`` in at most ``workers`` daemon threads named ``<name>-<n>``."""

    def __init__(
        self, work: Callable[[J], R], jobs: Iterable[J], *, workers: int, name: str = "work"
    ) -> None:
        self._work = work
        self._jobs: Sequence[J] = list(jobs)
        self._changed = threading.Condition()
        self._next = 0  # the index of the next job to start
        self._stopped = False
        self._finished: list[Finished[J, R]] = []  # in the order they finished; only ever appended to
        # Each worker runs in a copy of the caller's context: what the caller set in a ContextVar (a
        # proc.Scope, so that route.mcp can stop one request's commands) holds in the jobs too.
        context = contextvars.copy_context()
        for number in range(max(1, min(workers, len(self._jobs)))):
            threading.Thread(
                target=context.copy().run, args=(self._worker,), name=f"{name}-{number + 1}", daemon=True
            ).start()

    def _worker(self) -> None:
        while True:
            with self._changed:
                if self._stopped or self._next >= len(self._jobs):
                    return
                index = self._next
                self._next += 1
            job = self._jobs[index]
            try:
                done: Finished[J, R] = Finished(job, index, self._work(job), None)
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread, which decides
                done = Finished(job, index, None, exc)
            with self._changed:
                self._finished.append(done)
                if done.error is not None:
                    self._stopped = True  # a job that raises stops the batch: no job starts after it
                self._changed.notify_all()

    def stop(self) -> None:
        """Start no new job; the running ones go on, and are not waited for."""
        with self._changed:
            self._stopped = True
            self._changed.notify_all()

    @property
    def stopped(self) -> bool:
        return self._stopped

    def __enter__(self) -> Batch[J, R]:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def __iter__(self) -> Iterator[Finished[J, R]]:
        """Each job as it finishes; ends when every job started has finished and no other will start."""
        taken = 0  # this iterator's own place: another thread's loop over the batch does not move it
        while True:
            with self._changed:
                while taken == len(self._finished):
                    if (self._stopped or self._next == len(self._jobs)) and taken == self._next:
                        return
                    # Timed: the kernel may hand SIGINT/SIGTERM to a worker thread, and an untimed wait on
                    # this thread would then never return to run Python's handler (seen under load). Each
                    # wake-up lets the handler run, and raise here.
                    self._changed.wait(_SIGNAL_CHECK_S)
                done = self._finished[taken]
            taken += 1
            yield done

    def wait(self, timeout: float | None = None) -> bool:
        """Wait until every job started has finished and no other will start: True then; False when
        ``timeout`` seconds pass first (the jobs go on). The outcome itself is ``results()``'s."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._changed:
            while not self._over():
                left = _SIGNAL_CHECK_S
                if deadline is not None:
                    left = min(left, deadline - time.monotonic())
                    if left <= 0:
                        return False
                self._changed.wait(left)  # in short steps, for a Ctrl-C handed to a worker (see __iter__)
        return True

    def _over(self) -> bool:
        """No job will start and every one started has finished (called holding ``_changed``)."""
        return (self._stopped or self._next == len(self._jobs)) and len(self._finished) == self._next

    def results(self) -> list[R]:
        """Every job's value, in job order; or the first failure (in the order the jobs finished), raised
        once the jobs running are done. The same answer for every caller, however many ask at once."""
        finished = list(self)  # waits for the last job; the list it reads is only ever appended to
        failures = [done.error for done in finished if done.error is not None]
        if failures:
            raise failures[0]
        if len(finished) < len(self._jobs):
            raise RuntimeError(f"{len(self._jobs) - len(finished)} job(s) never ran: the batch was stopped")
        values = {done.index: cast(R, done.value) for done in finished}  # no error: each returned a value
        return [values[index] for index in range(len(self._jobs))]


def run_all(work: Callable[[J], R], jobs: Iterable[J], *, workers: int, name: str = "work") -> list[R]:
    """``Batch(work, jobs, workers=workers, name=name).results()``: the values in job order."""
    with Batch(work, jobs, workers=workers, name=name) as batch:
        return batch.results()
