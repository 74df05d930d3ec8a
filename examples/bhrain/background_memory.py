"""An example memory plugin: `bhrain run --memory background_memory:CondenseOldResults …`.

It works on its own thread (``BackgroundMemory``): after each iteration it receives a snapshot of the
context and proposes one in which tool results older than the latest two exchanges are stored in the
session's memory store and replaced by a one-line reference; the model can read them back with ``recall``.
The loop applies the proposal between iterations (keeping any messages added meanwhile).
"""

from __future__ import annotations

from collections.abc import Sequence

from routedriver.brain.context import exchanges
from routedriver.brain.memory.base import BackgroundMemory, ContextState
from routedriver.brain.memory.store import ensure_recall
from routedriver.llm.types import Message

KEEP_EXCHANGES = 2  # the latest exchanges (a response with its results) stay word for word
MIN_CHARS = 2000  # smaller results are not worth a reference


class CondenseOldResults(BackgroundMemory):
    name = "condense-old-results"

    def propose(self, state: ContextState) -> Sequence[Message] | None:
        assert self.session is not None
        units = list(exchanges(state.messages))
        if len(units) <= KEEP_EXCHANGES:
            return None
        cut = units[-KEEP_EXCHANGES].start
        changed = False
        proposal = []
        for index, message in enumerate(state.messages):
            if index < cut and message.role == "tool" and len(message.text) > MIN_CHARS:
                key = self.session.store.put(message.text, "tool result")
                message = Message(
                    "tool",
                    f"[stored as {key}: {message.text[:120]}… call recall to read it]",
                    (),
                    message.tool_call_id,
                    message.is_error,
                )
                changed = True
            proposal.append(message)
        if not changed:
            return None
        ensure_recall(self.session.registry, self.session.store)
        return proposal
