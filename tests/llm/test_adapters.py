"""Behaviour both adapters share, each run with the REAL SDK against its local fake server."""

from __future__ import annotations

import email.utils
import socket
import time

import pytest

from routedriver.errors import ExitCode
from routedriver.llm.errors import (
    LLMAuthError,
    LLMBadRequest,
    LLMError,
    LLMRateLimited,
    LLMResponseError,
    LLMUnavailable,
    retry_note,
)
from routedriver.llm.retry import RetryPolicy
from routedriver.llm.types import ChatModel, Message, Usage
from tests.fakes.llm_servers import Call, Reply
from tests.llm.conftest import API_KEY, READ, Provider

HELLO = [Message(role="user", text="hello")]


def test_text_reply_and_usage(provider: Provider) -> None:
    provider.server.enqueue(Reply.text("Hi there.", input_tokens=123, output_tokens=45))
    chat = provider.chat()
    assert isinstance(chat, ChatModel)

    completion = chat.complete(HELLO)

    assert completion.text == "Hi there."
    assert completion.tool_calls == ()
    assert completion.usage == Usage(input_tokens=123, output_tokens=45)
    assert completion.stop_reason == "end_turn"
    assert completion.model == "test-model"
    assert len(provider.server.requests) == 1


def test_one_tool_call(provider: Provider) -> None:
    provider.server.enqueue(
        Reply.tool_calls([("read", {"file_path": "src/a.py"})], text="Let me look.", ids=["id_read_1"])
    )

    completion = provider.chat().complete(HELLO, tools=[READ])

    assert completion.text == "Let me look."
    assert completion.stop_reason == "tool_use"
    (call,) = completion.tool_calls
    assert (call.id, call.name, dict(call.arguments), call.malformed) == (
        "id_read_1",
        "read",
        {"file_path": "src/a.py"},
        False,
    )


def test_parallel_tool_calls_keep_their_order(provider: Provider) -> None:
    provider.server.enqueue(
        Reply.tool_calls(
            [
                ("read", {"file_path": "a"}),
                ("grep", {"pattern": "x", "path": "."}),
                ("bash", {"command": "ls"}),
            ]
        )
    )

    completion = provider.chat().complete(HELLO)

    assert [c.name for c in completion.tool_calls] == ["read", "grep", "bash"]
    assert [dict(c.arguments) for c in completion.tool_calls] == [
        {"file_path": "a"},
        {"pattern": "x", "path": "."},
        {"command": "ls"},
    ]
    ids = [c.id for c in completion.tool_calls]
    assert len(set(ids)) == 3 and all(ids)
    assert not any(c.malformed for c in completion.tool_calls)


def test_malformed_call_next_to_a_valid_one(provider: Provider) -> None:
    provider.server.enqueue(
        Reply.tool_calls(
            [
                ("read", {"file_path": "ok.txt"}),
                Call("bash", '{"command": "ls', id="broken_1"),
            ]
        )
    )

    completion = provider.chat().complete(HELLO)

    valid, broken = completion.tool_calls
    assert (valid.name, dict(valid.arguments), valid.error) == ("read", {"file_path": "ok.txt"}, None)
    assert broken.malformed and broken.id == "broken_1" and broken.name == "bash"
    assert broken.raw_arguments == '{"command": "ls'
    assert dict(broken.arguments) == {}
    assert broken.error is not None and broken.error.startswith("invalid tool call:")


def test_raw_tool_call_shorthand(provider: Provider) -> None:
    provider.server.enqueue(Reply.raw_tool_call("write", "[1, 2]", id="call_7"))

    (call,) = provider.chat().complete(HELLO).tool_calls

    assert call.id == "call_7" and call.name == "write" and call.malformed
    assert call.raw_arguments == "[1, 2]"


def test_missing_id_and_name_are_reported_not_raised(provider: Provider) -> None:
    provider.server.enqueue(
        Reply.tool_calls(
            [
                Call("read", {"file_path": "a"}, omit_id=True),
                Call(None, {"x": 1}, id="named_missing"),
                ("read", {"file_path": "b"}),
            ]
        )
    )

    no_id, no_name, fine = provider.chat().complete(HELLO).tool_calls

    assert no_id.malformed and "no id" in (no_id.error or "")
    assert no_id.id and no_id.id not in {no_name.id, fine.id}  # synthesized, and unique in the response
    assert no_name.malformed and no_name.id == "named_missing" and "name" in (no_name.error or "")
    assert not fine.malformed and dict(fine.arguments) == {"file_path": "b"}


def test_synthesized_ids_differ_across_responses(provider: Provider) -> None:
    provider.server.enqueue(
        Reply.tool_calls([Call("read", {}, omit_id=True)]), Reply.tool_calls([Call("read", {}, omit_id=True)])
    )
    chat = provider.chat()
    first = chat.complete(HELLO).tool_calls[0].id
    second = chat.complete(HELLO).tool_calls[0].id
    assert first != second


def test_max_tokens_stop_reason_is_normalized(provider: Provider) -> None:
    provider.server.enqueue(Reply.text("truncat", stop_reason="max_tokens"))
    assert provider.chat().complete(HELLO).stop_reason == "max_tokens"


def test_max_tokens_and_temperature_are_sent(provider: Provider) -> None:
    provider.server.enqueue(Reply.text("a"), Reply.text("b"))
    chat = provider.chat(default_max_tokens=321)
    chat.complete(HELLO)
    chat.complete(HELLO, max_tokens=77, temperature=0.25)
    first, second = (r.json for r in provider.server.requests)
    assert first["max_tokens"] == 321 and "temperature" not in first
    assert second["max_tokens"] == 77
    if provider.kind == "openai":
        assert second["temperature"] == 0.25
    else:  # the Messages API of the installed SDK (2026-10-21) has no sampling parameters
        assert "temperature" not in second
    assert first["model"] == "test-model"


def test_429_with_retry_after_is_waited_then_succeeds(provider: Provider) -> None:
    provider.server.enqueue(Reply.error(429, retry_after="7"), Reply.text("finally"))
    seen: list[tuple[int, float, BaseException]] = []

    completion = provider.chat(on_retry=lambda *args: seen.append(args)).complete(HELLO)

    assert completion.text == "finally"
    assert provider.sleeps == [7.0]
    assert len(provider.server.requests) == 2
    ((attempt, delay, error),) = seen
    assert (attempt, delay) == (1, 7.0)
    assert isinstance(error, LLMRateLimited) and error.status == 429
    assert retry_note(attempt, delay, error).endswith("retrying in 7.0 s (retry 1)")
    assert "HTTP 429" in retry_note(attempt, delay, error)


def test_retry_after_as_http_date_and_retry_after_ms(provider: Provider) -> None:
    in_30s = email.utils.formatdate(time.time() + 30, usegmt=True)
    provider.server.enqueue(
        Reply.error(503, retry_after=in_30s),
        Reply.error(429, headers={"retry-after-ms": "250"}),
        Reply.text("ok"),
    )

    assert provider.chat().complete(HELLO).text == "ok"

    date_wait, ms_wait = provider.sleeps
    assert 27.0 <= date_wait <= 30.0  # whole-second date resolution and the time the test took
    assert ms_wait == 0.25


def test_500_twice_then_success_backs_off_with_jitter(provider: Provider) -> None:
    provider.server.enqueue(Reply.error(500), Reply.error(502, message="bad gateway"), Reply.text("up"))

    assert provider.chat().complete(HELLO).text == "up"

    assert len(provider.server.requests) == 3
    first, second = provider.sleeps
    assert 0.0 <= first <= 0.5 and 0.0 <= second <= 1.0  # full jitter under base * 2**attempt


def test_500_until_retries_run_out(provider: Provider) -> None:
    provider.server.enqueue(*[Reply.error(500, message="boom") for _ in range(3)])
    chat = provider.chat(retry=RetryPolicy(max_retries=2, base_delay_s=0.01))

    with pytest.raises(LLMUnavailable) as caught:
        chat.complete(HELLO)

    error = caught.value
    assert len(provider.server.requests) == 3 and len(provider.sleeps) == 2
    assert error.status == 500 and error.retryable and error.attempts == 3
    assert error.exit_code == ExitCode.MALFUNCTION
    line = error.line()
    assert line.startswith("error: ") and "\n" not in line
    assert "HTTP 500" in line and "boom" in line and "after 3 attempts" in line


def test_529_overloaded_is_retried(provider: Provider) -> None:
    provider.server.enqueue(Reply.error(529), Reply.text("ok"))
    assert provider.chat().complete(HELLO).text == "ok"
    assert len(provider.sleeps) == 1


def test_sdk_does_not_retry_on_its_own(provider: Provider) -> None:
    provider.server.enqueue(Reply.error(500), Reply.text("never reached"))
    with pytest.raises(LLMUnavailable):
        provider.chat(retry=RetryPolicy(max_retries=0)).complete(HELLO)
    assert len(provider.server.requests) == 1
    assert provider.server.pending == 1


def test_retry_after_above_the_cap_surfaces_without_waiting(provider: Provider) -> None:
    provider.server.enqueue(Reply.error(429, retry_after="3600"), Reply.text("never reached"))

    with pytest.raises(LLMRateLimited) as caught:
        provider.chat().complete(HELLO)

    assert provider.sleeps == []
    assert len(provider.server.requests) == 1
    assert "3600 s" in str(caught.value) and "60 s" in str(caught.value)


def test_429_until_retries_run_out(provider: Provider) -> None:
    provider.server.enqueue(*[Reply.error(429, retry_after="1") for _ in range(3)])
    with pytest.raises(LLMRateLimited) as caught:
        provider.chat(retry=RetryPolicy(max_retries=2)).complete(HELLO)
    assert provider.sleeps == [1.0, 1.0]
    assert caught.value.attempts == 3 and caught.value.retryable


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_client_errors_are_never_retried(provider: Provider, status: int) -> None:
    provider.server.enqueue(Reply.error(status), Reply.text("never reached"))

    with pytest.raises(LLMError) as caught:
        provider.chat().complete(HELLO)

    assert len(provider.server.requests) == 1 and provider.sleeps == []
    expected = LLMAuthError if status in (401, 403) else LLMBadRequest
    assert type(caught.value) is expected
    assert caught.value.status == status and not caught.value.retryable


def test_401_names_the_key_variable_and_never_the_key(provider: Provider) -> None:
    # Real servers do echo (part of) the key; the adapter must scrub it from everything it says.
    provider.server.enqueue(Reply.error(401, message=f"Incorrect API key provided: {API_KEY}"))

    with pytest.raises(LLMAuthError) as caught:
        provider.chat(key_env="QWEN_API_KEY").complete(HELLO)

    error = caught.value
    assert API_KEY not in error.line() and API_KEY not in str(error) and API_KEY not in repr(error.args)
    assert error.fix == "check QWEN_API_KEY"
    assert "HTTP 401" in error.line()
    assert error.__cause__ is None and error.__suppress_context__  # no SDK exception (with headers) chained


def test_wrong_key_gets_the_servers_401(provider: Provider) -> None:
    chat = provider.chat(api_key="sk-wrong-key-000")
    with pytest.raises(LLMAuthError) as caught:
        chat.complete(HELLO)
    assert "sk-wrong-key-000" not in caught.value.line()
    assert provider.chat_class.default_key_env in caught.value.line()
    assert "sk-wrong-key-000" not in repr(chat)


def test_the_key_is_sent_to_the_server(provider: Provider) -> None:
    provider.server.enqueue(Reply.text("ok"))
    provider.chat().complete(HELLO)
    headers = provider.server.requests[0].headers
    assert API_KEY in (headers.get("x-api-key", "") + headers.get("authorization", ""))


def test_404_hints_at_the_model(provider: Provider) -> None:
    provider.server.enqueue(Reply.error(404))
    with pytest.raises(LLMBadRequest) as caught:
        provider.chat(model="no-such-model").complete(HELLO)
    assert "check --model ('no-such-model')" in caught.value.line()
    assert "no-such-model" in caught.value.what  # the server's own message names it


def test_wrong_base_url_path_is_a_clear_404(provider: Provider) -> None:
    chat = provider.chat(base_url=f"http://127.0.0.1:{provider.server.port}/wrong")
    with pytest.raises(LLMBadRequest) as caught:
        chat.complete(HELLO)
    assert caught.value.status == 404
    assert provider.server.requests[0].path.startswith("/wrong")
    assert "base URL" in caught.value.line()


def test_timeout_is_retried_then_reported(provider: Provider) -> None:
    provider.server.enqueue(Reply.text("slow", delay_s=3.0), Reply.text("slow", delay_s=3.0))
    chat = provider.chat(timeout_s=0.2, retry=RetryPolicy(max_retries=1, base_delay_s=0.0))

    with pytest.raises(LLMUnavailable) as caught:
        chat.complete(HELLO)

    assert "timed out after 0.2 s" in caught.value.line() and caught.value.attempts == 2
    assert caught.value.status is None and caught.value.retryable


def test_dropped_connection_is_retried(provider: Provider) -> None:
    provider.server.enqueue(Reply.disconnect(), Reply.text("reconnected"))
    assert provider.chat().complete(HELLO).text == "reconnected"
    assert len(provider.server.requests) == 2 and len(provider.sleeps) == 1


def test_nothing_listening_is_unavailable(provider: Provider) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    chat = provider.chat(
        base_url=f"http://127.0.0.1:{port}", retry=RetryPolicy(max_retries=1, base_delay_s=0.0)
    )
    with pytest.raises(LLMUnavailable) as caught:
        chat.complete(HELLO)
    assert f"cannot reach http://127.0.0.1:{port}" in caught.value.line()
    assert caught.value.fix == "check the base URL and the network"


@pytest.mark.parametrize(
    "reply",
    [
        Reply.raw("{not json"),
        Reply.raw("<html>gateway</html>", content_type="text/html"),
        Reply.raw("[1, 2, 3]"),
    ],
    ids=["broken-json", "html", "json-array"],
)
def test_unreadable_200_is_a_response_error(provider: Provider, reply: Reply) -> None:
    provider.server.enqueue(reply)
    with pytest.raises(LLMResponseError) as caught:
        provider.chat().complete(HELLO)
    assert caught.value.status == 200 and not caught.value.retryable
    assert "base URL" in caught.value.line()
    assert len(provider.server.requests) == 1


def test_concurrent_calls_share_one_adapter(provider: Provider) -> None:
    from concurrent.futures import ThreadPoolExecutor

    provider.server.responder = lambda recorded: Reply.text(
        recorded.json["messages"][-1]["content"]
        if provider.kind == "openai"
        else recorded.json["messages"][-1]["content"][0]["text"]
    )
    chat = provider.chat()
    prompts = [f"echo {n}" for n in range(12)]
    with ThreadPoolExecutor(max_workers=6) as pool:
        answers = list(pool.map(lambda p: chat.complete([Message(role="user", text=p)]).text, prompts))
    assert answers == prompts
    assert len(provider.server.requests) == 12


def test_missing_key_and_model_fail_before_any_call(provider: Provider) -> None:
    with pytest.raises(LLMAuthError) as caught:
        provider.chat(api_key="  ", key_env="DASHSCOPE_API_KEY")
    assert caught.value.line().endswith(": no API key was given; set DASHSCOPE_API_KEY")
    with pytest.raises(LLMBadRequest):
        provider.chat(model="")
    assert provider.server.requests == []
