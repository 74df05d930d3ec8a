"""``route.lint``: every problem of a route that can be known before anything runs, file by file.

Errors (exit 2): a route without stones, a stone without instructions (empty or whitespace), a stone name
without a numeric prefix or with an unprintable character, duplicate stones (same numbers and same name,
ignoring letter case: ``1.a`` and ``01.a``, ``2.Plan`` and ``2.plan``), each problem of a guard (it does not
parse, or has unknown keys, wrong types, empty commands, unknown judge mechanisms: every one, by the same
rules every command applies, ``guardfile.check_guard``), and a guard without its stone.

Warnings (exit 0): a review or judge command whose program cannot be found (it would fail at run time), a
judge that runs a bare ``pytest`` (failing tests exit 1, a malfunction; ``pytest -q || exit 2`` makes them a
rejection), and a stone whose default artifact glob also matches another stone's files (``1.a`` →
``$route/1.a*.md`` also matches ``1.ab.md``).

It also lists each stone's guard programs (``route.programs``): the repository files its guard runs, which
``route.verify --base`` compares with the base like the guard itself.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from routedriver import userfile
from routedriver.errors import ExitCode, Refused
from routedriver.fsutil import entry_is_file
from routedriver.gitops import find_repo
from routedriver.report import Report
from routedriver.route.builtin_judges import parse_builtin
from routedriver.route.guard import search_path
from routedriver.route.guardfile import check_guard_file
from routedriver.route.hashing import relative_posix
from routedriver.route.load import (
    GUARD_SUFFIX,
    STONE_SUFFIX,
    numeric_prefix,
    read_route_directory,
    stone_name_problem,
)
from routedriver.route.model import Guard, Route, Stone, writes_globs
from routedriver.route.programs import guard_programs
from routedriver.route.subst import ENV, substitute
from routedriver.route.verify import route_paths
from routedriver.route.words import count
from routedriver.shellsyntax import words as shell_words

# Words that are not programs: shell keywords and builtins a command may start with.
_SHELL_WORDS_TEXT = (
    "! [ [[ { ( . : alias break builtin case cd command continue declare eval exec exit export false for "
    "function if local printf pwd read readonly return set shift source test trap true type ulimit umask "
    "unset until wait while echo"
)
_SHELL_WORDS = frozenset(_SHELL_WORDS_TEXT.split())


Add = Callable[[str, str, str], None]  # (file name in the route, level, message)


@dataclass(frozen=True)
class Problem:
    file: str  # as the user would name it (under the route as given)
    level: str  # error | warning
    message: str


@dataclass(frozen=True)
class Program:
    """A guard program (``route.programs``): a repository file the stone's guard runs."""

    stone: str
    file: str  # the guard, as the user would name it
    program: str  # relative to the top-level


@dataclass(frozen=True)
class LintReport:
    route: str
    problems: tuple[Problem, ...]
    programs: tuple[Program, ...] = ()

    @property
    def errors(self) -> tuple[Problem, ...]:
        return tuple(problem for problem in self.problems if problem.level == "error")

    @property
    def warnings(self) -> tuple[Problem, ...]:
        return tuple(problem for problem in self.problems if problem.level == "warning")


def lint(route_path: Path) -> LintReport:
    """Lint the route directory ``route_path`` (as the user named it)."""
    display = os.fspath(route_path)
    root, found = read_route_directory(route_path)
    route = Route.at(root, display, ())
    entries = sorted((entry.name, entry_is_file(entry)) for entry in found)
    problems: list[Problem] = []

    def add(name: str, level: str, message: str) -> None:
        problems.append(Problem(route.show(root / name), level, message))

    # As load_route sees them: a directory named *.stone is no stone, but one named *.guard is a guard the
    # commands try (and fail) to read.
    stone_names = [
        name[: -len(STONE_SUFFIX)] for name, file in entries if file and _visible(name, STONE_SUFFIX)
    ]
    guard_names = [name[: -len(GUARD_SUFFIX)] for name, _ in entries if _visible(name, GUARD_SUFFIX)]
    stones: list[Stone] = []
    for name in stone_names:
        filename = name + STONE_SUFFIX
        prefix = numeric_prefix(name)
        name_problem = stone_name_problem(name, filename, prefix=prefix)
        if name_problem is None:
            stones.append(Stone(name, root, prefix, name in guard_names))
        else:
            what, fix = name_problem
            add(filename, "error", f"the name {what}; {fix}")
            if not name.isprintable():
                continue
        problem = _instructions_problem(root / filename)
        if problem:
            add(filename, "error", problem)
    _duplicates(stones, add)
    if not stone_names:
        # As route.verify says it: a route pointed at the wrong directory must not pass with nothing checked.
        problems.append(
            Problem(display, "error", f"no stones in {display} (no <name>.stone files); check --route")
        )
    for name in guard_names:
        if name not in stone_names:
            add(
                name + GUARD_SUFFIX,
                "error",
                f"a guard without its stone; add {name}.stone or remove the guard",
            )
    route = Route.at(root, display, tuple(sorted(stones, key=lambda stone: stone.sort_key)))
    # Every guard is checked, also one whose stone is missing or misnamed: its problems are its own.
    guards: dict[str, Guard | None] = {}
    for name in guard_names:
        guards[name] = _guard(route, Stone(name, root, numeric_prefix(name), True), add)
    _overlapping_defaults(route, guards, add)
    order = {"error": 0, "warning": 1}
    problems.sort(key=lambda problem: (problem.file, order[problem.level]))
    return LintReport(display, tuple(problems), _programs(route, guards))


def lint_routes(route_options: tuple[str, ...], all_routes: bool) -> list[LintReport]:
    """Lint the routes ``--route``/``--all`` (or the bound route) name, as ``route.verify`` reads the same
    options; ``--all`` names them relative to where you are."""
    repo = None
    if all_routes:
        repo = find_repo(Path.cwd())
    return [lint(path) for path in route_paths(route_options, all_routes, repo)]


def report(reports: list[LintReport], *, as_json: bool) -> Report:
    """What ``route.lint`` says: every problem and guard program, file by file (or one JSON object), then
    ``ok`` (with the count of warnings); with errors, exit 2 and one line naming the routes that have them."""
    errors = sum(len(each.errors) for each in reports)
    warnings = sum(len(each.warnings) for each in reports)
    if as_json:
        payload = {
            "ok": errors == 0,
            "routes": [
                {
                    "route": each.route,
                    "problems": [
                        {"file": p.file, "level": p.level, "message": p.message} for p in each.problems
                    ],
                    "programs": [
                        {"stone": p.stone, "file": p.file, "program": p.program} for p in each.programs
                    ],
                }
                for each in reports
            ],
        }
        stdout = json.dumps(payload, ensure_ascii=False, indent=2) + "\n"
    else:
        lines = []
        for each in reports:
            lines += [f"{problem.file}: {problem.level}: {problem.message}" for problem in each.problems]
            # what route.verify --base compares with the base, too
            lines += [f"{program.file}: program: {program.program}" for program in each.programs]
        if not errors:
            lines.append("ok" if not warnings else f"ok ({count(warnings, 'warning')})")
        stdout = "".join(line + "\n" for line in lines)
    if not errors:
        return Report(stdout)
    where = ", ".join(each.route for each in reports if each.errors)
    line = f"error: {count(errors, 'problem')} in {where}; fix each file named above"
    return Report(stdout, (line,), ExitCode.REFUSED)


def _programs(route: Route, guards: dict[str, Guard | None]) -> tuple[Program, ...]:
    """Each stone's guard programs (the tracked files its commands run; none outside git)."""
    repo = find_repo(route.path)
    if repo is None or not any(guards.values()):
        return ()
    found = guard_programs(route, guards, repo)
    return tuple(
        Program(stone.name, route.show(stone.path.with_suffix(GUARD_SUFFIX)), path)
        for stone in route.stones
        for path in found.get(stone.name, ())
    )


def _visible(name: str, suffix: str) -> bool:
    return name.endswith(suffix) and not name.startswith(".")


def _instructions_problem(path: Path) -> str:
    try:
        text = userfile.read_text(path, what="stone", shown="")  # a FIFO would hang lint, /dev/zero fill it
    except Refused as exc:  # lint names the file itself, in front of the problem
        return f"{exc.what}; {exc.fix}".removeprefix(": ")
    if not text.strip():
        what = "empty" if not text else "only whitespace"
        return f"no instructions (the file is {what}); write what to do, why and how"
    return ""


def _duplicates(stones: list[Stone], add: Add) -> None:
    """Stones with the same numbers and the same name (case-insensitive, Unicode-normalized) collide: the
    order between them is arbitrary, and on a case-insensitive file system they are one file."""
    assert callable(add)
    groups: dict[tuple[tuple[int, ...], str], list[Stone]] = {}
    for stone in stones:
        rest = stone.name.split(".")[len(stone.prefix) :]
        key = (stone.prefix, unicodedata.normalize("NFC", ".".join(rest)).casefold())
        groups.setdefault(key, []).append(stone)
    for group in groups.values():
        if len(group) < 2:
            continue
        for stone in group:
            others = ", ".join(other.name + STONE_SUFFIX for other in group if other is not stone)
            add(
                stone.name + STONE_SUFFIX,
                "error",
                f"duplicate of {others} (same numbers, same name); keep one",
            )


def _guard(route: Route, stone: Stone, add: Add) -> Guard | None:
    if stone.guard_path is None:
        return None
    filename = stone.guard_path.name
    prefix = f"{route.show(stone.guard_path)}: "
    guard, problems = check_guard_file(route, stone)  # the rules every command applies, all problems listed
    for problem in problems:
        add(filename, "error", problem.line().removeprefix("error: ").removeprefix(prefix))
    if guard is None:
        return None
    for kind, commands in (("reviews", guard.reviews), ("judges", guard.judges)):
        for index, command in enumerate(commands, start=1):
            missing = _missing_program(command, route, stone)
            if missing:
                add(filename, "warning", f"{kind}[{index}]: {missing}")
    for index, command in enumerate(guard.judges, start=1):
        if _bare_pytest(command):
            add(
                filename,
                "warning",
                f"judges[{index}]: pytest exits 1 on failing tests, which the driver reads as a malfunction, "
                "not a rejection; write it as 'pytest -q || exit 2'",
            )
    return guard


# The runners that run a program given after "run" (uv run pytest), and what names pytest.
_RUNNERS = frozenset({"uv", "poetry", "pipenv", "hatch", "pdm", "rye"})
_PYTHON = re.compile(r"python[\d.]*")
_PYTESTS = frozenset({"pytest", "py.test"})


def _runs_pytest(words: list[str]) -> bool:
    """Whether a simple command's words run pytest: after ``VAR=value`` prefixes, as a program (by any
    path), as ``python -m pytest`` or through a runner (``uv run pytest``)."""
    rest = list(words)
    while rest and shell_words.ASSIGNMENT.match(rest[0]):
        rest.pop(0)
    program = os.path.basename(rest[0]) if rest else ""
    if _PYTHON.fullmatch(program) and rest[1:2] == ["-m"]:
        program = rest[2] if len(rest) > 2 else ""
    elif program in _RUNNERS and rest[1:2] == ["run"]:
        program = os.path.basename(rest[2]) if len(rest) > 2 else ""
    return program in _PYTESTS


def _bare_pytest(command: str) -> bool:
    """A judge that runs pytest and leaves its exit code as it is: failing tests exit 1, a malfunction to
    the driver. Mapping it (``|| exit 2``) or printing a verdict (``passed: false``) is the fix. Read with
    ``shellsyntax``: every simple command, those in ``( … )`` and ``$( … )`` too."""
    found, _ = shell_words.commands(command)
    said = [[word.text for word in simple.words] for simple in found]
    if not any(_runs_pytest(words) for words in said):
        return False
    maps = any(words[:2] == ["exit", "2"] for words in said)
    verdict = any("passed:" in word for words in said for word in words)
    return not (maps or verdict)


def _missing_program(command: str, route: Route, stone: Stone) -> str:
    if parse_builtin(command) is not None:
        return ""

    repo = find_repo(route.path)
    base = repo.toplevel if repo is not None else Path.cwd()  # where commands run
    program, problem = _first_program(command, relative_posix(route.path, base), stone)
    if problem:
        return f"cannot read it as shell words ({problem}); check its quoting"
    if not program or program in _SHELL_WORDS:
        return ""
    if "/" in program:
        candidate = Path(os.path.expanduser(program))
        candidate = candidate if candidate.is_absolute() else base / candidate
        if not (os.path.isfile(candidate) and os.access(candidate, os.X_OK)):
            return f"program {program!r} is not an executable file (commands run from {base})"
        return ""
    if shutil.which(program, path=search_path()) is None:  # the PATH guards run with
        return f"program {program!r} is not on PATH (the command would fail when it runs)"
    return ""


def _first_program(command: str, route: str, stone: Stone) -> tuple[str, str]:
    """The program the command's first simple command runs ("" if none, or if it is computed at run time):
    its first word after any ``VAR=value`` prefixes, with ``$route``/``$stone`` as their values; and the
    first problem the bash reader found in the command ("" if none)."""
    # $route and $stone become references to the variables a guard's command runs with (as it runs), read
    # as words, and given their values here; substitutions run programs too, but a missing one there is
    # not the command's program (only the top level is read).
    found, problems = shell_words.commands(substitute(command), depth=0)
    problem = problems[0] if problems else ""
    first = found[0].words if found else []
    program = next((word for word in first if not shell_words.is_assignment(word)), None)
    if program is None:
        return "", problem
    values = {"route": route, "stone": stone.name, "hash": "0" * 64}
    text = program.text
    for name, variable in ENV.items():
        text = text.replace("${" + variable + "}", values[name])
    if "$" in text or "`" in text or any(bare and char in "*?[" for char, bare in program.chars):
        return "", problem  # known only when it runs
    return text, problem


def _overlapping_defaults(route: Route, guards: dict[str, Guard | None], add: Add) -> None:
    for stone in route.stones:
        guard = guards.get(stone.name)
        if writes_globs(guard):
            continue  # globs written in a guard are taken as written
        if stone.has_guard and guard is None:
            continue  # the guard is broken; already reported
        others = [
            other.name for other in route.stones if other is not stone and other.name.startswith(stone.name)
        ]
        if others:
            add(
                stone.name + STONE_SUFFIX,
                "warning",
                f"its default artifacts ($route/{stone.name}*.md) leave to {', '.join(others)} the files "
                f"{'their defaults match' if len(others) > 1 else 'its default matches'}; if {stone.name} "
                "writes any of them, give it an artifacts: glob in its guard",
            )
