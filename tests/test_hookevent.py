"""hookevent: one Claude Code hook event read strictly, or one line saying why it cannot be read."""

from __future__ import annotations

import json

import pytest

from routedriver.hookevent import MAX_BYTES, MISSING, UnreadableEvent, parse_event, path_problem, wrong

WRITE = {"hook_event_name": "PreToolUse", "tool_name": "Write", "tool_input": {"file_path": "a.md"}}


def test_an_event_is_one_json_object() -> None:
    text = json.dumps(WRITE)
    assert parse_event(text.encode("utf-8")) == WRITE
    assert parse_event(f"\n  {text}\n") == WRITE  # whitespace around it is JSON's own business
    assert parse_event('{"cwd": "/tmp/caf\u00e9"}'.encode()) == {"cwd": "/tmp/caf\u00e9"}


@pytest.mark.parametrize(
    ("data", "why"),
    [
        (b"", "the hook event is empty"),
        (b" \n\t", "the hook event is empty"),
        (b'{"tool_name": "Wr\xffite"}', "the hook event is not UTF-8 (byte 17)"),
        (b'{"tool_name": "Write", "tool_in', "the hook event is not JSON (Unterminated string"),
        (b"{not json", "the hook event is not JSON (Expecting property name"),
        (b"[1, 2]", "the hook event is a JSON array, not a JSON object"),
        (b"null", "the hook event is null, not a JSON object"),
        (b"7", "the hook event is a number, not a JSON object"),
        (b'"Write"', "the hook event is a string, not a JSON object"),
        (b"true", "the hook event is a boolean, not a JSON object"),
        (b'{"a": NaN}', "the hook event is not JSON (NaN is not a JSON number)"),
        (b'{"a": -Infinity}', "the hook event is not JSON (-Infinity is not a JSON number)"),
        (b'{"a": ' + b"9" * 5000 + b"}", "the hook event is not JSON (Exceeds the limit"),
        (
            b'{"tool_name": "Read", "tool_name": "Write"}',
            "the hook event is ambiguous: the key 'tool_name' appears twice in one object",
        ),
        (
            b'{"tool_input": {"file_path": "a.md", "file_path": "1.x.stone"}}',
            "the hook event is ambiguous: the key 'file_path' appears twice",
        ),
        (b"[" * 200_000 + b"]" * 200_000, "the hook event is nested too deeply to read"),
    ],
)
def test_what_cannot_be_read_is_refused_in_one_line(data: bytes, why: str) -> None:
    with pytest.raises(UnreadableEvent) as caught:
        parse_event(data)
    assert caught.value.what.startswith(why), caught.value.what
    line = caught.value.line()
    assert "\n" not in line
    assert line.endswith("; Claude Code passes the hook event as one JSON object on stdin")


def test_the_size_limit_is_far_above_a_real_event() -> None:
    assert MAX_BYTES == 64 << 20  # a Write carries its whole file; Claude Code's own output is far smaller


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("src/a.py", ""),
        ("/abs/with space/\u00e9.md", ""),
        (MISSING, "tool_input.file_path is missing"),
        (["a.md"], "tool_input.file_path is a JSON array, not a path"),
        ({"path": "a.md"}, "tool_input.file_path is an object, not a path"),
        (7, "tool_input.file_path is a number, not a path"),
        (None, "tool_input.file_path is null, not a path"),
        (False, "tool_input.file_path is a boolean, not a path"),
        ("", "tool_input.file_path is empty"),
        ("a\x00.stone", "tool_input.file_path holds a NUL character"),
    ],
)
def test_a_path_field_is_one_string(value: object, problem: str) -> None:
    assert path_problem("tool_input.file_path", value) == problem


def test_wrong_names_the_field_and_what_it_should_be() -> None:
    assert wrong("tool_input", "x", "an object") == "tool_input is a string, not an object"
    assert wrong("tool_input", MISSING, "an object") == "tool_input is missing"
