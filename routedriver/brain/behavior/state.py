"""Per-session state and the declarative tracking that fills it.

One ``SessionState`` per session: tracked sets, counters and flags (what ``state_tracking`` declares), the
turn, the tool calls of this turn, the same-tool streak, a short tool history and the violations. Sessions
never share one; bhrain keeps it in memory, ``bhrain behave`` round-trips it through a JSON file
(``to_json``/``from_json``), so it holds plain data only.

``Tracker`` applies ``state_tracking`` after a tool ran: sets collect a target parameter, counters tick and
reset (by tool, or by a regex on a parameter), flags turn on and off. A call that failed changed nothing, so
it adds to no set, ticks no counter and moves no flag; it still resets counters, because a reset marks an
attempt that counts even when it fails (a test run with failing tests is a test run).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from routedriver.brain.behavior.names import ToolMatcher, bare_name

HISTORY_KEEP = 30  # recent actions kept for the classifier snapshot
VIOLATIONS_KEEP = 50
PENDING_KEEP = 64  # calls seen at pre_tool whose post_tool has not arrived yet
SET_KEEP = 2000  # a set larger than this forgets its oldest members (keeps state files small)

# Parameters that name the "target" of a call, in the order the seed gives for ``{target}``.
PRIMARY_TARGETS = ("file_path", "path", "notebook_path", "url", "query", "pattern", "target")


def is_path_param(name: str) -> bool:
    lowered = name.lower()
    return "path" in lowered or lowered in ("file", "filename", "filepath")


def normalize_value(param: str, value: Any, cwd: str) -> str | None:
    """The form a target is compared and stored in: paths made absolute against ``cwd`` and normalized,
    so ``src/a.py``, ``./src/a.py`` and ``/repo/src/a.py`` are one file."""
    if value is None or isinstance(value, (dict, list)):
        return None
    text = str(value)
    if not text:
        return None
    if is_path_param(param) and "://" not in text:
        text = os.path.normpath(os.path.join(cwd, os.path.expanduser(text)))
    return text


def pick_param(params: Mapping[str, Any], names: tuple[str, ...]) -> tuple[str, Any] | None:
    for name in names:
        value = params.get(name)
        if value is not None and value != "":
            return name, value
    return None


@dataclass
class SessionState:
    session_id: str = ""
    turn: int = 0
    tool_calls_this_turn: int = 0
    total_tool_calls: int = 0
    last_tool: str = ""
    consecutive: int = 0
    text_this_turn: bool = False
    sets: dict[str, dict[str, None]] = field(default_factory=dict)  # insertion-ordered sets
    counters: dict[str, int] = field(default_factory=dict)
    flags: dict[str, bool] = field(default_factory=dict)
    history: list[list[str]] = field(default_factory=list)  # [bare tool, short target]
    violations: list[dict[str, Any]] = field(default_factory=list)
    violation_count: int = 0
    pending: dict[str, dict[str, Any]] = field(default_factory=dict)  # call id -> position + stashed notes
    last_message: str = ""
    last_classified_message: str = ""
    classified_turns: list[int] = field(default_factory=list)
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)

    # -- turns and calls -------------------------------------------------------------------------------
    def start_turn(self, message: str = "") -> None:
        self.turn += 1
        self.tool_calls_this_turn = 0
        self.last_tool = ""
        self.consecutive = 0
        self.text_this_turn = False
        self.pending.clear()
        self.last_message = message

    def ensure_turn(self) -> None:
        """A robot that never reports user messages still gets a first turn."""
        if self.turn == 0:
            self.turn = 1

    def peek_call(self, tool: str) -> tuple[int, int]:
        """(calls this turn, same-tool streak) as they will be once ``tool`` is recorded."""
        bare = bare_name(tool)
        streak = self.consecutive + 1 if bare == self.last_tool else 1
        return self.tool_calls_this_turn + 1, streak

    def record_call(self, call_id: str, tool: str, short_target: str) -> dict[str, Any]:
        calls, streak = self.peek_call(tool)
        self.tool_calls_this_turn = calls
        self.total_tool_calls += 1
        self.last_tool = bare_name(tool)
        self.consecutive = streak
        self.history.append([self.last_tool, short_target])
        del self.history[:-HISTORY_KEEP]
        entry: dict[str, Any] = {"n": calls, "streak": streak, "notes": []}
        if call_id:
            self.pending[call_id] = entry
            while len(self.pending) > PENDING_KEEP:
                self.pending.pop(next(iter(self.pending)))
        return entry

    def add_violation(self, rule_id: str, action: str, tool: str) -> None:
        self.violation_count += 1
        self.violations.append(
            {"rule": rule_id, "action": action, "tool": bare_name(tool), "turn": self.turn}
        )
        del self.violations[:-VIOLATIONS_KEEP]

    # -- tracked values --------------------------------------------------------------------------------
    def set_add(self, name: str, value: str) -> None:
        members = self.sets.setdefault(name, {})
        members.pop(value, None)  # re-adding moves it to the end: "recent" stays meaningful
        members[value] = None
        while len(members) > SET_KEEP:
            members.pop(next(iter(members)))

    # -- persistence ----------------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        data = dict(self.__dict__)
        data["sets"] = {name: list(members) for name, members in self.sets.items()}
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SessionState:
        known = {key: value for key, value in data.items() if key in cls.__dataclass_fields__}
        state = cls(**known)
        state.sets = {name: dict.fromkeys(members) for name, members in dict(known.get("sets", {})).items()}
        return state


@dataclass(frozen=True)
class _Plan:
    sets: tuple[tuple[str, tuple[str, ...]], ...]
    increments: tuple[str, ...]
    resets: tuple[str, ...]
    conditional_resets: tuple[tuple[str, str, re.Pattern[str]], ...]
    flags: tuple[tuple[str, bool], ...]  # a tool named in both set_on and unset_on unsets the flag


class Tracker:
    """``state_tracking`` compiled: applied to the state after each tool call."""

    def __init__(self, tracking: Mapping[str, Any]) -> None:
        self.sets = [
            (name, ToolMatcher(spec.get("add_on", ())), _target_names(spec))
            for name, spec in dict(tracking.get("sets") or {}).items()
        ]
        self.set_targets = {name: names for name, _, names in self.sets}
        self.counters = []
        for name, spec in dict(tracking.get("counters") or {}).items():
            when = spec.get("reset_when")
            reset_when = None
            if when:
                reset_when = (
                    ToolMatcher(when.get("tool", "")),
                    when.get("param", ""),
                    _compile_or_none(when.get("matches", "")),
                )
            self.counters.append(
                (
                    name,
                    ToolMatcher(spec.get("increment_on", ())),
                    ToolMatcher(spec.get("reset_on", ())),
                    reset_when,
                )
            )
        self.flags = [
            (name, ToolMatcher(spec.get("set_on", ())), ToolMatcher(spec.get("unset_on", ())))
            for name, spec in dict(tracking.get("flags") or {}).items()
        ]
        self._plans: dict[str, _Plan] = {}
        self.labels: dict[str, str] = {}
        for kind in ("sets", "counters", "flags"):
            for name, spec in dict(tracking.get(kind) or {}).items():
                self.labels[name] = spec.get("label") or name.replace("_", " ").capitalize()

    def initialize(self, state: SessionState) -> None:
        for name, *_ in self.counters:
            state.counters.setdefault(name, 0)
        for name, *_ in self.flags:
            state.flags.setdefault(name, False)
        for name, *_ in self.sets:
            state.sets.setdefault(name, {})

    def _plan(self, tool: str) -> _Plan:
        """What a call of ``tool`` does to the state, worked out once per tool name."""
        plan = self._plans.get(tool)
        if plan is None:
            plan = _Plan(
                sets=tuple((name, targets) for name, add_on, targets in self.sets if add_on.matches(tool)),
                increments=tuple(
                    name for name, increment_on, _, _ in self.counters if increment_on.matches(tool)
                ),
                resets=tuple(name for name, _, reset_on, _ in self.counters if reset_on.matches(tool)),
                conditional_resets=tuple(
                    (name, when[1], when[2])
                    for name, _, _, when in self.counters
                    if when is not None and when[2] is not None and when[0].matches(tool)
                ),
                flags=tuple((name, False) for name, _, unset_on in self.flags if unset_on.matches(tool))
                + tuple(
                    (name, True)
                    for name, set_on, unset_on in self.flags
                    if set_on.matches(tool) and not unset_on.matches(tool)
                ),
            )
            if len(self._plans) < 4096:
                self._plans[tool] = plan
        return plan

    def apply(
        self, state: SessionState, tool: str, params: Mapping[str, Any], cwd: str, *, ok: bool = True
    ) -> None:
        plan = self._plan(tool)
        if ok:
            for name, targets in plan.sets:
                picked = pick_param(params, targets)
                value = normalize_value(picked[0], picked[1], cwd) if picked else None
                if value is not None:
                    state.set_add(name, value)
            for name in plan.increments:
                state.counters[name] = state.counters.get(name, 0) + 1
            for name, on in plan.flags:
                state.flags[name] = on
        for name in plan.resets:  # after the increments: a tool that does both leaves the counter at 0
            state.counters[name] = 0
        for name, param, pattern in plan.conditional_resets:
            value = params.get(param)
            if value is not None and pattern.search(str(value)) is not None:
                state.counters[name] = 0


def _target_names(spec: Mapping[str, Any]) -> tuple[str, ...]:
    """The parameters a set reads its value from: ``target`` then ``aliases`` (default: the primary ones)."""
    target = spec.get("target")
    if not target:
        return PRIMARY_TARGETS
    return (target, *spec.get("aliases", ()))


def _compile_or_none(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern, re.IGNORECASE) if pattern else None
    except re.error:
        return None  # validated at load; a state file from an older config must not crash the hook
