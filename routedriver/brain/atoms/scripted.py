"""The ``scripted`` atom: a model whose answers come from a file, for offline demos and tests of the loop.

```yaml
model: demo                   # optional: the model id reported in --json and traces
context_window: 200000        # optional: tokens; inputs above it are refused before any call
turns:                        # one entry per model call, used in order (a bare list of turns works too)
  - text: "Let me look."
    tool_calls:
      - {name: read, arguments: {file_path: notes.md}}
      - {name: bash, arguments: {command: "ls"}, id: call_ls}
      - {name: write, raw_arguments: "{not json"}        # a malformed call, as a real model may send
    usage: {input_tokens: 120, output_tokens: 30}       # optional; estimated when absent
  - choose:                   # the first alternative whose if_contains text appears in the conversation
      - {if_contains: "TODO", text: "Found a TODO.\nblockers: 1\nnitpicks: 0"}
      - {text: "Looks fine.\nblockers: 0\nnitpicks: 0"}
```

Turn keys: ``text``, ``tool_calls``, ``usage``, ``stop_reason``, ``delay_s``, ``choose`` / ``if_contains``.
Tool call keys: ``name``, ``arguments`` (a mapping), ``raw_arguments`` (a string, parsed like a provider's
JSON arguments: invalid JSON makes the call malformed), ``id`` (synthesized when missing), ``error``
(marks the call malformed). Running out of turns is a malfunction that names the file.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from routedriver import userfile
from routedriver.errors import Malfunction, Refused
from routedriver.llm._sdk import parse_arguments
from routedriver.llm.types import Completion, Message, ToolCall, ToolSpec, Usage, estimate_tokens

if TYPE_CHECKING:
    from routedriver.brain.atoms import AtomOptions

FILE_KEYS = frozenset({"turns", "model", "context_window"})
TURN_KEYS = frozenset({"text", "tool_calls", "usage", "stop_reason", "delay_s", "choose", "if_contains"})
CALL_KEYS = frozenset({"name", "arguments", "raw_arguments", "id", "error"})


class ScriptExhausted(Malfunction):
    """The script has no turn left for a model call."""


@dataclass(frozen=True)
class Turn:
    text: str = ""
    tool_calls: tuple[Mapping[str, Any], ...] = ()
    usage: Usage | None = None
    stop_reason: str | None = None
    delay_s: float = 0.0
    if_contains: tuple[str, ...] = ()
    choose: tuple[Turn, ...] = ()


@dataclass
class Request:
    """What the scripted model was asked (tests read these)."""

    messages: tuple[Message, ...]
    system: str
    tools: tuple[ToolSpec, ...]
    max_tokens: int | None
    temperature: float | None


@dataclass
class ScriptedModel:
    turns: Sequence[Turn]
    model: str = "scripted"
    context_window: int = 200_000
    source: str = "the script"
    name: str = "scripted"
    requests: list[Request] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._next = 0

    def complete(
        self,
        messages: Sequence[Message],
        *,
        system: str | None = None,
        tools: Sequence[ToolSpec] = (),
        max_tokens: int | None = None,
        temperature: float | None = None,
    ) -> Completion:
        with self._lock:
            number = len(self.requests) + 1
            self.requests.append(
                Request(tuple(messages), system or "", tuple(tools), max_tokens, temperature)
            )
            if self._next >= len(self.turns):
                raise ScriptExhausted(
                    f"{self.source} has no turn left for model call {number} "
                    f"(it has {len(self.turns)} turns)",
                    "add a final turn with text only, which ends the run",
                )
            turn = self.turns[self._next]
            self._next += 1
        if turn.choose:
            turn = _choose(turn.choose, messages, self.source, number)
        if turn.delay_s:
            time.sleep(turn.delay_s)
        calls = tuple(_tool_call(raw, number, index) for index, raw in enumerate(turn.tool_calls))
        usage = turn.usage or Usage(
            estimate_tokens(system or "") + sum(estimate_tokens(m.text) for m in messages),
            estimate_tokens(turn.text) + sum(estimate_tokens(json.dumps(dict(c.arguments))) for c in calls),
        )
        stop = turn.stop_reason or ("tool_use" if calls else "end_turn")
        return Completion(text=turn.text, tool_calls=calls, usage=usage, stop_reason=stop, model=self.model)


def _choose(options: Sequence[Turn], messages: Sequence[Message], source: str, number: int) -> Turn:
    seen = "\n".join(m.text for m in messages)
    for option in options:
        if all(needle in seen for needle in option.if_contains):
            return option
    raise ScriptExhausted(
        f"{source}: no alternative of model call {number} matches the conversation",
        "add an alternative without if_contains as the fallback",
    )


def _tool_call(raw: Mapping[str, Any], number: int, index: int) -> ToolCall:
    call_id = str(raw.get("id") or f"call_{number}_{index + 1}")
    name = str(raw.get("name") or "")
    error = raw.get("error")
    arguments: Any = raw.get("arguments", {})
    raw_arguments = raw.get("raw_arguments")
    if raw_arguments is not None:  # read as the adapters read a model's arguments, malformed ones too
        arguments, _, problem = parse_arguments(raw_arguments)
        error = error or problem
    if not name:
        error = error or "the tool call has no name"
    return ToolCall(call_id, name, dict(arguments), raw_arguments, str(error) if error else None)


# -- loading -------------------------------------------------------------------------------------------------
def load_script(path: Path) -> ScriptedModel:
    if not os.path.exists(path):  # what is there but is no file (a FIFO, a device), userfile names
        raise Refused(f"script file {path} not found", "check the path given to --script")
    load = userfile.load_json if path.suffix.lower() == ".json" else userfile.load_yaml
    data = load(path, what="script file")
    return parse_script(data, source=str(path))


def parse_script(data: Any, *, source: str = "the script") -> ScriptedModel:
    """A scripted model from already-parsed data: a list of turns, or a mapping with ``turns``."""
    options: Mapping[str, Any] = {}
    if isinstance(data, Mapping):
        _check_keys(data, FILE_KEYS, source)
        options, data = data, data.get("turns")
    if not isinstance(data, list) or not data:
        raise Refused(f"script {source} has no turns", "write a list of turns (see docs/bhrain.md)")
    turns = [_turn(item, f"{source}: turn {n}") for n, item in enumerate(data, 1)]
    model = options.get("model")
    if model is not None and not isinstance(model, str):
        raise Refused(f"{source}: model must be a string, not {type(model).__name__}", "quote the model id")
    window = options.get("context_window", 200_000)
    if not isinstance(window, int) or isinstance(window, bool) or window <= 0:
        raise Refused(f"{source}: context_window must be a positive integer", "fix the value")
    return ScriptedModel(turns, model=model or "scripted", context_window=window, source=f"script {source}")


def _check_keys(data: Mapping[str, Any], allowed: frozenset[str], where: str) -> None:
    unknown = sorted(set(map(str, data)) - allowed)
    if unknown:
        raise Refused(f"{where}: unknown key {unknown[0]!r}", f"allowed keys: {', '.join(sorted(allowed))}")


def _turn(item: Any, where: str) -> Turn:
    if isinstance(item, str):
        return Turn(text=item)
    if not isinstance(item, Mapping):
        raise Refused(f"{where} must be a mapping or a string", "see docs/bhrain.md for the script format")
    _check_keys(item, TURN_KEYS, where)
    calls = item.get("tool_calls") or []
    if not isinstance(calls, list):
        raise Refused(
            f"{where}: tool_calls must be a list", "write tool_calls: [{name: ..., arguments: {...}}]"
        )
    for n, call in enumerate(calls, 1):
        if not isinstance(call, Mapping):
            raise Refused(f"{where}: tool call {n} must be a mapping", "write {name: ..., arguments: {...}}")
        _check_keys(call, CALL_KEYS, f"{where}: tool call {n}")
        if "arguments" in call and not isinstance(call["arguments"], Mapping):
            raise Refused(
                f"{where}: tool call {n}: arguments must be a mapping",
                "use raw_arguments for a deliberately malformed string",
            )
        # A provider sends these as text: anything else is a mistake in the script, not a model's (a call
        # without a name plays a nameless one; an empty or missing value is left to the call's defaults).
        for key in ("name", "raw_arguments", "id", "error"):
            if call.get(key) is not None and not isinstance(call[key], str):
                raise Refused(
                    f"{where}: tool call {n}: {key} must be a string, not {type(call[key]).__name__}",
                    "quote the value" if key != "raw_arguments" else "write the arguments as JSON text",
                )
    usage = item.get("usage")
    if usage is not None:
        if not isinstance(usage, Mapping):
            raise Refused(
                f"{where}: usage must be a mapping", "write usage: {input_tokens: 10, output_tokens: 5}"
            )
        _check_keys(usage, frozenset({"input_tokens", "output_tokens"}), f"{where}: usage")
        usage = Usage(
            _count(usage.get("input_tokens", 0), f"{where}: usage: input_tokens"),
            _count(usage.get("output_tokens", 0), f"{where}: usage: output_tokens"),
        )
    stop_reason = item.get("stop_reason")
    if stop_reason is not None and (not isinstance(stop_reason, str) or not stop_reason):
        raise Refused(f"{where}: stop_reason must be a word such as end_turn", "fix the value")
    delay_s = item.get("delay_s") or 0.0
    if isinstance(delay_s, bool) or not isinstance(delay_s, (int, float)) or not 0 <= delay_s < float("inf"):
        raise Refused(
            f"{where}: delay_s must be a number of seconds, 0 or more, not {delay_s!r}", "fix the value"
        )
    text = item.get("text")
    if text is not None and not isinstance(text, str):
        raise Refused(f"{where}: text must be a string, not {type(text).__name__}", "quote the text")
    needles = item.get("if_contains") or []
    if not isinstance(needles, str) and not (
        isinstance(needles, list) and all(isinstance(needle, str) for needle in needles)
    ):
        raise Refused(f"{where}: if_contains must be a string or a list of strings", "quote the text")
    choose = item.get("choose") or []
    if not isinstance(choose, list):
        raise Refused(f"{where}: choose must be a list of turns", "see docs/bhrain.md")
    return Turn(
        text=text or "",
        tool_calls=tuple(calls),
        usage=usage,
        stop_reason=stop_reason,
        delay_s=float(delay_s),
        if_contains=(needles,) if isinstance(needles, str) else tuple(needles),
        choose=tuple(_turn(option, f"{where}: choice {n}") for n, option in enumerate(choose, 1)),
    )


def _count(value: Any, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise Refused(f"{where} must be a whole number of tokens, 0 or more, not {value!r}", "fix the value")
    return value


def create(options: AtomOptions) -> ScriptedModel:
    """The ``scripted`` atom's factory."""
    if options.script is None:
        raise Refused(
            "the scripted atom needs a script",
            "pass --script FILE (JSON or YAML turns); "
            "only --skill review has a built-in one, the offline reviewer",
        )
    model = load_script(options.script)
    if options.model:
        model.model = options.model
    if options.context_window:
        model.context_window = options.context_window
    return model
