"""The claude and qwen atoms: the REAL anthropic/openai SDKs against local fake provider servers.

Seed 000 usecase 10 (interchangeable atoms, malformed calls) and 12 (API errors, retries). The same loop
scenario runs on both atoms and must end the same way.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from routedriver.brain.atoms import AtomOptions, create_atom
from routedriver.brain.loop import Limits, Loop
from routedriver.errors import Refused
from routedriver.llm.errors import LLMUnavailable
from routedriver.llm.retry import RetryPolicy
from tests.brain.helpers import bhrain, default_registry
from tests.fakes import _llm_wire as wire
from tests.fakes.llm_servers import AnthropicServer, Call, OpenAIServer, Reply

FAST = RetryPolicy(max_retries=2, base_delay_s=0.01, max_delay_s=0.05)
KEYS = {
    "claude": {"ANTHROPIC_API_KEY": "sk-ant-test-key-123"},
    "qwen": {"QWEN_API_KEY": "sk-qwen-test-key-456"},
}


@pytest.fixture(params=["claude", "qwen"])
def provider(request: pytest.FixtureRequest) -> Iterator[tuple[str, Any]]:
    server_class = AnthropicServer if request.param == "claude" else OpenAIServer
    with server_class(validate=True) as server:
        yield request.param, server


def atom(name: str, server: Any, **options: Any) -> Any:
    return create_atom(name, AtomOptions(base_url=server.base_url, environ=KEYS[name], retry=FAST, **options))


def run_loop(name: str, server: Any, workdir: Path, task: str = "go") -> Any:
    loop = Loop(
        atom(name, server), default_registry(workdir), workdir=workdir, limits=Limits(max_iterations=5)
    )
    try:
        return loop.run(task)
    finally:
        loop.close()


def sent_tool_results(name: str, request: Any) -> list[tuple[str, str, bool]]:
    """(call id, text, is_error) of the tool results in a recorded request, in either wire format."""
    messages = request.json["messages"]
    if name == "claude":
        blocks = [
            b
            for m in messages
            if m["role"] == "user" and isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "tool_result"
        ]
        return [(b["tool_use_id"], _block_text(b["content"]), bool(b.get("is_error"))) for b in blocks]
    return [(m["tool_call_id"], m["content"], False) for m in messages if m["role"] == "tool"]


def _block_text(content: Any) -> str:
    return content if isinstance(content, str) else "".join(part.get("text", "") for part in content)


def test_a_tool_call_round_trip_behaves_the_same_on_both_atoms(
    provider: tuple[str, Any], tmp_path: Path
) -> None:
    name, server = provider
    (tmp_path / "notes.md").write_text("forty-two\n", encoding="utf-8")
    server.enqueue(
        Reply.tool_calls([("read", {"file_path": "notes.md"})], text="Reading.", ids=["call_read"]),
        Reply.text("The notes say forty-two.", input_tokens=30, output_tokens=8),
    )
    result = run_loop(name, server, tmp_path, "what do the notes say?")
    assert (result.text, result.stop_reason, result.exit_code, result.iterations) == (
        "The notes say forty-two.",
        "done",
        0,
        2,
    )
    assert [(c.name, c.status) for c in result.tool_calls] == [("read", "ok")]
    assert (result.usage.input_tokens, result.usage.output_tokens) == (40, 13)
    assert sent_tool_results(name, server.requests[1]) == [("call_read", "forty-two\n", False)]
    first = server.requests[0].json
    tool_names = [t["name"] if name == "claude" else t["function"]["name"] for t in first["tools"]]
    assert tool_names == ["read", "write", "edit", "glob", "grep", "bash", "websearch"]
    system = first["system"] if name == "claude" else first["messages"][0]["content"]
    assert "## Tools" in (system if isinstance(system, str) else json.dumps(system))


def test_parallel_calls_and_a_malformed_one_in_the_same_response(
    provider: tuple[str, Any], tmp_path: Path
) -> None:
    name, server = provider
    server.enqueue(
        Reply.tool_calls(
            [
                Call("write", {"file_path": "a.txt", "content": "A"}, "call_a"),
                Call("write", '{"file_path": "b.txt", "content": ', "call_b"),
                Call("bash", {"command": "echo parallel"}, "call_c"),
            ]
        ),
        Reply.tool_calls([Call("write", {"file_path": "b.txt", "content": "B"}, "call_b2")]),
        Reply.text("wrote both"),
    )
    result = run_loop(name, server, tmp_path)
    assert result.text == "wrote both" and result.exit_code == 0
    assert (tmp_path / "a.txt").read_text() == "A" and (tmp_path / "b.txt").read_text() == "B"
    assert [c.status for c in result.tool_calls] == ["ok", "malformed", "ok", "ok"]
    results = sent_tool_results(name, server.requests[1])
    assert [r[0] for r in results] == ["call_a", "call_b", "call_c"]
    assert results[1][1].startswith("malformed tool call to write")
    assert "exit code: 0" in results[2][1] and "parallel" in results[2][1]
    if name == "claude":
        assert [r[2] for r in results] == [False, True, False]


def test_malformed_calls_get_bounded_corrections(provider: tuple[str, Any], tmp_path: Path) -> None:
    name, server = provider
    server.enqueue(*[Reply.raw_tool_call("read", "{file_path: oops", id=f"call_{n}") for n in range(4)])
    result = run_loop(name, server, tmp_path)
    assert (result.stop_reason, result.exit_code) == ("malformed_tool_calls", 1)
    assert len(server.requests) == 4  # three corrections were fed back, the fourth malformed reply ends it
    assert all(r.status == "malformed" for r in result.tool_calls)
    assert sent_tool_results(name, server.requests[3])[0][1].startswith("malformed tool call to read")


def test_429_with_retry_after_is_waited_for_then_the_call_succeeds(
    provider: tuple[str, Any], tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    name, server = provider
    server.enqueue(Reply.error(429, retry_after="0.3"), Reply.text("after the wait"))
    started = time.monotonic()
    result = run_loop(name, server, tmp_path)
    assert time.monotonic() - started >= 0.3
    assert result.text == "after the wait" and len(server.requests) == 2


def test_500s_are_retried_then_the_call_succeeds(provider: tuple[str, Any], tmp_path: Path) -> None:
    name, server = provider
    server.enqueue(Reply.error(500), Reply.error(503), Reply.text("third time lucky"))
    assert run_loop(name, server, tmp_path).text == "third time lucky"
    assert len(server.requests) == 3


def test_retries_running_out_surface_an_error(provider: tuple[str, Any], tmp_path: Path) -> None:
    name, server = provider
    server.enqueue(*[Reply.error(500, message="overloaded backend")] * 3)
    with pytest.raises(LLMUnavailable) as caught:
        run_loop(name, server, tmp_path)
    assert caught.value.exit_code == 1 and "500" in caught.value.line()
    assert len(server.requests) == 3  # the first attempt and two retries


def test_missing_keys_are_refused_before_any_call_naming_the_variables() -> None:
    with pytest.raises(Refused, match="ANTHROPIC_API_KEY is not set"):
        create_atom("claude", AtomOptions(environ={}))
    with pytest.raises(Refused, match="QWEN_API_KEY, DASHSCOPE_API_KEY, OPENAI_API_KEY"):
        create_atom("qwen", AtomOptions(environ={"QWEN_API_KEY": "  "}))


def test_endpoint_and_key_precedence() -> None:
    env = {
        "QWEN_BASE_URL": "http://qwen.local/v1",
        "OPENAI_BASE_URL": "http://openai.local/v1",
        "DASHSCOPE_API_KEY": "dash-key-1",
        "OPENAI_API_KEY": "openai-key-1",
    }
    qwen = create_atom("qwen", AtomOptions(environ=env))
    assert qwen.base_url == "http://qwen.local/v1" and qwen.key_env == "DASHSCOPE_API_KEY"
    assert (
        create_atom("qwen", AtomOptions(base_url="http://flag/v1", environ=env)).base_url == "http://flag/v1"
    )
    default = create_atom("qwen", AtomOptions(environ={"OPENAI_API_KEY": "k" * 10}))
    assert default.base_url == "https://dashscope-intl.aliyuncs.com/compatible-mode/v1"
    assert default.model == "qwen-plus" and default.context_window == 131_072
    claude = create_atom(
        "claude",
        AtomOptions(environ={"ANTHROPIC_API_KEY": "k" * 10, "ANTHROPIC_BASE_URL": "http://anthropic.local"}),
    )
    assert claude.base_url == "http://anthropic.local" and claude.context_window == 200_000


# -- through the installed command ---------------------------------------------------------------------------
def test_the_seed_command_line_runs_the_qwen_atom_against_an_openai_compatible_server(tmp_path: Path) -> None:
    (tmp_path / "README.md").write_text("# demo\nA tiny project.\n", encoding="utf-8")
    with OpenAIServer(validate=True) as server:
        server.enqueue(
            Reply.tool_calls([("read", {"file_path": "README.md"})]),
            Reply.text("It is a tiny project.", input_tokens=50, output_tokens=6),
        )
        ran = bhrain(
            [
                "run",
                "--repo",
                "bhrain",
                "--skill",
                "act",
                "--arch",
                "bhrain.struct.v1",
                "--atom",
                "qwen",
                "--input",
                "what is this project?",
                "--base-url",
                server.base_url,
                "--json",
            ],
            tmp_path,
            env={"QWEN_API_KEY": "sk-qwen-test-key-456"},
        )
        assert ran.code == 0, ran.err
        out = json.loads(ran.out)
        assert out["result"] == "It is a tiny project."
        assert out["iterations"] == 2 and out["atom"] == "qwen" and out["model"] == "qwen-plus"
        assert out["tool_calls"][0]["name"] == "read" and out["tool_calls"][0]["ok"] is True
        assert out["usage"]["input_tokens"] == 60
        assert server.requests[0].headers["authorization"] == "Bearer sk-qwen-test-key-456"
        assert server.requests[0].json["model"] == "qwen-plus"


def test_cli_api_failure_after_retries_exits_1_with_one_line(tmp_path: Path) -> None:
    config = tmp_path / "bhrain.yaml"
    config.write_text("retry: {max_retries: 1, base_delay_s: 0.01}\n", encoding="utf-8")
    with AnthropicServer() as server:
        server.enqueue(Reply.error(529, message="Overloaded"), Reply.error(529, message="Overloaded"))
        ran = bhrain(
            [
                "run",
                "--skill",
                "ask",
                "--atom",
                "claude",
                "--input",
                "hi",
                "--config",
                str(config),
                "--base-url",
                server.base_url,
            ],
            tmp_path,
            env={"ANTHROPIC_API_KEY": "sk-ant-secret-999"},
        )
    assert ran.code == 1
    errors = [line for line in ran.err.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "529" in errors[0]
    assert "retrying in" in ran.err  # the retry was announced as a warning
    assert "sk-ant-secret-999" not in ran.err + ran.out
    assert "Traceback" not in ran.err


def test_cli_missing_key_is_a_clear_error_before_any_call(tmp_path: Path) -> None:
    with AnthropicServer() as server:
        ran = bhrain(
            ["run", "--skill", "ask", "--atom", "claude", "--input", "hi", "--base-url", server.base_url],
            tmp_path,
        )
        assert server.requests == []
    assert ran.code == 2
    assert ran.err == (
        "error: ANTHROPIC_API_KEY is not set; export it, or use the offline reviewer (no key): "
        "--atom scripted\n"
    )


# -- answers that are no answers: refusals, content filters, empty messages ----------------------------------
def run_cli_on(name: str, server: Any, tmp_path: Path, *args: str, skill: str = "ask") -> Any:
    command = ["run", "--skill", skill, "--atom", name, "--base-url", server.base_url, "--input", "go", *args]
    return bhrain(command, tmp_path, env=KEYS[name])


EMPTY_ANSWER = (
    "error: the model ended with an empty answer (skill ask needs one); run it again, or try another model"
)


def error_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if line.startswith("error:")]


def openai_completion(message: dict[str, Any] | None) -> Reply:
    """A raw chat.completion body with one choice carrying ``message`` as given (odd shapes included)."""
    body = {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "qwen-plus",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
    }
    return Reply.raw(json.dumps(body))


@pytest.mark.parametrize(
    ("name", "reply", "said"),
    [
        ("claude", Reply.text("", stop_reason="refusal"), ""),
        ("qwen", Reply.text("", stop_reason="content_filter"), ""),
        (
            "qwen",
            openai_completion({"role": "assistant", "content": None, "refusal": "I can't help."}),
            "I can't help.",
        ),
    ],
    ids=["anthropic-refusal", "openai-content-filter", "openai-refusal-message"],
)
def test_a_provider_refusal_ends_the_run_refused_with_exit_1(
    name: str, reply: Reply, said: str, tmp_path: Path
) -> None:
    (tmp_path / "notes.md").write_text("x\n", encoding="utf-8")
    with (AnthropicServer if name == "claude" else OpenAIServer)(validate=True) as server:
        server.enqueue(Reply.tool_calls([("read", {"file_path": "notes.md"})]), reply)
        ran = run_cli_on(name, server, tmp_path, "--json")
    assert ran.code == 1, ran.err
    out = json.loads(ran.out)  # --json still prints the object
    assert out["stop_reason"] == "refused" and out["exit_code"] == 1 and out["result"] == said
    assert out["error"].startswith("error: the model refused to answer (provider stop reason ")
    assert error_lines(ran.err) == [out["error"]] and "Traceback" not in ran.err
    assert ran.err.rstrip().endswith("; rephrase the task, or use another model")


def test_an_empty_answer_is_a_malfunction_when_the_skill_needs_one(
    provider: tuple[str, Any], tmp_path: Path
) -> None:
    name, server = provider
    (tmp_path / "notes.md").write_text("x\n", encoding="utf-8")
    server.enqueue(Reply.tool_calls([("read", {"file_path": "notes.md"})]), Reply.text(""))
    ran = run_cli_on(name, server, tmp_path, "--json")
    assert ran.code == 1
    out = json.loads(ran.out)
    assert (out["stop_reason"], out["result"], out["iterations"]) == ("empty_answer", "", 2)
    assert error_lines(ran.err) == [EMPTY_ANSWER]
    # act's result is what it did: an empty closing report is worth a warning, not a failure
    server.enqueue(Reply.tool_calls([("read", {"file_path": "notes.md"})]), Reply.text(""))
    ran = run_cli_on(name, server, tmp_path, skill="act")
    assert (ran.code, ran.out) == (0, "")
    assert "bhrain: the model ended with an empty answer" in ran.err and not error_lines(ran.err)


def test_an_openai_message_that_is_null_is_an_empty_answer(tmp_path: Path) -> None:
    with OpenAIServer(validate=True) as server:
        server.enqueue(openai_completion(None))
        ran = run_cli_on("qwen", server, tmp_path)
    assert (ran.code, ran.out) == (1, "")
    assert error_lines(ran.err) == [EMPTY_ANSWER]


# -- answers cut at the token limit --------------------------------------------------------------------------
def test_an_answer_cut_at_the_token_limit_is_truncated_with_exit_1_on_both_atoms(
    provider: tuple[str, Any], tmp_path: Path
) -> None:
    name, server = provider  # the Anthropic server says stop_reason max_tokens, the OpenAI one "length"
    server.enqueue(Reply.text("The answer begins and then", stop_reason="max_tokens"))
    ran = run_cli_on(name, server, tmp_path, "--json", "--max-tokens", "8")
    assert ran.code == 1, ran.err
    out = json.loads(ran.out)
    assert (out["stop_reason"], out["exit_code"], out["result"]) == (
        "truncated",
        1,
        "The answer begins and then",
    )
    assert error_lines(ran.err) == [
        "error: the model's answer was cut at its limit of 8 tokens (--max-tokens); "
        "raise --max-tokens or ask for a shorter answer"
    ]
    assert len(server.requests) == 1


def test_tool_calls_of_a_cut_answer_do_not_run_and_a_cut_review_prints_no_counts(tmp_path: Path) -> None:
    (tmp_path / "art.md").write_text("x\n", encoding="utf-8")
    with AnthropicServer(validate=True) as server:
        server.enqueue(
            Reply.tool_calls(
                [("write", {"file_path": "out.txt", "content": "x"}), ("read", {"file_path": "a"})],
                text="blockers: 0\nnitpicks: 0\nNow let me",
                stop_reason="max_tokens",
            )
        )
        command = ["run", "--skill", "review", "--atom", "claude", "--base-url", server.base_url]
        ran = bhrain([*command, "--tools", "files", "--input-file", "art.md"], tmp_path, env=KEYS["claude"])
    assert ran.code == 1 and not (tmp_path / "out.txt").exists()
    assert error_lines(ran.err) == [
        "error: the model's answer was cut at its token limit; none of its 2 tool calls ran; "
        "raise --max-tokens or ask for a shorter answer"
    ]
    assert ran.out == "blockers: 0\nnitpicks: 0\nNow let me\n"  # what it said, not a verdict: exit 1


def test_arguments_nested_too_deeply_are_answered_as_a_malformed_call(tmp_path: Path) -> None:
    """Arguments nested deeper than Python's JSON parser goes ended bhrain with an internal RecursionError."""
    deep = "[" * 10_000 + "]" * 10_000  # 100,000 too, but the conversation would fill the context window
    with OpenAIServer(validate=True) as server:
        server.enqueue(
            Reply.raw_tool_call("read", deep),
            Reply.text(f"<tool_call>{deep}</tool_call>"),
            Reply.text("I give up."),
        )
        ran = run_cli_on("qwen", server, tmp_path, "--json")
    assert ran.code == 0, ran.err
    out = json.loads(ran.out)
    assert [c["status"] for c in out["tool_calls"]] == ["malformed", "malformed"]
    assert "nested too deeply" in sent_tool_results("qwen", server.requests[1])[0][1]


# -- tool calls written as text (a server without a tool-call parser) ----------------------------------------
def test_the_qwen_atom_runs_tool_calls_written_as_text_and_corrects_malformed_ones(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("forty-two\n", encoding="utf-8")
    with OpenAIServer(validate=True) as server:
        server.enqueue(
            Reply.text(
                'I will read it.\n<tool_call>\n{"name": "read", "arguments": {"file_path": "notes.md"'
            ),
            Reply.text('<tool_call>\n{"name": "read", "arguments": {"file_path": "notes.md"}}\n</tool_call>'),
            Reply.text("The notes say forty-two."),
        )
        ran = run_cli_on("qwen", server, tmp_path, "--json")
        assert ran.code == 0, ran.err
        out = json.loads(ran.out)
        assert (out["result"], out["stop_reason"], out["iterations"]) == (
            "The notes say forty-two.",
            "done",
            3,
        )
        assert [c["status"] for c in out["tool_calls"]] == ["malformed", "ok"]
        fed_back = sent_tool_results("qwen", server.requests[1])[0][1]
        assert fed_back.startswith(
            "malformed tool call: invalid tool call: the <tool_call> text is not valid JSON "
            "(Expecting ',' delimiter at line 1 column 55); "
            'write <tool_call>{"name": "TOOL", "arguments": {…}}</tool_call>; '
            "arguments received: "
        )
        assert sent_tool_results("qwen", server.requests[2])[-1][1] == "forty-two\n"


# -- prompt caching ------------------------------------------------------------------------------------------
def test_a_claude_run_reads_each_turn_what_the_one_before_wrote_to_the_cache(tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text("forty-two\n" * 50, encoding="utf-8")
    with AnthropicServer(validate=True, prompt_cache=True) as server:  # plays the API's prompt cache
        server.enqueue(
            Reply.tool_calls([("read", {"file_path": "notes.md"})]),
            Reply.tool_calls([("grep", {"pattern": "forty"})]),
            Reply.text("The notes say forty-two."),
        )
        ran = run_cli_on("claude", server, tmp_path, "--json", "--trace", "t.json")
        assert ran.code == 0, ran.err
        # what the server reported, request by request: (uncached, read, written)
        replayed = wire.PromptCache()
        reported = [replayed.account(request.json) for request in server.requests]
    (_, read1, wrote1), (_, read2, wrote2), (_, read3, _) = reported
    assert read1 == 0 and wrote1 > 500  # tools, system prompt and task written on the first call
    assert read2 == wrote1 and read3 == read2 + wrote2  # every later call reads all that came before
    usage = json.loads(ran.out)["usage"]
    assert usage["cache_read_tokens"] == sum(r[1] for r in reported)
    assert usage["cache_write_tokens"] == sum(r[2] for r in reported)
    assert usage["input_tokens"] == sum(sum(r) for r in reported)
    trace = json.loads((tmp_path / "t.json").read_text(encoding="utf-8"))
    assert [i["usage"]["cache_read_tokens"] for i in trace["iterations"]] == [0, read2, read3]
    assert trace["totals"]["cache_write_tokens"] == usage["cache_write_tokens"]
