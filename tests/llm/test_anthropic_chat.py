"""AnthropicChat: the exact Messages API requests the real SDK sends, and Anthropic-specific answers."""

from __future__ import annotations

from typing import Any

import pytest

from routedriver.llm.anthropic_chat import CONVERSATION_START, AnthropicChat, to_anthropic_messages
from routedriver.llm.errors import LLMBadRequest, LLMResponseError
from routedriver.llm.openai_chat import OpenAIChat
from routedriver.llm.retry import RetryPolicy
from routedriver.llm.types import Message, ToolCall, ToolSpec
from tests.fakes.llm_servers import AnthropicServer, Call, OpenAIServer, Reply
from tests.llm.conftest import API_KEY, READ

CACHED = {"type": "ephemeral"}
BASH = ToolSpec("bash", "Run a command", {"type": "object", "properties": {"command": {"type": "string"}}})


def chat_for(server: AnthropicServer, **options: Any) -> AnthropicChat:
    return AnthropicChat(
        model="claude-test",
        api_key=API_KEY,
        base_url=server.base_url,
        retry=RetryPolicy(max_retries=0),
        **options,
    )


def test_tool_result_round_trip_sends_the_exact_messages_body(anthropic_server: AnthropicServer) -> None:
    anthropic_server.enqueue(
        Reply.tool_calls(
            [("read", {"file_path": "a.txt"}), ("bash", {"command": "false"})],
            text="Checking.",
            ids=["toolu_A", "toolu_B"],
        ),
        Reply.text("All done."),
    )
    chat = chat_for(anthropic_server)
    conversation = [Message(role="user", text="inspect a.txt")]
    first = chat.complete(conversation, system="You are careful.", tools=[READ, BASH])
    conversation += [
        Message(role="assistant", text=first.text, tool_calls=first.tool_calls),
        Message(role="tool", tool_call_id="toolu_A", text="hello\n"),
        Message(role="tool", tool_call_id="toolu_B", text="exit code 1", is_error=True),
    ]

    second = chat.complete(conversation, system="You are careful.", tools=[READ, BASH])

    assert second.text == "All done."
    sent = anthropic_server.requests[1].json
    # cache_control breakpoints: the last tool, the system prompt, the end of the previous request's
    # conversation (the first user turn) and the end of this one; four, the most the API takes
    assert sent["system"] == [{"type": "text", "text": "You are careful.", "cache_control": CACHED}]
    assert all(m["role"] != "system" for m in sent["messages"])
    assert sent["tools"] == [
        {"name": "read", "description": "Read a file", "input_schema": dict(READ.input_schema)},
        {
            "name": "bash",
            "description": "Run a command",
            "input_schema": dict(BASH.input_schema),
            "cache_control": CACHED,
        },
    ]
    assert sent["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "inspect a.txt", "cache_control": CACHED}]},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_A", "name": "read", "input": {"file_path": "a.txt"}},
                {"type": "tool_use", "id": "toolu_B", "name": "bash", "input": {"command": "false"}},
            ],
        },
        # both results in ONE user message, in call order, the failure flagged
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_A", "content": "hello\n"},
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_B",
                    "content": "exit code 1",
                    "is_error": True,
                    "cache_control": CACHED,
                },
            ],
        },
    ]
    headers = anthropic_server.requests[1].headers
    assert headers["anthropic-version"]  # the SDK's own headers reached the server: the real client spoke


def test_malformed_call_is_replayed_so_the_api_accepts_it(anthropic_server: AnthropicServer) -> None:
    anthropic_server.enqueue(
        Reply.tool_calls(
            [Call("read", "not an object", id="toolu_bad"), Call("read", {"file_path": "x"}, omit_id=True)]
        ),
        Reply.text("corrected"),
    )
    chat = chat_for(anthropic_server)
    first = chat.complete([Message(role="user", text="go")])
    bad, no_id = first.tool_calls
    assert bad.malformed and bad.raw_arguments == "not an object"
    assert no_id.malformed and no_id.id.startswith("call_")
    results = [
        Message(role="tool", tool_call_id=c.id, text=c.error or "", is_error=True) for c in first.tool_calls
    ]

    chat.complete(
        [Message(role="user", text="go"), Message(role="assistant", tool_calls=first.tool_calls), *results]
    )

    assistant = anthropic_server.requests[1].json["messages"][1]
    assert assistant["content"] == [
        {"type": "tool_use", "id": "toolu_bad", "name": "read", "input": {}},
        {"type": "tool_use", "id": no_id.id, "name": "read", "input": {}},
    ]


def test_system_prompt_is_left_out_when_empty(anthropic_server: AnthropicServer) -> None:
    anthropic_server.enqueue(Reply.text("ok"))
    chat_for(anthropic_server).complete([Message(role="user", text="hi")])
    assert "system" not in anthropic_server.requests[0].json
    assert "tools" not in anthropic_server.requests[0].json


def test_irregular_conversations_are_merged_not_refused(anthropic_server: AnthropicServer) -> None:
    anthropic_server.enqueue(Reply.text("fine"))
    messages = [
        Message(role="assistant", text="I start."),  # no user turn first
        Message(role="user", text="one"),
        Message(role="user", text=""),  # empty: dropped
        Message(role="user", text="two"),
        Message(role="assistant", text=""),  # empty: dropped, so the user turns around it merge
        Message(role="user", text="three"),
    ]
    chat = chat_for(anthropic_server, prompt_caching=False)  # the exact merge, without cache markers
    assert chat.complete(messages).text == "fine"  # the fake validates like the API
    sent = anthropic_server.requests[0].json["messages"]
    assert sent == [
        {"role": "user", "content": [{"type": "text", "text": CONVERSATION_START}]},
        {"role": "assistant", "content": [{"type": "text", "text": "I start."}]},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "one"},
                {"type": "text", "text": "two"},
                {"type": "text", "text": "three"},
            ],
        },
    ]


def test_tool_results_open_the_user_turn_even_after_an_injected_message() -> None:
    call = ToolCall(id="t1", name="read", arguments={"file_path": "a"})
    sent = to_anthropic_messages(
        [
            Message(role="user", text="go"),
            Message(role="assistant", tool_calls=(call,)),
            Message(role="user", text="[note injected before the result]"),
            Message(role="tool", tool_call_id="t1", text="content"),
        ]
    )
    assert sent[2] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "content"},
            {"type": "text", "text": "[note injected before the result]"},
        ],
    }


def test_empty_tool_result_sends_no_content_block() -> None:
    call = ToolCall(id="t1", name="bash", arguments={"command": "true"})
    sent = to_anthropic_messages(
        [
            Message(role="user", text="go"),
            Message(role="assistant", tool_calls=(call,)),
            Message(role="tool", tool_call_id="t1", text=""),
        ]
    )
    assert sent[2]["content"] == [{"type": "tool_result", "tool_use_id": "t1"}]


def test_non_object_input_of_other_types(anthropic_server: AnthropicServer) -> None:
    anthropic_server.enqueue(
        Reply.tool_calls([Call("read", [1, 2], id="toolu_list"), Call("read", None, id="toolu_none")])
    )
    as_list, as_none = chat_for(anthropic_server).complete([Message(role="user", text="go")]).tool_calls
    assert as_list.malformed and as_list.raw_arguments == "[1, 2]" and "list" in (as_list.error or "")
    assert as_none.malformed and "no input" in (as_none.error or "")


def test_thinking_blocks_are_skipped_and_text_blocks_joined(anthropic_server: AnthropicServer) -> None:
    body = (
        '{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","stop_reason":"end_turn",'
        '"stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":4},"content":['
        '{"type":"thinking","thinking":"hmm","signature":"sig"},'
        '{"type":"text","text":"Hello, "},{"type":"text","text":"world."}]}'
    )
    anthropic_server.enqueue(Reply.raw(body))
    completion = chat_for(anthropic_server).complete([Message(role="user", text="hi")])
    assert completion.text == "Hello, world."
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (3, 4)


def test_an_answer_nested_too_deeply_is_an_unreadable_answer(anthropic_server: AnthropicServer) -> None:
    deep = "[" * 100_000 + "]" * 100_000  # deeper than Python's JSON parser goes: it raises RecursionError
    body = (
        '{"id":"msg_1","type":"message","role":"assistant","model":"claude-test","stop_reason":"tool_use",'
        '"stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":4},"content":['
        '{"type":"tool_use","id":"toolu_1","name":"read","input":{"x":' + deep + "}}]}"
    )
    anthropic_server.enqueue(Reply.raw(body))
    with pytest.raises(LLMResponseError, match="the server's answer is JSON nested too deeply to read"):
        chat_for(anthropic_server).complete([Message(role="user", text="hi")])


def test_context_window_exceeded_reads_as_max_tokens(anthropic_server: AnthropicServer) -> None:
    anthropic_server.enqueue(
        Reply.text("partial", stop_reason="model_context_window_exceeded"),
        Reply.text("no", stop_reason="refusal"),
    )
    chat = chat_for(anthropic_server)
    assert chat.complete([Message(role="user", text="hi")]).stop_reason == "max_tokens"
    assert chat.complete([Message(role="user", text="hi")]).stop_reason == "refusal"


def test_invalid_request_error_message_is_quoted(anthropic_server: AnthropicServer) -> None:
    anthropic_server.enqueue(Reply.error(400, message="max_tokens: 99999999 > 64000, which is the maximum"))
    with pytest.raises(LLMBadRequest) as caught:
        chat_for(anthropic_server).complete([Message(role="user", text="hi")])
    assert caught.value.line() == (
        "error: claude: HTTP 400 invalid_request_error: max_tokens: 99999999 > 64000, which is the maximum"
    )


def test_defaults_match_the_contract() -> None:
    chat = AnthropicChat(model="claude-x", api_key="k")
    assert (chat.name, chat.context_window, chat.default_max_tokens, chat.timeout_s) == (
        "claude",
        200_000,
        4096,
        600.0,
    )
    assert chat.retry == RetryPolicy()


# -- prompt caching ------------------------------------------------------------------------------------------
def breakpoints(body: dict[str, Any]) -> list[str]:
    """Where a request's ``cache_control`` marks are: ``tools.N``, ``system.N``, ``messages.N.M``."""
    found = [f"tools.{i}" for i, tool in enumerate(body.get("tools", [])) if "cache_control" in tool]
    system = body.get("system")
    found += [
        f"system.{i}"
        for i, b in enumerate(system if isinstance(system, list) else [])
        if "cache_control" in b
    ]
    for n, message in enumerate(body["messages"]):
        found += [f"messages.{n}.{m}" for m, b in enumerate(message["content"]) if "cache_control" in b]
    return found


def test_breakpoints_follow_the_conversation_and_never_exceed_four(anthropic_server: AnthropicServer) -> None:
    chat = chat_for(anthropic_server)
    conversation = [Message(role="user", text="go")]
    for turn in range(4):
        anthropic_server.enqueue(Reply.tool_calls([("read", {"file_path": f"{turn}"})], ids=[f"t{turn}"]))
        done = chat.complete(conversation, system="Be careful.", tools=[READ, BASH])
        conversation += [
            Message(role="assistant", text=done.text, tool_calls=done.tool_calls),
            Message(role="tool", tool_call_id=f"t{turn}", text="x" * 10),
        ]
    marks = [breakpoints(request.json) for request in anthropic_server.requests]
    assert marks[0] == ["tools.1", "system.0", "messages.0.0"]
    assert marks[1] == ["tools.1", "system.0", "messages.0.0", "messages.2.0"]
    assert marks[3] == [
        "tools.1",
        "system.0",
        "messages.4.0",
        "messages.6.0",
    ]  # the last request's end, and ours
    # without tools or system prompt the conversation keeps its two
    anthropic_server.enqueue(Reply.text("ok"))
    chat.complete(conversation)
    assert breakpoints(anthropic_server.requests[-1].json) == ["messages.6.0", "messages.8.0"]


def test_the_cache_is_read_from_usage_and_counted_in_the_input(anthropic_server: AnthropicServer) -> None:
    anthropic_server.enqueue(
        Reply.text("hi", input_tokens=12, output_tokens=3, cache_read_tokens=1_000, cache_write_tokens=200)
    )
    usage = chat_for(anthropic_server).complete([Message(role="user", text="hi")]).usage
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == (
        1_212,
        3,
        1_000,
        200,
    )


def test_openai_reports_its_cached_prompt_tokens_too(openai_server: OpenAIServer) -> None:
    openai_server.enqueue(Reply.text("hi", input_tokens=12, output_tokens=3, cache_read_tokens=1_024))
    chat = OpenAIChat(model="q", api_key=API_KEY, base_url=openai_server.base_url, retry=RetryPolicy(0))
    usage = chat.complete([Message(role="user", text="hi")]).usage
    assert (usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == (1_036, 1_024, 0)


def test_no_breakpoints_when_prompt_caching_is_off(anthropic_server: AnthropicServer) -> None:
    anthropic_server.enqueue(Reply.text("ok"))
    chat_for(anthropic_server, prompt_caching=False).complete(
        [Message(role="user", text="hi")], system="s", tools=[READ]
    )
    sent = anthropic_server.requests[0].json
    assert breakpoints(sent) == [] and sent["system"] == "s"
