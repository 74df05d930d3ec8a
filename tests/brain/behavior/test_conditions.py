"""Every condition type, true and false; composites, short-circuit, unknown types, invalid regexes."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from routedriver.brain.behavior import conditions
from routedriver.brain.behavior.conditions import ConditionError, EvalContext, compile_condition
from routedriver.brain.behavior.state import SessionState


def ctx(
    *,
    params: dict[str, Any] | None = None,
    state: SessionState | None = None,
    calls: int = 1,
    streak: int = 1,
    text: str | None = "",
    outcome: dict[str, Any] | None = None,
    cwd: str = "/repo",
    set_targets: Mapping[str, tuple[str, ...]] | None = None,
    tool: str = "edit",
) -> EvalContext:
    return EvalContext(
        tool=tool,
        params=params or {},
        state=state or SessionState(),
        calls=calls,
        streak=streak,
        cwd=cwd,
        set_targets=set_targets or {},
        text=text,
        outcome_data=outcome,
    )


def check(spec: Any, context: EvalContext) -> bool | None:
    return compile_condition(spec)(context)


def state_with(**kwargs: Any) -> SessionState:
    state = SessionState()
    for name, members in kwargs.pop("sets", {}).items():
        for member in members:
            state.set_add(name, member)
    state.counters.update(kwargs.pop("counters", {}))
    state.flags.update(kwargs.pop("flags", {}))
    for key, value in kwargs.items():
        setattr(state, key, value)
    return state


class TestStateConditions:
    def test_target_not_in_set(self) -> None:
        state = state_with(sets={"read_files": ["/repo/a.py"]})
        assert check({"target_not_in_set": "read_files"}, ctx(params={"file_path": "b.py"}, state=state))
        assert not check({"target_not_in_set": "read_files"}, ctx(params={"file_path": "a.py"}, state=state))
        # no target at all: nothing to judge, the condition does not hold
        assert not check({"target_not_in_set": "read_files"}, ctx(params={}, state=state))

    def test_target_in_set_normalizes_paths(self) -> None:
        state = state_with(sets={"read_files": ["/repo/src/a.py"]})
        for spelled in ("src/a.py", "./src/a.py", "/repo/src/../src/a.py", "/repo/src/a.py"):
            assert check({"target_in_set": "read_files"}, ctx(params={"file_path": spelled}, state=state)), (
                spelled
            )
        assert not check({"target_in_set": "read_files"}, ctx(params={"file_path": "src/b.py"}, state=state))

    def test_target_uses_the_sets_configured_parameter(self) -> None:
        state = state_with(sets={"tables": ["users"]})
        context = ctx(
            params={"table": "users", "query": "select 1"}, state=state, set_targets={"tables": ("table",)}
        )
        assert check({"target_in_set": "tables"}, context)
        assert not check({"target_not_in_set": "tables"}, context)

    def test_counter_gte(self) -> None:
        state = state_with(counters={"changes": 3})
        assert check({"counter_gte": {"name": "changes", "value": 3}}, ctx(state=state))
        assert not check({"counter_gte": {"name": "changes", "value": 4}}, ctx(state=state))
        assert not check({"counter_gte": {"name": "missing", "value": 1}}, ctx(state=state))

    def test_flag_is(self) -> None:
        state = state_with(flags={"backup_created": True})
        assert check({"flag_is": {"name": "backup_created", "value": True}}, ctx(state=state))
        assert not check({"flag_is": {"name": "backup_created", "value": False}}, ctx(state=state))
        assert check({"flag_is": {"name": "never_set", "value": False}}, ctx(state=state))


class TestParamConditions:
    def test_param_matches_is_a_case_insensitive_search(self) -> None:
        spec = {"param_matches": {"param": "query", "pattern": "(UPDATE|DELETE)"}}
        assert check(spec, ctx(params={"query": "delete from t"}))
        assert not check(spec, ctx(params={"query": "select * from t"}))
        assert not check(spec, ctx(params={}))

    def test_param_matches_non_string_values_as_json(self) -> None:
        spec = {"param_matches": {"param": "edits", "pattern": "secret"}}
        assert check(spec, ctx(params={"edits": [{"new_string": "SECRET=1"}]}))

    def test_command_matches_each_command_the_bash_reader_finds(self) -> None:
        spec = {"command_matches": {"param": "command", "pattern": "^git reset (.* )?--hard( |$)"}}
        assert check(spec, ctx(params={"command": "git -C . reset --hard"}))
        assert check(spec, ctx(params={"command": "ls && sudo git --no-pager reset --hard HEAD"}))
        assert check(spec, ctx(params={"command": "echo $(git reset --hard)"}))
        assert not check(spec, ctx(params={"command": "echo 'git reset --hard'"}))
        assert not check(spec, ctx(params={"command": "git reset --soft; echo --hard"}))
        assert not check(spec, ctx(params={"command": ["git", "reset", "--hard"]}))  # not a command line
        assert not check(spec, ctx(params={}))

    def test_command_matches_cannot_tell_when_the_reader_is_unsure(self) -> None:
        """The audit: `^rm` did not match these, and the engine let them run (they delete the directory)."""
        spec = {"command_matches": {"param": "command", "pattern": "^rm"}}
        for command in ("echo $($($($($($($(rm -rf victim)))))))", "X=rm; $X -rf victim"):
            context = ctx(params={"command": command})
            assert check(spec, context) is None, command
            assert context.unsure, "the reader's reason is kept for the message"
        assert check(spec, ctx(params={"command": "X=rm; $X -rf victim; rm -rf x"})) is True  # found: True
        assert check(spec, ctx(params={"command": "ls -la"})) is False

    def test_cannot_tell_combines_as_kleenes_logic(self) -> None:
        unsure = {"command_matches": {"param": "command", "pattern": "^rm"}}
        yes = {"param_contains": {"param": "command", "value": "victim"}}
        no = {"param_contains": {"param": "command", "value": "absent"}}
        context = ctx(params={"command": "X=rm; $X -rf victim"})
        table = [
            ({"all": [unsure, yes]}, None),
            ({"all": [unsure, no]}, False),  # False wins an all
            ({"all": [no, unsure]}, False),
            ({"any": [unsure, yes]}, True),  # True wins an any
            ({"any": [unsure, no]}, None),
            ({"not": unsure}, None),  # what cannot be told stays so when negated
            ({"not": {"any": [unsure, yes]}}, False),
            ({**yes, **unsure}, None),  # several keys are an all
        ]
        for spec, expected in table:
            assert check(spec, context) is expected, spec

    def test_param_contains(self) -> None:
        spec = {"param_contains": {"param": "file_path", "value": "Migration"}}
        assert check(spec, ctx(params={"file_path": "db/migrations/001.sql"}))
        assert not check(spec, ctx(params={"file_path": "db/models.py"}))


class TestTurnConditions:
    def test_no_text_before_tools(self) -> None:
        assert check({"no_text_before_tools": True}, ctx(text="  "))
        assert not check({"no_text_before_tools": True}, ctx(text="First I will read the file."))
        assert check({"no_text_before_tools": False}, ctx(text="First I will read the file."))
        # text earlier in the turn counts as text before the tools
        assert not check({"no_text_before_tools": True}, ctx(text="", state=state_with(text_this_turn=True)))
        # unknown text (hook mode) never fires
        assert not check({"no_text_before_tools": True}, ctx(text=None))

    def test_first_tool_this_turn(self) -> None:
        assert check({"first_tool_this_turn": True}, ctx(calls=1))
        assert not check({"first_tool_this_turn": True}, ctx(calls=2))
        assert check({"first_tool_this_turn": False}, ctx(calls=2))

    def test_consecutive_gte(self) -> None:
        assert check({"consecutive_gte": 5}, ctx(streak=5))
        assert check({"consecutive_gte": 5}, ctx(streak=6))
        assert not check({"consecutive_gte": 5}, ctx(streak=4))

    def test_tool_calls_this_turn_eq(self) -> None:
        assert check({"tool_calls_this_turn_eq": 8}, ctx(calls=8))
        assert not check({"tool_calls_this_turn_eq": 8}, ctx(calls=7))
        assert not check({"tool_calls_this_turn_eq": 8}, ctx(calls=9))


class TestResultConditions:
    def test_target_exists_on_disk(self, tmp_path: Path) -> None:
        (tmp_path / "there.txt").write_text("x", encoding="utf-8")
        assert check(
            {"target_exists_on_disk": True}, ctx(params={"file_path": "there.txt"}, cwd=str(tmp_path))
        )
        assert not check(
            {"target_exists_on_disk": True}, ctx(params={"file_path": "gone.txt"}, cwd=str(tmp_path))
        )
        assert check({"target_exists_on_disk": False}, ctx(params={"path": str(tmp_path / "gone")}))

    def test_text_matches(self) -> None:
        assert check({"text_matches": "not sure|unsure"}, ctx(text="I am NOT SURE this works"))
        assert not check({"text_matches": "not sure|unsure"}, ctx(text="This works."))
        assert not check({"text_matches": "not sure"}, ctx(text=None))

    def test_result_has_lint_errors(self) -> None:
        errors = {"lint": [{"severity": "warning"}, {"severity": "error", "message": "E999"}]}
        assert check({"result_has_lint_errors": True}, ctx(outcome=errors))
        assert check({"result_has_lint_errors": True}, ctx(outcome={"data": errors}))
        assert not check({"result_has_lint_errors": True}, ctx(outcome={"lint": [{"severity": "warning"}]}))
        assert not check({"result_has_lint_errors": True}, ctx(outcome={"lint": "error"}))
        assert not check({"result_has_lint_errors": True}, ctx(outcome=None))  # before the tool ran


class TestComposites:
    def test_empty_condition_always_holds(self) -> None:
        assert check({}, ctx())
        assert check(None, ctx())

    def test_all_any_not_nest(self) -> None:
        spec = {
            "all": [
                {"param_matches": {"param": "query", "pattern": "(UPDATE|DELETE)"}},
                {"flag_is": {"name": "backup_created", "value": False}},
                {"not": {"target_in_set": "verified_tables"}},
            ]
        }
        targets = {"verified_tables": ("table",)}
        fresh = ctx(params={"query": "DELETE FROM t", "table": "t"}, set_targets=targets)
        assert check(spec, fresh)
        verified = ctx(
            params={"query": "DELETE FROM t", "table": "t"},
            set_targets=targets,
            state=state_with(sets={"verified_tables": ["t"]}),
        )
        assert not check(spec, verified)
        any_spec = {
            "any": [
                {"param_contains": {"param": "command", "value": "rm -rf"}},
                {"param_contains": {"param": "command", "value": "git reset --hard"}},
            ]
        }
        assert check(any_spec, ctx(params={"command": "git reset --hard HEAD~1"}))
        assert not check(any_spec, ctx(params={"command": "git status"}))

    def test_several_keys_mean_all(self) -> None:
        spec = {"first_tool_this_turn": True, "consecutive_gte": 1}
        assert check(spec, ctx(calls=1))
        assert not check(spec, ctx(calls=2))

    def test_all_and_any_short_circuit(self, monkeypatch: pytest.MonkeyPatch) -> None:
        evaluated: list[str] = []

        def probe(name: str, result: bool) -> Any:
            def run(_: EvalContext) -> bool:
                evaluated.append(name)
                return result

            return run

        builders = conditions._BUILDERS  # undone by monkeypatch after the test
        monkeypatch.setitem(builders, "probe_false", lambda arg, path: probe(f"false:{arg}", False))
        monkeypatch.setitem(builders, "probe_true", lambda arg, path: probe(f"true:{arg}", True))
        assert not check({"all": [{"probe_false": 1}, {"probe_true": 2}]}, ctx())
        assert evaluated == ["false:1"]  # the second branch never ran
        evaluated.clear()
        assert check({"any": [{"probe_true": 1}, {"probe_false": 2}]}, ctx())
        assert evaluated == ["true:1"]
        evaluated.clear()
        assert check({"all": [{"probe_true": 1}, {"any": [{"probe_true": 2}, {"probe_false": 3}]}]}, ctx())
        assert evaluated == ["true:1", "true:2"]


class TestBadConditions:
    def test_unknown_type_never_fires_and_is_logged(self, caplog: pytest.LogCaptureFixture) -> None:
        conditions._warned.discard(
            "behavior: unknown condition type: moon_phase_is (at condition.moon_phase_is); "
            "the rule will never fire"
        )
        with caplog.at_level(logging.WARNING, logger="routedriver.brain.behavior"):
            compiled = compile_condition({"moon_phase_is": "full"})
        assert not compiled(ctx())
        assert "behavior: unknown condition type: moon_phase_is" in caplog.text
        # inside a composite it makes the whole rule silent too, even under `not`'s neighbours
        assert not check({"all": [{"first_tool_this_turn": True}, {"moon_phase_is": "full"}]}, ctx(calls=1))

    @pytest.mark.parametrize(
        ("spec", "path"),
        [
            ({"param_matches": {"param": "q", "pattern": "(unclosed"}}, "condition.param_matches.pattern"),
            ({"command_matches": {"param": "q", "pattern": "a{2,1}"}}, "condition.command_matches.pattern"),
            ({"any": [{"text_matches": "[z-a]"}]}, "condition.any[0].text_matches"),
        ],
    )
    def test_an_invalid_regex_is_a_config_error(self, spec: Any, path: str) -> None:
        with pytest.raises(ConditionError) as caught:
            compile_condition(spec)
        assert caught.value.path == path and "invalid regex" in caught.value.message

    @pytest.mark.parametrize(
        ("spec", "path"),
        [
            ({"counter_gte": {"name": "x"}}, "condition.counter_gte"),
            ({"counter_gte": {"name": "x", "value": "lots"}}, "condition.counter_gte.value"),
            ({"flag_is": {"name": "x", "value": "yes"}}, "condition.flag_is.value"),
            ({"param_matches": {"param": "q", "pattern": "x", "flags": "i"}}, "condition.param_matches"),
            ({"all": {"first_tool_this_turn": True}}, "condition.all"),
            ({"any": [{"consecutive_gte": "many"}]}, "condition.any[0].consecutive_gte"),
            ({"target_in_set": ""}, "condition.target_in_set"),
            ("first_tool_this_turn", "condition"),
        ],
    )
    def test_malformed_arguments_are_config_errors(self, spec: Any, path: str) -> None:
        with pytest.raises(ConditionError) as caught:
            compile_condition(spec)
        assert caught.value.path == path
