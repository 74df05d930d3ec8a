"""Memory managers: truncate, summarize-on-limit, custom plugins, background proposals, externalize + recall.

Seed 000 usecase 8. Small context windows make the limits bite after a couple of iterations.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from routedriver.brain.context import conversation_problem
from routedriver.brain.loop import Limits
from routedriver.brain.memory import create_memory
from routedriver.brain.memory.base import BackgroundMemory, ContextState, MemoryManager
from routedriver.brain.memory.summarize import SUMMARY_SYSTEM, SummarizeOnLimit
from routedriver.brain.memory.truncate import TruncateMemory
from routedriver.brain.toolbox import Toolbox, ToolRegistry
from routedriver.brain.tools.base import Tool, ToolContext, schema
from routedriver.errors import Refused
from routedriver.llm.types import Message
from tests.brain.helpers import (
    bhrain,
    call,
    make_loop,
    proposal_gate,
    scripted_run,
    tool_results,
    write_script,
)

TASK = "Collect the three reports and compare them."


def reports_registry(size: int = 3000) -> ToolRegistry:
    def report(args: Mapping[str, Any], ctx: ToolContext) -> str:
        return f"REPORT {args['n']}: " + f"data{args['n']} " * (size // 6)

    return ToolRegistry(
        [
            Toolbox(
                "reports",
                [Tool("report", "Fetch a report.", schema({"n": {"type": "integer"}}, ("n",)), report)],
            )
        ]
    )


def fetch(n: int) -> dict[str, Any]:
    return {"text": f"fetching report {n}", "tool_calls": [call("report", n=n)]}


SMALL: dict[str, Any] = {"context_window": 2500, "limits": Limits(reserved_output_tokens=500)}


def test_truncate_drops_oldest_exchanges_keeps_task_and_latest_and_calls_no_model(tmp_path: Path) -> None:
    memory = TruncateMemory()
    loop, scripted = make_loop(
        tmp_path,
        [fetch(1), fetch(2), fetch(3), {"text": "compared"}],
        registry=reports_registry(),
        memory=memory,
        **SMALL,
    )
    result = loop.run(TASK)
    assert result.text == "compared"
    assert len(scripted.requests) == 4  # one per turn: truncation made no model call
    last = scripted.requests[3].messages
    assert last[0].text == TASK
    assert last[1].role == "user" and last[1].text.startswith("[memory] ")
    assert "removed to fit the context window" in last[1].text
    assert last[-2].tool_calls[0].arguments == {"n": 3} and last[-1].text.startswith("REPORT 3")
    assert not any(m.text.startswith("REPORT 1") for m in last)
    assert conversation_problem(last) is None


def test_externalized_content_is_retrievable_with_recall(tmp_path: Path) -> None:
    memory = TruncateMemory()
    loop, scripted = make_loop(
        tmp_path,
        [fetch(1), fetch(2), fetch(3), {"tool_calls": [call("recall", key="mem-1")]}, {"text": "done"}],
        registry=reports_registry(),
        memory=memory,
        **SMALL,
    )
    loop.run(TASK)
    assert "recall" in [s.name for s in scripted.requests[3].tools]
    assert "recall" not in [s.name for s in scripted.requests[0].tools]  # offered once something was stored
    assert "mem-1" in scripted.requests[3].messages[1].text
    recalled = tool_results(scripted, 5)[0]
    assert "[tool call] report {'n': 1}" in recalled and "REPORT 1: data1" in recalled


def test_summarize_on_limit_asks_the_model_and_keeps_task_and_latest_turn(tmp_path: Path) -> None:
    memory = SummarizeOnLimit()
    turns = [
        fetch(1),
        fetch(2),
        {"text": "Report 1 had data1."},
        fetch(3),
        {"text": "Reports 1-2 seen."},
        {"text": "done"},
    ]
    loop, scripted = make_loop(tmp_path, turns, registry=reports_registry(), memory=memory, **SMALL)
    result = loop.run(TASK)
    assert result.text == "done" and memory.summaries == 2
    summary_request = scripted.requests[2]
    assert summary_request.system == SUMMARY_SYSTEM and summary_request.tools == ()
    transcript = summary_request.messages[0].text
    assert "REPORT 1" in transcript and "more characters condensed" in transcript  # tool results condensed
    after = scripted.requests[3].messages
    assert after[0].text == TASK
    assert after[1].text.startswith("[memory] Summary of 2 earlier messages")
    assert "Report 1 had data1." in after[1].text
    assert after[2].tool_calls[0].arguments == {"n": 2}  # the latest turn, word for word
    assert after[3].role == "tool" and after[3].text.startswith("REPORT 2: data2")
    assert "mem-1" in after[1].text  # the full tool result was stored
    # The next summary rolls the previous one in.
    assert "Report 1 had data1." in scripted.requests[4].messages[0].text
    final = scripted.requests[5].messages
    assert final[0].text == TASK and "Reports 1-2 seen." in final[1].text
    assert [m.role for m in final] == ["user", "user", "assistant", "tool"]


def test_summarize_falls_back_to_dropping_when_the_summary_fails(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    memory = SummarizeOnLimit()
    turns = [fetch(1), fetch(2), {"text": ""}, {"text": "done"}]  # the summary comes back empty
    loop, scripted = make_loop(tmp_path, turns, registry=reports_registry(), memory=memory, **SMALL)
    with caplog.at_level(logging.WARNING, logger="bhrain"):
        assert loop.run(TASK).text == "done"
    assert "the summary failed" in caplog.text
    assert "removed to fit the context window" in scripted.requests[3].messages[1].text


def test_below_the_limit_the_context_is_left_alone(tmp_path: Path) -> None:
    memory = SummarizeOnLimit()
    loop, scripted = make_loop(
        tmp_path, [fetch(1), {"text": "done"}], registry=reports_registry(size=60), memory=memory
    )
    loop.run(TASK)
    assert memory.summaries == 0
    assert len(scripted.requests[1].messages) == 3


class KeepLatest(MemoryManager):
    """A custom strategy: from the second iteration on, keep only the task and the latest exchange."""

    name = "keep-latest"

    def __init__(self) -> None:
        self.consulted: list[int] = []

    def consult(self, state: ContextState) -> Sequence[Message] | None:
        self.consulted.append(state.iteration)
        if state.iteration < 2:
            return None  # deciding not to update leaves the context as it is
        latest = max(i for i, m in enumerate(state.messages) if m.role == "assistant")
        return [state.messages[0], *state.messages[latest:]]


def test_a_custom_manager_is_consulted_every_iteration_and_controls_the_context(tmp_path: Path) -> None:
    memory = create_memory("tests.brain.test_memory:KeepLatest")
    assert isinstance(memory, KeepLatest)
    loop, scripted = make_loop(
        tmp_path,
        [fetch(1), fetch(2), fetch(3), {"text": "done"}],
        registry=reports_registry(size=60),
        memory=memory,
    )
    loop.run(TASK)
    assert memory.consulted == [1, 2, 3]  # after every iteration but the final answer
    assert len(scripted.requests[1].messages) == 3  # iteration 1: no update
    assert [m.role for m in scripted.requests[2].messages] == ["user", "assistant", "tool"]
    assert scripted.requests[2].messages[1].tool_calls[0].arguments == {"n": 2}


class Broken(MemoryManager):
    def consult(self, state: ContextState) -> Sequence[Message] | None:
        return [state.messages[0], state.messages[-1]]  # a tool result without its call


def test_an_invalid_replacement_is_refused_and_the_context_kept(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    loop, scripted = make_loop(
        tmp_path, [fetch(1), {"text": "done"}], registry=reports_registry(size=60), memory=Broken()
    )
    with caplog.at_level(logging.WARNING, logger="bhrain"):
        loop.run(TASK)
    assert len(scripted.requests[1].messages) == 3
    assert "proposed an invalid context" in caplog.text


class Condenser(BackgroundMemory):
    """Runs on its own thread: proposes the context with every report result shortened."""

    name = "condenser"

    def __init__(self) -> None:
        super().__init__()
        self.observed: list[int] = []

    def propose(self, state: ContextState) -> Sequence[Message] | None:
        self.observed.append(state.iteration)
        return [
            Message("tool", m.text[:9] + " [condensed]", (), m.tool_call_id, m.is_error)
            if m.role == "tool"
            else m
            for m in state.messages
        ]


def test_a_background_manager_observes_and_its_proposal_is_applied_between_iterations(tmp_path: Path) -> None:
    memory = Condenser()
    registry = reports_registry(size=60)
    registry.add(proposal_gate(memory))
    loop, scripted = make_loop(
        tmp_path,
        [fetch(1), {"tool_calls": [call("wait")]}, {"text": "done"}],
        registry=registry,
        memory=memory,
    )
    loop.run(TASK)
    loop.close()
    assert memory.observed[0] == 1
    assert memory.proposals_applied == 1
    third = scripted.requests[2].messages
    assert third[2].text == "REPORT 1: [condensed]"  # from the proposal made after iteration 1
    assert third[4].text == "proposal is ready"  # messages added since the snapshot are kept


def test_default_and_builtin_managers_and_bad_names() -> None:
    assert isinstance(create_memory(None), SummarizeOnLimit)
    assert isinstance(create_memory("truncate"), TruncateMemory)
    assert create_memory("none") is None
    tuned = create_memory({"strategy": "truncate", "trigger_ratio": 0.5})
    assert isinstance(tuned, TruncateMemory) and tuned.trigger_ratio == 0.5
    with pytest.raises(Refused, match="unknown memory manager 'lru'"):
        create_memory("lru")
    with pytest.raises(Refused, match="rejected its options"):
        create_memory({"strategy": "truncate", "colour": "red"})


def test_cli_memory_plugin_by_import_path(tmp_path: Path) -> None:
    (tmp_path / "mymem.py").write_text(
        "from routedriver.brain.memory.base import MemoryManager\n"
        "class OnlyTask(MemoryManager):\n"
        "    def consult(self, state):\n"
        "        return [state.messages[0]]\n",
        encoding="utf-8",
    )
    script = write_script(
        tmp_path / "s.json",
        [
            {"tool_calls": [call("bash", command="echo one")]},
            {"text": "done"},
        ],
    )
    ran = bhrain(
        [*scripted_run(script), "--input", "go", "--memory", "mymem:OnlyTask", "--trace", "t.json"],
        tmp_path,
        env={"PYTHONPATH": str(tmp_path)},
    )
    assert ran.code == 0, ran.err
    messages = json.loads((tmp_path / "t.json").read_text())["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant"]  # context replaced before the last call
