"""The route hooks in a repository's Claude Code settings (``.claude/settings.json``), merged, not clobbered.

``route.init --claude-code`` adds three hooks (the table ``HOOKS``, the same as
``examples/claude-code/.claude/settings.json``): ``SessionStart`` and ``Stop`` run ``route.drive``, and
``PreToolUse`` on file edits runs ``route.bounce``. Merging rules:

- every other key, event, matcher group and hook in the file stays as it is (and in its order);
- a hook is added only when no hook of that event already runs the same program for the same moment (a
  full path such as ``.venv/bin/route.drive --when hook.onStop`` counts), so running it twice adds nothing;
- a file that is not UTF-8, not valid JSON, not an object, repeats a key, or has ``hooks`` (or one of our
  events under it) of another shape than Claude Code reads is refused in one line and left untouched.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, NamedTuple

from routedriver import userfile
from routedriver.errors import Refused
from routedriver.shellsyntax.words import commands

SETTINGS = Path(".claude") / "settings.json"


class Hook(NamedTuple):
    event: str  # Claude Code's hook event
    matcher: str | None  # which tools or session sources; None: the event has no matcher
    program: str  # the console script it runs
    when: str | None  # its --when argument, if any
    timeout_s: int

    @property
    def command(self) -> str:
        return self.program if self.when is None else f"{self.program} --when {self.when}"


HOOKS = (
    Hook("SessionStart", "startup|resume|clear|compact", "route.drive", "hook.onBoot", 60),
    Hook("Stop", None, "route.drive", "hook.onStop", 60),
    Hook("PreToolUse", "Write|Edit|MultiEdit|NotebookEdit|Bash", "route.bounce", None, 30),
)


# Matchers earlier versions of route.init wrote, and what they become: route.bounce now reads Bash commands.
OLD_MATCHERS = {("PreToolUse", "route.bounce"): ("Write|Edit|MultiEdit|NotebookEdit",)}


class SettingsPlan(NamedTuple):
    path: Path  # absolute
    text: str | None  # the new file, or None when every hook is there already
    added: tuple[Hook, ...]
    widened: tuple[Hook, ...] = ()  # hooks whose matcher an older route.init wrote, now the current one


def plan_settings(toplevel: Path) -> SettingsPlan:
    """The merged settings for the repository at ``toplevel``; refuses (nothing written) a file it cannot
    merge into."""
    path = toplevel / SETTINGS
    shown = os.path.relpath(path)
    settings = _read(path, shown)
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise _shape(shown, "'hooks' is not an object")
    added, widened = [], []
    for hook in HOOKS:
        groups = hooks.setdefault(hook.event, [])
        if not isinstance(groups, list):
            raise _shape(shown, f"'hooks.{hook.event}' is not a list")
        if _widen(groups, hook):
            widened.append(hook)
        if any(_runs(command, hook) for command in _commands(groups)):
            continue
        entry: dict[str, Any] = {} if hook.matcher is None else {"matcher": hook.matcher}
        entry["hooks"] = [{"type": "command", "command": hook.command, "timeout": hook.timeout_s}]
        groups.append(entry)
        added.append(hook)
    if not added and not widened:
        return SettingsPlan(path, None, ())
    text = json.dumps(settings, indent=2, ensure_ascii=False) + "\n"
    return SettingsPlan(path, text, tuple(added), tuple(widened))


def _widen(groups: list[Any], hook: Hook) -> bool:
    """Give a group an older route.init wrote for ``hook`` (its matcher exactly as written then) the current
    matcher; a matcher the user changed is theirs and stays."""
    old = OLD_MATCHERS.get((hook.event, hook.program), ())
    changed = False
    for group in groups:
        if not isinstance(group, dict) or group.get("matcher") not in old or hook.matcher is None:
            continue
        if any(_runs(command, hook) for command in _commands([group])):
            group["matcher"] = hook.matcher
            changed = True
    return changed


def _read(path: Path, shown: str) -> dict[str, Any]:
    """The settings as a JSON object ({} when there are none), read through ``userfile``: a file that is not
    a regular file, too large, not UTF-8, not JSON or names a key twice (rewriting it would silently drop
    the first one) is refused in one line and left as it is."""
    if not os.path.lexists(path):
        return {}
    try:
        text = userfile.read_text(path, what="settings file", shown=shown)
        data = userfile.parse_json(text, shown=shown) if text.strip() else {}  # empty: nothing to keep
    except Refused as exc:
        raise Refused(exc.what, _FIX) from None
    if not isinstance(data, dict):
        raise _shape(shown, "it is not a JSON object")
    return data


_FIX = "fix it by hand (it was left as it is), then run route.init --claude-code again"


def _shape(shown: str, what: str) -> Refused:
    return Refused(f"cannot add hooks to {shown}: {what}", _FIX)


def _commands(groups: list[Any]) -> list[str]:
    """Every command string of an event's matcher groups (entries of other shapes are kept, not read)."""
    found = []
    for group in groups:
        inner = group.get("hooks") if isinstance(group, dict) else None
        for hook in inner if isinstance(inner, list) else ():
            if isinstance(hook, dict) and isinstance(hook.get("command"), str):
                found.append(hook["command"])
    return found


def _runs(command: str, hook: Hook) -> bool:
    """Whether ``command`` already runs ``hook``'s program (by any path) for the same ``--when``: one of the
    simple commands bash would run (read with ``shellsyntax``) is that program with that argument."""
    for simple in commands(command)[0]:
        words = [word.text for word in simple.words]
        if not any(os.path.basename(word) == hook.program for word in words):
            continue
        if hook.when is None or hook.when in words or f"--when={hook.when}" in words:
            return True
    return False
