"""Commands that start without click: ``route.stone.*`` (every robot turn) and ``route.verify`` (every CI
push). Importing click costs more than such a command's own work on a small route.

A command is declared once, as a ``PlainCommand`` with an ``Option`` per flag. ``parse`` reads an argument
list made only of those flags in a plain form (``--flag``, ``--opt VALUE``, ``--opt=VALUE``) into the
callback's keywords; anything else (``--help``, a typo, a missing or odd value, a directory where a file is
wanted) gives None, and the arguments go to the click command built from the same table
(``PlainCommand.click``), which says what is wrong the way every other command does. Both readings end in
``_exits.run``, the shared contract; ``tests/route_gate/test_plain_cli.py`` holds them to reading every
plain command line alike.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from routedriver.cli import _exits

if TYPE_CHECKING:
    # click (~18 ms), here and in click(): only for --help and usage errors; a valid command line is
    # answered without it (route.stone.get, set and verify)
    import click


class Option(NamedTuple):
    flag: str
    dest: str  # the keyword the command's callback takes
    help: str
    metavar: str = ""  # "" for a flag; else the option takes a value
    multiple: bool = False
    path: bool = False  # a file path (click.Path(dir_okay=False))
    default: str | None = None  # an option's value when it is not given (shown in --help)
    required: bool = False
    choices: tuple[str, ...] = ()  # the values it takes, if only these
    minimum: int | None = None  # an integer, at least this


def _value(option: Option, value: str | None) -> object:
    """The option's value read plainly, or None when click must judge it (missing, flag-like, not one of
    the choices, not a plain number, a directory where a file is wanted)."""
    if not value or value.startswith("-"):
        return None
    if option.choices:
        return value if value in option.choices else None
    if option.minimum is not None:
        # Digits only, and few of them: int() refuses a 5,000-digit string, and click says so in words.
        number = int(value) if value.isascii() and value.isdigit() and len(value) <= 18 else None
        return number if number is not None and number >= option.minimum else None
    if option.path:
        return None if os.path.isdir(value) else Path(value)
    return value


def parse(options: Sequence[Option], argv: Sequence[str]) -> dict[str, Any] | None:
    """The callback's keywords when ``argv`` holds only ``options`` in a plain form; None for anything
    else, which click then reads and judges. A repeated single-valued option keeps the last value, as
    click does."""
    by_flag = {option.flag: option for option in options}
    found: dict[str, Any] = {
        option.dest: [] if option.multiple else (option.default if option.metavar else False)
        for option in options
    }
    given: set[str] = set()
    rest = iter(argv)
    for token in rest:
        flag, equals, inline = token.partition("=")
        option = by_flag.get(flag)
        if option is None or (equals and not option.metavar):
            return None
        given.add(option.dest)
        if not option.metavar:
            found[option.dest] = True
            continue
        value = _value(option, inline if equals else next(rest, None))
        if value is None:
            return None
        if option.multiple:
            found[option.dest].append(value)
        else:
            found[option.dest] = value
    if any(option.required and option.dest not in given for option in options):
        return None  # click names what is missing
    return {dest: tuple(value) if isinstance(value, list) else value for dest, value in found.items()}


def _click_type(option: Option) -> Any:
    # click (~20 ms): only when the plain parser hands over to click (--help, a usage error)
    import click

    if option.choices:
        return click.Choice(option.choices)
    if option.minimum is not None:
        return click.IntRange(min=option.minimum)
    if option.path:
        return click.Path(dir_okay=False, path_type=Path)
    return click.STRING


class PlainCommand(NamedTuple):
    """A console script declared once: its name, its flags, the callback that does the work, its help."""

    prog: str
    options: tuple[Option, ...]
    callback: Callable[..., Any]
    help: str

    def click(self) -> click.Command:
        """The same command as click sees it: ``--help``, and usage errors in the words of every other
        command."""
        # click: only for --help and usage errors (see _click_type)
        import click

        from routedriver.cli._command import Command

        params: list[click.Parameter] = []
        for option in self.options:
            if not option.metavar:
                params.append(click.Option([option.flag, option.dest], is_flag=True, help=option.help))
                continue
            # Only a real default: click (8.5) takes an explicit default=None as a value, and a required
            # option with a value is never missing.
            default: dict[str, Any] = {}
            if option.default is not None:
                default = {"default": option.default, "show_default": True}
            params.append(
                click.Option(
                    [option.flag, option.dest],
                    multiple=option.multiple,
                    metavar=option.metavar,
                    type=_click_type(option),
                    required=option.required,
                    help=option.help,
                    **default,
                )
            )
        return Command(self.prog, params=params, callback=self.callback, help=self.help)

    def main(self, finish: Callable[[], None] | None = None) -> None:
        """Run as the console script: a plain command line calls ``callback`` under ``_exits.run`` without
        click; any other goes to click. ``finish`` runs before a plain run exits."""
        args = sys.argv[1:]
        parsed = parse(self.options, args)
        if parsed is None:
            sys.exit(self.click().main(args, prog_name=self.prog, standalone_mode=False))

        code = _exits.run(self.prog, lambda: self.callback(**parsed))
        if finish is not None:
            finish()
        sys.exit(code)
