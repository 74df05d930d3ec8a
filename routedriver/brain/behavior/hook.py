"""The behavior engine as a bhrain ``LoopHook``: one session's state, guarded by a lock.

bhrain's dispatcher calls hooks from the loop's thread only, but a hook object may be shared by callers on
several threads, so every state change happens under ``self._lock``. A turn starts at each user message
(``on_user_message``); the classifier, when configured, runs there, outside the lock (it may take seconds)
on a snapshot taken inside it.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from routedriver.brain.behavior.classifier import Classifier
from routedriver.brain.behavior.engine import BehaviorEngine
from routedriver.brain.behavior.state import SessionState
from routedriver.brain.hooks import ALLOW, HookVerdict, LoopHook, ToolEvent, ToolOutcome


class BehaviorHook(LoopHook):
    def __init__(
        self,
        engine: BehaviorEngine,
        *,
        classifier: Classifier | None = None,
        session_id: str = "bhrain",
        cwd: str | None = None,
        sources: Sequence[str] = (),
    ) -> None:
        self.engine = engine
        # The user's files its rules were read from (the config, a profile file, a prompt file): the bash
        # tool's sandbox keeps them read-only, so that a command cannot rewrite the next run's rules.
        self.sources = tuple(sources)
        self.classifier = classifier
        self.session_id = session_id
        self.cwd = cwd or engine.cwd
        self._lock = threading.Lock()
        self._state: SessionState | None = None
        self._tools: list[str] = []

    @property
    def state(self) -> SessionState:
        """This session's state (a fresh one after ``close()``: the old one is gone for good)."""
        if self._state is None:
            self._state = self.engine.new_state(self.session_id)
        return self._state

    @property
    def active(self) -> bool:
        return self._state is not None

    def set_tool_inventory(self, names: Sequence[str]) -> None:
        """Optional: the loop may tell the hook which tools the agent has (shown to the classifier)."""
        self._tools = list(names)

    # -- LoopHook -------------------------------------------------------------------------------------
    def system_prompt(self) -> str:
        return self.engine.system_prompt()

    def on_user_message(self, text: str) -> tuple[str, ...]:
        with self._lock:
            state = self.state
            self.engine.start_turn(state, text)
            classifier = self.classifier
            if classifier is None:
                return ()
            planned = classifier.plan(state, text, self.engine.tracker, self.cwd)
            if planned is None:
                return ()
            picture, history = planned
            tools = self._tools or sorted({item[0] for item in history})
        directive = classifier.classify(text, picture, tools=tools, cwd=self.cwd, history=history)
        return (directive,) if directive else ()

    def pre_tool(self, event: ToolEvent) -> HookVerdict:
        with self._lock:
            decision = self.engine.pre_tool(
                self.state,
                call_id=event.call_id,
                tool=event.tool,
                params=event.params,
                text_before=event.text_before,
                cwd=self.cwd,
            )
        if decision.block:
            return HookVerdict(block=True, reason=decision.reason)
        return HookVerdict(notes=decision.notes) if decision.notes else ALLOW

    def post_tool(self, event: ToolEvent, outcome: ToolOutcome) -> tuple[str, ...]:
        with self._lock:
            return self.engine.post_tool(
                self.state,
                call_id=event.call_id,
                tool=event.tool,
                params=event.params,
                ok=outcome.ok,
                output=outcome.output,
                data=outcome.data,
                text_before=event.text_before,
                cwd=self.cwd,
            )

    def on_text(self, text: str) -> tuple[str, ...]:
        with self._lock:
            return self.engine.on_text(self.state, text, cwd=self.cwd)

    def close(self) -> None:
        with self._lock:
            self._state = None
