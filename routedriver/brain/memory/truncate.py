"""``truncate``: when the context nears the limit, drop the oldest whole exchanges; no model call.

The task (the first user message and any notes right after it) and the latest exchange are always kept.
What is dropped is stored and offered through ``recall``, and a short notice takes its place.
"""

from __future__ import annotations

from collections.abc import Sequence

from routedriver.brain.context import exchanges, message_tokens
from routedriver.brain.memory.base import ContextState, MemoryManager, log
from routedriver.brain.memory.store import ensure_recall
from routedriver.llm.types import Message

NOTICE_MARK = "[memory]"


def task_end(messages: Sequence[Message]) -> int:
    """Index just after the task: the first user message plus the user notes that follow it."""
    end = 1
    while (
        end < len(messages)
        and messages[end].role == "user"
        and not messages[end].text.startswith(NOTICE_MARK)
    ):
        end += 1
    return end


def render(messages: Sequence[Message], *, condense: int | None = None) -> str:
    """A plain-text transcript (for storing, and for the summarizer)."""
    lines = []
    for message in messages:
        if message.role == "tool":
            text = message.text
            if condense is not None and len(text) > condense:
                text = f"{text[:condense]} […{len(text) - condense:,} more characters condensed]"
            lines.append(f"[tool result{' (error)' if message.is_error else ''}] {text}")
        else:
            lines.append(f"[{message.role}] {message.text}".rstrip())
            for call in message.tool_calls:
                lines.append(f"[tool call] {call.name} {dict(call.arguments)}")
    return "\n".join(lines)


class TruncateMemory(MemoryManager):
    name = "truncate"

    def __init__(self, trigger_ratio: float = 0.8, target_ratio: float = 0.5) -> None:
        self.trigger_ratio, self.target_ratio = trigger_ratio, target_ratio
        self.keys: list[str] = []

    def consult(self, state: ContextState) -> list[Message] | None:
        if state.tokens < self.trigger_ratio * state.budget:
            return None
        return self.drop_oldest(state)

    def drop_oldest(self, state: ContextState) -> list[Message] | None:
        messages = list(state.messages)
        head_end = task_end(messages)
        units = list(exchanges(messages[head_end:]))
        if len(units) <= 1:
            log.info("memory truncate: nothing left to drop (only the task and the latest turn remain)")
            return None
        target = self.target_ratio * state.budget
        tokens = state.tokens
        dropped = 0
        for unit in units[:-1]:  # never the latest exchange
            if tokens <= target and dropped:
                break
            tokens -= sum(message_tokens(m) for m in unit.slice(messages[head_end:]))
            dropped = unit.end
        gone = messages[head_end : head_end + dropped]
        old_notices = [m for m in gone if m.role == "user" and m.text.startswith(NOTICE_MARK)]
        kept_content = [m for m in gone if m not in old_notices]
        if kept_content and self.session is not None:
            self.keys.append(
                self.session.store.put(render(kept_content), f"{len(kept_content)} dropped messages")
            )
            ensure_recall(self.session.registry, self.session.store)
        notice = Message("user", self.notice(len(gone)))
        return [*messages[:head_end], notice, *messages[head_end + dropped :]]

    def notice(self, count: int) -> str:
        where = (
            f" Their full text is stored as {', '.join(self.keys)}; call recall with a key to read it."
            if self.keys
            else ""
        )
        return f"{NOTICE_MARK} {count} earlier messages were removed to fit the context window.{where}"
