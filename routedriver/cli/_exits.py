"""How every command turns an outcome into one exit code and at most one line on stderr. No click here.

``run(prog, body)`` runs ``body`` (a command's work, returning a ``report.Report`` that it writes and turns
into the exit code, or an exit code, or None for 0) and maps:

- ``UserError``          → ``error: <what>; <fix>``, its exit code (2 refused, 1 malfunction)
- SIGINT / SIGTERM       → children stopped (none started after), ``error: interrupted`` 130 /
                           ``error: terminated`` 143
- a reader that went away (``| head``) → exit 1, nothing said
- anything unexpected    → ``error: internal error …; details in <crash log>``, exit 1, the traceback
                           only in the crash log (or on stderr with ``ROUTEDRIVER_DEBUG=1``)

Click commands reach it through ``routedriver.cli._command`` (which adds click's own usage errors); the
commands that start without click (``cli/_plain.py``: ``route.stone.*``, ``route.verify``) call it directly.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from routedriver.errors import ExitCode, Interrupted, Terminated, UserError
from routedriver.report import Report


def crash_log_path() -> Path:
    from routedriver.fsutil import cache_dir  # only when something went wrong

    return cache_dir() / "crash.log"


def _write_crash_log(prog: str, exc: BaseException) -> Path | None:
    """Append the traceback to the crash log; never raises (it runs while handling a failure already)."""
    import datetime
    import traceback

    try:
        path = crash_log_path()
        path.parent.mkdir(parents=True, exist_ok=True)
        # backslashreplace: argv and messages may hold undecodable bytes (surrogate escapes) of a path.
        with path.open("a", encoding="utf-8", errors="backslashreplace") as handle:
            stamp = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
            handle.write(f"--- {stamp} {prog} {' '.join(sys.argv[1:])}\n")
            handle.write("".join(traceback.format_exception(exc)))
        return path
    except Exception:  # noqa: BLE001 - a crash log we cannot write must not become a second crash
        return None


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
        sys.stdout.write(report.stdout)
        sys.stdout.flush()
    for line in report.stderr:
        say(line)
    return int(report.exit_code)


def internal_error(prog: str, exc: Exception) -> str:
    """``internal error: <type>: <message>; details in <crash log>``, after writing the crash log (and the
    traceback on stderr with ``ROUTEDRIVER_DEBUG=1``). A hook that fails closed puts it in its reason."""
    if os.environ.get("ROUTEDRIVER_DEBUG"):
        import traceback

        traceback.print_exception(exc, file=sys.stderr)
    where = _write_crash_log(prog, exc)
    detail = f"; details in {where}" if where else ""
    return f"internal error: {type(exc).__name__}: {' '.join(str(exc).split())}{detail}"
