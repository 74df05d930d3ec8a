"""Tool calls written into the text (Hermes / Qwen ``<tool_call>`` tags) by a server without a call parser.

Through the real openai SDK against the fake Chat Completions server: the tags become tool calls, a block
that cannot be read becomes a malformed call (never the final answer), and nothing changes when no tools
were offered or the message carries real tool calls.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from routedriver.llm.openai_chat import OpenAIChat
from routedriver.llm.retry import RetryPolicy
from routedriver.llm.types import Message, ToolSpec
from tests.fakes.llm_servers import OpenAIServer, Reply
from tests.llm.conftest import API_KEY, READ

BASH = ToolSpec(
    "bash",
    "Run a command",
    {
        "type": "object",
        "properties": {"command": {"type": "string"}, "timeout": {"type": "number"}},
        "required": ["command"],
    },
)
TOOLS = [READ, BASH]
HELLO = [Message(role="user", text="go")]


def complete(server: OpenAIServer, content: str, tools: list[ToolSpec] = TOOLS, **reply: Any) -> Any:
    server.enqueue(Reply.text(content, **reply))
    chat = OpenAIChat(model="qwen-test", api_key=API_KEY, base_url=server.base_url, retry=RetryPolicy(0))
    return chat.complete(HELLO, tools=tools)


def test_hermes_tags_become_tool_calls_and_leave_the_text(openai_server: OpenAIServer) -> None:
    content = (
        "Let me look.\n<tool_call>\n"
        '{"name": "read", "arguments": {"file_path": "a.txt"}}\n</tool_call>\n'
        '<tool_call>\n{"name": "bash", "arguments": "{\\"command\\": \\"ls\\"}"}\n</tool_call>'
    )
    done = complete(openai_server, content)
    assert done.text == "Let me look."
    assert [(c.name, dict(c.arguments), c.malformed) for c in done.tool_calls] == [
        ("read", {"file_path": "a.txt"}, False),
        ("bash", {"command": "ls"}, False),
    ]
    assert len({c.id for c in done.tool_calls}) == 2 and done.stop_reason == "tool_use"


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        # no closing tag (the model stopped there), parameters instead of arguments, a fenced body
        ('<tool_call>{"name": "read", "parameters": {"file_path": "b"}}', [("read", {"file_path": "b"})]),
        (
            '<tool_call>\n```json\n{"name": "read", "arguments": {"file_path": "c"}}\n```\n</tool_call>',
            [("read", {"file_path": "c"})],
        ),
        # one block holding an array of calls; a call to a tool without arguments
        (
            '<tool_call>[{"name": "read", "arguments": {"file_path": "d"}}, {"name": "bash"}]</tool_call>',
            [("read", {"file_path": "d"}), ("bash", {})],
        ),
        # Qwen3-Coder's form: text values, a number read as a number because its schema says so
        (
            "<tool_call>\n<function=bash>\n<parameter=command>\nls -la\n</parameter>\n"
            "<parameter=timeout>\n30\n</parameter>\n</function>\n</tool_call>",
            [("bash", {"command": "ls -la", "timeout": 30})],
        ),
    ],
    ids=["unclosed", "fenced", "array", "qwen3-coder"],
)
def test_the_forms_open_models_write(
    openai_server: OpenAIServer, content: str, expected: list[tuple[str, dict[str, Any]]]
) -> None:
    done = complete(openai_server, content)
    assert [(c.name, dict(c.arguments)) for c in done.tool_calls] == expected
    assert not any(c.malformed for c in done.tool_calls) and done.text == ""


@pytest.mark.parametrize(
    ("content", "error"),
    [
        ('<tool_call>{"name": "read", "arguments": {"file_path": </tool_call>', "is not valid JSON"),
        ('<tool_call>{"arguments": {"file_path": "a"}}</tool_call>', "has no tool name"),
        ('<tool_call>{"name": "read", "arguments": ["a"]}</tool_call>', "arguments must be a JSON object"),
        ('<tool_call>{"name": "read", "arguments": "{oops"}</tool_call>', "arguments are not valid JSON"),
        ('<tool_call>"read"</tool_call>', "must hold a JSON object: <tool_call>{"),
        ("<tool_call><function=>x</function></tool_call>", "has no <function=NAME>"),
    ],
)
def test_a_block_that_cannot_be_read_is_a_malformed_call_quoting_it(
    openai_server: OpenAIServer, content: str, error: str
) -> None:
    done = complete(openai_server, "Calling now. " + content)
    (call,) = done.tool_calls
    assert call.malformed and call.error is not None and call.error.startswith("invalid tool call: ")
    assert error in call.error
    assert call.raw_arguments is not None and call.raw_arguments in content
    assert done.text == "Calling now." and done.stop_reason == "tool_use"  # not a final answer


def test_json_nested_too_deeply_is_a_malformed_call_not_a_crash(openai_server: OpenAIServer) -> None:
    """Python's JSON parser raises RecursionError, not JSONDecodeError, past about a thousand levels."""
    deep = "[" * 100_000 + "]" * 100_000
    (block,) = complete(openai_server, f"<tool_call>{deep}</tool_call>").tool_calls
    assert block.malformed and block.raw_arguments == deep
    assert block.error is not None and "text is not readable JSON (nested too deeply)" in block.error
    arguments = json.dumps({"name": "read", "arguments": deep})
    (in_string,) = complete(openai_server, f"<tool_call>{arguments}</tool_call>").tool_calls
    assert in_string.malformed and in_string.name == "read"
    assert (
        in_string.error is not None
        and "its arguments are not readable JSON (nested too deeply)" in in_string.error
    )
    coder = (
        f"<tool_call><function=bash><parameter=command>ls</parameter><parameter=timeout>{deep}</parameter>"
    )
    (typed,) = complete(openai_server, coder + "</function></tool_call>").tool_calls
    assert dict(typed.arguments) == {"command": "ls", "timeout": deep}  # text: the schema check reports it


def test_without_tools_offered_the_tags_stay_text(openai_server: OpenAIServer) -> None:
    content = 'Models write <tool_call>{"name": "read", "arguments": {}}</tool_call> when asked to.'
    done = complete(openai_server, content, tools=[])
    assert done.tool_calls == () and done.text == content and done.stop_reason == "end_turn"


def test_real_tool_calls_win_over_tags_in_the_text(openai_server: OpenAIServer) -> None:
    openai_server.enqueue(
        Reply.tool_calls([("read", {"file_path": "real"})], text='<tool_call>{"name": "bash"}</tool_call>')
    )
    chat = OpenAIChat(model="q", api_key=API_KEY, base_url=openai_server.base_url, retry=RetryPolicy(0))
    done = chat.complete(HELLO, tools=TOOLS)
    assert [(c.name, dict(c.arguments)) for c in done.tool_calls] == [("read", {"file_path": "real"})]
    assert done.text == '<tool_call>{"name": "bash"}</tool_call>'


def test_a_text_call_cut_by_the_token_limit_is_still_a_cut_answer(openai_server: OpenAIServer) -> None:
    done = complete(openai_server, '<tool_call>{"name": "read", "argu', stop_reason="max_tokens")
    assert done.stop_reason == "max_tokens" and done.tool_calls[0].malformed


def test_the_calls_go_back_to_the_server_as_real_tool_calls(openai_server: OpenAIServer) -> None:
    openai_server.enqueue(
        Reply.text('<tool_call>{"name": "read", "arguments": {"file_path": "a"}}</tool_call>'),
        Reply.text("done"),
    )
    chat = OpenAIChat(model="q", api_key=API_KEY, base_url=openai_server.base_url, retry=RetryPolicy(0))
    first = chat.complete(HELLO, tools=TOOLS)
    (call,) = first.tool_calls
    conversation = [
        *HELLO,
        Message(role="assistant", text=first.text, tool_calls=first.tool_calls),
        Message(role="tool", tool_call_id=call.id, text="aaa"),
    ]
    assert chat.complete(conversation, tools=TOOLS).text == "done"  # the server validates the history
    sent = openai_server.requests[1].json["messages"][1]
    assert sent["tool_calls"][0]["function"] == {"name": "read", "arguments": '{"file_path": "a"}'}
