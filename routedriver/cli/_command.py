"""Click commands that turn every failure into one line on stderr and one exit code.

Every console script is a ``Command`` or ``Group`` from this module. Callbacks return an ``int`` exit code
(or ``None`` for 0) and raise ``routedriver.errors.UserError`` subclasses for anything the user should read.
This is the one place errors become exits:

- ``UserError``          → ``error: <what>; <fix>``, its exit code (2 refused, 1 malfunction)
- click usage errors     → ``error: <message>; see <prog> --help``, exit 2
- anything unexpected    → ``error: internal error …; details in <crash log>``, exit 1, the traceback
                           only in the crash log (or on stderr with ``ROUTEDRIVER_DEBUG=1``)

It behaves the same under a console script and under ``click.testing.CliRunner``.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from routedriver.errors import ExitCode, UserError


def crash_log_path() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "routedriver" / "crash.log"


def _write_crash_log(prog: str, exc: BaseException) -> Path | None:
    import datetime
    import traceback

    path = crash_log_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as handle:
            stamp = datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")
            handle.write(f"--- {stamp} {prog} {' '.join(sys.argv[1:])}\n")
            handle.write("".join(traceback.format_exception(exc)))
        return path
    except OSError:
        return None


def _say(line: str) -> None:
    click.echo(line, err=True)


class Terminated(BaseException):
    """SIGTERM arrived: unwind like Ctrl-C, then exit 143."""


def _stop_children() -> None:
    # Only if this command started any: importing proc just to find nothing would cost start-up time.
    proc = sys.modules.get("routedriver.proc")
    if proc is not None:
        proc.kill_running()


def _on_signal(signum: int, frame: object) -> None:
    # Stop child processes HERE, before unwinding: worker threads blocked on them would otherwise keep
    # a thread pool's exit (and so the whole unwind) waiting for commands that may run for many minutes.
    import signal

    _stop_children()
    if signum == signal.SIGINT:
        raise KeyboardInterrupt
    raise Terminated()


def invoke(cmd: click.Command, args: Sequence[str] | None, prog_name: str | None, **extra: Any) -> int:
    """Run ``cmd`` non-standalone and map every outcome to an exit code."""
    import signal

    previous: dict[int, Any] = {}
    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            previous[signum] = signal.signal(signum, _on_signal)
        except ValueError:  # not the main thread (an embedding caller): leave signals to it
            break
    try:
        return _invoke(cmd, args, prog_name, **extra)
    finally:
        for restored, handler in previous.items():
            signal.signal(restored, handler)


def _invoke(cmd: click.Command, args: Sequence[str] | None, prog_name: str | None, **extra: Any) -> int:
    prog = prog_name or cmd.name or "routedriver"
    try:
        os.getcwd()
    except FileNotFoundError:
        # Exit 1, not 2: under Claude Code a hook's exit 2 would block the robot's tool call.
        _say("error: the current directory no longer exists; cd into an existing directory and run it again")
        return int(ExitCode.MALFUNCTION)
    try:
        rv = click.Command.main(cmd, args=args, prog_name=prog, standalone_mode=False, **extra)
    except UserError as exc:
        _say(exc.line())
        return int(exc.exit_code)
    except click.exceptions.NoArgsIsHelpError as exc:
        # Asking for nothing is not a mistake worth a one-liner; show the help as click would.
        click.echo(exc.ctx.get_help(), err=True)
        return int(ExitCode.REFUSED)
    except click.UsageError as exc:
        _say(f"error: {' '.join(exc.format_message().split()).rstrip('.')}; see {prog} --help")
        return int(ExitCode.REFUSED)
    except click.ClickException as exc:
        _say(f"error: {' '.join(exc.format_message().split())}")
        return int(exc.exit_code)
    except click.Abort:
        _say("error: aborted")
        return 130
    except Terminated:
        _say("error: terminated")
        return 143
    except BrokenPipeError:
        # Our reader went away (e.g. `| head`); nothing useful can be said to it.
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the interpreter's flush at exit
        return int(ExitCode.MALFUNCTION)
    except KeyboardInterrupt:
        _say("error: interrupted")
        return 130
    except Exception as exc:  # noqa: BLE001 - the last line of defence: no traceback for users
        if os.environ.get("ROUTEDRIVER_DEBUG"):
            import traceback

            traceback.print_exception(exc, file=sys.stderr)
        where = _write_crash_log(prog, exc)
        detail = f"; details in {where}" if where else ""
        _say(f"error: internal error: {type(exc).__name__}: {' '.join(str(exc).split())}{detail}")
        return int(ExitCode.MALFUNCTION)
    if isinstance(rv, int):
        return rv
    return int(ExitCode.OK)


class _OneLineErrors:
    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        code = invoke(self, args, prog_name, **extra)  # type: ignore[arg-type]
        if standalone_mode:
            sys.exit(code)
        return code


class Command(_OneLineErrors, click.Command):
    """A click command whose errors are one line and whose callback returns the exit code."""


class HookCommand(Command):
    """A command Claude Code runs as a hook. For hooks exit 2 means "block" (the tool call, or the robot's
    stop), so a mistake in the hook's own command line must not exit 2: usage errors exit 1, which Claude
    Code reports without blocking anything."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        from routedriver.errors import Malfunction

        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            message = " ".join(exc.format_message().split()).rstrip(".")
            raise Malfunction(message, f"fix the hook's command line; see {ctx.command_path} --help") from None


class Group(_OneLineErrors, click.Group):
    """A click group with the same error contract; its subcommands use ``Command``."""

    command_class = Command
    group_class = type  # subgroups are Groups too (click's convention for "same class as parent")
