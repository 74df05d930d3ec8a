"""What an unexpected exception leaves behind: its traceback in the crash log, and one line saying where.

A command's last line of defence (``cli._exits``), a hook that fails closed (it puts the line in its
reason) and a route.mcp tool call (a call never takes the server down) all record the exception here, in
``<cache dir>/crash.log``, so that a user sees one line and the traceback is still there to read.
"""

from __future__ import annotations

import sys
from pathlib import Path


def path() -> Path:
    # Only when something went wrong: every command imports this module (cli._exits), and route.mcp's
    # handshake and --help would load fsutil for it alone (~1 ms).
    from routedriver.fsutil import cache_dir

    return cache_dir() / "crash.log"


def write(prog: str, exc: BaseException) -> Path | None:
    """Append the traceback to the crash log and say where it is; never raises (it runs while a failure is
    being handled already): None when the log cannot be written."""
    # datetime and traceback: only when there is a crash to log (this module is on every command)
    import datetime
    import traceback

    try:
        log = path()
        log.parent.mkdir(parents=True, exist_ok=True)
        # backslashreplace: argv and messages may hold undecodable bytes (surrogate escapes) of a path.
        with log.open("a", encoding="utf-8", errors="backslashreplace") as handle:
            stamp = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
            handle.write(f"--- {stamp} {prog} {' '.join(sys.argv[1:])}\n")
            handle.write("".join(traceback.format_exception(exc)))
        return log
    except Exception:  # noqa: BLE001 - a crash log we cannot write must not become a second crash
        return None


def internal_error(prog: str, exc: BaseException) -> str:
    """``internal error: <type>: <message>; details in <crash log>``, after writing the crash log."""
    where = write(prog, exc)
    detail = f"; details in {where}" if where else ""
    return f"internal error: {type(exc).__name__}: {' '.join(str(exc).split())}{detail}"
