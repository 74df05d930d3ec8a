"""Every way a bundle can be wrong: one line on stderr naming the file and the fix, exit 2, no case run."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.behaviorci.helpers import invoke, one_error_line, write_bundle
from tests.conftest import run_cli


def _set(key: str, value: object) -> Callable[[Path], Path]:
    return lambda root: write_bundle(root, {key: value})


def _provider(**values: object) -> Callable[[Path], Path]:
    return lambda root: write_bundle(root, {"provider": {"name": "mock", **values}})


def _raw(text: str) -> Callable[[Path], Path]:
    return lambda root: write_bundle(root, raw_yaml=text)


def _remove(name: str) -> Callable[[Path], Path]:
    def build(root: Path) -> Path:
        path = write_bundle(root)
        (root / name).unlink()
        return path

    return build


def _files(texts: dict[str, str]) -> Callable[[Path], Path]:
    def build(root: Path) -> Path:
        path = write_bundle(root)
        for name, text in texts.items():
            (root / name).write_text(text, encoding="utf-8")
        return path

    return build


def _write(name: str, text: str) -> Callable[[Path], Path]:
    def build(root: Path) -> Path:
        path = write_bundle(root)
        (root / name).write_text(text, encoding="utf-8")
        return path

    return build


CASES: list[tuple[str, Callable[[Path], Path], list[str]]] = [
    (
        "unknown top-level key",
        _set("paralel", True),
        ["bundle.yaml", "unknown key 'paralel'", "allowed here:"],
    ),
    ("unknown nested key", _provider(temprature=0.5), ["unknown key 'provider.temprature'", "temperature"]),
    (
        "unknown threshold key",
        _set("thresholds", [{"metric": "pass_rate", "value": 1, "op": ">="}]),
        ["unknown key 'thresholds[0].op'"],
    ),
    (
        "unknown contract key",
        _set("output_contract", {"invariant": ["True"]}),
        ["unknown key 'output_contract.invariant'", "invariants"],
    ),
    ("unknown cache key", _set("cache", {"directory": "x"}), ["unknown key 'cache.directory'"]),
    (
        "unknown metric",
        _set("thresholds", [{"metric": "accuracy", "value": 1}]),
        ["thresholds[0].metric", "unknown metric 'accuracy'", "pass_rate"],
    ),
    (
        "bad operator",
        _set("thresholds", [{"metric": "pass_rate", "operator": "=>", "value": 1}]),
        ["thresholds[0].operator"],
    ),
    (
        "negative threshold",
        _set("thresholds", [{"metric": "pass_rate", "value": -1}]),
        ["thresholds[0].value"],
    ),
    ("unknown provider", _provider(name="gemini"), ["unknown provider 'gemini'", "openai, anthropic, mock"]),
    ("temperature out of range", _provider(temperature=3), ["provider.temperature"]),
    (
        "mock setting on openai",
        lambda root: write_bundle(root, {"provider": {"name": "openai", "responses": {}}}),
        ["'responses' is a mock provider setting"],
    ),
    ("bad failure status", _provider(failure_status=200), ["failure_status"]),
    (
        "parallel false with concurrency",
        lambda root: write_bundle(root, {"parallel": False, "concurrency": 4}),
        ["parallel: false contradicts concurrency: 4"],
    ),
    ("zero repeat", _set("repeat", 0), ["'repeat'"]),
    ("min_pass_rate above 1", _set("min_pass_rate", 1.5), ["'min_pass_rate'"]),
    ("zero timeout", _set("timeout", 0), ["'timeout'"]),
    (
        "duplicate key",
        _raw("name: x\nprompt_path: prompt.md\ndataset_path: dataset.jsonl\nrepeat: 2\nrepeat: 3\n"),
        ["key 'repeat' appears twice (line 4 and line 5)"],
    ),
    (
        "duplicate nested key",
        _raw("name: x\nprompt_path: p.md\ndataset_path: d.jsonl\nprovider:\n  name: mock\n  name: openai\n"),
        ["key 'provider.name' appears twice (line 5 and line 6)"],
    ),
    (
        "lone surrogate in bundle.yaml",
        _raw('name: "caf\\ud83d"\nprompt_path: prompt.md\ndataset_path: dataset.jsonl\n'),
        ["'name' holds a lone surrogate"],
    ),
    (
        "mock response for no case",
        _provider(responses={"q9": "x"}),
        ["provider.responses names case 'q9'", "q1"],
    ),
    ("mock cycle for no case", _provider(cycle={"Q1": ["x"]}), ["provider.cycle names case 'Q1'"]),
    ("mock failure for no case", _provider(fail_cases=["q1", 7]), ["provider.fail_cases names case '7'"]),
    (
        "infinite threshold",
        _set("thresholds", [{"metric": "pass_rate", "value": float("inf")}]),
        ["thresholds[0].value", "finite"],
    ),
    ("infinite timeout", _set("timeout", float("inf")), ["'timeout'", "finite"]),
    ("NUL in prompt_path", _set("prompt_path", "prompt.md\0x"), ["'prompt_path'", "NUL character"]),
    (
        "NUL in schema_path",
        _set("output_contract", {"schema_path": "schema.json\0"}),
        ["'output_contract.schema_path'", "NUL character"],
    ),
    # The runner's settings (tests/behaviorci/test_runner_only.py plays the attacks): refused in every bundle.
    ("cache.dir", _set("cache", {"dir": "c"}), ["bundle.yaml sets cache.dir", "pass --cache-dir DIR"]),
    (
        "base_url of a mock bundle",
        _provider(base_url="http://127.0.0.1:9/v1"),
        ["bundle.yaml sets provider.base_url", "pass --base-url URL"],
    ),
    (
        "missing name",
        _raw("prompt_path: prompt.md\ndataset_path: dataset.jsonl\n"),
        ["missing required key 'name'"],
    ),
    (
        "missing prompt_path",
        _raw("name: x\ndataset_path: dataset.jsonl\n"),
        ["missing required key 'prompt_path'"],
    ),
    ("empty dataset_path", _raw("name: x\nprompt_path: prompt.md\ndataset_path: ' '\n"), ["dataset_path"]),
    ("invalid YAML", _raw("name: x\n  bad: [\n"), ["bundle.yaml: line 2: malformed YAML ("]),
    ("not a mapping", _raw("- a\n- b\n"), ["expected a mapping"]),
    ("prompt missing", _remove("prompt.md"), ["prompt", "prompt.md not found", "prompt_path"]),
    ("dataset missing", _remove("dataset.jsonl"), ["dataset", "not found", "dataset_path"]),
    ("schema missing", _remove("schema.json"), ["schema", "schema.json not found"]),
    (
        "schema not JSON",
        _write("schema.json", "{\n  'type': 'object'\n}"),
        ["schema.json: line 2: malformed JSON ("],
    ),
    ("schema not a schema", _write("schema.json", '{"type": "objekt"}'), ["not a valid JSON schema"]),
    (
        "schema $ref to a missing file",
        _write("schema.json", '{"$ref": "answer.json"}'),
        ["schema.json: $ref 'answer.json'", "answer.json not found"],
    ),
    (
        "schema $ref to the network",
        _write("schema.json", '{"properties": {"a": {"$ref": "https://example.com/s.json"}}}'),
        ["$ref 'https://example.com/s.json'", "never fetched over the network"],
    ),
    (
        "schema $ref to nowhere",
        _write("schema.json", '{"$ref": "#/definitions/missing"}'),
        ["$ref '#/definitions/missing' points to nowhere"],
    ),
    # jsonschema picked its validator by "$schema" before checking its type: AttributeError, an internal error
    (
        "schema $schema not a string",
        _write("schema.json", '{"$schema": 5, "type": "object"}'),
        ['schema.json: "$schema" must be a string (a JSON Schema draft URI), not 5'],
    ),
    (
        "schema $ref to a file whose $schema is not a string",
        _files({"schema.json": '{"$ref": "a.json"}', "a.json": '{"$schema": null}'}),
        ["schema.json: $ref 'a.json': ", 'a.json: "$schema" must be a string', "not null"],
    ),
    # Values of the wrong type were converted: `value: true` read as >= 1, `timeout: "30"` as 30 s.
    (
        "threshold value true",
        _set("thresholds", [{"metric": "pass_rate", "value": True}]),
        ["thresholds[0].value"],
    ),
    ("timeout a string", _set("timeout", "30"), ["'timeout'", "valid number"]),
    ("timeout NaN", _set("timeout", float("nan")), ["'timeout'", "finite"]),
    ("concurrency true", _set("concurrency", True), ["'concurrency'", "valid integer"]),
    ("temperature NaN", _provider(temperature=float("nan")), ["'provider.temperature'", "finite"]),
    ("template syntax", _write("prompt.md", "Q: {{ question }\n"), ["prompt.md line 1: template error"]),
    # Size bombs: Jinja2 folded constants at compile time, so 20 bytes took 36 s and 3.9 GB ('x' * 10**9), or
    # 11.7 GB and an internal error (3*10**9); the sandbox now refuses each before building it.
    (
        "template string repeated past the cap",
        _write("prompt.md", "{{ 'x' * 10**9 }}"),
        ["prompt.md: case 'q1'", "SecurityError: '*' would make 1,000,000,000 characters or items"],
    ),
    ("template 3*10**9", _write("prompt.md", "{{ 'x' * 3*10**9 }}"), ["SecurityError: '*' would make"]),
    ("template list repeated", _write("prompt.md", "{{ [0] * 10**9 }}"), ["SecurityError: '*' would make"]),
    ("template huge power", _write("prompt.md", "{{ 7 ** 1000000 }}"), ["SecurityError: '**' would make"]),
    (
        "template huge product",
        _write("prompt.md", "{% set n = 7 ** 4000 %}{{ n * n * n }}"),
        ["'*' would make an integer"],
    ),
    (
        "template long concat",
        _write("prompt.md", "{% set s = 'x' * 8000000 %}{{ s + s }}"),
        ["'+' would make"],
    ),
    ("template wide %", _write("prompt.md", "{{ '%999999999s' % 'x' }}"), ["'%' would make a field wider"]),
    ("template wide %*", _write("prompt.md", "{{ '%*s' % (10**9, 'x') }}"), ["'%' would make a field wider"]),
    # Filters and methods whose result a number or a repeated argument sizes, refused before it is built.
    (
        "template wide center",
        _write("prompt.md", "{{ 'x'|center(10**9) }}"),
        ["the filter 'center' would make"],
    ),
    ("template wide ljust", _write("prompt.md", "{{ 'x'.ljust(10**9) }}"), ["str.ljust() would make"]),
    (
        "template wide format()",
        _write("prompt.md", "{{ '{:>999999999}'.format(1) }}"),
        ["str.format() would"],
    ),
    ("template replace ''", _write("prompt.md", "{{ 'ab'.replace('', 'x' * 8000000) }}"), ["str.replace()"]),
    ("template filled batch", _write("prompt.md", "{{ [1]|batch(10**9, 0)|list }}"), ["the filter 'batch'"]),
    ("template lipsum", _write("prompt.md", "{{ lipsum(10**8) }}"), ["lipsum() would make"]),
    (
        "template list doubled",  # a prompt's sandbox lets a template change a list: l.extend(l) doubles it
        _write("prompt.md", "{% set l = [1] %}{% for i in range(40) %}{% set _ = l.extend(l) %}{% endfor %}"),
        ["list.extend() would make 16,777,216 characters or items"],
    ),
    (
        "template text repeated in a list",
        _write("prompt.md", "{% set s = 'x' * 8000000 %}{{ [s] * 100000 }}"),
        ["the value printed would make"],
    ),
    (
        "template loop past the cap",
        _write("prompt.md", "{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}"),
        ["SecurityError: the rendered text is longer than a template may make"],
    ),
    (
        "undefined variable",
        _write("prompt.md", "Q: {{ question }} {{ context }}\n"),
        ["case 'q1'", "dataset.jsonl line 1", "'context' is undefined"],
    ),
    (
        "unsafe invariant",
        _set("output_contract", {"invariants": ["().__class__.__base__.__subclasses__()"]}),
        ["output_contract.invariants[0]", "is not a valid invariant", "attribute '__class__' is not allowed"],
    ),
    (
        "invariant syntax",
        _set("output_contract", {"invariants": ["len(raw_output) <"]}),
        ["output_contract.invariants[0]", "not a valid expression"],
    ),
    (
        "invariant unknown name",
        _set("output_contract", {"invariants": ["len(answer) > 0"]}),
        ["unknown name 'answer'", "raw_output"],
    ),
]


@pytest.mark.parametrize(("label", "build", "expected"), CASES, ids=[c[0] for c in CASES])
def test_invalid_bundle_is_one_line_exit_2(
    tmp_path: Path, label: str, build: Callable[[Path], Path], expected: list[str]
) -> None:
    bundle = build(tmp_path / "b")
    for command in (["validate", str(bundle)], ["run", str(bundle)]):
        result = invoke(command)
        assert result.exit_code == 2, (label, result.stdout, result.stderr)
        line = one_error_line(result)
        for fragment in expected:
            assert fragment in line, (label, line)
        assert ";" in line, f"no fix hint in: {line}"
        assert result.stdout == ""  # nothing ran, nothing reported


def test_bundle_argument_may_be_the_directory(tmp_path: Path) -> None:
    write_bundle(tmp_path / "b")
    result = invoke(["validate", str(tmp_path / "b")])
    assert result.exit_code == 0, result.stderr
    assert result.stdout.startswith("valid: test-bundle")
    assert "3 cases" in result.stdout


def test_missing_bundle_and_empty_directory(tmp_path: Path) -> None:
    result = invoke(["run", str(tmp_path / "nope.yaml")])
    assert result.exit_code == 2
    assert "bundle" in one_error_line(result) and "not found" in result.stderr
    (tmp_path / "empty").mkdir()
    result = invoke(["validate", str(tmp_path / "empty")])
    assert result.exit_code == 2
    assert "no bundle.yaml in" in one_error_line(result)


def test_unknown_provider_and_format_flags_are_refused(tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "b")
    for args in (["--provider", "gemini"], ["--format", "html"]):
        result = invoke(["run", str(bundle), *args])
        assert result.exit_code == 2
        assert "see behaviorci run --help" in one_error_line(result)
        assert result.stdout == ""


def test_missing_api_key_names_the_variable_before_any_call(tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "b", {"provider": {"name": "anthropic", "model": "claude-x"}})
    result = invoke(["run", str(bundle)])
    assert result.exit_code == 2
    assert one_error_line(result) == (
        "error: ANTHROPIC_API_KEY is not set (needed by the anthropic provider); "
        "export ANTHROPIC_API_KEY=… or run with --provider mock"
    )
    custom = write_bundle(tmp_path / "c", {"provider": {"name": "openai"}})
    result = invoke(["run", str(custom), "--api-key-env", "QWEN_API_KEY"])
    assert result.exit_code == 2 and "QWEN_API_KEY is not set" in one_error_line(result)


def test_validate_does_not_need_an_api_key(tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "b", {"provider": {"name": "openai"}})
    result = invoke(["validate", str(bundle)])
    assert result.exit_code == 0, result.stderr
    assert "openai (default: gpt-4o-mini)" in result.stdout


def test_unreadable_dataset_through_the_installed_command(tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "b")
    (tmp_path / "b" / "dataset.jsonl").write_bytes(b"\xff\xfe not utf-8\n")
    ran = run_cli(["behaviorci", "validate", str(bundle)], tmp_path)
    assert ran.code == 2
    assert ran.out == ""
    assert ran.err.count("\n") == 1, ran.err
    assert ran.err.startswith("error: b/dataset.jsonl: line 1: not UTF-8"), ran.err


def test_version_and_help_are_cheap(tmp_path: Path) -> None:
    ran = run_cli(["behaviorci", "--version"], tmp_path)
    assert ran.code == 0 and "BehaviorCI 0.1.0 compatible" in ran.out
    ran = run_cli(
        ["python", "-X", "importtime", "-c", "from routedriver.cli.behaviorci import behaviorci_group"],
        tmp_path,
    )
    imported = {line.split("|")[-1].strip() for line in ran.err.splitlines() if "|" in line}
    for heavy in ("openai", "anthropic", "pydantic", "jsonschema", "rich", "jinja2", "yaml"):
        assert heavy not in imported, f"behaviorci --help imports {heavy}"


def test_schema_refs_resolve_relative_to_the_schema_file(tmp_path: Path) -> None:
    root = tmp_path / "b"
    bundle = write_bundle(
        root,
        {"output_contract": {"schema_path": "schemas/schema.json"}},
        cases=[
            {"id": "good", "input": {"question": "a"}, "mock_output": {"answer": "yes", "confidence": 0.9}},
            {"id": "bad", "input": {"question": "b"}, "mock_output": {"answer": "", "confidence": 0.9}},
        ],
    )
    (root / "schemas" / "defs").mkdir(parents=True)
    (root / "schemas" / "schema.json").write_text('{"$ref": "answer.json"}', encoding="utf-8")
    (root / "schemas" / "answer.json").write_text(
        '{"type": "object", "required": ["answer"], "properties": {"answer": {"$ref": "defs/text.json"}}}',
        encoding="utf-8",
    )
    (root / "schemas" / "defs" / "text.json").write_text(
        '{"type": "string", "minLength": 1}', encoding="utf-8"
    )
    ran = run_cli(["behaviorci", "run", str(bundle), "-f", "json", "-v"], tmp_path)
    assert ran.code == 1, ran.err  # a threshold failure, not a crash
    cases = {case["id"]: case for case in json.loads(ran.out)["cases"]}
    assert cases["good"]["passed"] is True
    assert cases["bad"]["passed"] is False and cases["bad"]["error"] is None
    assert "should be non-empty" in cases["bad"]["reason"]


def test_a_ref_that_fails_at_run_time_is_a_contract_error_not_a_crash() -> None:
    from routedriver.behaviorci.dataset import Case
    from routedriver.behaviorci.evaluate import ContractError, ContractEvaluator
    from routedriver.behaviorci.schema import ContractSchema

    # Loading refuses such a schema; a schema given in code reaches the evaluator unchecked.
    evaluator = ContractEvaluator(ContractSchema({"$ref": "#/definitions/missing"}), [])
    with pytest.raises(
        ContractError, match="schema cannot be applied: cannot resolve '/definitions/missing'"
    ):
        evaluator.evaluate("{}", Case(id="c", line=1, input={}))


def test_integer_case_ids_in_mock_settings_are_case_ids(tmp_path: Path) -> None:
    cases = [{"id": 7, "input": {"question": "q"}}, {"id": "eight", "input": {"question": "r"}}]
    provider = {"name": "mock", "responses": {7: '{"answer": "seven", "confidence": 1}'}, "fail_cases": []}
    bundle = write_bundle(tmp_path / "b", {"provider": provider, "thresholds": []}, cases=cases, schema=None)
    result = invoke(["run", str(bundle), "-f", "json", "-v"])
    outputs = {case["id"]: case["output"] for case in json.loads(result.stdout)["cases"]}
    assert outputs["7"] == '{"answer": "seven", "confidence": 1}'


def test_a_symlinked_bundle_yaml_works_from_the_directory_of_the_link(tmp_path: Path) -> None:
    from routedriver.behaviorci.bundle import load_bundle

    used = tmp_path / "use"
    write_bundle(used)
    (tmp_path / "shared").mkdir()
    (used / "bundle.yaml").rename(tmp_path / "shared" / "bundle.yaml")
    (used / "bundle.yaml").symlink_to("../shared/bundle.yaml")
    ran = run_cli(["behaviorci", "validate", "use"], tmp_path)
    assert ran.code == 0, ran.err
    assert ran.out.startswith("valid: test-bundle (use/bundle.yaml)")
    assert "prompt      use/prompt.md" in ran.out and "schema      use/schema.json" in ran.out
    bundle = load_bundle(str(used / "bundle.yaml"))
    assert bundle.dir == used.resolve()
