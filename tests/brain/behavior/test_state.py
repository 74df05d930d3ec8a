"""Per-session state: tracked sets/counters/flags, turns, isolation between sessions, freeing on close."""

from __future__ import annotations

import json
import threading
from pathlib import Path

from routedriver.brain.behavior import load_behavior_hook
from routedriver.brain.behavior.state import SessionState
from routedriver.brain.hooks import ToolEvent, ToolOutcome
from tests.brain.behavior.helpers import Session, engine_from

TRACKING = """
state_tracking:
  sets:
    read_files:
      add_on: [read, filesystem.read]
      target: file_path
      aliases: [path, filepath]
    tables_queried:
      add_on: [database.query, database.execute]
      target: table
  counters:
    changes_since_test:
      increment_on: [edit, write]
      reset_when: { tool: "bash, shell", param: command, matches: "pytest|npm test" }
    queries_since_schema:
      increment_on: [database.query]
      reset_on: [database.schema, database.describe]
  flags:
    synthesis_done:
      set_on: [memory.remember]
      unset_on: [web.fetch]
"""


def session() -> Session:
    s = Session(engine_from(TRACKING))
    s.turn()
    return s


def test_sets_collect_the_target_or_an_alias() -> None:
    s = session()
    s.call("read", file_path="a.py")
    s.call("filesystem__read", path="b.py")
    s.call("Read", filepath="/work/repo/c.py")
    s.call("grep", path="d.py")  # not an add_on tool
    assert list(s.state.sets["read_files"]) == ["/work/repo/a.py", "/work/repo/b.py", "/work/repo/c.py"]
    s.call("database.query", table="users", query="select")
    s.call("database__execute", table="orders", query="update")
    s.call("database.query", query="no table param")
    assert list(s.state.sets["tables_queried"]) == ["users", "orders"]


def test_counters_increment_reset_on_and_reset_when() -> None:
    s = session()
    for _ in range(3):
        s.call("edit", file_path="a.py")
    assert s.state.counters["changes_since_test"] == 3
    s.call("bash", command="ls")  # bash, but the command does not match
    assert s.state.counters["changes_since_test"] == 3
    s.call("shell", command="npm test -- --watch=false")  # any tool of the comma-separated list
    assert s.state.counters["changes_since_test"] == 0
    s.call("write", file_path="b.py")
    s.call("Bash", command="python -m PYTEST")  # the regex is case-insensitive
    assert s.state.counters["changes_since_test"] == 0
    for _ in range(2):
        s.call("database.query", query="select 1")
    assert s.state.counters["queries_since_schema"] == 2
    s.call("database.describe", table="users")
    assert s.state.counters["queries_since_schema"] == 0


def test_flags_set_and_unset() -> None:
    s = session()
    assert s.state.flags["synthesis_done"] is False
    s.call("memory.remember", text="x")
    assert s.state.flags["synthesis_done"] is True
    s.call("web__fetch", url="https://example.org")
    assert s.state.flags["synthesis_done"] is False


def test_a_failed_call_changes_no_tracked_state_but_still_resets() -> None:
    s = session()
    s.call("edit", file_path="a.py")
    s.pre("read", file_path="gone.py")
    s.post("read", ok=False, file_path="gone.py")  # the file could not be read: not in read_files
    s.pre("edit", file_path="a.py")
    s.post("edit", ok=False, file_path="a.py")  # old_string not found: no change made
    s.pre("memory.remember", text="x")
    s.post("memory.remember", ok=False, text="x")
    assert "/work/repo/gone.py" not in s.state.sets["read_files"]
    assert s.state.counters["changes_since_test"] == 1
    assert s.state.flags["synthesis_done"] is False
    s.pre("bash", command="pytest -q")
    s.post("bash", ok=False, command="pytest -q")  # failing tests are still a test run
    assert s.state.counters["changes_since_test"] == 0
    assert s.state.tool_calls_this_turn == 5  # the failed calls were calls all the same


def test_post_tool_rules_do_not_run_for_a_failed_call() -> None:
    s = Session(engine_from({"profile": "coding", "rules": {"plan_before_execute": False}}))
    s.turn()
    s.call("read", file_path="app.py")
    for attempt in range(3):
        assert s.pre("edit", file_path="app.py", old_string=f"nope{attempt}", new_string="y").block is False
        assert s.post("edit", ok=False, file_path="app.py", old_string=f"nope{attempt}", new_string="y") == ()
    assert s.state.counters["changes_since_test"] == 0
    _, notes = s.call("edit", file_path="app.py", old_string="x", new_string="y")
    assert [note.split(":")[0] for note in notes] == ["[BEHAVIOR REMINDER] verify_after_edit"]


def test_turns_reset_the_per_turn_numbers() -> None:
    s = session()
    s.call("read", file_path="a")
    s.call("read", file_path="b")
    assert (s.state.turn, s.state.tool_calls_this_turn, s.state.consecutive) == (1, 2, 2)
    s.turn("next")
    assert (s.state.turn, s.state.tool_calls_this_turn, s.state.consecutive, s.state.total_tool_calls) == (
        2,
        0,
        0,
        2,
    )
    assert s.state.sets["read_files"]  # tracked state survives the turn


def test_a_call_without_a_user_message_still_has_turn_one() -> None:
    s = Session(engine_from(TRACKING))
    s.call("read", file_path="a")
    assert s.state.turn == 1


def test_post_tool_uses_the_position_the_call_had_at_pre_tool() -> None:
    engine = engine_from(
        {
            "rule_definitions": [
                {
                    "id": "third",
                    "trigger": "*",
                    "when": "post_tool",
                    "action": "remind",
                    "condition": {"tool_calls_this_turn_eq": 3},
                    "message": "third call",
                }
            ]
        }
    )
    state = engine.new_state()
    engine.start_turn(state, "go")
    # three parallel calls: all pre_tools first, then the post_tools in another order
    for index in range(3):
        engine.pre_tool(state, call_id=f"p{index}", tool="read", params={"file_path": f"f{index}"})
    notes = {
        index: engine.post_tool(state, call_id=f"p{index}", tool="read", params={"file_path": f"f{index}"})
        for index in (2, 0, 1)
    }
    assert notes == {2: ("[BEHAVIOR REMINDER] third: third call",), 0: (), 1: ()}
    assert state.pending == {}


def test_a_pre_tool_remind_is_delivered_after_the_tool() -> None:
    s = Session(
        engine_from(
            {
                "rule_definitions": [
                    {
                        "id": "later",
                        "trigger": "fetch",
                        "when": "pre_tool",
                        "action": "remind",
                        "message": "cite {target}",
                    }
                ]
            }
        )
    )
    s.turn()
    decision = s.pre("fetch", url="https://a.example")
    assert decision.notes == () and decision.fired == ("later",)
    assert s.post("fetch", url="https://a.example") == ("[BEHAVIOR REMINDER] later: cite https://a.example",)


def test_state_round_trips_through_json() -> None:
    s = session()
    s.call("read", file_path="a.py")
    s.call("memory.remember", text="x")
    s.pre("edit", file_path="a.py")  # pending at save time
    copy = SessionState.from_json(json.loads(json.dumps(s.state.to_json())))
    assert copy == s.state


def test_sessions_never_share_state(tmp_path: Path) -> None:
    block = {"profile": "dev"}
    first = load_behavior_hook(block, config_path=tmp_path / "c.yaml", agent_model=None)
    second = load_behavior_hook(block, config_path=tmp_path / "c.yaml", agent_model=None)
    first.on_user_message("task")
    second.on_user_message("task")
    read = ToolEvent("r1", "read", {"file_path": "a.py"}, 1, 0, "Reading first.")
    first.pre_tool(read)
    first.post_tool(read, ToolOutcome(True, "content"))
    edit = ToolEvent(
        "e1", "edit", {"file_path": "a.py", "old_string": "a", "new_string": "b"}, 2, 0, "Editing."
    )
    assert not any("read_before_edit" in note for note in first.pre_tool(edit).notes)
    assert any("read_before_edit" in note for note in second.pre_tool(edit).notes)
    assert first.state.sets["read_files"] and not second.state.sets["read_files"]


def test_close_frees_the_state(tmp_path: Path) -> None:
    hook = load_behavior_hook({"profile": "dev"}, config_path=tmp_path / "c.yaml", agent_model=None)
    hook.on_user_message("task")
    read = ToolEvent("r1", "read", {"file_path": "a.py"}, 1, 0, "Reading.")
    hook.pre_tool(read)
    hook.post_tool(read, ToolOutcome(True, "x"))
    assert hook.active and hook.state.total_tool_calls == 1
    hook.close()
    assert not hook.active
    assert (
        hook.state.total_tool_calls == 0 and not hook.state.sets["read_files"]
    )  # a new session starts empty


def test_concurrent_calls_on_one_hook_lose_nothing(tmp_path: Path) -> None:
    hook = load_behavior_hook({"profile": "dev"}, config_path=tmp_path / "c.yaml", agent_model=None)
    hook.on_user_message("task")
    start = threading.Barrier(8)

    def work(worker: int) -> None:
        start.wait()
        for index in range(25):
            event = ToolEvent(f"w{worker}-{index}", "edit", {"file_path": f"f{worker}.py"}, 1, index, "x")
            hook.pre_tool(event)
            hook.post_tool(event, ToolOutcome(True, "ok"))

    threads = [threading.Thread(target=work, args=(worker,)) for worker in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert hook.state.total_tool_calls == 200
    assert hook.state.counters["changes_since_test"] == 200
