"""What ``behaviorci run`` says on stderr while it works: a start line, retry notices, a progress bar.

Following the project's contract, chatter (the start line, "report written to") appears only when stderr is
a terminal or with ``--verbose``; warnings (retries, cache write failures) appear unless ``--quiet``, so CI
logs show them. The progress bar (Rich) appears only on a terminal. Notices may come from worker threads,
so writes are serialized.
"""

from __future__ import annotations

import io
import sys
import threading
from collections.abc import Callable
from types import TracebackType
from typing import Any, TextIO


class Status:
    def __init__(
        self,
        *,
        quiet: bool,
        verbose: bool = False,
        stream: TextIO | None = None,
        progress_bar: bool | None = None,
        on_first_result: Callable[[], None] | None = None,
    ) -> None:
        self.quiet = quiet
        self._on_first_result = on_first_result
        # sys.stderr is None when the command started with stderr closed (`2>&-`): say nothing, run anyway.
        self.stream: TextIO = stream or sys.stderr or io.StringIO()
        self.lock = threading.Lock()
        interactive = self.stream.isatty() if progress_bar is None else progress_bar
        self._chatty = (interactive or verbose) and not quiet
        self._want_bar = interactive and not quiet
        self._progress: Any = None
        self._task: Any = None

    def say(self, line: str) -> None:
        """Chatter: only on a terminal or with --verbose."""
        if self._chatty:
            self._write(line)

    def warn(self, line: str) -> None:
        """Something the reader of a CI log should see: always, unless --quiet."""
        if not self.quiet:
            self._write(line)

    def _write(self, line: str) -> None:
        with self.lock:
            if self._progress is not None:
                self._progress.console.print(line, markup=False, highlight=False)
            else:
                # One write: print's separate newline could let another thread's line (the final
                # "error: interrupted") land between a line and its end.
                self.stream.write(line + "\n")
                self.stream.flush()

    def retry(self, case_id: str, note: str) -> None:
        self.warn(f"behaviorci: case {case_id}: {note}")

    def start_progress(self, total: int) -> None:
        if not self._want_bar:
            return
        # rich (~20 ms): only a progress bar on a terminal loads it
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        console = Console(file=self.stream, stderr=self.stream is sys.stderr)
        self._progress = Progress(
            TextColumn("running"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        self._progress.start()
        self._task = self._progress.add_task("cases", total=total)

    def advance(self, done: int, total: int) -> None:
        if self._on_first_result is not None:
            first, self._on_first_result = self._on_first_result, None
            first()
        if self._progress is not None:
            self._progress.update(self._task, completed=done, total=total)

    def stop_progress(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def __enter__(self) -> Status:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop_progress()
