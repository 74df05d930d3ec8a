"""The agentic loop: ask the model, run the tools it calls, append the results, repeat until it answers.

One iteration is one model call. Before it, the limits are checked: the iteration count, the token budget and
the cost budget (the usage so far, memory calls included, priced by ``price``) end the run gracefully with
the partial answer once reached. The system prompt (skill + working directory + tools + hook sections) and
the context go to the model; a refusal or content-filter stop of the provider ends the run (``refused``, its
tool calls not run); ``on_text`` hooks read its text; no tool calls means done; otherwise the ``Dispatcher``
runs the calls (guard first, concurrently, results in call order) and the results are appended. After each
iteration the memory manager may replace the context and ``on_iteration`` observers (the trace) are told.
Once a budget is spent no model call is made at all: memory is not consulted (the run stops before the next
call), the model memory managers get checks the budgets before each call (``BudgetedModel``), and a follow-up
message stops before its hooks (a classifier) run.
The loop stops by raising a ``Stop`` (see ``records``); it never prints. One iteration is ``_step``:
``_query`` (the model call), ``_check_stop`` (an answer that ends the run), ``_dispatch`` (its tool calls).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from routedriver.brain.context import Context, conversation_problem, tools_tokens
from routedriver.brain.dispatch import Dispatcher, call_hook
from routedriver.brain.hooks import LoopHook
from routedriver.brain.memory.base import BudgetedModel, ContextState, MemoryManagerLike, MemorySession
from routedriver.brain.memory.store import MemoryStore
from routedriver.brain.prices import Price
from routedriver.brain.records import (
    CallRecord,
    CostSpent,
    Denied,
    Done,
    IterationRecord,
    Limits,
    LimitsExceeded,
    LoopResult,
    Refusal,
    Stop,
    TokensSpent,
    TooManyMalformed,
    Truncated,
)
from routedriver.brain.redact import NO_REDACTION, Redactor
from routedriver.brain.toolbox import ToolRegistry
from routedriver.errors import ExitCode
from routedriver.llm.types import ChatModel, Completion, Message, ToolCall, ToolSpec, Usage, estimate_tokens

__all__ = ["CallRecord", "IterationRecord", "Limits", "Loop", "LoopResult"]
log = logging.getLogger("bhrain")

# Provider stop reasons that mean "no answer": Anthropic's ``refusal``, OpenAI's ``content_filter`` (and the
# ``refusal`` the OpenAI adapter reports for a message that carries only a refusal).
REFUSAL_STOPS = frozenset({"refusal", "content_filter"})


class Loop:
    def __init__(
        self,
        model: ChatModel,
        registry: ToolRegistry,
        *,
        workdir: Path,
        skill_prompt: str = "",
        hooks: Sequence[LoopHook] = (),
        memory: MemoryManagerLike | None = None,
        limits: Limits | None = None,
        on_iteration: Callable[[Loop, IterationRecord], None] | None = None,
        redactor: Redactor = NO_REDACTION,
        price: Price | None = None,
    ) -> None:
        """``price`` is the model's (``routedriver.brain.prices``): it makes ``cost`` known, and a
        ``limits.max_cost`` budget needs it."""
        if limits is not None and limits.max_cost is not None and price is None:
            raise ValueError(f"a cost budget needs the price of the model {model.model!r}")
        self.model, self.registry, self.workdir, self.price = model, registry, workdir, price
        self.skill_prompt, self.hooks, self.memory = skill_prompt, list(hooks), memory
        self.on_iteration, self.redactor = on_iteration, redactor
        self.dispatcher = Dispatcher(registry, self.hooks, workdir, limits or Limits(), redactor)
        self.context, self.store = Context(), MemoryStore()
        self.iteration, self.usage = 0, Usage()
        self.records: list[CallRecord] = []
        self.system = ""
        self.tool_specs: tuple[ToolSpec, ...] = ()
        self.last_text = ""  # the latest non-empty text of the model: the partial answer on an early stop
        self._usage_lock = threading.Lock()
        self._hook_sections: list[str] | None = None
        self._tools_version, self._overhead_tokens = -1, 0
        self._nudged, self._malformed_streak = False, 0
        self._last_batch_blocked: list[CallRecord] = []
        self._started = time.monotonic()

    @property
    def limits(self) -> Limits:
        return self.dispatcher.limits

    @limits.setter
    def limits(self, limits: Limits) -> None:
        self.dispatcher.limits = limits

    # -- session ---------------------------------------------------------------------------------------------
    def start(self) -> None:
        """Begin the session (idempotent): hooks add their system-prompt sections, memory starts."""
        if self._hook_sections is not None:
            return
        self._started = time.monotonic()
        self._hook_sections = [s for s in (call_hook(h, "system_prompt", "") for h in self.hooks) if s]
        if self.memory is not None and hasattr(self.memory, "start"):
            model = BudgetedModel(self.model, self.budget_spent)  # memory never calls past a budget
            self.memory.start(
                MemorySession(model, self.registry, self.store, self.record_usage, self.budget_spent)
            )
        self._refresh_tools()

    def request_tokens(self, task: str) -> int:
        """Estimated tokens of the first request for ``task``: system prompt + tool specs + the task."""
        self.start()
        return self._overhead_tokens + estimate_tokens(task)

    def run(self, task: str) -> LoopResult:
        """Start the session with ``task`` and drive the loop until it stops."""
        self.start()
        return self.follow_up(task)

    def follow_up(self, text: str, *, from_user: bool = True) -> LoopResult:
        """Add a message (e.g. a correction) to the same conversation and drive the loop again."""
        self.context.append(Message("user", text))
        try:
            self._check_budgets()  # before the hooks: a classifier there would call a model too
            if from_user:
                notes = [n for h in self.hooks for n in call_hook(h, "on_user_message", (), text)]
                if notes:
                    self.context.append(Message("user", "\n\n".join(notes)))
            while True:
                self._step()
        except Stop as stop:
            return self._result(stop.text, stop.stop_reason, int(stop.exit_code), stop.explanation)

    def partial_result(self, stop_reason: str = "error", exit_code: int = ExitCode.MALFUNCTION) -> LoopResult:
        """What the session produced so far, for a run ended by an exception (an API failure, a signal)."""
        return self._result(self.last_text, stop_reason, int(exit_code), "")

    def close(self) -> None:
        for hook in self.hooks:
            call_hook(hook, "close", None)
        if self.memory is not None and hasattr(self.memory, "close"):
            call_hook(self.memory, "close", None)
        self.dispatcher.close()

    def record_usage(self, usage: Usage) -> None:
        with self._usage_lock:  # memory managers may record their own calls from another thread
            self.usage = self.usage + usage

    @property
    def context_tokens(self) -> int:
        return self._overhead_tokens + self.context.tokens

    def budget_spent(self) -> str | None:
        """Why no further model call may be made (a token or cost budget is used up), or None."""
        return self._spent_budget()[0]

    def _spent_budget(self) -> tuple[str | None, str]:
        """(what was spent of which budget, or None; the flag that sets it)."""
        budget, spent = self.limits.max_tokens_total, self.usage.total_tokens
        if budget is not None and spent >= budget:
            return f"{spent:,} tokens of a budget of {budget:,}", "--max-tokens-total"
        dollars, cost = self.limits.max_cost, self.cost
        if dollars is not None and cost is not None and cost >= dollars:
            return f"${cost:.4f} of a budget of ${dollars:.4f}", "--max-cost"
        return None, ""

    def _check_budgets(self) -> None:
        said, flag = self._spent_budget()
        if said is None:
            return
        explanation = self._limit_explanation(f"{said} in {self.iteration} iterations", flag)
        raise (TokensSpent if flag == "--max-tokens-total" else CostSpent)(self.last_text, explanation)

    @property
    def cost(self) -> float | None:
        """US dollars spent so far, when the model's price is known."""
        return None if self.price is None else self.price.cost(self.usage)

    # -- one iteration ---------------------------------------------------------------------------------------
    def _step(self) -> None:
        """One iteration, in mini-swe-agent's shape: ``_query`` the model, ``_check_stop`` (its answer may
        end the run), ``_dispatch`` the tool calls it made."""
        self._check_limits()
        self.iteration += 1
        started = time.monotonic()
        record, completion = self._query()
        calls = tuple(completion.tool_calls)
        notes = self._check_stop(record, completion, calls, started)
        if calls:
            self._dispatch(record, calls, notes, started)

    def _check_limits(self) -> None:
        """Before a model call: the iteration limit, then the token and cost budgets (``Stop`` when spent)."""
        if self.iteration >= self.limits.max_iterations:
            raise LimitsExceeded(
                self.last_text,
                self._limit_explanation(f"{self.iteration} iterations (the limit)", "--max-iterations"),
            )
        self._check_budgets()

    def _query(self) -> tuple[IterationRecord, Completion]:
        """One model call with the current tools, system prompt and context; its usage is recorded."""
        self._refresh_tools()
        record = IterationRecord(self.iteration, self.context_tokens, Usage(), "")
        log.info("iteration %d: about %s context tokens", self.iteration, f"{record.context_tokens:,}")
        completion = self.model.complete(
            self.context.messages,
            system=self.system,
            tools=self.tool_specs,
            max_tokens=self.limits.max_tokens,
            temperature=self.limits.temperature,
        )
        self.record_usage(completion.usage)
        record.usage = completion.usage
        record.text = completion.text or ""
        return record, completion

    def _check_stop(
        self, record: IterationRecord, completion: Completion, calls: tuple[ToolCall, ...], started: float
    ) -> list[str]:
        """Whether the answer ends the run. A refusal or an answer cut at the token limit ends it, none of
        its tool calls run (``Refusal``, ``Truncated``). Otherwise the answer joins the context, and the
        ``on_text`` hooks read its text; without tool calls it is the end (``Done``, or ``Denied`` when the
        last batch had a call denied), unless a hook's note nudges the model on (once in a row: a rule
        cannot keep the loop alive). Returns those notes: they ride on the last tool result."""
        if completion.stop_reason in REFUSAL_STOPS:
            # The tool calls of a refused or filtered response are not run (the context stays valid).
            self.context.append(Message("assistant", record.text))
            self._end_iteration(record, started, final=True)
            said = " ".join(record.text.split())
            raise Refusal(
                record.text,
                f"the model refused to answer (provider stop reason {completion.stop_reason})"
                + (f": {said[:200]}" if said else ""),
            )
        if completion.stop_reason == "max_tokens":
            self._truncated(record, calls, started)
        notes: list[str] = []
        if record.text.strip():
            self.last_text = record.text
            log.debug("model: %s", self.redactor.text(record.text))
            notes = [n for h in self.hooks for n in call_hook(h, "on_text", (), record.text)]
        self.context.append(Message("assistant", record.text, calls))
        if calls:
            self._nudged = False
            return notes
        if notes and not self._nudged:
            self._nudged = True
            self.context.append(Message("user", "\n\n".join(notes)))
            self._end_iteration(record, started)
            return notes
        self._end_iteration(record, started, final=True)
        if self._last_batch_blocked:
            names = ", ".join(sorted({r.name for r in self._last_batch_blocked}))
            raise Denied(
                record.text,
                f"the task ended after a tool call was denied ({names}); allow it or change the task",
            )
        raise Done(record.text)

    def _dispatch(
        self, record: IterationRecord, calls: tuple[ToolCall, ...], notes: list[str], started: float
    ) -> None:
        """Run the tool calls (``Dispatcher``: the guard first, concurrently, results in call order) and
        append their results, ``notes`` on the last; too many malformed batches in a row end the run."""
        try:
            results, record.calls = self.dispatcher.run(calls, record.text, self.iteration)
        except BaseException:  # a stop signal while the tools ran: the trace still shows what this batch did
            record.calls = list(self.dispatcher.batch)
            self.records.extend(record.calls)
            self._end_iteration(record, started, final=True)
            raise
        if notes:
            last = results[-1]
            results[-1] = Message(
                "tool", f"{last.text}\n\n" + "\n\n".join(notes), (), last.tool_call_id, last.is_error
            )
        self.context.extend(results)
        self.records.extend(record.calls)
        self._last_batch_blocked = [c for c in record.calls if c.status == "denied"]
        malformed = any(c.status == "malformed" for c in record.calls)
        self._malformed_streak = self._malformed_streak + 1 if malformed else 0
        self._end_iteration(record, started)
        if self._malformed_streak > self.limits.max_corrections:
            raise TooManyMalformed(
                self.last_text,
                (
                    f"the model sent malformed tool calls in {self._malformed_streak} responses in a row "
                    f"(at most {self.limits.max_corrections} corrections are allowed); try another model"
                ),
            )

    def _truncated(self, record: IterationRecord, calls: tuple[ToolCall, ...], started: float) -> None:
        """The answer hit the token limit: end the run (``truncated``), running none of its tool calls."""
        self.context.append(Message("assistant", record.text))  # without the calls: the context stays valid
        if record.text.strip():
            self.last_text = record.text
        self._end_iteration(record, started, final=True)
        limit = self.limits.max_tokens
        said = f"its limit of {limit:,} tokens (--max-tokens)" if limit else "its token limit"
        skipped = f"; none of its {len(calls)} tool calls ran" if len(calls) > 1 else ""
        skipped = skipped or ("; its tool call did not run" if calls else "")
        raise Truncated(
            record.text,
            f"the model's answer was cut at {said}{skipped}; raise --max-tokens or ask for a shorter answer",
        )

    def _end_iteration(self, record: IterationRecord, started: float, *, final: bool = False) -> None:
        if not final and self.budget_spent() is None:  # spent: the run stops before the next call anyway
            self._consult_memory()
        record.elapsed_s = time.monotonic() - started
        if self.on_iteration is not None:
            self.on_iteration(self, record)

    def _refresh_tools(self) -> None:
        """Rebuild the tool list and system prompt when a toolbox was added or removed."""
        snapshot = self.registry.snapshot()
        if snapshot.version == self._tools_version:
            return
        if self._tools_version >= 0:
            log.info("tools changed: %s", ", ".join(snapshot.names) or "none")
        self._tools_version, self.tool_specs = snapshot.version, snapshot.specs
        parts = [
            self.skill_prompt,
            f"Working directory: {self.workdir}",
            snapshot.prompt,
            *(self._hook_sections or []),
        ]
        self.system = "\n\n".join(p.strip() for p in parts if p and p.strip())
        self._overhead_tokens = estimate_tokens(self.system) + tools_tokens(self.tool_specs)

    def _consult_memory(self) -> None:
        if self.memory is None:
            return
        state = ContextState(
            tuple(self.context.messages),
            self.system,
            self.tool_specs,
            self.iteration,
            self.context_tokens,
            self.model.context_window,
            self.limits.max_tokens or self.limits.reserved_output_tokens,
        )
        name = getattr(self.memory, "name", type(self.memory).__name__)
        try:
            replacement = self.memory.consult(state)
        except Exception as exc:  # noqa: BLE001 - a failing manager leaves the context as it is
            log.warning("memory manager %s failed: %s: %s; context kept", name, type(exc).__name__, exc)
            return
        if replacement is None:
            return
        replacement = list(replacement)
        problem = conversation_problem(replacement)
        if problem:
            log.warning("memory manager %s proposed an invalid context (%s); context kept", name, problem)
            return
        before = self.context_tokens
        self.context.replace(replacement)
        log.info(
            "memory %s: context replaced, about %s → %s tokens",
            name,
            f"{before:,}",
            f"{self.context_tokens:,}",
        )

    # -- endings ---------------------------------------------------------------------------------------------
    def _result(self, text: str, stop_reason: str, exit_code: int, explanation: str) -> LoopResult:
        return LoopResult(
            text,
            stop_reason,
            exit_code,
            explanation,
            self.iteration,
            self.usage,
            list(self.records),
            list(self.context.messages),
            time.monotonic() - self._started,
            self.context_tokens,
            self.cost,
        )

    def _limit_explanation(self, spent: str, flag: str) -> str:
        failed = sum(1 for r in self.records if not r.ok)
        return (
            f"stopped after {spent} before the task was finished; "
            f"{len(self.records)} tool calls ran, {failed} of them failed or were refused. "
            f"Raise {flag} or narrow the task."
        )
