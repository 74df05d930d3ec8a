"""The memory-manager plugin interface.

After every iteration the loop calls ``consult(state)`` with a snapshot of the context. The manager returns
None (keep the context) or a replacement message list, which the loop checks (it must still be a valid
conversation: never a tool call split from its results) and applies before the next model call.

A manager may also:
- implement ``start(session)`` to receive the model (for summaries), the tool registry (to contribute tools
  such as ``recall``), a shared ``MemoryStore`` for externalized content and a usage recorder;
- implement ``close()`` (called when the session ends);
- subclass ``BackgroundMemory`` to observe snapshots on its own thread and propose replacements that are
  applied between iterations.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from routedriver.brain.context import message_tokens
from routedriver.llm.types import ChatModel, Message, ToolSpec, Usage

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


@dataclass
class MemorySession:
    """What a manager gets at ``start``: the model, the tools, a store and a way to count its own tokens."""

    model: ChatModel
    registry: ToolRegistry
    store: MemoryStore
    record_usage: Callable[[Usage], None]


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
    """A manager that thinks on its own thread: ``propose(state)`` runs there, off the loop's critical path.

    ``consult`` hands the newest snapshot to the worker (older unseen snapshots are skipped) and applies a
    finished proposal if the context it was computed from is still the start of the current context; the
    messages added since are kept after the replacement. A stale proposal is dropped.
    """

    name = "background"

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._pending: ContextState | None = None
        self._ready: tuple[tuple[Message, ...], tuple[Message, ...]] | None = None
        self._stopping = False
        self._thread: threading.Thread | None = None
        self.proposals_applied = 0
        self.ready = threading.Event()  # set while a finished proposal waits for the next iteration

    def propose(self, state: ContextState) -> Sequence[Message] | None:
        raise NotImplementedError

    def start(self, session: MemorySession) -> None:
        super().start(session)
        self._thread = threading.Thread(target=self._work, name=f"bhrain-memory-{self.name}", daemon=True)
        self._thread.start()

    def consult(self, state: ContextState) -> Sequence[Message] | None:
        with self._cond:
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
        with self._cond:
            self._pending = observed
            self._cond.notify()
        return applied

    def _work(self) -> None:
        while True:
            with self._cond:
                while self._pending is None and not self._stopping:
                    self._cond.wait()
                if self._stopping:
                    return
                state, self._pending = self._pending, None
            assert state is not None
            try:
                proposal = self.propose(state)
            except Exception as exc:  # noqa: BLE001 - a failing proposer must never take the loop down
                log.warning("memory %s: propose failed: %s: %s", self.name, type(exc).__name__, exc)
                continue
            if proposal is not None:
                with self._cond:
                    self._ready = (state.messages, tuple(proposal))
                    self.ready.set()

    def close(self) -> None:
        with self._cond:
            self._stopping = True
            self._cond.notify()
        if self._thread is not None:
            self._thread.join(timeout=5)
