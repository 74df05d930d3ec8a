"""The fake provider servers themselves, driven by the raw SDK clients: what every provider test relies on."""

from __future__ import annotations

import json
import threading
from typing import Any, cast

import anthropic
import openai
import pytest

from tests.fakes._llm_wire import ANTHROPIC
from tests.fakes.llm_servers import AnthropicServer, Call, OpenAIServer, Reply, ResponsesServer

KEY = "sk-fake-server-key"
CACHED = {"cache_control": {"type": "ephemeral"}}


def claude(server: AnthropicServer, key: str = KEY) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key=key, base_url=server.base_url, max_retries=0, timeout=10)


def gpt(server: OpenAIServer, key: str = KEY) -> openai.OpenAI:
    return openai.OpenAI(api_key=key, base_url=server.base_url, max_retries=0, timeout=10)


def ask_claude(
    client: anthropic.Anthropic, messages: list[dict[str, Any]] | None = None, **extra: Any
) -> Any:
    sent: Any = messages or [{"role": "user", "content": "hi"}]  # deliberately raw dicts, even invalid ones
    return client.messages.create(model="claude-fake", max_tokens=100, messages=sent, **extra)


def ask_gpt(client: openai.OpenAI, messages: list[dict[str, Any]] | None = None, **extra: Any) -> Any:
    sent: Any = messages or [{"role": "user", "content": "hi"}]
    return client.chat.completions.create(model="gpt-fake", messages=sent, **extra)


def test_anthropic_message_parses_into_the_sdk_types() -> None:
    with AnthropicServer() as server:
        server.enqueue(
            Reply.tool_calls(
                [("read", {"file_path": "a"}), ("bash", {"command": "ls"})],
                text="Two.",
                input_tokens=7,
                output_tokens=9,
            )
        )
        message = ask_claude(claude(server))
    assert isinstance(message, anthropic.types.Message)
    assert message.id.startswith("msg_") and message.role == "assistant" and message.stop_reason == "tool_use"
    text, first, second = message.content
    assert isinstance(text, anthropic.types.TextBlock) and text.text == "Two."
    assert isinstance(first, anthropic.types.ToolUseBlock) and first.id.startswith("toolu_")
    assert isinstance(second, anthropic.types.ToolUseBlock)
    assert (first.name, first.input, second.name) == ("read", {"file_path": "a"}, "bash")
    assert first.id != second.id
    assert (message.usage.input_tokens, message.usage.output_tokens) == (7, 9)


def test_openai_completion_parses_into_the_sdk_types() -> None:
    with OpenAIServer() as server:
        server.enqueue(Reply.tool_calls([("read", {"file_path": "a"})], ids=["call_Z"]), Reply.text("plain"))
        client = gpt(server)
        calls = ask_gpt(client)
        plain = ask_gpt(client)
    choice = calls.choices[0]
    assert choice.finish_reason == "tool_calls" and choice.message.content is None
    (call,) = choice.message.tool_calls
    assert (call.id, call.type, call.function.name, call.function.arguments) == (
        "call_Z",
        "function",
        "read",
        '{"file_path": "a"}',
    )
    assert calls.usage.prompt_tokens == 10 and calls.usage.total_tokens == 15
    assert plain.choices[0].message.content == "plain" and plain.choices[0].finish_reason == "stop"


def test_error_bodies_and_headers_are_the_real_shapes() -> None:
    with AnthropicServer() as a_server, OpenAIServer() as o_server:
        a_server.enqueue(Reply.error(429, retry_after="3"))
        o_server.enqueue(Reply.error(429, retry_after="3"))
        with pytest.raises(anthropic.RateLimitError) as a_caught:
            ask_claude(claude(a_server))
        with pytest.raises(openai.RateLimitError) as o_caught:
            ask_gpt(gpt(o_server))
    assert a_caught.value.response.headers["retry-after"] == "3"
    a_body = cast(dict[str, Any], a_caught.value.body)
    assert a_body["type"] == "error" and a_body["error"]["type"] == "rate_limit_error"
    assert a_caught.value.type == "rate_limit_error" and a_caught.value.api_message
    assert o_caught.value.response.headers["retry-after"] == "3"
    assert (
        o_caught.value.code == "rate_limit_exceeded" and cast(dict[str, Any], o_caught.value.body)["message"]
    )


def test_api_key_is_checked_when_configured() -> None:
    with AnthropicServer(api_key=KEY) as server:
        with pytest.raises(anthropic.AuthenticationError):
            ask_claude(claude(server, key="sk-other"))
        server.enqueue(Reply.text("ok"))
        assert ask_claude(claude(server)).content[0].text == "ok"
    with OpenAIServer(api_key=KEY) as o_server, pytest.raises(openai.AuthenticationError):
        ask_gpt(gpt(o_server, key="sk-other"))


def test_unexpected_paths_get_404_and_are_recorded() -> None:
    with OpenAIServer() as server:
        wrong = openai.OpenAI(api_key=KEY, base_url=f"http://127.0.0.1:{server.port}", max_retries=0)
        with pytest.raises(openai.NotFoundError) as caught:
            ask_gpt(wrong)
        assert server.requests[0].path == "/chat/completions"
        assert "POST /v1/chat/completions" in str(caught.value)
        with pytest.raises(openai.NotFoundError):
            gpt(server).models.list()
        assert server.requests[1].method == "GET"


def test_no_reply_scripted_fails_fast_with_a_clear_message() -> None:
    with AnthropicServer() as server, pytest.raises(anthropic.BadRequestError) as caught:
        ask_claude(claude(server))
    assert "no reply scripted" in str(caught.value)


def test_queue_first_then_responder() -> None:
    with OpenAIServer() as server:
        server.enqueue(Reply.text("queued"))
        server.responder = lambda recorded: Reply.text(f"echo {recorded.json['messages'][-1]['content']}")
        client = gpt(server)
        assert ask_gpt(client).choices[0].message.content == "queued"
        assert ask_gpt(client, [{"role": "user", "content": "x"}]).choices[0].message.content == "echo x"
        assert server.pending == 0


@pytest.mark.parametrize(
    "messages, fragment",
    [
        ([{"role": "assistant", "content": "hi"}], 'first message must use the "user" role'),
        ([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}], "roles must alternate"),
        (
            [{"role": "user", "content": [{"type": "text", "text": ""}]}],
            "text content blocks must be non-empty",
        ),
        (
            [
                {"role": "user", "content": "a"},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "t1", "name": "read", "input": {}}],
                },
                {"role": "user", "content": "no result"},
            ],
            "without `tool_result` blocks",
        ),
        (
            [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t9"}]}],
            "unexpected `tool_use_id`",
        ),
    ],
)
def test_anthropic_server_rejects_what_the_real_api_rejects(
    messages: list[dict[str, Any]], fragment: str
) -> None:
    with AnthropicServer() as server:
        server.enqueue(Reply.text("never"))
        with pytest.raises(anthropic.BadRequestError) as caught:
            ask_claude(claude(server), messages)
        assert fragment in str(caught.value)
        assert server.pending == 1  # a rejected request consumes no scripted reply


@pytest.mark.parametrize(
    "messages, fragment",
    [
        (
            [{"role": "user", "content": "a"}, {"role": "tool", "tool_call_id": "c1", "content": "x"}],
            "must be a response to a preceeding message with 'tool_calls'",
        ),
        (
            [
                {"role": "user", "content": "a"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {"id": "c1", "type": "function", "function": {"name": "read", "arguments": "{}"}},
                        {"id": "c2", "type": "function", "function": {"name": "read", "arguments": "{}"}},
                    ],
                },
                {"role": "tool", "tool_call_id": "c1", "content": "x"},
            ],
            "did not have response messages: c2",
        ),
    ],
)
def test_openai_server_rejects_what_the_real_api_rejects(
    messages: list[dict[str, Any]], fragment: str
) -> None:
    with OpenAIServer() as server:
        with pytest.raises(openai.BadRequestError) as caught:
            ask_gpt(gpt(server), messages)
        assert fragment in str(caught.value)


def test_validation_can_be_switched_off() -> None:
    with AnthropicServer(validate=False) as server:
        server.enqueue(Reply.text("accepted"))
        message = ask_claude(claude(server), [{"role": "assistant", "content": "odd"}])
    assert message.content[0].text == "accepted"


def test_streaming_is_refused() -> None:
    with OpenAIServer() as server, pytest.raises(openai.BadRequestError) as caught:
        ask_gpt(gpt(server), stream=True)
    assert "does not stream" in str(caught.value)


def test_malformed_calls_reach_the_sdk_as_scripted() -> None:
    with AnthropicServer() as a_server, OpenAIServer() as o_server:
        a_server.enqueue(Reply.tool_calls([Call("read", "{bad", id="toolu_1"), Call(None, {}, omit_id=True)]))
        o_server.enqueue(Reply.tool_calls([Call("read", "{bad", id="call_1"), Call(None, {}, omit_id=True)]))
        a_blocks = ask_claude(claude(a_server)).content
        o_calls = ask_gpt(gpt(o_server)).choices[0].message.tool_calls
    assert a_blocks[0].input == "{bad" and getattr(a_blocks[1], "id", None) is None
    assert o_calls[0].function.arguments == "{bad" and getattr(o_calls[1], "id", None) is None
    assert getattr(o_calls[1].function, "name", None) is None


def test_requests_are_served_concurrently() -> None:
    # Four requests meet at a barrier inside the server: only a concurrent server lets all of them through.
    barrier = threading.Barrier(4)

    def meet(recorded: Any) -> Reply:
        try:
            barrier.wait(timeout=10)
        except threading.BrokenBarrierError:
            return Reply.error(400, message="requests were served one at a time")
        return Reply.text("met")

    with OpenAIServer(responder=meet) as server:
        client = gpt(server)
        answers: list[str] = []
        threads = [
            threading.Thread(target=lambda: answers.append(ask_gpt(client).choices[0].message.content))
            for _ in range(4)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=20)
    assert answers == ["met"] * 4


def test_stop_cuts_a_delayed_reply_short() -> None:
    arrived = threading.Event()
    outcome: list[BaseException] = []

    def slow(recorded: Any) -> Reply:
        arrived.set()
        return Reply.text("late", delay_s=60)

    server = AnthropicServer(responder=slow).start()
    client = claude(server)

    def call() -> None:
        try:
            ask_claude(client)
        except anthropic.APIConnectionError as exc:
            outcome.append(exc)

    caller = threading.Thread(target=call)
    caller.start()
    assert arrived.wait(timeout=10)
    server.stop()
    caller.join(timeout=10)
    assert not caller.is_alive()
    assert len(outcome) == 1


MARKED = {"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}


@pytest.mark.parametrize(
    ("extra", "fragment"),
    [
        (
            {"system": [MARKED, MARKED, MARKED], "messages": [{"role": "user", "content": [MARKED, MARKED]}]},
            "A maximum of 4 blocks with cache_control may be provided. Found 5.",
        ),
        ({"system": [{**MARKED, "cache_control": {"type": "forever"}}]}, "cache_control: Input should be"),
        ({"system": [{"type": "text", "text": ""}]}, "system.0: Input should be a non-empty text block"),
    ],
)
def test_anthropic_server_checks_cache_breakpoints_like_the_api(extra: dict[str, Any], fragment: str) -> None:
    with AnthropicServer() as server, pytest.raises(anthropic.BadRequestError) as caught:
        ask_claude(claude(server), extra.pop("messages", None), **extra)
    assert fragment in str(caught.value)


def test_the_played_prompt_cache_reads_what_an_earlier_request_wrote() -> None:
    first = [{"role": "user", "content": [{"type": "text", "text": "a long question " * 50, **CACHED}]}]
    follow = [
        *first,
        {"role": "assistant", "content": "an answer"},
        {"role": "user", "content": [{"type": "text", "text": "and then?", **CACHED}]},
    ]
    system = [{"type": "text", "text": "stable rules " * 100, **CACHED}]
    with AnthropicServer(prompt_cache=True) as server:
        server.responder = lambda recorded: Reply.text("ok")
        client = claude(server)
        one = ask_claude(client, first, system=system).usage
        two = ask_claude(client, follow, system=system).usage
        moved = ask_claude(
            client, follow, system=[{**system[0], "text": "changed " + system[0]["text"]}]
        ).usage
    assert one.cache_read_input_tokens == 0 and one.cache_creation_input_tokens > 300
    assert two.cache_read_input_tokens == one.cache_creation_input_tokens  # all the first request wrote
    assert 0 < two.cache_creation_input_tokens < 50 and two.input_tokens == 0  # the new turns only
    assert moved.cache_read_input_tokens == 0  # a changed system prompt invalidates every prefix after it


def test_anthropic_streams_what_the_sdk_assembles_into_the_message() -> None:
    """A streamed reply: the SDK's stream helper puts the text deltas and the input_json_delta chunks (none
    of them JSON alone) back into the message the server would send whole."""
    arguments = {"command": "route.stone.get --stone @next-one --say", "description": "read the next stone"}
    reply = Reply.tool_calls([("Bash", arguments)], text="Reading the route first.")
    with AnthropicServer() as server:
        server.enqueue(reply)
        with claude(server).messages.stream(
            model="claude-fake", max_tokens=100, messages=[{"role": "user", "content": "go"}]
        ) as stream:
            kinds = [event.type for event in stream]
            message = stream.get_final_message()
        assert server.requests[0].json["stream"] is True
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    events = [
        json.loads(event.decode().split("data: ", 1)[1]) for event in ANTHROPIC.render_stream(reply, {}, 1)
    ]
    pieces = [
        e["delta"]["partial_json"] for e in events if e["type"] == "content_block_delta" and e["index"] == 1
    ]
    assert len(pieces) > 3 and json.loads("".join(pieces)) == arguments
    assert not any(_parses(piece) for piece in pieces)
    text, call = message.content
    assert isinstance(text, anthropic.types.TextBlock) and text.text == "Reading the route first."
    assert isinstance(call, anthropic.types.ToolUseBlock) and call.input == arguments
    assert message.stop_reason == "tool_use"


def test_responses_streams_and_answers_whole_as_the_sdk_reads_them() -> None:
    with ResponsesServer() as server:
        server.enqueue(
            Reply.tool_calls([("route_next", {"selector": "@next-one"})], text="Next."), Reply.text("ok")
        )
        client = openai.OpenAI(api_key=KEY, base_url=server.base_url, max_retries=0, timeout=10)
        events = list(client.responses.create(model="gpt-fake", input="go", stream=True))
        whole = client.responses.create(model="gpt-fake", input="go")
    kinds = [event.type for event in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.completed"
    assert kinds.count("response.function_call_arguments.delta") > 1
    final = events[-1].response
    message, call = final.output
    assert message.type == "message" and message.content[0].text == "Next."
    assert call.type == "function_call" and call.name == "route_next"
    assert json.loads(call.arguments) == {"selector": "@next-one"} and call.call_id.startswith("call_")
    assert whole.output_text == "ok"


def _parses(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True
