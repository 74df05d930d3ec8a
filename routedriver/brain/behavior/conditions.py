"""Rule conditions, compiled once into small closures.

A condition is a mapping: one key per test (several keys mean all of them), or ``all`` / ``any`` / ``not``
around nested conditions. ``all`` and ``any`` short-circuit, so an expensive or stateful test after a
failing one is never evaluated. The 14 tests:

state   target_not_in_set: SET · target_in_set: SET · counter_gte: {name, value} · flag_is: {name, value}
params  param_matches: {param, pattern} · param_contains: {param, value} · command_matches: {param, pattern}
turn    no_text_before_tools: BOOL · first_tool_this_turn: BOOL · consecutive_gte: N
        tool_calls_this_turn_eq: N
result  target_exists_on_disk: BOOL · text_matches: PATTERN · result_has_lint_errors: BOOL

``command_matches`` reads a bash command with the permission guard's reader (``permissions.shell``) and
searches the pattern in each simple command it would run, words joined by single spaces: quoting decoded,
wrappers and git's global options gone, substitutions and ``bash -c`` scripts read, so ``git -C . reset
--hard`` is ``git reset --hard`` and ``echo 'rm -rf x'`` runs no rm. When no command it found matches but
the reader cannot be sure it found them all (``X=rm; $X -rf x``, substitutions nested too deeply), the
answer is ``None``, "cannot tell": a test answers True, False or None, ``all``/``any``/``not`` combine the
three as Kleene's logic does (False wins an ``all``, True an ``any``), and a rule whose condition cannot
tell fires only when it blocks (see ``engine``): uncertainty blocks when the rule blocks.

A test with malformed arguments, an invalid regex among them, is a configuration error (``ConditionError``
with the key path), refused when the configuration loads. An UNKNOWN test is logged and makes the rule never
fire: an older engine must not half-enforce a rule it does not understand.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Callable, Mapping
from typing import Any

from routedriver.brain.behavior.state import (
    PRIMARY_TARGETS,
    SessionState,
    normalize_value,
    pick_param,
)

log = logging.getLogger("routedriver.brain.behavior")
_warned: set[str] = set()


class ConditionError(ValueError):
    """A known condition with unusable arguments; ``path`` locates it (``condition.all[1].counter_gte``)."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


class EvalContext:
    """Everything a condition may look at for one tool call (or one text)."""

    __slots__ = (
        "calls",
        "cwd",
        "outcome_data",
        "params",
        "set_targets",
        "state",
        "streak",
        "text",
        "tool",
        "unsure",
    )

    def __init__(
        self,
        *,
        tool: str,
        params: Mapping[str, Any],
        state: SessionState,
        calls: int,
        streak: int,
        cwd: str,
        set_targets: Mapping[str, tuple[str, ...]],
        text: str | None = None,
        outcome_data: Mapping[str, Any] | None = None,
    ) -> None:
        self.tool = tool
        self.params = params
        self.state = state
        self.calls = calls  # tool calls this turn, counting this one
        self.streak = streak  # same-tool streak, counting this one
        self.cwd = cwd
        self.set_targets = set_targets
        self.text = text  # text before the tools (pre/post) or the agent's text (on_text); None = unknown
        self.outcome_data = outcome_data
        self.unsure: list[str] = []  # why a test could not tell (the reader's reasons), for the message

    def target_for(self, set_name: str) -> str | None:
        picked = pick_param(self.params, self.set_targets.get(set_name, PRIMARY_TARGETS))
        return normalize_value(picked[0], picked[1], self.cwd) if picked else None


# True, False, or None: cannot tell (a command the reader could not read with confidence).
Verdict = bool | None
Check = Callable[[EvalContext], Verdict]
PATH_TARGETS = ("file_path", "path", "notebook_path", "filepath", "target")


def always(_: EvalContext) -> bool:
    return True


def never(_: EvalContext) -> bool:
    return False


def warn_once(message: str) -> None:
    if message not in _warned:
        _warned.add(message)
        log.warning(message)


def compile_condition(spec: Any, path: str = "condition") -> Check:
    if spec is None or spec == {}:
        return always
    if not isinstance(spec, Mapping):
        raise ConditionError(path, f"must be a mapping of condition types, got {type(spec).__name__}")
    checks = [_compile_one(str(key), value, f"{path}.{key}") for key, value in spec.items()]
    return checks[0] if len(checks) == 1 else _all(checks)


def _all(checks: list[Check]) -> Check:
    def check(ctx: EvalContext) -> Verdict:
        unknown = False
        for part in checks:
            verdict = part(ctx)
            if verdict is False:
                return False  # stops at the first False: later tests are never evaluated
            unknown = unknown or verdict is None
        return None if unknown else True

    return check


def _any(checks: list[Check]) -> Check:
    def check(ctx: EvalContext) -> Verdict:
        unknown = False
        for part in checks:
            verdict = part(ctx)
            if verdict is True:
                return True  # stops at the first True
            unknown = unknown or verdict is None
        return None if unknown else False

    return check


def _not(inner: Check) -> Check:
    def check(ctx: EvalContext) -> Verdict:
        verdict = inner(ctx)
        return None if verdict is None else not verdict

    return check


def _compile_one(kind: str, arg: Any, path: str) -> Check:
    if kind in ("all", "any"):
        if not isinstance(arg, list) or not arg:
            raise ConditionError(path, f"{kind} needs a non-empty list of conditions")
        parts = [compile_condition(item, f"{path}[{index}]") for index, item in enumerate(arg)]
        return _all(parts) if kind == "all" else _any(parts)
    if kind == "not":
        return _not(compile_condition(arg, path))
    builder = _BUILDERS.get(kind)
    if builder is None:
        warn_once(f"behavior: unknown condition type: {kind} (at {path}); the rule will never fire")
        return never
    return builder(arg, path)


# -- argument helpers ---------------------------------------------------------------------------------
def _fields(arg: Any, path: str, *names: str) -> list[Any]:
    if not isinstance(arg, Mapping):
        raise ConditionError(path, f"needs a mapping with {', '.join(names)}")
    missing = [name for name in names if name not in arg]
    extra = [str(key) for key in arg if key not in names]
    if missing or extra:
        problem = f"missing {', '.join(missing)}" if missing else f"unknown key {', '.join(extra)}"
        raise ConditionError(path, f"{problem}; expected keys {', '.join(names)}")
    return [arg[name] for name in names]


def _int(value: Any, path: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ConditionError(path, f"needs an integer, got {value!r}")
    try:
        return int(value)
    except ValueError:
        raise ConditionError(path, f"needs an integer, got {value!r}") from None


def _bool(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise ConditionError(path, f"needs true or false, got {value!r}")
    return value


def _name(value: Any, path: str) -> str:
    if not isinstance(value, str) or not value:
        raise ConditionError(path, f"needs a name, got {value!r}")
    return value


def _regex(pattern: Any, path: str) -> re.Pattern[str]:
    if not isinstance(pattern, str):
        raise ConditionError(path, f"needs a regex string, got {pattern!r}")
    try:
        return re.compile(pattern, re.IGNORECASE)
    except re.error as exc:
        raise ConditionError(path, f"invalid regex {pattern!r} ({exc})") from None


def _text_of(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


# -- the 13 tests ---------------------------------------------------------------------------------------
def _target_not_in_set(arg: Any, path: str) -> Check:
    name = _name(arg, path)

    def check(ctx: EvalContext) -> bool:
        value = ctx.target_for(name)
        return value is not None and value not in ctx.state.sets.get(name, ())

    return check


def _target_in_set(arg: Any, path: str) -> Check:
    name = _name(arg, path)

    def check(ctx: EvalContext) -> bool:
        value = ctx.target_for(name)
        return value is not None and value in ctx.state.sets.get(name, ())

    return check


def _counter_gte(arg: Any, path: str) -> Check:
    name, value = _fields(arg, path, "name", "value")
    name, threshold = _name(name, f"{path}.name"), _int(value, f"{path}.value")
    return lambda ctx: ctx.state.counters.get(name, 0) >= threshold


def _flag_is(arg: Any, path: str) -> Check:
    name, value = _fields(arg, path, "name", "value")
    name, wanted = _name(name, f"{path}.name"), _bool(value, f"{path}.value")
    return lambda ctx: ctx.state.flags.get(name, False) is wanted


def _param_pattern(arg: Any, path: str) -> tuple[str, re.Pattern[str]]:
    """``{param, pattern}``: the parameter's name and the compiled pattern."""
    param, pattern = _fields(arg, path, "param", "pattern")
    return _name(param, f"{path}.param"), _regex(pattern, f"{path}.pattern")


def _param_matches(arg: Any, path: str) -> Check:
    param, regex = _param_pattern(arg, path)

    def check(ctx: EvalContext) -> bool:
        value = ctx.params.get(param)
        return value is not None and regex.search(_text_of(value)) is not None

    return check


def _command_matches(arg: Any, path: str) -> Check:
    param, regex = _param_pattern(arg, path)

    def check(ctx: EvalContext) -> Verdict:
        value = ctx.params.get(param)
        if not isinstance(value, str):
            return False
        from routedriver.brain.permissions.shell import read_command  # only bash calls pay for it

        found = read_command(value)
        if any(regex.search(command) is not None for command in found.commands):
            return True
        if found.unsure:  # what the reader found does not match, but it may not have found everything
            ctx.unsure.append(found.unsure[0])
            return None
        return False

    return check


def _param_contains(arg: Any, path: str) -> Check:
    param, needle = _fields(arg, path, "param", "value")
    param = _name(param, f"{path}.param")
    wanted = str(needle).casefold()

    def check(ctx: EvalContext) -> bool:
        value = ctx.params.get(param)
        return value is not None and wanted in _text_of(value).casefold()

    return check


def _no_text_before_tools(arg: Any, path: str) -> Check:
    wanted = _bool(arg, path)

    def check(ctx: EvalContext) -> bool:
        if ctx.text is None:
            return False  # unknown (hook mode has no view of the agent's text): never nag on a guess
        silent = not ctx.text.strip() and not ctx.state.text_this_turn
        return silent is wanted

    return check


def _first_tool_this_turn(arg: Any, path: str) -> Check:
    wanted = _bool(arg, path)
    return lambda ctx: (ctx.calls == 1) is wanted


def _consecutive_gte(arg: Any, path: str) -> Check:
    threshold = _int(arg, path)
    return lambda ctx: ctx.streak >= threshold


def _tool_calls_this_turn_eq(arg: Any, path: str) -> Check:
    wanted = _int(arg, path)
    return lambda ctx: ctx.calls == wanted


def _target_exists_on_disk(arg: Any, path: str) -> Check:
    wanted = _bool(arg, path)

    def check(ctx: EvalContext) -> bool:
        picked = pick_param(ctx.params, PATH_TARGETS)
        target = normalize_value("path", picked[1], ctx.cwd) if picked else None
        return target is not None and os.path.exists(target) is wanted

    return check


def _text_matches(arg: Any, path: str) -> Check:
    regex = _regex(arg, path)
    return lambda ctx: ctx.text is not None and regex.search(ctx.text) is not None


def _result_has_lint_errors(arg: Any, path: str) -> Check:
    wanted = _bool(arg, path)

    def check(ctx: EvalContext) -> bool:
        data = ctx.outcome_data
        if data is None:
            return False  # before the tool ran there is no result to look at
        return has_lint_errors(data) is wanted

    return check


def has_lint_errors(data: Mapping[str, Any]) -> bool:
    lint = data.get("lint")
    nested = data.get("data")
    if lint is None and isinstance(nested, Mapping):
        lint = nested.get("lint")
    if not isinstance(lint, list):
        return False
    return any(
        isinstance(item, Mapping) and str(item.get("severity", "")).lower() == "error" for item in lint
    )


_BUILDERS: dict[str, Callable[[Any, str], Check]] = {
    "target_not_in_set": _target_not_in_set,
    "target_in_set": _target_in_set,
    "counter_gte": _counter_gte,
    "flag_is": _flag_is,
    "param_matches": _param_matches,
    "param_contains": _param_contains,
    "command_matches": _command_matches,
    "no_text_before_tools": _no_text_before_tools,
    "first_tool_this_turn": _first_tool_this_turn,
    "consecutive_gte": _consecutive_gte,
    "tool_calls_this_turn_eq": _tool_calls_this_turn_eq,
    "target_exists_on_disk": _target_exists_on_disk,
    "text_matches": _text_matches,
    "result_has_lint_errors": _result_has_lint_errors,
}
