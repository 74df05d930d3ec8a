"""The errors a person or a robot reads and acts on, and the exit codes every command shares.

A command that fails says one line on stderr, ``error: <what is wrong>; <what to do>``, and exits with the
code its error carries: ``Refused`` 2 (the caller can fix it: bad flags or files, a guard said no),
``Malfunction`` 1 (something broke that the caller did not cause). ``Stopped`` is a signal unwinding the
command: ``Interrupted`` (SIGINT) 130, ``Terminated`` (SIGTERM) 143.

Library code raises these, or returns a ``report.Report``; it never prints or exits. ``cli._exits.run`` is
the one place an outcome becomes lines and an exit code.
"""

from __future__ import annotations

from enum import IntEnum


class ExitCode(IntEnum):
    OK = 0
    MALFUNCTION = 1  # a review/judge command crashed or timed out, an API failed, an internal error
    REFUSED = 2  # refused for a reason the caller can fix: bad input, guard rejection, missing artifact


class UserError(Exception):
    """An error a person or a robot can read and act on. Subclasses choose the exit code."""

    exit_code: ExitCode = ExitCode.MALFUNCTION

    def __init__(self, what: str, fix: str | None = None) -> None:
        super().__init__(what)
        self.what = what
        self.fix = fix

    def line(self) -> str:
        """The single line the CLI prints: ``error: <what>; <fix>``."""
        text = f"error: {self.what}"
        if self.fix:
            text += f"; {self.fix}"
        return " ".join(text.splitlines())

    def __str__(self) -> str:
        return self.what if not self.fix else f"{self.what}; {self.fix}"


class Refused(UserError):
    """The caller can fix this: bad flags or files, an artifact missing, a guard said no (exit 2)."""

    exit_code = ExitCode.REFUSED


class Malfunction(UserError):
    """Something broke that the caller did not cause: a crashed command, a failed API (exit 1)."""

    exit_code = ExitCode.MALFUNCTION


class Stopped(BaseException):
    """A signal stops the command: every layer unwinds without starting more work, then the CLI exits
    ``exit_code`` with ``error: <word>``. A BaseException, so that code turning failures into results (a
    tool's error result, a hook that fails open or closed) lets it through; and not a KeyboardInterrupt,
    which click would catch on the way and turn into a blank line and ``Abort``."""

    exit_code = 130
    word = "interrupted"
    signal_name = "SIGINT"


class Interrupted(Stopped):
    """SIGINT (Ctrl-C): exit 130, ``error: interrupted``."""


class Terminated(Stopped):
    """SIGTERM: exit 143, ``error: terminated``."""

    exit_code = 143
    word = "terminated"
    signal_name = "SIGTERM"
