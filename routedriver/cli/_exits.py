"""The one place a command's outcome becomes output and an exit code. No click here.

``run(prog, body)`` runs ``body``, a command's work, with SIGINT and SIGTERM handled (on the main thread),
and returns the exit code:

- a ``report.Report``    → its stdout written, then its stderr lines; its exit code (every command returns
                           one; an int, or None for 0, is still taken, for click's own outcomes)
- ``UserError``          → ``error: <what>; <fix>``, its exit code (2 refused, 1 malfunction)
- SIGINT / SIGTERM       → the commands it started stopped first (``proc.kill_running``: none starts
                           after), then ``error: interrupted`` 130 / ``error: terminated`` 143
- a reader that went away (``| head``) → exit 1, nothing said
- the current directory gone → ``error: the current directory no longer exists …``, exit 1
- anything unexpected    → ``error: internal error …; details in <crash log>`` (``crashlog``), exit 1; the
                           traceback only in the crash log (and on stderr with ``ROUTEDRIVER_DEBUG=1``)

``say`` writes one line on stderr; ``internal_error`` is the line for an unexpected exception, for a hook
that fails closed and must say why in its own answer. Click commands reach ``run`` through
``routedriver.cli._command`` (which adds click's usage errors); ``_plain.PlainCommand`` (route.stone.*,
route.verify) calls it directly, without importing click.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable
from typing import Any

from routedriver import crashlog
from routedriver.errors import ExitCode, Interrupted, Terminated, UserError
from routedriver.report import Report


def say(line: str) -> None:
    """One line on stderr."""
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def _stop_children() -> None:
    # Only if this command started any: importing proc just to find nothing would cost start-up time.
    proc = sys.modules.get("routedriver.proc")
    if proc is not None:
        proc.kill_running(stop=True)


def _on_signal(signum: int, frame: object) -> None:
    # Stop child processes HERE, before unwinding: worker threads blocked on them would otherwise keep
    # a thread pool's exit (and so the whole unwind) waiting for commands that may run for many minutes.

    _stop_children()
    if signum == signal.SIGINT:
        raise Interrupted()
    raise Terminated()


def run(prog: str, body: Callable[[], Report | int | None]) -> int:
    """Run ``body`` under the shared error contract; returns the exit code."""
    previous: dict[int, Any] = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            previous[signum] = signal.signal(signum, _on_signal)
        except ValueError:  # not the main thread (an embedding caller): leave signals to it
            break
    try:
        return _run(prog, body)
    finally:
        for restored, handler in previous.items():
            signal.signal(restored, handler)


def _run(prog: str, body: Callable[[], Report | int | None]) -> int:
    try:
        os.getcwd()
    except FileNotFoundError:
        # Exit 1, not 2: under Claude Code a hook's exit 2 would block the robot's tool call.
        say("error: the current directory no longer exists; cd into an existing directory and run it again")
        return int(ExitCode.MALFUNCTION)
    try:
        code = body()
        if isinstance(code, Report):
            return _write(code)
    except UserError as exc:
        say(exc.line())
        return int(exc.exit_code)
    except Terminated:
        say("error: terminated")
        return 143
    except BrokenPipeError:
        # Our reader went away (e.g. `| head`); nothing useful can be said to it.
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the interpreter's flush at exit
        return int(ExitCode.MALFUNCTION)
    except (Interrupted, KeyboardInterrupt):  # KeyboardInterrupt: raised where our handler is not set
        say("error: interrupted")
        return 130
    except Exception as exc:  # noqa: BLE001 - the last line of defence: no traceback for users
        say(f"error: {internal_error(prog, exc)}")
        return int(ExitCode.MALFUNCTION)
    return int(code) if isinstance(code, int) else int(ExitCode.OK)


def _write(report: Report) -> int:
    """A command's report: its result on stdout, its lines on stderr, its exit code."""
    if report.stdout:
        try:
            sys.stdout.write(report.stdout)
        except UnicodeEncodeError:  # a lone surrogate a model sent ("\ud83d" is valid JSON) has no bytes
            encoding = sys.stdout.encoding or "utf-8"
            sys.stdout.write(report.stdout.encode(encoding, "replace").decode(encoding))
        sys.stdout.flush()
    for line in report.stderr:
        say(line)
    return int(report.exit_code)


def internal_error(prog: str, exc: Exception) -> str:
    """``internal error: <type>: <message>; details in <crash log>`` (``crashlog``), and the traceback on
    stderr too with ``ROUTEDRIVER_DEBUG=1``. A hook that fails closed puts the line in its reason."""
    if os.environ.get("ROUTEDRIVER_DEBUG"):
        # traceback: only with ROUTEDRIVER_DEBUG (crashlog imports it for the log)
        import traceback

        traceback.print_exception(exc, file=sys.stderr)

    return crashlog.internal_error(prog, exc)
