"""``route.bounce``: a Claude Code ``PreToolUse`` hook that holds a robot's writes to its route's rules.

It refuses (Claude Code's JSON deny, exit 0: the tool does not run and the model reads the reason) a
``Write``, ``Edit``, ``MultiEdit`` or ``NotebookEdit`` of, or a ``Bash`` command that visibly writes
(``bounce_bash``),

- a route's templates, ``*.stone`` and ``*.guard`` (read-only for robots; ``route.stone.del`` removes them),
- anything under a route's ``.route/`` (the driver writes it: markers, reviews, judges, bindings, approvers)
  and the repository's ``.route-approvers`` file,
- Claude Code's ``.claude/settings.json`` and ``.claude/settings.local.json``, where the hooks are wired
  (a robot that could edit them could turn this very hook off),
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
from collections.abc import Callable
from pathlib import Path
from typing import Any

from routedriver import hookevent
from routedriver.errors import ExitCode
from routedriver.fsutil import realpath
from routedriver.hookevent import MISSING, path_problem, text_problem, wrong
from routedriver.report import Report
from routedriver.route.protection import Bounce, Protection, driver_file

# The file-editing tools bounce polices, and the key that names the file each one writes.
WRITE_TOOLS = {
    "Write": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
}
_PATH_KEYS = ("file_path", "notebook_path")
EVENT = "PreToolUse"


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
    return tuple(Path(realpath(os.path.join(base, os.path.expanduser(path)))) for path in raw)


def _path(name: str, value: object) -> str:
    if problem := path_problem(name, value):
        raise Unclear(problem)
    return str(value)


def _shown(target: Path, payload: dict[str, Any]) -> str:
    cwd = payload.get("cwd")
    base = cwd if isinstance(cwd, str) and cwd else os.getcwd()
    relative = os.path.relpath(target, realpath(base))
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
            # the bash reader (~18 ms): only a Bash call, not every file edit
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
    return command, Path(realpath(base))
