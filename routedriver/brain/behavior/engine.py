"""The rule engine: a resolved behavior configuration compiled once, evaluated on every tool call.

It works on plain data (the JSON-able "resolved" form that ``resolve.py`` produces after validation), so the
hot path of ``bhrain behave`` imports neither pydantic nor yaml. Per call:

- ``pre_tool``: rules with ``when: pre_tool`` whose trigger matches. ``block`` stops the call; ``warn``
  notes go in front of the result; ``remind`` notes are kept and delivered after the tool returns. An
  unblocked call is recorded (turn count, same-tool streak, history). A condition that cannot tell (a
  command the bash reader could not read with confidence, see ``conditions``) fires a ``block`` rule, and
  its message says why; it never fires a ``warn`` or ``remind`` rule, nor a post_tool or on_text rule.
- ``post_tool``: ``state_tracking`` is applied first (the call happened), then ``when: post_tool`` rules.
  A call that failed (an error result, Claude Code's ``PostToolUseFailure``) did not do what it was for:
  tracking records no change from it (resets still apply, see ``state.Tracker``) and post_tool rules, which
  are about what a call did (``verify_after_edit``: "you edited X"), do not run; remind notes stashed at
  pre_tool are still delivered.
- ``on_text``: ``when: on_text`` rules on the agent's text.

Counting convention: ``{tool_calls_this_turn}``, ``tool_calls_this_turn_eq``, ``first_tool_this_turn`` and
``consecutive_gte`` all count the current call, at pre_tool and at post_tool alike (post_tool reuses the
position the call had at pre_tool, so parallel calls do not shift each other's numbers).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from routedriver.brain.behavior.conditions import Check, EvalContext, compile_condition
from routedriver.brain.behavior.names import ToolMatcher, bare_name
from routedriver.brain.behavior.state import SessionState, Tracker
from routedriver.brain.behavior.templates import primary_target, render

PREFIX = {"block": "[BEHAVIOR BLOCKED]", "warn": "[BEHAVIOR WARNING]", "remind": "[BEHAVIOR REMINDER]"}
PHASES = ("pre_tool", "post_tool", "on_text")


@dataclass(frozen=True)
class Decision:
    """What the engine says about one call before it runs."""

    block: bool = False
    reason: str = ""
    notes: tuple[str, ...] = ()
    fired: tuple[str, ...] = ()  # ids of the rules that fired, for logs and tests


ALLOW = Decision()


class CompiledRule:
    __slots__ = ("action", "check", "description", "id", "message", "trigger", "when")

    def __init__(self, spec: Mapping[str, Any], index: int) -> None:
        self.id: str = spec["id"]
        self.description: str = spec.get("description", "")
        self.trigger = ToolMatcher(spec.get("trigger") or ["*"])
        self.when: str = spec.get("when", "pre_tool")
        self.action: str = spec.get("action", "warn")
        self.check: Check = compile_condition(
            spec.get("condition") or {}, f"rule_definitions[{index}].condition"
        )
        self.message: str = spec.get("message", "") or f"rule {self.id} matched on {{tool}}"


class BehaviorEngine:
    """Compiled rules and tracking; holds no session state (many sessions can share one engine)."""

    def __init__(self, resolved: Mapping[str, Any], *, cwd: str | None = None) -> None:
        self.resolved = resolved
        self.cwd = cwd or os.getcwd()
        self.rules = [CompiledRule(spec, index) for index, spec in enumerate(resolved.get("rules", ()))]
        self.tracker = Tracker(resolved.get("state_tracking") or {})
        self._by_phase = {phase: [rule for rule in self.rules if rule.when == phase] for phase in PHASES}
        self._for_tool: dict[tuple[str, str], tuple[CompiledRule, ...]] = {}

    # -- sessions -------------------------------------------------------------------------------------
    def new_state(self, session_id: str = "") -> SessionState:
        state = SessionState(session_id=session_id)
        self.tracker.initialize(state)
        return state

    def start_turn(self, state: SessionState, message: str = "") -> None:
        state.start_turn(message)

    # -- evaluation -----------------------------------------------------------------------------------
    def rules_for(self, phase: str, tool: str) -> tuple[CompiledRule, ...]:
        key = (phase, tool)
        found = self._for_tool.get(key)
        if found is None:
            found = tuple(rule for rule in self._by_phase[phase] if rule.trigger.matches(tool))
            if len(self._for_tool) < 4096:
                self._for_tool[key] = found
        return found

    def pre_tool(
        self,
        state: SessionState,
        *,
        call_id: str,
        tool: str,
        params: Mapping[str, Any],
        text_before: str | None = None,
        cwd: str | None = None,
    ) -> Decision:
        state.ensure_turn()
        calls, streak = state.peek_call(tool)
        rules = self.rules_for("pre_tool", tool)
        blocks: list[str] = []
        warnings: list[str] = []
        reminders: list[str] = []
        fired: list[str] = []
        if rules:
            ctx = self._context(state, tool, params, calls, streak, cwd, text=text_before)
            for rule in rules:
                ctx.unsure.clear()
                verdict = rule.check(ctx)
                # A condition that cannot tell (a command the reader could not read with confidence) fires
                # a rule that blocks, never one that warns or reminds: uncertainty blocks when the rule does.
                if not (verdict is True or (verdict is None and rule.action == "block")):
                    continue
                fired.append(rule.id)
                state.add_violation(rule.id, rule.action, tool)
                line = self._line(rule, tool, params, state, calls, streak)
                if verdict is None:
                    why = ctx.unsure[0] if ctx.unsure else "a condition could not tell"
                    line += (
                        f" (The command could not be read with confidence: {why}; this rule blocks what it "
                        "cannot rule out. Write the command so that what it runs can be read: no command "
                        "names from variables, no scripts made at run time.)"
                    )
                {"block": blocks, "warn": warnings, "remind": reminders}[rule.action].append(line)
        if blocks:
            return Decision(block=True, reason="\n".join(blocks + warnings), fired=tuple(fired))
        entry = state.record_call(self._key(call_id, tool), tool, self._short_target(params, cwd))
        entry["notes"] = reminders
        return Decision(notes=tuple(warnings), fired=tuple(fired)) if fired else ALLOW

    def post_tool(
        self,
        state: SessionState,
        *,
        call_id: str,
        tool: str,
        params: Mapping[str, Any],
        ok: bool = True,
        output: str = "",
        data: Mapping[str, Any] | None = None,
        text_before: str | None = None,
        cwd: str | None = None,
    ) -> tuple[str, ...]:
        state.ensure_turn()
        key = self._key(call_id, tool)
        entry = state.pending.pop(key, None)
        if entry is None:  # no pre_tool seen for this call (e.g. only PostToolUse is wired): count it now
            entry = state.record_call(key, tool, self._short_target(params, cwd))
            state.pending.pop(key, None)
        self.tracker.apply(state, tool, params, cwd or self.cwd, ok=ok)
        notes: list[str] = list(entry.get("notes", ()))
        rules = self.rules_for("post_tool", tool) if ok else ()
        if rules:
            outcome = {"ok": ok, "output": output, **(data or {})}
            calls, streak = int(entry["n"]), int(entry["streak"])
            ctx = self._context(state, tool, params, calls, streak, cwd, text=text_before, outcome=outcome)
            for rule in rules:
                if rule.check(ctx) is True:
                    state.add_violation(rule.id, rule.action, tool)
                    notes.append(self._line(rule, tool, params, state, calls, streak))
        return tuple(notes)

    def on_text(self, state: SessionState, text: str, *, cwd: str | None = None) -> tuple[str, ...]:
        state.ensure_turn()
        if text.strip():
            state.text_this_turn = True
        tool = state.last_tool  # an on_text rule with a named trigger is about the tool used last
        rules = (
            self.rules_for("on_text", tool)
            if tool
            else tuple(rule for rule in self._by_phase["on_text"] if rule.trigger.any)
        )
        notes: list[str] = []
        if rules:
            calls, streak = state.tool_calls_this_turn, state.consecutive
            ctx = self._context(state, tool, {}, calls, streak, cwd, text=text)
            for rule in rules:
                if rule.check(ctx) is True:
                    state.add_violation(rule.id, rule.action, tool or "text")
                    notes.append(self._line(rule, tool, {}, state, calls, streak))
        return tuple(notes)

    # -- prompt ---------------------------------------------------------------------------------------
    def system_prompt(self) -> str:
        profile = self.resolved.get("profile") or {}
        sections: list[str] = []
        if profile.get("prompt"):
            title = profile.get("title") or profile.get("name") or "profile"
            sections.append(f"## Behavior profile: {title}\n\n{profile['prompt'].strip()}")
        described = [rule for rule in self.rules if rule.description]
        if described:
            lines = [f"- {rule.id} ({rule.action}): {rule.description}" for rule in described]
            sections.append(
                "## Behavioral rules\n\nThese rules are enforced on your tool calls:\n" + "\n".join(lines)
            )
        return "\n\n".join(sections)

    # -- helpers --------------------------------------------------------------------------------------
    def _context(
        self,
        state: SessionState,
        tool: str,
        params: Mapping[str, Any],
        calls: int,
        streak: int,
        cwd: str | None,
        *,
        text: str | None = None,
        outcome: Mapping[str, Any] | None = None,
    ) -> EvalContext:
        return EvalContext(
            tool=tool,
            params=params,
            state=state,
            calls=calls,
            streak=streak,
            cwd=cwd or self.cwd,
            set_targets=self.tracker.set_targets,
            text=text,
            outcome_data=outcome,
        )

    @staticmethod
    def _line(
        rule: CompiledRule, tool: str, params: Mapping[str, Any], state: SessionState, calls: int, streak: int
    ) -> str:
        message = render(rule.message, tool=tool, params=params, state=state, calls=calls, streak=streak)
        return f"{PREFIX[rule.action]} {rule.id}: {message}"

    @staticmethod
    def _key(call_id: str, tool: str) -> str:
        return call_id or f"~{bare_name(tool)}"

    def _short_target(self, params: Mapping[str, Any], cwd: str | None) -> str:
        target = primary_target(params) or " ".join(str(params.get("command", "")).split())
        base = cwd or self.cwd
        if target.startswith(base + os.sep):
            target = target[len(base) + 1 :]
        return target if len(target) <= 60 else target[:59] + "…"
