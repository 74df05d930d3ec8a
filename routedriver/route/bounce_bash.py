"""``route.bounce`` for ``Bash`` calls: what a command visibly writes is judged like a file edit.

``bash_writes`` reads the command (with the one shell reader) into the paths it writes, the directories it
moves to, the programs it cannot read and why it is unsure. Here those paths are resolved against the
event's ``cwd`` and every ``cd`` of the command (a relative path may land under any of them: each is judged)
and through symlinks, and checked with the rules of file edits (``protection.driver_file``, the ``protect:``
globs of ``protection.Protection``). A write below a directory (``rm -r``, ``git checkout .``, ``git reset
--hard``, ``find … -delete``) is blocked when the directory holds a protected path: a route's stones and
guards, its ``.route/``, the repository's ``.route-approvers``, a path a ``protect:`` glob covers.

Two more rules, for what cannot be read:

- a command the reader is unsure of (a command name or a written path computed at run time, unbalanced
  quotes, ``xargs`` feeding a writer, a shell fed another command's output …) is blocked when any of its
  words names a protected path;
- a program it does not know (``python3 -c …``, ``node``, ``awk``, a script) given a word that names a
  driver file (a stone, a guard, anything under ``.route/``, ``.route-approvers``) is blocked: what it does
  with the file cannot be seen. (``protect:`` paths are not held to this rule: tests and builds take them
  as arguments.)
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

from routedriver import globs
from routedriver.fsutil import realpath
from routedriver.route.bash_writes import Reading, Target, read_writes
from routedriver.route.protection import Bounce, Protection, driver_file

MAX_PLACES = 16  # directories a relative path may be relative to (the cwd and every cd)
MAX_MATCHES = 2000  # files a glob is expanded to before it counts as its whole directory
# A word that mentions a driver file by name: a stone, a guard, a .route/ directory, the approvers file.
_MENTION = re.compile(r"[^/\s]\.(stone|guard)\b|(^|[/\s'\"=])\.route(/|-approvers|\b)", re.IGNORECASE)


def judge_command(command: str, cwd: Path, protection: Protection) -> Bounce:
    """Block, allow or report a misconfiguration, for one Bash command run in ``cwd``."""
    reading = read_writes(command)
    places = _places(cwd, reading.chdirs)
    judged = _Judge(protection, places, cwd)
    found: list[tuple[Path, bool, Target]] = [
        (path, recursive, target) for target in reading.targets for path, recursive in judged.paths(target)
    ]
    for path, _recursive, target in found:  # driver files first: they do not depend on finding the route
        why = driver_file(path)
        if why is not None:
            return Bounce(True, f"route.bounce: blocked {judged.shown(path)} ({_how(target)}): {why}.")
    problem: Bounce | None = None
    warnings: list[str] = []
    for path, recursive, target in found:
        decision = protection.check(path, _how(target))
        if decision.blocked:
            return decision
        problem = problem or (decision if decision.problem else None)
        warnings += decision.warnings
        if recursive and (held := judged.holds(path)):
            inner, why = held
            inside = "" if inner == path else f": it holds {judged.shown(inner)}"
            shown = judged.shown(path)
            return Bounce(True, f"route.bounce: blocked {shown} ({_how(target)}){inside}; {why}.")
    # Unsure, the whole text counts: a word the reader lost (in a here-document left open) still names.
    if reading.unsure and (named := judged.named([*reading.words, command], with_globs=True)):
        shown, why = named
        return Bounce(
            True,
            f"route.bounce: blocked this Bash command: it names {shown} ({why}), and route.bounce cannot "
            f"read all of it ({reading.unsure[0]}), so it cannot tell whether the command writes there. "
            "Run the parts you need as plain commands that name their files.",
        )
    for program, arguments in reading.opaque:
        if named := judged.named(list(arguments), with_globs=False):
            shown, why = named
            return Bounce(
                True,
                f"route.bounce: blocked this Bash command: it gives {shown} to {program}, which route.bounce "
                f"cannot read to tell what it does with it, and {why}. Read route files with cat, head or "
                "grep; the driver (route.stone.set) writes what it records.",
            )
    if problem is not None:
        return Bounce(False, problem=problem.problem, warnings=tuple(warnings))
    return Bounce(False, warnings=tuple(dict.fromkeys(warnings)))


def _how(target: Target) -> str:
    return f"{target.how}, in a Bash command"


def _places(cwd: Path, chdirs: list[str]) -> list[Path]:
    """The directories a relative path of the command may be relative to: the cwd, then each ``cd`` taken
    from every place before it (a ``cd`` in a subshell or on one branch of ``||`` may or may not hold)."""
    places = [cwd]
    for directory in chdirs:
        directory = os.path.expanduser(directory) if directory else os.path.expanduser("~")
        for place in list(places):
            moved = Path(realpath(os.path.join(place, directory)))
            if moved not in places and len(places) < MAX_PLACES:
                places.append(moved)
    return places


class _Judge:
    def __init__(self, protection: Protection, places: list[Path], cwd: Path) -> None:
        self.protection, self.places, self.cwd = protection, places, cwd
        self._routes: dict[Path, list[Path]] = {}  # a repository's top level: its route directories
        self._first_stone: dict[Path, Path] = {}  # a route directory: its first stone, to name in a reason

    def shown(self, path: Path) -> str:
        relative = os.path.relpath(path, self.cwd)
        return str(path) if relative.startswith("..") else relative

    # -- where a written word lands --------------------------------------------------------------------------
    def paths(self, target: Target) -> Iterator[tuple[Path, bool]]:
        """Each path ``target`` may write (resolved through symlinks), and whether everything below it too;
        relative to the last ``cd`` first (where the command most likely runs), the event's cwd last."""
        for place in reversed(self.places):
            if target.whole_tree:
                # git (~11 ms), here and in repositories(): only for a command that writes, not an `ls`
                from routedriver.gitops import find_repo

                repo = find_repo(os.path.join(place, target.path))
                yield (repo.toplevel if repo is not None else place), True
                continue
            written = os.path.join(place, os.path.expanduser(target.path))
            if target.glob:
                yield from _expand_glob(written, target.recursive)
            else:
                yield Path(realpath(written)), target.recursive

    # -- what a directory holds ------------------------------------------------------------------------------
    def holds(self, directory: Path) -> tuple[Path, str] | None:
        """A protected path at or below ``directory`` and why it is protected, or None."""
        why = driver_file(directory / "x")  # the directory is a .route/ or inside one
        if why is not None:
            return directory, why
        for top, routes in self.repositories(directory):
            for route in routes:
                if route == directory or directory in route.parents:
                    stone = self._first_stone.get(route, route)
                    return stone, driver_file(stone) or "it holds a route's stones"
            approvers = top / ".route-approvers"
            if (directory == top or directory in top.parents) and os.path.exists(approvers):
                return approvers, driver_file(approvers) or "it holds the approvers file"
        for pattern, base in self.protection.protected_globs():
            literal = base.joinpath(*_literal_head(pattern))
            relative = Path(os.path.relpath(directory, base)).as_posix()
            if directory == literal or directory in literal.parents or globs.covers(pattern, relative + "/x"):
                return literal, (
                    f"it holds paths a stone's protect: glob ({pattern}) keeps robots from writing until "
                    "that stone passes"
                )
        return None

    def repositories(self, directory: Path) -> list[tuple[Path, list[Path]]]:
        """The repositories of ``directory`` and of the command's places, with their routes."""
        # git: only for a Bash command that writes somewhere (an `ls` loads none of it)
        from routedriver import gitops

        found = []
        for where in (directory, *self.places):
            repo = gitops.find_repo(where) if os.path.isdir(where) else None
            if repo is None:
                continue
            if repo.toplevel not in self._routes:
                try:
                    stones = gitops.list_files(repo, [gitops.ROUTE_STONES])
                except gitops.GitError:
                    stones = []
                paths = sorted(repo.toplevel / path for path in stones)
                self._routes[repo.toplevel] = sorted({path.parent for path in paths})
                for path in paths:
                    self._first_stone.setdefault(path.parent, path)
            found.append((repo.toplevel, self._routes[repo.toplevel]))
        return found

    # -- what the words of a command name --------------------------------------------------------------------
    def named(self, words: list[str], *, with_globs: bool) -> tuple[str, str] | None:
        """The first word that names a protected path (shown as written) and why it is protected."""
        for word in words:
            if not word or "\0" in word:
                continue
            mention = _MENTION.search(word)
            if mention is not None:
                shown = " ".join(word.split())  # one line, however the word was written
                return (shown if len(shown) <= 120 else shown[:119] + "…"), _mention_why(word)
            if "\n" in word or len(word) > 4096:
                continue
            for place in self.places:
                path = Path(realpath(os.path.join(place, os.path.expanduser(word))))
                why = driver_file(path)
                if why is not None:
                    return word, why
                if with_globs and self.protection.check(path).blocked:
                    return word, "a stone's protect: glob keeps robots from writing it until it passes"
        return None


def _mention_why(word: str) -> str:
    lowered = word.casefold()
    if ".stone" in lowered:
        return driver_file(Path("x.stone")) or "a stone"
    if ".route-approvers" in lowered:
        return driver_file(Path(".route-approvers")) or "the approvers file"
    if ".guard" in lowered:
        return "guards (*.guard) are read-only templates: only a human changes what checks a stone"
    return "files under a route's .route/ are written by the driver only"


def _literal_head(pattern: str) -> list[str]:
    """The components of a glob before its first wildcard (``src/**`` → ``["src"]``)."""
    head = []
    for part in pattern.split("/"):
        if not part or part == ".":
            continue
        if globs.has_magic(part):
            break
        head.append(part)
    return head


def _expand_glob(pattern: str, recursive: bool) -> Iterator[tuple[Path, bool]]:
    """The paths a bash pattern matches (hidden names included, which is more than bash matches), each
    through its symlinks; past ``MAX_MATCHES``, the directory the pattern starts in, whole."""
    parts = pattern.split("/")
    first = next((index for index, part in enumerate(parts) if globs.has_magic(part)), None)
    if first is None:
        yield Path(realpath(pattern)), recursive
        return
    start = "/".join(parts[:first]) or "/"
    current = [start]
    for part in parts[first:]:
        if not part:
            continue
        matches = globs.name_matcher(part) if globs.has_magic(part) else None
        following: list[str] = []
        for directory in current:
            if matches is None:
                following.append(os.path.join(directory, part))
                continue
            try:
                with os.scandir(directory) as entries:
                    following += [os.path.join(directory, e.name) for e in entries if matches(e.name)]
            except OSError:
                continue
        if len(following) > MAX_MATCHES:
            yield Path(realpath(start)), True
            return
        current = following
    for path in current:
        if os.path.lexists(path):
            yield Path(realpath(path)), recursive


__all__ = ["Reading", "judge_command"]
