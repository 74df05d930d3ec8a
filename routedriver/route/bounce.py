"""``route.bounce``: a Claude Code ``PreToolUse`` hook that holds a robot's file edits to its route's rules.

It blocks (the CLI exits 2, the reason on stderr) a ``Write``, ``Edit``, ``MultiEdit`` or ``NotebookEdit`` of

- a route's templates, ``*.stone`` and ``*.guard`` (read-only for robots; ``route.stone.del`` removes them),
- anything under a route's ``.route/`` (the driver writes it: markers, reviews, judges, bindings, approvers)
  and the repository's ``.route-approvers`` file,
- a path a guard's ``protect:`` globs name, while that guard's stone has not passed (its own artifacts
  excepted, or the robot could never write them).

Everything else passes silently. It runs before every tool call, so it answers from paths and markers alone
and parses a guard only when the guard's text mentions ``protect``.
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from routedriver import userfile
from routedriver.errors import Refused
from routedriver.route import store
from routedriver.route.model import STATE_DIR, Route, Stone
from routedriver.route.pathglob import matches

WRITE_TOOLS = ("Write", "Edit", "MultiEdit", "NotebookEdit")
_PATH_KEYS = ("file_path", "notebook_path")


@dataclass(frozen=True)
class Bounce:
    blocked: bool
    reason: str = ""
    warnings: tuple[str, ...] = ()  # problems that did not block (a guard that does not parse)
    problem: str = ""  # a misconfiguration that disables protect: rules (the hook exits 1: shown to the user)


def target_of(payload: dict[str, Any]) -> Path | None:
    """The absolute path a file-writing tool call would write, or None for any other call."""
    if payload.get("tool_name") not in WRITE_TOOLS:
        return None
    tool_input = payload.get("tool_input")
    if not isinstance(tool_input, dict):
        return None
    raw = next((tool_input[key] for key in _PATH_KEYS if isinstance(tool_input.get(key), str)), None)
    if not raw:
        return None
    cwd = payload.get("cwd")
    base = cwd if isinstance(cwd, str) and cwd else os.getcwd()
    # realpath: a symlink must not be a way around the rules.
    return Path(os.path.realpath(os.path.join(base, os.path.expanduser(raw))))


def _is_route(directory: Path) -> bool:
    try:
        with os.scandir(directory) as entries:
            return any(entry.name.endswith(".stone") and not entry.name.startswith(".") for entry in entries)
    except OSError:
        return False


def driver_file(target: Path) -> str | None:
    """Why ``target`` is a file robots never write, or None."""
    name, parent = target.name, target.parent
    if name.endswith(".stone") and not name.startswith("."):
        return "stones (*.stone) are read-only templates: a human writes them, route.stone.del removes them"
    if name.endswith(".guard") and ((parent / f"{name[:-6]}.stone").exists() or _is_route(parent)):
        return "guards (*.guard) are read-only templates: only a human changes what checks a stone"
    if name == ".route-approvers":
        return "the approvers file says who may approve; only a human changes it"
    for ancestor in target.parents:
        if ancestor.name == STATE_DIR and _is_route(ancestor.parent):
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
    target = target_of(payload)
    if target is None:
        return Bounce(False)
    why = driver_file(target)
    if why is not None:
        return Bounce(True, f"route.bounce: blocked {_shown(target, payload)}: {why}.")
    return _protected(target, route_option)


def _protected(target: Path, route_option: str | None) -> Bounce:
    from routedriver.gitops import find_repo
    from routedriver.route.api import open_route
    from routedriver.route.bind import NotBound

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
        if pattern is None or store.is_passed(route, stone.name, names):
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
    from routedriver.route.subst import VARIABLE

    route_value = Path(os.path.relpath(route.path, base)).as_posix()
    values = {"route": _escape(route_value), "stone": _escape(stone.name)}
    expanded = VARIABLE.sub(lambda match: values.get(match[1] or match[2], match[0]), pattern)
    if os.path.isabs(expanded):
        expanded = Path(os.path.relpath(expanded, base)).as_posix()
    if expanded.startswith("./"):
        expanded = expanded[2:]
    return matches(relative, expanded)


def _escape(value: str) -> str:
    return "".join(f"[{char}]" if char in "*?[" else char for char in value)
