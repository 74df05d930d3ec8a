"""The memory-manager plugin interface.

After every iteration the loop calls ``consult(state)`` with a snapshot of the context. The manager returns
None (keep the context) or a replacement message list, which the loop checks (it must still be a valid
conversation: never a tool call split from its results) and applies before the next model call.

A manager may also:
- implement ``start(session)`` to receive the model (for summaries), the tool registry (to contribute tools
  such as ``recall``), a shared ``MemoryStore`` for externalized content and a usage recorder. The model a
  manager gets checks the run's budgets before every call: once ``--max-tokens-total`` or ``--max-cost`` is
  spent, a call raises ``BudgetSpent`` instead of reaching the provider (``session.budget_spent()`` says so
  beforehand), so memory never spends past a budget: the run stops before any further model call;
- implement ``close()`` (called when the session ends);
- subclass ``BackgroundMemory`` to observe snapshots off the loop's path (in a ``later.Later``) and propose
  replacements that are applied between iterations.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from routedriver.brain.context import message_tokens
from routedriver.later import Later
from routedriver.llm.types import ChatModel, Completion, Message, ToolSpec, Usage

if TYPE_CHECKING:
    from routedriver.brain.memory.store import MemoryStore
    from routedriver.brain.toolbox import ToolRegistry

log = logging.getLogger("bhrain")


@dataclass(frozen=True)
class ContextState:
    """What a memory manager sees after an iteration."""

    messages: tuple[Message, ...]
    system: str
    tools: tuple[ToolSpec, ...]
    iteration: int
    tokens: int  # estimated tokens of system prompt + tool specs + messages
    context_window: int
    reserved_output_tokens: int  # kept free for the model's answer

    @property
    def budget(self) -> int:
        """Tokens the request itself may use."""
        return max(self.context_window - self.reserved_output_tokens, 1)

    @property
    def overhead_tokens(self) -> int:
        """Tokens of everything but the messages (system prompt and tool specs)."""
        return self.tokens - sum(message_tokens(m) for m in self.messages)


class BudgetSpent(RuntimeError):
    """A memory manager asked for a model call after the run's token or cost budget was spent."""


def _never_spent() -> str | None:
    return None


class BudgetedModel:
    """The run's model as memory managers get it: every call first asks ``spent()`` (the run's budgets), and
    raises ``BudgetSpent`` with its answer instead of calling the provider once a budget is used up."""

    def __init__(self, model: ChatModel, spent: Callable[[], str | None]) -> None:
        self.inner, self.spent = model, spent
        self.name, self.model, self.context_window = model.name, model.model, model.context_window

    def complete(
        self,
        messages: Sequence[Message],
        *,
        system: str | None = None,
        tools: Sequence[ToolSpec] = (),
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> Completion:
        why = self.spent()
        if why is not None:
            raise BudgetSpent(f"no model call for memory: {why}")
        return self.inner.complete(
            messages, system=system, tools=tools, max_tokens=max_tokens, temperature=temperature
        )


@dataclass
class MemorySession:
    """What a manager gets at ``start``: the model (checking the budgets before each call), the tools, a
    store, a way to count its own tokens, and ``budget_spent()``: why no further model call may be made
    (a budget used up), or None."""

    model: ChatModel
    registry: ToolRegistry
    store: MemoryStore
    record_usage: Callable[[Usage], None]
    budget_spent: Callable[[], str | None] = field(default=_never_spent)


@runtime_checkable
class MemoryManagerLike(Protocol):
    """What the loop needs of a memory manager: ``consult``. ``start``, ``close`` and ``name`` are used
    when present, so a ``MODULE:OBJ`` manager need not subclass ``MemoryManager``."""

    def consult(self, state: ContextState) -> Sequence[Message] | None: ...


class MemoryManager:
    """Base class with do-nothing defaults."""

    name = "memory"
    session: MemorySession | None = None

    def start(self, session: MemorySession) -> None:
        self.session = session

    def consult(self, state: ContextState) -> Sequence[Message] | None:
        return None

    def close(self) -> None:
        return None


class BackgroundMemory(MemoryManager):
    """A manager that thinks off the loop's critical path: ``propose(state)`` runs in a ``later.Later``.

    ``consult`` hands the newest snapshot to the worker (older unseen snapshots are skipped; a worker is
    started when none is running, and runs while snapshots keep coming) and applies a finished proposal if
    the context it was computed from is still the start of the current context; the messages added since
    are kept after the replacement. A stale proposal is dropped.
    """

    name = "background"

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pending: ContextState | None = None
        self._ready: tuple[tuple[Message, ...], tuple[Message, ...]] | None = None
        self._stopping = False
        self._worker: Later[None] | None = None  # while it runs; it clears this itself when it ends
        self.proposals_applied = 0
        self.ready = threading.Event()  # set while a finished proposal waits for the next iteration

    def propose(self, state: ContextState) -> Sequence[Message] | None:
        raise NotImplementedError

    def consult(self, state: ContextState) -> Sequence[Message] | None:
        with self._lock:
            ready, self._ready = self._ready, None
            self.ready.clear()
        applied: list[Message] | None = None
        if ready is not None:
            base, replacement = ready
            current = state.messages
            if len(current) >= len(base) and all(a is b for a, b in zip(base, current, strict=False)):
                applied = [*replacement, *current[len(base) :]]
                self.proposals_applied += 1
            else:
                log.debug("memory %s: a proposal went stale before it could be applied; dropped", self.name)
        observed = state if applied is None else replace(state, messages=tuple(applied))
        with self._lock:
            self._pending = observed
            if self._worker is None and not self._stopping:
                # Started holding the lock: its first look at _pending waits until this is set.
                self._worker = Later(self._work)
        return applied

    def _work(self) -> None:
        while True:
            with self._lock:
                if self._stopping or self._pending is None:
                    self._worker = None  # the next snapshot starts another
                    return
                state, self._pending = self._pending, None
            try:
                proposal = self.propose(state)
            except Exception as exc:  # noqa: BLE001 - a failing proposer must never take the loop down
                log.warning("memory %s: propose failed: %s: %s", self.name, type(exc).__name__, exc)
                continue
            if proposal is not None:
                with self._lock:
                    self._ready = (state.messages, tuple(proposal))
                    self.ready.set()

    def close(self) -> None:
        with self._lock:
            self._stopping = True
            worker = self._worker
        if worker is not None:
            worker.wait(5)  # the proposal being made, if any; no new one starts
