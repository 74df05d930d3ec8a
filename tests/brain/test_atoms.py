"""The atom registry and the scripted atom's file format."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from routedriver.brain.atoms import AtomOptions, UnknownAtom, atom_names, create_atom
from routedriver.brain.atoms.scripted import ScriptedModel, load_script
from routedriver.errors import Malfunction, Refused
from routedriver.llm.types import Completion, Message
from tests.brain.helpers import bhrain, scripted_run, write_script


def test_scripted_turns_tool_calls_and_usage(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        "model: demo\ncontext_window: 5000\nturns:\n"
        "  - text: looking\n"
        "    tool_calls:\n"
        "      - {name: read, arguments: {file_path: a.md}, id: c1}\n"
        "      - {name: write, raw_arguments: '[1, 2]'}\n"
        '      - {name: edit, raw_arguments: \'{"file_path": "x"}\'}\n'
        "      - {arguments: {}}\n"
        "    usage: {input_tokens: 11, output_tokens: 3}\n"
        "  - plain text turn\n",
        encoding="utf-8",
    )
    model = load_script(path)
    assert (model.model, model.context_window, model.name) == ("demo", 5000, "scripted")
    first = model.complete([Message("user", "go")])
    read, write, edit, nameless = first.tool_calls
    assert (read.id, read.name, dict(read.arguments), read.malformed) == (
        "c1",
        "read",
        {"file_path": "a.md"},
        False,
    )
    assert write.malformed and "must be a JSON object, not a JSON array" in str(write.error)
    assert not edit.malformed and edit.arguments == {"file_path": "x"} and edit.id == "call_1_3"
    assert nameless.malformed and nameless.error == "the tool call has no name"
    assert (first.usage.input_tokens, first.usage.output_tokens, first.stop_reason) == (11, 3, "tool_use")
    second = model.complete([Message("user", "go")], system="sys")
    assert second == Completion("plain text turn", (), second.usage, "end_turn", "demo")
    assert second.usage.input_tokens > 0  # estimated when the script gives none


@pytest.mark.parametrize(
    ("script", "said"),
    [
        # raw_arguments: 5 was an internal error (TypeError) at the first model call
        (
            {"turns": [{"tool_calls": [{"name": "read", "raw_arguments": 5}]}]},
            "turn 1: tool call 1: raw_arguments must be a string, not int",
        ),
        ({"turns": [{"tool_calls": [{"name": 5}]}]}, "turn 1: tool call 1: name must be a string, not int"),
        (
            {"turns": [{"tool_calls": [{"name": "read", "id": ["x"]}]}]},
            "turn 1: tool call 1: id must be a string, not list",
        ),
        (
            {"turns": ["a", {"tool_calls": [{"name": "read", "error": {}}]}]},
            "turn 2: tool call 1: error must be a string",
        ),
        # printed as a Python repr ("['a', {'b': 1}]") before
        ({"turns": [{"text": ["a", {"b": 1}]}]}, "turn 1: text must be a string, not list"),
        (
            {"turns": [{"choose": [{"if_contains": [1], "text": "x"}]}]},
            "turn 1: choice 1: if_contains must be a string or a list",
        ),
        ({"model": 5, "turns": ["a"]}, "model must be a string, not int"),
    ],
)
def test_scripted_values_of_the_wrong_type_are_refused_at_load(
    tmp_path: Path, script: dict[str, Any], said: str
) -> None:
    path = tmp_path / "s.json"
    path.write_text(json.dumps(script), encoding="utf-8")
    with pytest.raises(Refused) as caught:
        load_script(path)
    assert caught.value.line().startswith(f"error: {path}: {said}")


def test_scripted_values_of_the_wrong_type_are_one_line_from_bhrain(tmp_path: Path) -> None:
    script = write_script(
        tmp_path / "s.json", [{"tool_calls": [{"name": "read", "raw_arguments": 5}]}, "done"]
    )
    ran = bhrain([*scripted_run(script), "--input", "x", "--sandbox", "off"], tmp_path)
    assert (ran.code, ran.out) == (2, "")
    said = "turn 1: tool call 1: raw_arguments must be a string, not int; write the arguments as JSON text"
    assert ran.err == f"error: {script}: {said}\n"


def test_scripted_raw_arguments_nested_too_deeply_are_a_malformed_call(tmp_path: Path) -> None:
    """Read as the adapters read a model's arguments: Python's JSON parser raises RecursionError here."""
    path = tmp_path / "s.json"
    deep = "[" * 100_000 + "]" * 100_000
    path.write_text(json.dumps({"turns": [{"tool_calls": [{"name": "read", "raw_arguments": deep}]}]}))
    (call,) = load_script(path).complete([Message("user", "go")]).tool_calls
    assert call.malformed and call.raw_arguments == deep
    assert call.error == "the arguments are not readable JSON (nested too deeply)"


def test_running_out_of_turns_is_a_clear_malfunction(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text('["only one"]', encoding="utf-8")
    model = load_script(path)
    model.complete([Message("user", "go")])
    with pytest.raises(Malfunction) as caught:
        model.complete([Message("user", "go")])
    assert caught.value.line() == (
        f"error: script {path} has no turn left for model call 2 (it has 1 turns); "
        "add a final turn with text only, which ends the run"
    )


def test_choose_picks_the_first_alternative_whose_text_appears(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    path.write_text(
        "- choose:\n    - {if_contains: TODO, text: found a todo}\n    - {text: clean}\n"
        "- choose:\n    - {if_contains: [a, b], text: both}\n",
        encoding="utf-8",
    )
    model = load_script(path)
    assert model.complete([Message("user", "x TODO y")]).text == "found a todo"
    with pytest.raises(Malfunction, match="no alternative of model call 2"):
        model.complete([Message("user", "only a")])
    fresh = load_script(path)
    assert fresh.complete([Message("user", "nothing to see")]).text == "clean"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[]", "has no turns"),
        ("turns: []", "has no turns"),
        ("- {txt: hi}", "turn 1: unknown key 'txt'"),
        ("- {tool_calls: {name: x}}", "turn 1: tool_calls must be a list"),
        ("- {tool_calls: [{name: x, arguments: 3}]}", "arguments must be a mapping"),
        ("- {tool_calls: [{name: x, args: {}}]}", "tool call 1: unknown key 'args'"),
        ("{turns: [hi], context_window: -1}", "context_window must be a positive integer"),
        ("{turns: [hi], window: 10}", "unknown key 'window'"),
        ("- [unclosed", "malformed YAML"),
    ],
)
def test_bad_scripts_are_refused_naming_the_file_and_place(
    tmp_path: Path, content: str, message: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(Refused) as caught:
        load_script(path)
    assert message in caught.value.line() and str(path) in caught.value.line()


def test_unknown_atom_lists_the_available_ones() -> None:
    with pytest.raises(UnknownAtom) as caught:
        create_atom("gpt5", AtomOptions())
    assert caught.value.line().startswith(
        "error: unknown atom 'gpt5'; available atoms: claude, qwen, scripted"
    )
    assert caught.value.exit_code == 2


class EchoModel:
    name = "echo"
    model = "echo-1"
    context_window = 1000

    def __init__(self, options: AtomOptions | None = None) -> None:
        self.options = options

    def complete(self, messages: object, **kwargs: object) -> Completion:
        return Completion("echo")


def test_atoms_by_import_path_as_class_factory_or_instance() -> None:
    made = create_atom("tests.brain.test_atoms:EchoModel", AtomOptions(model="m"))
    assert isinstance(made, EchoModel) and made.options is not None and made.options.model == "m"
    assert create_atom("tests.brain.test_atoms:INSTANCE", AtomOptions()) is INSTANCE
    with pytest.raises(Refused, match="has no 'complete'"):
        create_atom("tests.brain.test_atoms:not_a_model", AtomOptions())


INSTANCE = EchoModel()


def not_a_model(options: AtomOptions) -> object:
    return object()


@pytest.fixture
def entry_point_atom(tmp_path: Path) -> Iterator[None]:
    """A distribution on sys.path that registers an atom in the bhrain.atoms entry-point group."""
    dist = tmp_path / "echo_atom-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: echo-atom\nVersion: 1.0\n", encoding="utf-8")
    (dist / "entry_points.txt").write_text(
        "[bhrain.atoms]\necho = tests.brain.test_atoms:EchoModel\n", encoding="utf-8"
    )
    sys.path.insert(0, str(tmp_path))
    yield
    sys.path.remove(str(tmp_path))


def test_atoms_registered_through_entry_points(entry_point_atom: None) -> None:
    assert "echo" in atom_names()
    assert isinstance(create_atom("echo", AtomOptions()), EchoModel)


def test_scripted_atom_needs_a_script() -> None:
    with pytest.raises(Refused, match="pass --script FILE"):
        create_atom("scripted", AtomOptions())


def test_scripted_atom_honours_model_and_context_window_overrides(tmp_path: Path) -> None:
    path = tmp_path / "s.json"
    path.write_text('["hi"]', encoding="utf-8")
    made = create_atom("scripted", AtomOptions(script=path, model="x", context_window=99))
    assert isinstance(made, ScriptedModel) and (made.model, made.context_window) == ("x", 99)
