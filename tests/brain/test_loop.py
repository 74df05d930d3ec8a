"""The loop driven by the scripted atom: seed 000 usecases 1, 2, 10 (malformed calls), 12, boundaries 4, 5."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from routedriver.brain.hooks import HookVerdict, LoopHook, ToolEvent, ToolOutcome
from routedriver.brain.loop import Limits
from routedriver.brain.toolbox import Toolbox, ToolRegistry
from routedriver.brain.tools import builtin_tools
from routedriver.brain.tools.base import Tool, ToolContext, ToolSettings, schema
from routedriver.errors import Malfunction
from tests.brain.helpers import call, make_loop, tool_results


def test_simple_input_gets_a_text_answer_without_tool_calls(tmp_path: Path) -> None:
    loop, scripted = make_loop(tmp_path, [{"text": "Paris is the capital of France."}])
    result = loop.run("What is the capital of France?")
    assert result.text == "Paris is the capital of France."
    assert (result.stop_reason, result.exit_code, result.iterations) == ("done", 0, 1)
    assert result.tool_calls == []
    assert len(scripted.requests) == 1
    first = scripted.requests[0]
    assert first.messages[0].text == "What is the capital of France?"
    assert [spec.name for spec in first.tools] == [
        "read",
        "write",
        "edit",
        "glob",
        "grep",
        "bash",
        "websearch",
    ]


def test_the_model_waits_for_tool_results_before_continuing(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("the answer is 42\n", encoding="utf-8")
    loop, scripted = make_loop(
        tmp_path,
        [
            {"text": "Let me read the notes.", "tool_calls": [call("read", file_path="notes.md")]},
            {"text": "The notes say 42."},
        ],
    )
    result = loop.run("What do the notes say?")
    assert result.text == "The notes say 42."
    assert result.iterations == 2
    # The second request carries the call and its real result, right after it.
    second = scripted.requests[1].messages
    assert [m.role for m in second] == ["user", "assistant", "tool"]
    assert second[1].tool_calls[0].name == "read"
    assert second[2].tool_call_id == second[1].tool_calls[0].id
    assert second[2].text == "the answer is 42\n"
    assert [(r.name, r.ok) for r in result.tool_calls] == [("read", True)]


def test_multi_step_loop_runs_until_no_tool_calls(tmp_path: Path) -> None:
    loop, scripted = make_loop(
        tmp_path,
        [
            {"tool_calls": [call("write", file_path="a.txt", content="one\n")]},
            {"tool_calls": [call("edit", file_path="a.txt", old_string="one", new_string="two")]},
            {"tool_calls": [call("bash", command="cat a.txt")]},
            {"text": "a.txt now says two"},
        ],
    )
    result = loop.run("make a.txt say two")
    assert result.iterations == 4
    assert (tmp_path / "a.txt").read_text() == "two\n"
    assert "two" in tool_results(scripted, 4)[0]
    assert [r.name for r in result.tool_calls] == ["write", "edit", "bash"]


def test_parallel_calls_all_run_concurrently_and_results_keep_call_order(tmp_path: Path) -> None:
    barrier = threading.Barrier(3, timeout=10)  # passes only if all three calls are running at once

    def meet(args: Mapping[str, Any], ctx: ToolContext) -> str:
        barrier.wait()
        return f"met {args['n']}"

    box = Toolbox(
        "sync", [Tool("meet", "wait for the others", schema({"n": {"type": "integer"}}, ("n",)), meet)]
    )
    loop, scripted = make_loop(
        tmp_path,
        [
            {"tool_calls": [call("meet", n=1), call("meet", n=2), call("meet", n=3)]},
            {"text": "all met"},
        ],
        registry=ToolRegistry([box]),
    )
    result = loop.run("meet")
    assert tool_results(scripted, 2) == ["met 1", "met 2", "met 3"]
    assert [r.ok for r in result.tool_calls] == [True, True, True]


def test_partial_failures_in_one_batch_are_all_appended(tmp_path: Path) -> None:
    (tmp_path / "here.txt").write_text("present\n", encoding="utf-8")
    loop, scripted = make_loop(
        tmp_path,
        [
            {
                "tool_calls": [
                    call("read", file_path="here.txt"),
                    call("read", file_path="missing.txt"),
                    call("bash", command="exit 4"),
                    call("glob", pattern="*.txt"),
                ]
            },
            {"text": "two of four worked"},
        ],
    )
    result = loop.run("check")
    results = tool_results(scripted, 2)
    assert results[0] == "present\n"
    assert results[1].startswith("file not found: missing.txt")
    assert "exit code: 4" in results[2]
    assert results[3] == "here.txt"
    errors = [m.is_error for m in scripted.requests[1].messages if m.role == "tool"]
    assert errors == [False, True, True, False]
    assert [r.status for r in result.tool_calls] == ["ok", "error", "error", "ok"]


def test_unknown_tool_lists_available_tools_and_the_model_can_retry(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x\n", encoding="utf-8")
    files = builtin_tools(["files"], ToolSettings(workdir=tmp_path))
    loop, scripted = make_loop(
        tmp_path,
        [
            {"tool_calls": [call("cat", file_path="a.txt")]},
            {"tool_calls": [call("read", file_path="a.txt")]},
            {"text": "read it"},
        ],
        registry=ToolRegistry([Toolbox("files", [t for t in files if t.name in ("read", "glob")])]),
    )
    result = loop.run("read a.txt")
    assert tool_results(scripted, 2) == ["tool not found: cat; available: read, glob"]
    assert tool_results(scripted, 3) == ["x\n"]
    assert [r.status for r in result.tool_calls] == ["not_found", "ok"]
    assert result.exit_code == 0


def test_a_tool_that_raises_becomes_an_error_result(tmp_path: Path) -> None:
    def broken(args: Mapping[str, Any], ctx: ToolContext) -> str:
        raise RuntimeError("disk on fire")

    box = Toolbox("x", [Tool("broken", "always fails", schema({}), broken)])
    loop, scripted = make_loop(
        tmp_path,
        [{"tool_calls": [call("broken")]}, {"text": "it broke; moving on"}],
        registry=ToolRegistry([box]),
    )
    result = loop.run("try it")
    assert tool_results(scripted, 2) == ["tool broken failed: RuntimeError: disk on fire"]
    assert result.exit_code == 0 and result.text == "it broke; moving on"


def test_malformed_call_is_fed_back_while_valid_calls_of_the_batch_run(tmp_path: Path) -> None:
    loop, scripted = make_loop(
        tmp_path,
        [
            {
                "tool_calls": [
                    {"name": "write", "raw_arguments": '{"file_path": "a.txt", '},
                    call("write", file_path="b.txt", content="b"),
                ]
            },
            {"tool_calls": [call("write", file_path="a.txt")]},  # valid JSON, missing a required argument
            {"tool_calls": [call("write", file_path="a.txt", content="a")]},
            {"text": "both written"},
        ],
    )
    result = loop.run("write a and b")
    first = tool_results(scripted, 2)
    assert first[0].startswith("malformed tool call to write: the arguments are not valid JSON")
    assert '\'{"file_path": "a.txt", \'' in first[0]
    assert first[1].startswith("created b.txt")
    assert tool_results(scripted, 3)[0].startswith(
        "malformed tool call to write: missing required argument: content"
    )
    assert (tmp_path / "a.txt").read_text() == "a" and (tmp_path / "b.txt").read_text() == "b"
    assert result.exit_code == 0


def test_corrections_of_malformed_calls_are_bounded(tmp_path: Path) -> None:
    bad = {"tool_calls": [{"name": "read", "raw_arguments": "not json"}]}
    loop, scripted = make_loop(
        tmp_path, [bad, bad, bad, {"text": "never reached"}], limits=Limits(max_corrections=2)
    )
    result = loop.run("read")
    assert result.stop_reason == "malformed_tool_calls"
    assert result.exit_code == 1
    assert "3 responses in a row" in result.explanation
    assert len(scripted.requests) == 3


def test_max_iterations_stops_gracefully_with_the_partial_response(tmp_path: Path) -> None:
    looping = {"text": "still checking", "tool_calls": [call("bash", command="true")]}
    loop, scripted = make_loop(tmp_path, [looping] * 5, limits=Limits(max_iterations=3))
    result = loop.run("loop forever")
    assert (result.stop_reason, result.exit_code, result.iterations) == ("max_iterations", 2, 3)
    assert result.text == "still checking"
    assert "stopped after 3 iterations" in result.explanation
    assert "3 tool calls ran" in result.explanation
    assert len(scripted.requests) == 3


def test_a_refused_response_ends_the_loop_and_its_tool_calls_do_not_run(tmp_path: Path) -> None:
    filtered = {
        "text": "Sure, here",
        "stop_reason": "content_filter",
        "tool_calls": [call("write", file_path="out.txt", content="x")],
    }
    loop, scripted = make_loop(tmp_path, [filtered, "never asked"])
    result = loop.run("go")
    assert (result.stop_reason, result.exit_code, result.text) == ("refused", 1, "Sure, here")
    assert (
        result.explanation == "the model refused to answer (provider stop reason content_filter): Sure, here"
    )
    assert not (tmp_path / "out.txt").exists() and result.tool_calls == []
    assert len(scripted.requests) == 1
    assert result.messages[-1].role == "assistant" and result.messages[-1].tool_calls == ()


def test_an_llm_error_propagates_after_the_loop_started(tmp_path: Path) -> None:
    loop, _ = make_loop(tmp_path, [{"tool_calls": [call("bash", command="true")]}])
    with pytest.raises(Malfunction) as caught:  # running out of script turns must raise
        loop.run("go")
    assert "no turn left for model call 2" in str(caught.value)
    partial = loop.partial_result()
    assert partial.iterations == 2 and partial.exit_code == 1 and len(partial.tool_calls) == 1


# -- hooks ---------------------------------------------------------------------------------------------------
class Recorder(LoopHook):
    def __init__(self) -> None:
        self.events: list[str] = []

    def system_prompt(self) -> str:
        return "## Recorder\nEverything is recorded."

    def on_user_message(self, text: str) -> tuple[str, ...]:
        self.events.append(f"user:{text}")
        return ("[NOTE] be brief",)

    def pre_tool(self, event: ToolEvent) -> HookVerdict:
        self.events.append(f"pre:{event.tool}:{event.index}")
        if event.params.get("command") == "blocked":
            return HookVerdict(block=True, reason="[BLOCKED] not this one")
        return HookVerdict(notes=(f"[WARN] {event.tool}",))

    def post_tool(self, event: ToolEvent, outcome: ToolOutcome) -> tuple[str, ...]:
        self.events.append(f"post:{event.tool}:{outcome.ok}")
        return ("[REMIND] check it",)

    def on_text(self, text: str) -> tuple[str, ...]:
        self.events.append(f"text:{text}")
        return ("[TEXT NOTE]",) if "nudge me" in text else ()

    def close(self) -> None:
        self.events.append("close")


def test_hooks_see_the_session_and_place_their_notes(tmp_path: Path) -> None:
    hook = Recorder()
    loop, scripted = make_loop(
        tmp_path,
        [
            {
                "text": "running",
                "tool_calls": [call("bash", command="echo ran"), call("bash", command="blocked")],
            },
            {"text": "done"},
        ],
        hooks=[hook],
    )
    result = loop.run("do it")
    loop.close()
    assert "## Recorder" in scripted.requests[0].system
    assert [m.text for m in scripted.requests[0].messages] == ["do it", "[NOTE] be brief"]
    ran, blocked = tool_results(scripted, 2)
    assert ran.startswith("[WARN] bash\n\nexit code: 0")
    assert ran.endswith("[REMIND] check it")
    assert blocked == "[BLOCKED] not this one"
    assert [r.status for r in result.tool_calls] == ["ok", "denied"]
    # pre_tool in call order before anything runs; post_tool only for calls that ran; close at the end.
    assert hook.events == [
        "user:do it",
        "text:running",
        "pre:bash:0",
        "pre:bash:1",
        "post:bash:True",
        "text:done",
        "close",
    ]
    assert result.stop_reason == "denied" and result.exit_code == 2


def test_first_blocking_hook_wins_and_later_hooks_are_not_asked(tmp_path: Path) -> None:
    class Block(LoopHook):
        def pre_tool(self, event: ToolEvent) -> HookVerdict:
            return HookVerdict(block=True, reason="first says no")

    later = Recorder()
    loop, scripted = make_loop(
        tmp_path, [{"tool_calls": [call("bash", command="touch x")]}, {"text": "ok"}], hooks=[Block(), later]
    )
    loop.run("go")
    assert tool_results(scripted, 2) == ["first says no"]
    assert not (tmp_path / "x").exists()
    assert not any(e.startswith("pre:") for e in later.events)


def test_a_hook_that_raises_in_pre_tool_blocks_the_call(tmp_path: Path) -> None:
    class Broken(LoopHook):
        def pre_tool(self, event: ToolEvent) -> HookVerdict:
            raise ValueError("bad rule")

    loop, scripted = make_loop(
        tmp_path, [{"tool_calls": [call("bash", command="touch x")]}, {"text": "ok"}], hooks=[Broken()]
    )
    result = loop.run("go")
    assert not (tmp_path / "x").exists()
    assert "the check Broken failed (ValueError)" in tool_results(scripted, 2)[0]
    assert result.tool_calls[0].status == "denied"


def test_on_text_notes_nudge_at_most_once_in_a_row(tmp_path: Path) -> None:
    loop, scripted = make_loop(
        tmp_path, [{"text": "nudge me"}, {"text": "nudge me again"}], hooks=[Recorder()]
    )
    result = loop.run("go")
    assert result.iterations == 2 and result.text == "nudge me again"
    assert scripted.requests[1].messages[-1].text == "[TEXT NOTE]"
    assert scripted.requests[1].messages[-1].role == "user"


def test_usage_is_summed_and_context_tokens_tracked(tmp_path: Path) -> None:
    records: list[tuple[int, int]] = []
    loop, _ = make_loop(
        tmp_path,
        [
            {
                "tool_calls": [call("bash", command="true")],
                "usage": {"input_tokens": 100, "output_tokens": 7},
            },
            {"text": "done", "usage": {"input_tokens": 150, "output_tokens": 3}},
        ],
        on_iteration=lambda lp, rec: records.append((rec.iteration, rec.context_tokens)),
    )
    result = loop.run("go")
    assert (result.usage.input_tokens, result.usage.output_tokens) == (250, 10)
    assert [i for i, _ in records] == [1, 2]
    assert 0 < records[0][1] < records[1][1]  # the context grew by the call and its result
