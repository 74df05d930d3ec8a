"""OpenAIChat: the exact Chat Completions requests the real SDK sends, and quirks of compatible servers."""

from __future__ import annotations

from typing import Any

import pytest

from routedriver.llm.errors import LLMBadRequest, LLMResponseError
from routedriver.llm.openai_chat import OpenAIChat
from routedriver.llm.retry import RetryPolicy
from routedriver.llm.types import Message
from tests.fakes.llm_servers import Call, OpenAIServer, Reply
from tests.llm.conftest import API_KEY, READ


def chat_for(server: OpenAIServer, **options: Any) -> OpenAIChat:
    options.setdefault("retry", RetryPolicy(max_retries=0))
    options.setdefault("model", "qwen-test")
    return OpenAIChat(api_key=API_KEY, base_url=server.base_url, **options)


def completion_body(message: str, finish_reason: str = "stop", usage: str | None = None) -> str:
    usage_part = f',"usage":{usage}' if usage is not None else ""
    return (
        '{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"qwen-test","choices":'
        f'[{{"index":0,"finish_reason":"{finish_reason}","message":{message}}}]{usage_part}}}'
    )


def test_tool_result_round_trip_sends_the_exact_chat_body(openai_server: OpenAIServer) -> None:
    openai_server.enqueue(
        Reply.tool_calls(
            [("read", {"file_path": "a.txt"}), ("read", {"file_path": "b.txt"})], ids=["call_A", "call_B"]
        ),
        Reply.text("Both read."),
    )
    chat = chat_for(openai_server)
    conversation = [Message(role="user", text="read both")]
    first = chat.complete(conversation, system="Be brief.", tools=[READ])
    assert first.text == "" and first.stop_reason == "tool_use"
    conversation += [
        Message(role="assistant", text=first.text, tool_calls=first.tool_calls),
        Message(role="tool", tool_call_id="call_A", text="aaa"),
        Message(role="tool", tool_call_id="call_B", text="error: no such file", is_error=True),
    ]

    assert chat.complete(conversation, system="Be brief.", tools=[READ]).text == "Both read."

    sent = openai_server.requests[1].json
    assert sent["tools"] == [
        {
            "type": "function",
            "function": {"name": "read", "description": "Read a file", "parameters": dict(READ.input_schema)},
        }
    ]
    assert sent["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "read both"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_A",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"file_path": "a.txt"}'},
                },
                {
                    "id": "call_B",
                    "type": "function",
                    "function": {"name": "read", "arguments": '{"file_path": "b.txt"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_A", "content": "aaa"},
        {"role": "tool", "tool_call_id": "call_B", "content": "error: no such file"},
    ]
    assert sent["max_tokens"] == 4096
    assert openai_server.requests[1].path == "/v1/chat/completions"
    assert openai_server.requests[1].headers["authorization"] == f"Bearer {API_KEY}"


@pytest.mark.parametrize(
    "arguments, fragment",
    [
        ('{"file_path": ', "not valid JSON"),
        ("[1, 2]", "JSON object, not a JSON array"),
        ('"a.txt"', "JSON object, not a JSON string"),
        ("null", "JSON object, not a JSON null"),
    ],
)
def test_arguments_that_are_not_a_json_object(
    openai_server: OpenAIServer, arguments: str, fragment: str
) -> None:
    openai_server.enqueue(
        Reply.tool_calls([Call("read", arguments, id="call_x"), ("read", {"file_path": "ok"})])
    )
    broken, fine = chat_for(openai_server).complete([Message(role="user", text="go")]).tool_calls
    assert broken.malformed and fragment in (broken.error or "") and broken.raw_arguments == arguments
    assert not fine.malformed


DEEP = "[" * 100_000 + "]" * 100_000  # deeper than Python's JSON parser goes: it raises RecursionError


def test_arguments_nested_too_deeply_are_a_malformed_call(openai_server: OpenAIServer) -> None:
    openai_server.enqueue(Reply.tool_calls([Call("read", DEEP, id="call_d"), ("read", {"file_path": "ok"})]))
    broken, fine = chat_for(openai_server).complete([Message(role="user", text="go")]).tool_calls
    assert broken.malformed and broken.raw_arguments == DEEP
    assert broken.error == "invalid tool call: the arguments are not readable JSON (nested too deeply)"
    assert not fine.malformed


def test_an_answer_nested_too_deeply_is_an_unreadable_answer(openai_server: OpenAIServer) -> None:
    deep_call = '{"id":"c1","type":"function","function":{"name":"read","arguments":{"x":' + DEEP + "}}}"
    message = '{"role":"assistant","content":null,"tool_calls":[' + deep_call + "]}"
    openai_server.enqueue(Reply.raw(completion_body(message, "tool_calls")))
    with pytest.raises(LLMResponseError, match="the server's answer is JSON nested too deeply to read"):
        chat_for(openai_server).complete([Message(role="user", text="go")])


def test_empty_arguments_mean_no_arguments(openai_server: OpenAIServer) -> None:
    openai_server.enqueue(Reply.tool_calls([Call("list_tools", "", id="call_e")]))
    (call,) = chat_for(openai_server).complete([Message(role="user", text="go")]).tool_calls
    assert not call.malformed and dict(call.arguments) == {}


def test_malformed_call_is_replayed_with_empty_arguments(openai_server: OpenAIServer) -> None:
    openai_server.enqueue(Reply.raw_tool_call("read", "{oops", id="call_1"), Reply.text("ok"))
    chat = chat_for(openai_server)
    first = chat.complete([Message(role="user", text="go")])
    (bad,) = first.tool_calls
    chat.complete(
        [
            Message(role="user", text="go"),
            Message(role="assistant", tool_calls=first.tool_calls),
            Message(role="tool", tool_call_id=bad.id, text=bad.error or "", is_error=True),
        ]
    )
    replayed = openai_server.requests[1].json["messages"][1]["tool_calls"][0]
    assert replayed == {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": "{}"}}


def test_tool_calls_with_finish_reason_stop_read_as_tool_use(openai_server: OpenAIServer) -> None:
    # Ollama and some vLLM tool parsers say "stop" even when the message carries calls.
    openai_server.enqueue(Reply.tool_calls([("read", {"file_path": "a"})], stop_reason="end_turn"))
    completion = chat_for(openai_server).complete([Message(role="user", text="go")])
    assert completion.stop_reason == "tool_use" and len(completion.tool_calls) == 1


def test_arguments_sent_as_an_object_are_accepted(openai_server: OpenAIServer) -> None:
    message = (
        '{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function",'
        '"function":{"name":"read","arguments":{"file_path":"a"}}}]}'
    )
    openai_server.enqueue(Reply.raw(completion_body(message, "tool_calls")))
    (call,) = chat_for(openai_server).complete([Message(role="user", text="go")]).tool_calls
    assert not call.malformed and dict(call.arguments) == {"file_path": "a"}


def test_legacy_function_call_becomes_a_tool_call(openai_server: OpenAIServer) -> None:
    message = (
        '{"role":"assistant","content":null,'
        '"function_call":{"name":"read","arguments":"{\\"file_path\\": \\"z\\"}"}}'
    )
    openai_server.enqueue(Reply.raw(completion_body(message, "function_call")))
    completion = chat_for(openai_server).complete([Message(role="user", text="go")])
    (call,) = completion.tool_calls
    assert (call.name, dict(call.arguments), call.malformed) == ("read", {"file_path": "z"}, False)
    assert call.id and completion.stop_reason == "tool_use"


def test_missing_usage_counts_as_zero(openai_server: OpenAIServer) -> None:
    openai_server.enqueue(Reply.raw(completion_body('{"role":"assistant","content":"hi"}')))
    completion = chat_for(openai_server).complete([Message(role="user", text="go")])
    assert (
        completion.text == "hi" and completion.usage.input_tokens == 0 and completion.usage.output_tokens == 0
    )


def test_refusal_is_the_text(openai_server: OpenAIServer) -> None:
    openai_server.enqueue(
        Reply.raw(completion_body('{"role":"assistant","content":null,"refusal":"I cannot."}'))
    )
    completion = chat_for(openai_server).complete([Message(role="user", text="go")])
    assert (completion.text, completion.stop_reason) == ("I cannot.", "refusal")


def test_error_inside_a_200_is_reported(openai_server: OpenAIServer) -> None:
    # OpenRouter answers some upstream failures with HTTP 200 and an error object instead of choices.
    openai_server.enqueue(Reply.raw('{"error":{"message":"Upstream provider timed out","code":502}}'))
    with pytest.raises(LLMResponseError) as caught:
        chat_for(openai_server).complete([Message(role="user", text="go")])
    assert "no choices: Upstream provider timed out" in caught.value.line()


def test_ollama_style_string_error_is_quoted(openai_server: OpenAIServer) -> None:
    openai_server.enqueue(
        Reply.raw('{"error":"model \\"qwen9\\" not found, try pulling it first"}', status=404)
    )
    with pytest.raises(LLMBadRequest) as caught:
        chat_for(openai_server).complete([Message(role="user", text="go")])
    assert 'HTTP 404: model "qwen9" not found, try pulling it first' in caught.value.line()


def test_openai_error_code_is_named(openai_server: OpenAIServer) -> None:
    openai_server.enqueue(Reply.error(404))
    with pytest.raises(LLMBadRequest) as caught:
        chat_for(openai_server, model="gpt-nope").complete([Message(role="user", text="go")])
    assert "HTTP 404 model_not_found: The model `gpt-nope` does not exist" in caught.value.line()


def test_max_completion_tokens_and_extra_body(openai_server: OpenAIServer) -> None:
    openai_server.enqueue(Reply.text("ok"))
    chat = chat_for(
        openai_server, max_tokens_param="max_completion_tokens", extra_body={"enable_thinking": False}
    )
    chat.complete([Message(role="user", text="go")], max_tokens=50)
    sent = openai_server.requests[0].json
    assert sent["max_completion_tokens"] == 50 and "max_tokens" not in sent
    assert sent["enable_thinking"] is False


def test_empty_assistant_turn_is_sent_as_empty_content(openai_server: OpenAIServer) -> None:
    openai_server.enqueue(Reply.text("ok"))
    chat_for(openai_server).complete(
        [Message(role="user", text="a"), Message(role="assistant", text=""), Message(role="user", text="b")]
    )
    assert openai_server.requests[0].json["messages"][1] == {"role": "assistant", "content": ""}


def test_defaults_match_the_contract() -> None:
    chat = OpenAIChat(model="gpt-x", api_key="k")
    assert (chat.name, chat.context_window, chat.default_max_tokens, chat.timeout_s) == (
        "openai",
        128_000,
        4096,
        600.0,
    )
    assert chat.retry == RetryPolicy()
