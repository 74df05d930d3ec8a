"""What the loop produces and how it stops: limits, per-call and per-iteration records, the result.

The loop ends by raising a ``Stop`` subclass that carries the text for the caller, why it stopped and the
exit code that stop means (the mini-swe-agent style: control flow by small exceptions).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from routedriver.brain.tools.base import DEFAULT_MAX_OUTPUT_CHARS
from routedriver.errors import ExitCode
from routedriver.llm.types import Message, Usage


class Stop(Exception):
    """Ends the loop; ``text`` is what the caller gets, ``explanation`` why the loop stopped there."""

    stop_reason = "done"
    exit_code = ExitCode.OK

    def __init__(self, text: str, explanation: str = "") -> None:
        super().__init__(explanation or text)
        self.text, self.explanation = text, explanation


class Done(Stop):
    """The model answered without calling tools."""


class Denied(Stop):
    """The model answered right after a call of its last batch was denied: the task ended refused."""

    stop_reason, exit_code = "denied", ExitCode.REFUSED


class Refusal(Stop):
    """The provider refused to answer (a refusal or content-filter stop): there is no answer to give.

    A malfunction, not a refusal of the caller's input: the request was valid, and under the route driver a
    judge's exit 2 reads as a "failed" verdict, which a model that would not answer has not given.
    """

    stop_reason, exit_code = "refused", ExitCode.MALFUNCTION


class LimitsExceeded(Stop):
    """Max iterations reached: a graceful stop with the partial answer."""

    stop_reason, exit_code = "max_iterations", ExitCode.REFUSED


class TokensSpent(LimitsExceeded):
    """The token budget (``max_tokens_total``) is spent: a graceful stop with the partial answer."""

    stop_reason = "max_tokens_total"


class CostSpent(LimitsExceeded):
    """The cost budget (``max_cost``) is spent: a graceful stop with the partial answer."""

    stop_reason = "max_cost"


class Truncated(Stop):
    """The answer was cut at the token limit (``max_tokens`` / ``length``): not an answer, and its tool calls
    may be cut too, so none of them ran. A malfunction: the caller cannot fix the model's verbosity, only
    allow more tokens."""

    stop_reason, exit_code = "truncated", ExitCode.MALFUNCTION


class TooManyMalformed(Stop):
    """The model kept sending malformed tool calls after the allowed corrections."""

    stop_reason, exit_code = "malformed_tool_calls", ExitCode.MALFUNCTION


@dataclass(frozen=True)
class Limits:
    max_iterations: int = 30
    max_tokens_total: int | None = None  # input + output tokens of all model calls; checked before each call
    max_cost: float | None = None  # US dollars of all model calls (needs the Loop's price); checked likewise
    max_corrections: int = 3  # consecutive responses with malformed calls fed back before giving up
    max_parallel: int = 16  # tool calls of one response running at once
    max_tokens: int | None = None
    temperature: float | None = None
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS
    reserved_output_tokens: int = 4096  # kept free for the answer when max_tokens is not given


# How a call ended: it ran (ok, error), was refused before running (denied, not_found, malformed), or a stop
# signal killed or cancelled it (interrupted). "pending" only while an allowed call waits for its result.
CallStatus = Literal["ok", "error", "denied", "not_found", "malformed", "interrupted", "pending"]


@dataclass
class CallRecord:
    iteration: int
    index: int
    call_id: str
    name: str
    input: Mapping[str, Any]
    status: CallStatus = "ok"
    output: str = ""
    elapsed_s: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass
class IterationRecord:
    iteration: int
    context_tokens: int
    usage: Usage
    text: str
    calls: list[CallRecord] = field(default_factory=list)
    elapsed_s: float = 0.0


@dataclass
class LoopResult:
    text: str
    stop_reason: str
    exit_code: int
    explanation: str
    iterations: int
    usage: Usage
    tool_calls: list[CallRecord]
    messages: list[Message]
    elapsed_s: float
    context_tokens: int
    cost_usd: float | None = None  # when the model's price is known
