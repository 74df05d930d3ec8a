"""Find the route and its stones. Runs every robot turn, so it imports nothing heavy (no yaml, no git).

Guards are parsed separately (``routedriver.route.guardfile``) by the commands that need them.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from routedriver import userfile
from routedriver.errors import Refused
from routedriver.fsutil import entry_is_file, real_path
from routedriver.route.hashing import refuse_undecodable
from routedriver.route.model import Route, Stone
from routedriver.route.store import MAX_STONE_NAME_BYTES

if TYPE_CHECKING:
    from routedriver.route.artifacts import Listings

STONE_SUFFIX = ".stone"
GUARD_SUFFIX = ".guard"


def resolve_route(option_value: str | None) -> Path:
    """The route directory a command works on. The ONE place that decides it: ``--route`` when given, else
    the route bound to the current git branch (``route.bind``); neither → a refusal naming both."""
    if option_value is not None and option_value.strip():
        return Path(option_value)
    from routedriver.route.bind import bound_route  # git only when --route is left out

    return Path(bound_route())


def open_route(route_option: str | None, listings: Listings | None = None) -> Route:
    """The route a command works on (``resolve_route``), loaded; refuses a route without stones.
    ``listings``: see ``load_route``."""
    route = load_route(resolve_route(route_option), listings=listings)
    if not route.stones:
        raise Refused(
            f"route has no stones: {route.display}", "add files like 1.vision.stone (or check --route)"
        )
    return route


def numeric_prefix(name: str) -> tuple[int, ...]:
    """The leading dot-separated all-digit components: ``3.1.a`` → ``(3, 1)``, ``10.ship`` → ``(10,)``."""
    numbers: list[int] = []
    for part in name.split("."):
        if not (part and part.isascii() and part.isdigit()):
            break
        numbers.append(int(part))
    return tuple(numbers)


def stone_name_problem(name: str, filename: str, *, prefix: tuple[int, ...]) -> tuple[str, str] | None:
    """Why the driver cannot order or write a stone named ``name`` (what its name ``has``/``is``, and the
    fix), or None. ``prefix``: its ``numeric_prefix``."""
    if not name.isprintable():
        return "has an unprintable character", "rename it without it"
    if not prefix:
        return "has no numeric prefix", f"rename it like 1.{filename}"
    size = len(name.encode("utf-8", errors="surrogateescape"))
    if size > MAX_STONE_NAME_BYTES:
        return (
            f"is {size} bytes long, too long for the names of the driver's files for the stone",
            f"shorten it to at most {MAX_STONE_NAME_BYTES} bytes",
        )
    return None


def check_stone_name(name: str, filename: str) -> tuple[int, ...]:
    """The stone's numeric prefix; refuses names the driver cannot order or write safely."""
    prefix = numeric_prefix(name)
    problem = stone_name_problem(name, filename, prefix=prefix)
    if problem is not None:
        what, fix = problem
        raise Refused(f"stone name {what}: {filename if name.isprintable() else repr(filename)}", fix)
    return prefix


def _refuse_undecodable_route(display: str, root: Path) -> None:
    """A route whose path holds bytes that are not UTF-8 is refused here, once for every command: its paths
    go into hashes, records and the branch binding, which are UTF-8 text (git keeps paths as bytes)."""
    try:
        os.fspath(root).encode("utf-8")
    except UnicodeEncodeError:
        refuse_undecodable("route", [display, os.fspath(root)])  # as the user named it, if that is where


def has_control_character(text: str) -> bool:
    """Does ``text`` hold a character that ends or rewrites a line of output: a C0/C1 control (newline,
    carriage return, escape …) or a line or paragraph separator?"""
    if text.isprintable():
        return False  # the common case, one scan in C
    return any(char < " " or "\x7f" <= char <= "\x9f" or char in "\u2028\u2029" for char in text)


def _refuse_control_route(display: str, root: Path) -> None:
    """A route whose path holds a control character is refused, once for every command, like a stone's name
    with one: every report shows the route's path, and a newline in it would start a line of the
    repository's choosing in a CI log (``::stop-commands::``, ``::notice::``)."""
    for name in (display, os.fspath(root)):
        if has_control_character(name):
            # shown (~0.5 ms, 1% of route.stone.get): only for this rare refusal
            from routedriver.route.shown import line

            raise Refused(
                f"route path has a control character: {line(name)}",
                "rename the directory (and any directory above it) without it",
            )


def stone_text(path: Path) -> str:
    """A stone's instructions, read through ``userfile`` (a stone replaced by a FIFO must not hang a robot's
    turn or route.mcp, nor a huge one fill memory); bytes that are not UTF-8 show as U+FFFD."""
    return userfile.read_bytes(path, what="stone").decode("utf-8", errors="replace")


def read_route_directory(path: str | os.PathLike[str]) -> tuple[Path, list[os.DirEntry[str]]]:
    """The real path of the route directory ``path`` names and its entries, read once; refuses, naming the
    route as the user did, a path that names no directory or one that cannot be read (a name too long for
    the system, a loop of links), and a path no report can show (not UTF-8, a control character)."""
    display = os.fspath(path)
    root = real_path(path)
    _refuse_undecodable_route(display, root)
    _refuse_control_route(display, root)
    try:
        return root, list(os.scandir(root))
    except (FileNotFoundError, NotADirectoryError):
        what = "route is not a directory" if os.path.exists(root) else "route not found"
        fix = "check --route (a directory holding <name>.stone files)"
        raise Refused(f"{what}: {display}", fix) from None
    except OSError as exc:  # no permission, a name too long for the system, a loop of links …
        why = f"cannot read route {display}: {exc.strerror}"
        raise Refused(why, "check --route and its permissions") from None


def load_route(
    path: str | os.PathLike[str], irregular: list[str] | None = None, *, listings: Listings | None = None
) -> Route:
    """Read a route directory: every top-level ``*.stone`` file, in driving order. Pure: writes nothing.

    With ``irregular``, the names of its ``*.stone`` entries that are not regular files (a directory, a
    symlink, a FIFO …) are appended to it, read from the same listing: ``route.verify`` reports each as a
    ``broken`` stone (a stone turned into a directory must not simply drop out of the route). Without it, a
    directory named ``*.stone`` is no stone, and a symlink to a file is read as one.

    With ``listings``, the directory's listing goes there too (``Listings.record``), so finding the stones'
    default artifacts in it does not read the directory again."""
    display = os.fspath(path)
    root, entries = read_route_directory(path)
    if listings is not None:
        listings.record(os.fspath(root), entries)
    guards = {entry.name for entry in entries if entry.name.endswith(GUARD_SUFFIX)}
    # (prefix, name, stone): sorted as Stone.sort_key sorts stones (names are unique, stones never compared)
    stones: list[tuple[tuple[int, ...], str, Stone]] = []
    for entry in entries:
        filename = entry.name
        # Hidden files include atomic-write leftovers; directories named *.stone are not stones.
        if not filename.endswith(STONE_SUFFIX) or filename.startswith("."):
            continue
        if irregular is not None and (entry.is_symlink() or not entry_is_file(entry)):
            irregular.append(filename)
            continue
        if not entry_is_file(entry):
            continue
        name = filename[: -len(STONE_SUFFIX)]
        prefix = check_stone_name(name, filename)
        has_guard = name + GUARD_SUFFIX in guards
        stones.append((prefix, name, Stone(name, root, prefix, has_guard)))
    stones.sort()
    return Route.at(root, display, tuple(stone for _prefix, _name, stone in stones))
