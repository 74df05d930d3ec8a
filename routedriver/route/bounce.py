"""``route.bounce``: a Claude Code ``PreToolUse`` hook that holds a robot's writes to its route's rules.

It refuses (Claude Code's JSON deny, exit 0: the tool does not run and the model reads the reason) a
``Write``, ``Edit``, ``MultiEdit`` or ``NotebookEdit`` of, or a ``Bash`` command that visibly writes
(``bounce_bash``),

- a route's templates, ``*.stone`` and ``*.guard`` (read-only for robots; ``route.stone.del`` removes them),
- anything under a route's ``.route/`` (the driver writes it: markers, reviews, judges, bindings, approvers)
  and the repository's ``.route-approvers`` file,
- a path a guard's ``protect:`` globs name, while that guard's stone has not passed (its own artifacts
  excepted, or the robot could never write them).

Everything else passes silently. It fails closed: an event it cannot read, or a call whose target it cannot
tell (``tool_input`` not an object, a path or a command that is not one string), is blocked with exit 2 (the
reason on stderr; ``Bounce.unread``); a call of a tool it does not police (``Read``, an MCP tool …) passes
whatever else the event holds. It runs before every tool call, so it answers from paths and markers alone
and parses a guard only when the guard's text mentions ``protect``.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from routedriver import globs, userfile
from routedriver.errors import ExitCode, Refused
from routedriver.hookevent import MISSING, path_problem, text_problem, wrong
from routedriver.report import Report
from routedriver.route import store
from routedriver.route.model import STATE_DIR, VARIABLE, Route, Stone

if TYPE_CHECKING:
    from routedriver.gitops import Repo
    from routedriver.route.state import Survey

# The file-editing tools bounce polices, and the key that names the file each one writes.
WRITE_TOOLS = {
    "Write": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
}
_PATH_KEYS = ("file_path", "notebook_path")
EVENT = "PreToolUse"


@dataclass(frozen=True)
class Bounce:
    blocked: bool
    reason: str = ""
    warnings: tuple[str, ...] = ()  # problems that did not block (a guard that does not parse)
    problem: str = ""  # a misconfiguration that disables protect: rules (the hook exits 1: shown to the user)
    unread: bool = False  # blocked because the event could not be read (exit 2, not Claude Code's JSON deny)


class Unclear(Exception):
    """The call is (or may be) a file edit, but the event does not say what it would write."""


def blocked_unread(why: str) -> Bounce:
    """The answer to an event bounce cannot read: a PreToolUse gate fails closed."""
    return Bounce(
        True,
        f"route.bounce: blocked this tool call: {why}, so it cannot tell what the call would write; it "
        "blocks what it cannot read (if this repeats, a human checks the route.bounce hook).",
        unread=True,
    )


def hook(route_option: str | None, *, failed: Callable[[Exception], str]) -> Report:
    """``route.bounce``: the PreToolUse event read from stdin and judged (``decide``), as Claude Code reads
    the answer. A block is its JSON deny on stdout, exit 0 (the model reads the reason); an event it cannot
    read, or a call whose judging raised (``failed`` says why in one line), is blocked with exit 2 and the
    reason on stderr; a misconfiguration that disables protection exits 1 (shown, never blocking)."""
    from routedriver import hookevent

    try:
        data = hookevent.read_stdin()
        if data is None:
            raise hookevent.UnreadableEvent("there is no hook event (stdin is a terminal)", hookevent.FIX)
        payload = hookevent.parse_event(data)
    except hookevent.UnreadableEvent as exc:
        decision = blocked_unread(exc.what)  # a PreToolUse gate that cannot read its event fails closed
    else:
        try:
            decision = decide(payload, route_option)
        except Exception as exc:  # noqa: BLE001 - a gate that cannot judge a file edit blocks it
            reason = f"route.bounce: blocked this tool call: checking it failed ({failed(exc)})."
            decision = Bounce(True, reason, unread=True)
    warnings = tuple(f"warning: {warning}" for warning in decision.warnings)
    if decision.blocked and decision.unread:
        # What it cannot read, it blocks the blunt way: exit 2.
        return Report("", (*warnings, decision.reason), ExitCode.REFUSED)
    if decision.blocked:
        return Report(hookevent.deny_tool(decision.reason), warnings)
    if decision.problem:
        # Exit 1, not 2: Claude Code shows it to the user without blocking the edit (a hook that cannot
        # tell what to protect must not stop all work either).
        return Report("", (*warnings, f"error: {decision.problem}"), ExitCode.MALFUNCTION)
    return Report("", warnings)


def targets_of(payload: dict[str, Any]) -> tuple[Path, ...]:
    """The absolute paths a file-editing tool call would write (empty for any other tool).

    Raises ``Unclear`` when the call may edit a file but the event does not say which: no ``tool_name``
    (or not a string), a file-editing tool whose ``tool_input`` is not an object or whose path is missing,
    not a string, empty or holds a NUL, or a ``cwd`` that is not a path. Every path key present is checked,
    not only the tool's own, so a second key cannot smuggle a target past it."""
    tool = payload.get("tool_name", MISSING)
    if problem := text_problem("tool_name", tool, "a tool's name"):
        raise Unclear(problem)
    if tool not in WRITE_TOOLS:
        return ()
    tool_input = payload.get("tool_input", MISSING)
    if not isinstance(tool_input, dict):
        raise Unclear(f"{wrong('tool_input', tool_input, 'an object')} (a {tool} call)")
    own = WRITE_TOOLS[str(tool)]
    raw = [
        _path(f"tool_input.{key}", tool_input.get(key, MISSING))
        for key in _PATH_KEYS
        if key == own or key in tool_input
    ]
    cwd = payload.get("cwd", MISSING)
    base = os.getcwd() if cwd is MISSING else _path("cwd", cwd)
    # realpath: a symlink must not be a way around the rules.
    return tuple(Path(os.path.realpath(os.path.join(base, os.path.expanduser(path)))) for path in raw)


def _path(name: str, value: object) -> str:
    if problem := path_problem(name, value):
        raise Unclear(problem)
    return str(value)


def _is_route(directory: Path) -> bool:
    try:
        with os.scandir(directory) as entries:
            return any(entry.name.endswith(".stone") and not entry.name.startswith(".") for entry in entries)
    except OSError:
        return False


def driver_file(target: Path) -> str | None:
    """Why ``target`` is a file robots never write, or None.

    Names are compared without letter case: on a case-insensitive file system (macOS, Windows) a write to
    ``1.Vision.STONE`` or ``.ROUTE/`` lands in the stone or the driver's directory."""
    name, parent = target.name.casefold(), target.parent
    if name.endswith(".stone") and not name.startswith("."):
        return "stones (*.stone) are read-only templates: a human writes them, route.stone.del removes them"
    # os.path.exists, not Path.exists: a name too long for the file system is "no such stone", not a crash.
    stone = parent / f"{target.name[:-6]}.stone"
    if name.endswith(".guard") and (os.path.exists(stone) or _is_route(parent)):
        return "guards (*.guard) are read-only templates: only a human changes what checks a stone"
    if name == ".route-approvers":
        return "the approvers file says who may approve; only a human changes it"
    for ancestor in target.parents:
        if ancestor.name.casefold() == STATE_DIR and _is_route(ancestor.parent):
            return (
                "files under a route's .route/ are written by the driver only (reviews, judges, markers, "
                "bindings, approvers); run route.stone.set and let it record the result"
            )
    return None


def _shown(target: Path, payload: dict[str, Any]) -> str:
    cwd = payload.get("cwd")
    base = cwd if isinstance(cwd, str) and cwd else os.getcwd()
    relative = os.path.relpath(target, os.path.realpath(base))
    return str(target) if relative.startswith("..") else relative


def decide(payload: dict[str, Any], route_option: str | None) -> Bounce:
    """Block, allow, or report a misconfiguration, for one PreToolUse event (already parsed JSON)."""
    event = payload.get("hook_event_name", EVENT)
    if isinstance(event, str) and event != EVENT:
        # Wired to another event (Stop, UserPromptSubmit …), a block would trap the robot or eat the prompt.
        return Bounce(
            False,
            problem=f"route.bounce judges {EVENT} events, and this is a {event} event (nothing blocked); "
            f"wire route.bounce to {EVENT} in .claude/settings.json",
        )
    try:
        if not isinstance(event, str):
            raise Unclear(wrong("hook_event_name", event, "an event's name"))
        if payload.get("tool_name") == "Bash":
            command, cwd = bash_command(payload)
            from routedriver.route.bounce_bash import judge_command

            return judge_command(command, cwd, Protection(route_option))
        targets = targets_of(payload)
    except Unclear as exc:
        return blocked_unread(str(exc))
    protection = Protection(route_option)
    warnings: list[str] = []
    for target in targets:
        why = driver_file(target)
        if why is not None:
            return Bounce(True, f"route.bounce: blocked {_shown(target, payload)}: {why}.")
    for target in targets:
        decision = protection.check(target)
        if decision.blocked or decision.problem:
            return decision
        warnings += decision.warnings
    return Bounce(False, warnings=tuple(dict.fromkeys(warnings)))


def bash_command(payload: dict[str, Any]) -> tuple[str, Path]:
    """A Bash call's command line and the directory it runs in; ``Unclear`` when the event does not say."""
    tool_input = payload.get("tool_input", MISSING)
    if not isinstance(tool_input, dict):
        raise Unclear(f"{wrong('tool_input', tool_input, 'an object')} (a Bash call)")
    command = tool_input.get("command", MISSING)
    if not isinstance(command, str):
        raise Unclear(wrong("tool_input.command", command, "a command line"))
    cwd = payload.get("cwd", MISSING)
    base = os.getcwd() if cwd is MISSING else _path("cwd", cwd)
    return command, Path(os.path.realpath(base))


class Protection:
    """What the bound route (or ``--route``) protects with its guards' ``protect:`` globs, read once for all
    the paths of one tool call: the route is opened, its state listed and its guards read at the first path
    asked about, and a stone's pass is checked once."""

    def __init__(self, route_option: str | None) -> None:
        self.route_option = route_option
        self._opened: tuple[Route | None, Bounce | None] | None = None
        self._located: tuple[Repo | None, Path] | None = None
        self._names: frozenset[str] = frozenset()
        self._guards: list[tuple[Stone, str]] | None = None
        self._survey: Survey | None = None
        self._passed: dict[str, bool] = {}

    def route(self) -> tuple[Route | None, Bounce | None]:
        """The route, or None and why not (a problem to report, or None: no route is bound here, so there
        is nothing more to protect: main, a detached HEAD)."""
        if self._opened is None:
            from routedriver.route.api import open_route
            from routedriver.route.bind import NotBound

            try:
                self._opened = (open_route(self.route_option), None)
            except NotBound:
                self._opened = (None, None)
            except Refused as exc:
                # A route that cannot be resolved (two bound, a bad --route) protects nothing: say so, or
                # the protect: rules would silently stop working.
                why = exc.line().removeprefix("error: ")
                problem = f"route.bounce cannot tell what to protect (protect: rules off): {why}"
                self._opened = (None, Bounce(False, problem=problem))
        return self._opened

    def located(self, route: Route) -> tuple[Repo | None, Path]:
        """The repository holding the route, and the base its globs are relative to (its top level)."""
        if self._located is None:
            from routedriver.gitops import find_repo

            repo = find_repo(route.path)
            self._located = (repo, repo.toplevel if repo is not None else Path.cwd())
            self._names = store.list_state(route)
        return self._located

    def guards(self, route: Route) -> list[tuple[Stone, str]]:
        """``(stone, guard text)`` for every guard that mentions ``protect`` (the others protect nothing)."""
        if self._guards is None:
            self._guards = []
            for stone in route.stones:
                if stone.guard_path is None:
                    continue
                try:
                    shown = route.show(stone.guard_path)
                    text = userfile.read_text(stone.guard_path, what="guard", shown=shown)
                except Refused:
                    continue
                if "protect" in text:
                    self._guards.append((stone, text))
        return self._guards

    def passed(self, route: Route, stone: Stone) -> bool:
        """Whether ``stone`` has passed as route.verify would say it: fresh."""
        if stone.name not in self._passed:
            repo, base = self.located(route)
            passed = False
            if store.has_marker(self._names, stone.name):
                from routedriver.route.state import Survey

                self._survey = self._survey or Survey(route, repo, base, names=self._names)
                passed = self._survey.check(stone).passed
            self._passed[stone.name] = passed
        return self._passed[stone.name]

    def protected_globs(self) -> list[tuple[str, Path]]:
        """Every ``protect:`` glob of a stone that has not passed, ``$route``/``$stone`` substituted, with
        the base it is relative to (for a directory a command writes below: does it hold such paths?)."""
        route, _ = self.route()
        if route is None:
            return []
        from routedriver.route.guardfile import parse_guard

        _, base = self.located(route)
        found = []
        for stone, text in self.guards(route):
            assert stone.guard_path is not None
            try:
                guard = parse_guard(text, stone.guard_path, route.show(stone.guard_path), stone.name)
            except Refused:
                continue
            if guard.protect and not self.passed(route, stone):
                found += [(_expand(pattern, route, stone, base), base) for pattern in guard.protect]
        return found

    def check(self, target: Path, how: str = "") -> Bounce:
        """Blocked when a ``protect:`` glob of a stone that has not passed covers ``target`` (``how``: what
        writes it, said after the path)."""
        route, problem = self.route()
        if route is None:
            return problem or Bounce(False)
        _, base = self.located(route)
        relative = Path(os.path.relpath(target, base)).as_posix()
        warnings: list[str] = []
        for stone, text in self.guards(route):
            pattern = _protecting_glob(route, stone, text, relative, base, warnings)
            if pattern is None or self.passed(route, stone):
                continue
            shown = relative if not relative.startswith("../") else str(target)
            shown += f" ({how})" if how else ""
            head = f"--route {shlex.quote(route.display)} --stone {shlex.quote(stone.name)}"
            return Bounce(
                True,
                f"route.bounce: blocked {shown}: it is protected by stone {stone.name} of route "
                f"{route.display} (protect: {pattern}) until that stone passes. Finish that stone first: "
                f"read it with route.stone.get {head} --say, then run route.stone.set {head} --as passed.",
                tuple(warnings),
            )
        return Bounce(False, "", tuple(warnings))


def _protecting_glob(
    route: Route, stone: Stone, text: str, relative: str, base: Path, warnings: list[str]
) -> str | None:
    """The first ``protect:`` glob of the stone's guard that matches ``relative``, unless the path is one
    of the stone's own artifacts."""
    from routedriver.route.guardfile import parse_guard

    assert stone.guard_path is not None
    try:
        guard = parse_guard(text, stone.guard_path, route.show(stone.guard_path), stone.name)
    except Refused as exc:
        why = exc.line().removeprefix("error: ")  # the CLI adds its own "warning: "
        warnings.append(f"{why} (its protect: rules are not enforced until it is fixed)")
        return None
    hit = next((pattern for pattern in guard.protect if _match(pattern, route, stone, relative, base)), None)
    if hit is None or any(_match(pattern, route, stone, relative, base) for pattern in guard.artifacts):
        return None
    return hit


def _match(pattern: str, route: Route, stone: Stone, relative: str, base: Path) -> bool:
    """Whether the guard's glob ``pattern`` covers ``relative`` (``routedriver.globs``'s rule: hidden names
    included, ``x/`` is everything below ``x``), ``$route`` and ``$stone`` substituted."""
    return globs.covers(_expand(pattern, route, stone, base), relative)


def _expand(pattern: str, route: Route, stone: Stone, base: Path) -> str:
    """A guard's glob with ``$route`` and ``$stone`` substituted, relative to ``base``."""
    route_value = Path(os.path.relpath(route.path, base)).as_posix()
    values = {"route": globs.escape(route_value), "stone": globs.escape(stone.name)}
    expanded = VARIABLE.sub(lambda match: values.get(match[1] or match[2], match[0]), pattern)
    if os.path.isabs(expanded):
        # relpath drops a trailing "/", which means "everything below": keep it.
        expanded = Path(os.path.relpath(expanded, base)).as_posix() + ("/" if expanded.endswith("/") else "")
    return expanded
