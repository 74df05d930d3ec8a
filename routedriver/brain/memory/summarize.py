"""``summarize-on-limit`` (the default): when the context nears the limit, the model summarizes the middle.

Kept word for word: the system prompt (it is not part of the messages), the task (first user message and
its notes) and the latest turn (the last assistant message with its tool results). Everything in between
is replaced by one summary message written by the model from a transcript in which long tool results are
condensed; the full tool results are stored and offered through ``recall``. If the summary call fails, or a
budget of the run is spent (no model call is made then), the manager falls back to dropping the oldest
exchanges, so a full context never ends the run by itself.
"""

from __future__ import annotations

from routedriver.brain.context import exchanges
from routedriver.brain.memory.base import ContextState, log
from routedriver.brain.memory.store import ensure_recall
from routedriver.brain.memory.truncate import NOTICE_MARK, TruncateMemory, render, task_end
from routedriver.llm.types import Message

SUMMARY_SYSTEM = (
    "You compress the working history of an agent so it can continue its task with less context. Keep every "
    "fact it will need: what was tried, what worked, what failed and why, file paths, names, numbers, open "
    "questions and the next steps. Write plain, dense notes; no preamble."
)


class SummarizeOnLimit(TruncateMemory):
    name = "summarize-on-limit"

    def __init__(
        self, trigger_ratio: float = 0.75, condense_chars: int = 400, summary_tokens: int = 1024
    ) -> None:
        super().__init__(trigger_ratio=trigger_ratio)
        self.condense_chars, self.summary_tokens = condense_chars, summary_tokens
        self.summaries = 0

    def consult(self, state: ContextState) -> list[Message] | None:
        if state.tokens < self.trigger_ratio * state.budget or self.session is None:
            return None
        messages = list(state.messages)
        head_end = task_end(messages)
        units = list(exchanges(messages[head_end:]))
        if len(units) <= 1:
            return None
        middle = messages[head_end : head_end + units[-1].start]
        if len(middle) == 1 and middle[0].text.startswith(NOTICE_MARK):
            return None  # only an earlier summary is left; summarizing it again frees nothing
        spent = self.session.budget_spent()
        if spent is not None:  # no model call past a budget: free the context without one
            log.info("memory summarize-on-limit: %s; dropping old messages instead of summarizing", spent)
            return self.drop_oldest(state)
        for message in middle:
            if message.role == "tool" and len(message.text) > self.condense_chars:
                self.keys.append(self.session.store.put(message.text, "tool result"))
        transcript = render(middle, condense=self.condense_chars)
        room = max((state.budget - self.summary_tokens) * 4 // 2, 2000)  # characters; half the window at most
        if len(transcript) > room:
            transcript = "[…earlier part cut]\n" + transcript[-room:]
        try:
            completion = self.session.model.complete(
                [Message("user", f"Summarize this part of the agent's history:\n\n{transcript}")],
                system=SUMMARY_SYSTEM,
                tools=(),
                max_tokens=self.summary_tokens,
            )
            self.session.record_usage(completion.usage)
            summary = completion.text.strip()
            if not summary:
                raise ValueError("the summary was empty")
        except Exception as exc:  # noqa: BLE001 - fall back to dropping; never end the run over memory
            log.warning(
                "memory summarize-on-limit: the summary failed (%s: %s); dropping old messages instead",
                type(exc).__name__,
                exc,
            )
            return self.drop_oldest(state)
        self.summaries += 1
        if self.keys:
            ensure_recall(self.session.registry, self.session.store)
        stored = (
            f"\nFull tool results are stored as {', '.join(self.keys)}; call recall with a key to read one."
            if self.keys
            else ""
        )
        note = Message(
            "user",
            f"{NOTICE_MARK} Summary of {len(middle)} earlier messages, written to free "
            f"context:\n{summary}{stored}",
        )
        return [*messages[:head_end], note, *messages[head_end + len(middle) :]]
