"""Click commands on top of ``_exits``: every outcome, click's own included, is one exit code and at most one
line on stderr.

Every console script is a ``Command`` or ``Group`` from this module (``route.stone.*`` and ``route.verify``
build theirs from ``_plain``'s option tables, and start without click when they can). A callback returns a
``report.Report`` (what it prints and how it exits) and raises ``routedriver.errors.UserError`` subclasses
for anything the user should read; ``routedriver.cli._exits.run`` writes the one and says the other, and is
the one place errors become exits. This module adds click's own outcomes:

- asking for nothing (``no_args_is_help``) → the help on stderr, exit 2
- click usage errors     → ``error: <message>; see <command> --help`` (the mistyped subcommand's), exit 2
- other click exceptions → ``error: <message>``, their exit code; ``click.Abort`` → ``error: aborted``, 130

Every console script (the command that runs at the top, not its subcommands) also has ``--version``: one
shared option, ``<prog>, version <v> (routedriver)``, plus a note a command may give (``version_note=``).

Ctrl-C never reaches click as a KeyboardInterrupt (which click answers with a blank line and ``Abort``):
``_exits`` turns SIGINT into its own exception, so it ends as ``error: interrupted``, 130, like SIGTERM's
``error: terminated``.

``HookCommand`` is for the commands Claude Code runs as hooks (``route.drive``, ``route.bounce``, ``bhrain
behave``): exit 2 blocks there, so a mistake in the hook's own command line exits 1 instead.

It behaves the same under a console script and under ``click.testing.CliRunner``.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from typing import Any

import click

from routedriver import __version__
from routedriver.cli._exits import run, say
from routedriver.errors import ExitCode, Malfunction
from routedriver.report import Report


def invoke(cmd: click.Command, args: Sequence[str] | None, prog_name: str | None, **extra: Any) -> int:
    """Run ``cmd`` non-standalone and map every outcome to an exit code."""
    prog = prog_name or cmd.name or "routedriver"
    return run(prog, lambda: _click_main(cmd, args, prog, extra))


def _click_main(
    cmd: click.Command, args: Sequence[str] | None, prog: str, extra: dict[str, Any]
) -> Report | int | None:
    try:
        rv = click.Command.main(cmd, args=args, prog_name=prog, standalone_mode=False, **extra)
    except click.exceptions.NoArgsIsHelpError as exc:
        # Asking for nothing is not a mistake worth a one-liner; show the help as click would.
        click.echo(exc.ctx.get_help(), err=True)
        return int(ExitCode.REFUSED)
    except click.UsageError as exc:
        # The help of the command that was mistyped: `bhrain run --help`, not the group's.
        where = exc.ctx.command_path if exc.ctx is not None else prog
        say(f"error: {' '.join(exc.format_message().split()).rstrip('.')}; see {where} --help")
        return int(ExitCode.REFUSED)
    except click.ClickException as exc:
        say(f"error: {' '.join(exc.format_message().split())}")
        return int(exc.exit_code)
    except click.Abort as exc:
        # A KeyboardInterrupt that did not come through _exits' handler (raised by code, or a signal
        # before the handler was set) still says what happened.
        say("error: interrupted" if isinstance(exc.__cause__, KeyboardInterrupt) else "error: aborted")
        return 130
    return rv if isinstance(rv, Report | int) else None


class _OneLineErrors:
    def __init__(self, *args: Any, version_note: str = "", **kwargs: Any) -> None:
        """``version_note``: said after ``routedriver`` in the ``--version`` line (e.g. a compatibility)."""
        super().__init__(*args, **kwargs)
        self.version_note = version_note
        self._version_option: click.Option | None = None

    def get_params(self, ctx: click.Context) -> list[click.Parameter]:
        params: list[click.Parameter] = super().get_params(ctx)  # type: ignore[misc]
        if ctx.parent is not None:  # a subcommand: its console script has the option
            return params
        if self._version_option is None:  # one instance, as click keeps its help option: parsing needs it
            self._version_option = click.Option(
                ["--version"],
                is_flag=True,
                is_eager=True,
                expose_value=False,
                callback=self._show_version,
                help="Show the version and exit.",
            )
        return [*params, self._version_option]

    def _show_version(self, ctx: click.Context, param: click.Parameter, value: bool) -> None:
        if not value or ctx.resilient_parsing:
            return

        note = f"; {self.version_note}" if self.version_note else ""
        click.echo(f"{ctx.info_name}, version {__version__} (routedriver{note})")
        ctx.exit()

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


class FiniteFloat(click.FloatRange):
    """A number flag that refuses ``nan`` and ``inf``, which click's ``float`` and ``FloatRange`` take: every
    comparison with NaN is false, so a NaN limit passes any range check and then limits nothing."""

    name = "float"

    def _describe_range(self) -> str:
        # FloatRange's own reads "x<=None" for no bounds; help shows nothing then (range_str is empty).
        return super()._describe_range() if (self.min, self.max) != (None, None) else ""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


class Command(_OneLineErrors, click.Command):
    """A click command whose errors are one line and whose callback returns the exit code."""


class HookCommand(Command):
    """A command Claude Code runs as a hook. For hooks exit 2 means "block" (the tool call, or the robot's
    stop), so a mistake in the hook's own command line must not exit 2: usage errors exit 1, which Claude
    Code reports without blocking anything."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        try:
            return super().parse_args(ctx, args)
        except click.UsageError as exc:
            message = " ".join(exc.format_message().split()).rstrip(".")
            raise Malfunction(
                message, f"fix the hook's command line; see {ctx.command_path} --help"
            ) from None


class Group(_OneLineErrors, click.Group):
    """A click group with the same error contract; its subcommands use ``Command``."""

    command_class = Command
    group_class = type  # subgroups are Groups too (click's convention for "same class as parent")
