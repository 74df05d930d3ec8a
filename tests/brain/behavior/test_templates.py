"""Rule message templates: every placeholder, the 100-character cut, unknown placeholders left alone."""

from __future__ import annotations

from routedriver.brain.behavior.state import SessionState
from routedriver.brain.behavior.templates import render
from tests.brain.behavior.helpers import Session, engine_from


def state() -> SessionState:
    s = SessionState(turn=3)
    s.counters["queries"] = 4
    s.set_add("tables", "users")
    s.set_add("tables", "orders")
    s.flags["backup_created"] = True
    return s


def fill(template: str, **params: object) -> str:
    return render(template, tool="database__execute", params=params, state=state(), calls=7, streak=2)


def test_every_placeholder() -> None:
    text = fill(
        "{tool} on {target} turn {turn} call {tool_calls_this_turn} streak {consecutive_same_tool} "
        "q={param:query} n={counter:queries} t={set_count:tables} b={flag:backup_created} "
        "f={flag:never} c={counter:never} s={set_count:never}",
        file_path="db.sqlite",
        query="SELECT 1",
    )
    assert text == ("execute on db.sqlite turn 3 call 7 streak 2 q=SELECT 1 n=4 t=2 b=True f=False c=0 s=0")


def test_target_prefers_file_path_then_path_url_query_pattern() -> None:
    assert fill("{target}", path="p", url="u") == "p"
    assert fill("{target}", url="https://x", query="q") == "https://x"
    assert fill("{target}", pattern="needle") == "needle"
    assert fill("{target}", command="ls") == ""


def test_long_params_are_cut_to_100_characters() -> None:
    text = fill("{param:query}", query="x" * 500)
    assert len(text) == 100 and text.endswith("…")
    assert fill("{param:edits}", edits=[{"old": "a"}]) == '[{"old": "a"}]'
    assert fill("[{param:missing}]") == "[]"


def test_unknown_placeholders_and_stray_braces_are_left_as_is() -> None:
    template = '{oops} {param:} {counter} {0} {__class__} {target.__class__} {{double}} json: {"a": 1}'
    assert fill(template, file_path="f") == template


def test_messages_render_through_the_engine() -> None:
    session = Session(
        engine_from(
            {
                "rule_definitions": [
                    {
                        "id": "count",
                        "trigger": "*",
                        "message": "{tool} #{tool_calls_this_turn} on {target} ({consecutive_same_tool})",
                    }
                ]
            }
        )
    )
    session.turn()
    session.call("read", file_path="a.py")
    decision = session.pre("Read", file_path="b.py")
    assert decision.notes == ("[BEHAVIOR WARNING] count: read #2 on b.py (2)",)


def test_an_empty_message_gets_a_default() -> None:
    session = Session(engine_from({"rule_definitions": [{"id": "bare", "trigger": "grep"}]}))
    session.turn()
    assert session.pre("grep", pattern="x").notes == ("[BEHAVIOR WARNING] bare: rule bare matched on grep",)
