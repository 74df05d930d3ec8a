"""``route.bounce``: a Claude Code ``PreToolUse`` hook that holds a robot's file edits to its route's rules.

It blocks (the CLI exits 2, the reason on stderr) a ``Write``, ``Edit``, ``MultiEdit`` or ``NotebookEdit`` of

- a route's templates, ``*.stone`` and ``*.guard`` (read-only for robots; ``route.stone.del`` removes them),
- anything under a route's ``.route/`` (the driver writes it: markers, reviews, judges, bindings, approvers)
  and the repository's ``.route-approvers`` file,
- a path a guard's ``protect:`` globs name, while that guard's stone has not passed (its own artifacts
  excepted, or the robot could never write them).

Everything else passes silently. It fails closed: an event it cannot read, or a file-editing call whose
target it cannot tell (``tool_input`` not an object, a path that is not one string), is blocked; a call of a
tool it does not police (``Bash``, ``Read`` …) passes whatever else the event holds. It runs before every tool
call, so it answers from paths and markers alone and parses a guard only when the guard's text mentions
``protect``.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from routedriver import globs, userfile
from routedriver.errors import Refused
from routedriver.gitops import find_repo
from routedriver.hookevent import MISSING, path_problem, text_problem, wrong
from routedriver.route import store
from routedriver.route.api import open_route
from routedriver.route.bind import NotBound
from routedriver.route.guardfile import parse_guard
from routedriver.route.model import STATE_DIR, Route, Stone
from routedriver.route.state import Survey
from routedriver.route.subst import VARIABLE

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


class Unclear(Exception):
    """The call is (or may be) a file edit, but the event does not say what it would write."""


def blocked_unread(why: str) -> Bounce:
    """The answer to an event bounce cannot read: a PreToolUse gate fails closed."""
    return Bounce(
        True,
        f"route.bounce: blocked this tool call: {why}, so it cannot tell what the call would write; it "
        "blocks what it cannot read (if this repeats, a human checks the route.bounce hook).",
    )


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
        # Wired to another event (Stop, UserPromptSubmit …), exit 2 would trap the robot or eat the prompt.
        return Bounce(
            False,
            problem=f"route.bounce judges {EVENT} events, and this is a {event} event (nothing blocked); "
            f"wire route.bounce to {EVENT} in .claude/settings.json",
        )
    try:
        if not isinstance(event, str):
            raise Unclear(wrong("hook_event_name", event, "an event's name"))
        targets = targets_of(payload)
    except Unclear as exc:
        return blocked_unread(str(exc))
    warnings: list[str] = []
    for target in targets:
        why = driver_file(target)
        if why is not None:
            return Bounce(True, f"route.bounce: blocked {_shown(target, payload)}: {why}.")
    for target in targets:
        decision = _protected(target, route_option)
        if decision.blocked or decision.problem:
            return decision
        warnings += decision.warnings
    return Bounce(False, warnings=tuple(dict.fromkeys(warnings)))


def _protected(target: Path, route_option: str | None) -> Bounce:
    try:
        route = open_route(route_option)
    except NotBound:
        return Bounce(False)  # no route bound here (main, a detached HEAD): nothing more to protect
    except Refused as exc:
        # A route that cannot be resolved (two bound, a bad --route) protects nothing: say so, or the
        # protect: rules would silently stop working.
        why = exc.line().removeprefix("error: ")
        return Bounce(False, problem=f"route.bounce cannot tell what to protect (protect: rules off): {why}")
    repo = find_repo(route.path)
    base = repo.toplevel if repo is not None else Path.cwd()
    relative = Path(os.path.relpath(target, base)).as_posix()
    names = store.list_state(route)
    survey: Survey | None = None  # made only when a protect: glob matches (the usual edit matches none)
    warnings: list[str] = []
    for stone in route.stones:
        guard_path = stone.guard_path
        if guard_path is None:
            continue
        try:
            text = userfile.read_text(guard_path, what="guard", shown=route.show(guard_path))
        except Refused:
            continue
        if "protect" not in text:
            continue
        pattern = _protecting_glob(route, stone, text, relative, base, warnings)
        if pattern is None:
            continue
        if store.has_marker(names, stone.name):
            survey = survey or Survey(route, repo, base, names=names)
            if survey.check(stone).passed:  # passed as route.verify would say it: fresh
                continue
        shown = relative if not relative.startswith("../") else str(target)
        head = f"--route {shlex.quote(route.display)} --stone {shlex.quote(stone.name)}"
        return Bounce(
            True,
            f"route.bounce: blocked {shown}: it is protected by stone {stone.name} of route {route.display} "
            f"(protect: {pattern}) until that stone passes. Finish that stone first: read it with "
            f"route.stone.get {head} --say, then run route.stone.set {head} --as passed.",
            tuple(warnings),
        )
    return Bounce(False, "", tuple(warnings))


def _protecting_glob(
    route: Route, stone: Stone, text: str, relative: str, base: Path, warnings: list[str]
) -> str | None:
    """The first ``protect:`` glob of the stone's guard that matches ``relative``, unless the path is one
    of the stone's own artifacts."""
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
    route_value = Path(os.path.relpath(route.path, base)).as_posix()
    values = {"route": globs.escape(route_value), "stone": globs.escape(stone.name)}
    expanded = VARIABLE.sub(lambda match: values.get(match[1] or match[2], match[0]), pattern)
    if os.path.isabs(expanded):
        # relpath drops a trailing "/", which means "everything below": keep it.
        expanded = Path(os.path.relpath(expanded, base)).as_posix() + ("/" if expanded.endswith("/") else "")
    return globs.covers(expanded, relative)
