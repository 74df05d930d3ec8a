"""The safe invariant evaluator: what it allows, what it refuses at load time, and its run-time limits."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from routedriver.behaviorci.invariants import (
    MAX_SEQUENCE,
    InvariantFailure,
    LimitExceeded,
    UnsafeExpression,
    compile_invariant,
)
from tests.behaviorci.helpers import invoke, one_error_line, write_bundle

RAW = '{"answer": "Paris", "confidence": 0.92, "tags": ["geo", "europe"], "scores": [3, 1, 2]}'
CONTEXT: dict[str, Any] = {
    "raw_output": RAW,
    "output": json.loads(RAW),
    "input": {"question": "Capital of France?"},
    "expected_output": {"answer": "Paris"},
    "metadata": {"topic": "geo", "max_len": 200},
    "case_id": "capital",
}

ALLOWED: list[tuple[str, object]] = [
    # BehaviorCI 0.1.0's own examples
    ("len(raw_output) < 1000", True),
    ("output.get('confidence', 0) > 0.5", True),
    ("'error' not in raw_output.lower()", True),
    # names from the case
    ("output['answer'] == expected_output['answer']", True),
    ("input['question'].endswith('?')", True),
    ("len(raw_output) <= metadata['max_len']", True),
    ("case_id == 'capital'", True),
    # operators
    ("1 < output['confidence'] * 2 <= 2", True),
    ("not (output['confidence'] < 0.9 or output['answer'] == '')", True),
    ("output['scores'][0] + output['scores'][-1] == 5", True),
    ("(len(raw_output) // 10) % 7 >= 0 and 2 ** 10 == 1024", True),
    ("output['answer'][:3] == 'Par'", True),
    ("'geo' in output['tags'] and 'asia' not in output['tags']", True),
    ("output.get('missing') is None", True),
    ("'x' if output['confidence'] > 0.5 else 'y'", "x"),
    ("-output['confidence'] < 0", True),
    # functions
    ("sorted(output['scores']) == [1, 2, 3]", True),
    ("sorted(output['scores'], reverse=True)[0] == max(output['scores'])", True),
    ("min(output['scores']) == 1 and sum(output['scores']) == 6 and abs(-2) == 2", True),
    ("isinstance(output, dict) and isinstance(output['tags'], list)", True),
    ("isinstance(output['confidence'], (int, float))", True),
    ("int('42') == 42 and float('0.5') == 0.5 and str(3) == '3' and bool(1)", True),
    ("round(output['confidence'], 1) == 0.9", True),
    ("set(output['tags']) == {'geo', 'europe'}", True),
    ("list(output.keys()) == ['answer', 'confidence', 'tags', 'scores']", True),
    ("dict([('a', 1)]) == {'a': 1} and list('ab') == ['a', 'b']", True),
    ("tuple(output['scores']).count(3) == 1", True),
    # methods
    ("raw_output.strip().startswith('{')", True),
    ("output['answer'].upper() == 'PARIS' and 'PARIS'.lower().capitalize() == 'Paris'", True),
    ("raw_output.count('\"') > 4 and raw_output.find('Paris') > 0", True),
    ("', '.join(output['tags']) == 'geo, europe'", True),
    ("'a b  c'.split() == ['a', 'b', 'c'] and 'a,b'.split(',', maxsplit=1) == ['a', 'b']", True),
    ("'aaa'.replace('a', 'bb') == 'bbbbbb'", True),
    ("all(isinstance(k, str) for k in output.keys())", True),
    ("any(v == 'Paris' for v in output.values())", True),
    ("[k for k, v in output.items() if v == 'Paris'] == ['answer']", True),
    ("{t: len(t) for t in output['tags']} == {'geo': 3, 'europe': 6}", True),
    ("sum(s * t for s in [1, 2] for t in [10]) == 30", True),
    # regex helpers
    ("matches(r'\\bParis\\b', raw_output)", True),
    ("fullmatch('[A-Z][a-z]+', output['answer'])", True),
    ("search('[0-9.]+', raw_output) == '0.92'", True),
    ("findall('\"(\\\\w+)\":', raw_output) == ['answer', 'confidence', 'tags', 'scores']", True),
    ("is_json(raw_output) and json_loads('[1]') == [1]", True),
    ("not matches('(?i)error', raw_output)", True),
]


@pytest.mark.parametrize(("source", "expected"), ALLOWED, ids=[a[0] for a in ALLOWED])
def test_allowed_expressions(source: str, expected: object) -> None:
    assert compile_invariant(source).evaluate(CONTEXT) == expected


ATTACKS: list[tuple[str, str]] = [
    ("().__class__.__base__.__subclasses__()", "attribute '__class__' is not allowed"),
    ("''.__class__", "'__class__' is not allowed"),
    ("output.__class__.__init__.__globals__", "is not allowed"),
    ("__import__('os').system('true')", "'__import__' is not allowed"),
    ("getattr(raw_output, 'lower')()", "calling 'getattr' is not allowed"),
    ("getattr(raw_output, '__class__')", "is not allowed"),
    ("output['__class__']", "looks like a dunder name"),
    ("'__globals__' in raw_output", "looks like a dunder name"),
    ("eval('1')", "calling 'eval' is not allowed"),
    ("exec('x=1')", "calling 'exec' is not allowed"),
    ("open('/etc/passwd').read()", "calling 'open' is not allowed"),
    ("type(output)", "calling 'type' is not allowed"),
    ("globals()", "calling 'globals' is not allowed"),
    ("_private", "names starting with '_'"),
    ("lambda: 1", "lambda is not allowed"),
    ("(lambda x: x)(1)", "lambda is not allowed"),
    ("output['f'](1)", "only named functions"),
    ("[x for x in raw_output for y in raw_output for z in raw_output]", "at most 2"),
    ("[x for x in [y for y in raw_output]]", "nested comprehensions"),
    ("[_ for _ in raw_output]", "names starting with '_'"),
    ("'a' * 10**12", "cannot be computed"),
    ("[0] * (10**9)", "cannot be computed"),
    ("10 ** 10 ** 10", "cannot be computed"),
    ("9 ** 999999", "cannot be computed"),
    ("'%s' % 1", "%-formatting"),
    ("'{0.__class__}'.format(raw_output)", "looks like a dunder name"),
    ("'{}'.format(raw_output)", "method '.format()' is not allowed"),
    ("f'{raw_output}'", "an f-string is not allowed"),
    ("(x := 1)", "':=' is not allowed"),
    ("output.confidence", "attribute access '.confidence' is not allowed"),
    ("raw_output.encode()", "method '.encode()' is not allowed"),
    ("max(*output['scores'])", "*arguments are not allowed"),
    ("dict(**output)", "**arguments are not allowed"),
    ("sorted(output, key=lambda k: k)", "lambda is not allowed"),
    ("print(raw_output)", "calling 'print' is not allowed"),
    ("b'bytes'", "constants of type bytes"),
    ("1 if raw_output else undefined_name", "unknown name 'undefined_name'"),
    ("1/0", "cannot be computed"),
    ("matches('(', raw_output)", "invalid regex"),
    ("raw_output @ raw_output", "MatMult is not allowed"),
    ("~1", "Invert is not allowed"),
    ("x" * 2001, "longer than"),
    ("(" * 60 + "1" + ")" * 60 + " + " + "-" * 60 + "1", "nested more than"),
    ("", "non-empty"),
]


@pytest.mark.parametrize(("source", "reason"), ATTACKS, ids=[a[0][:60] for a in ATTACKS])
def test_attacks_are_rejected_when_loaded(source: str, reason: str) -> None:
    with pytest.raises(UnsafeExpression) as caught:
        compile_invariant(source)
    assert reason in str(caught.value)


def test_attack_is_rejected_by_validate_before_anything_runs(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    bundle = write_bundle(
        tmp_path / "b",
        {
            "output_contract": {
                "invariants": [
                    "len(raw_output) > 0",
                    f"().__class__.__base__.__subclasses__()[0] or open('{marker}', 'w')",
                ]
            }
        },
    )
    result = invoke(["run", str(bundle)])
    assert result.exit_code == 2
    assert "output_contract.invariants[1]" in one_error_line(result)
    assert not marker.exists()


RUNTIME_LIMITS: list[tuple[str, dict[str, Any]]] = [
    ("raw_output * 10**7", {"raw_output": "ab"}),
    (
        "len([c for c in raw_output]) > 0 and sum(1 for a in raw_output for b in raw_output) > 0",
        {"raw_output": "a" * 1000},
    ),
    ("raw_output.replace('a', raw_output) != ''", {"raw_output": "a" * 2000}),
    ("output ** output", {"output": 10**6}),
    ("sum(output, [])", {"output": [[1], [2]]}),
    # Catastrophic backtracking on an adversarial output: the regex engine gives up, the case errors.
    ("matches(r'^(a|a)*$', raw_output)", {"raw_output": "a" * 40 + "b"}),
    ("findall(r'(x+x+)+y', raw_output) == []", {"raw_output": "x" * 1000}),
    ("matches(r'(\\w+\\s?)+$', raw_output)", {"raw_output": "word " * 1000 + "!"}),
    # Work hidden in C: a huge exponent of 10, comparing/hashing/printing aliased containers, joins.
    ("round(len(raw_output), -10**8) == 0", {"raw_output": "abc"}),
    ("[[1] * 1000000] * 1000000 != [[1] * 1000000] * 1000000", {}),
    ("sorted([output] * 1000000) == []", {"output": [1] * 1000}),
    ("output in [[1] * 1000000] * 1000000", {"output": [2]}),
    ("{(tuple(output),) * 100000} == set()", {"output": [1] * 1000}),
    ("str([raw_output] * 100000) != ''", {"raw_output": "x" * 100}),
    ("''.join(x for x in [raw_output] * 1000000) != ''", {"raw_output": "x" * 100}),
    ("'-'.join([raw_output] * 100000) != ''", {"raw_output": "x" * 100}),
    ("(raw_output + raw_output) != ''", {"raw_output": "x" * 600_000}),
]


@pytest.mark.parametrize(("source", "context"), RUNTIME_LIMITS, ids=[r[0][:50] for r in RUNTIME_LIMITS])
def test_runtime_limits_fail_the_invariant_instead_of_hanging(source: str, context: dict[str, Any]) -> None:
    invariant = compile_invariant(source)
    with pytest.raises(InvariantFailure):
        invariant.evaluate({**CONTEXT, **context})


def test_comparisons_of_ordinary_sizes_stay_within_the_budget() -> None:
    invariant = compile_invariant("[raw_output] * 100000 == [raw_output] * 100000 and output == output")
    assert invariant.evaluate({**CONTEXT, "raw_output": "x" * 1000, "output": {"a": [1] * 100000}}) is True


def test_a_constant_join_bomb_is_rejected_when_loaded() -> None:
    # It used to run out of memory (an internal MemoryError) inside `behaviorci validate`.
    with pytest.raises(UnsafeExpression, match="more than 1000000 items"):
        compile_invariant("''.join([('a' * 1000000)] * 1000000) != ''")


def test_a_constant_catastrophic_regex_is_rejected_when_loaded() -> None:
    with pytest.raises(UnsafeExpression, match="gave up after"):
        compile_invariant("matches('^(a|a)*$', 'a' * 40 + 'b')")


def test_size_limit_is_checked_before_allocating() -> None:
    invariant = compile_invariant("len(raw_output * output) > 0")
    with pytest.raises(LimitExceeded, match=str(MAX_SEQUENCE)):
        invariant.evaluate({**CONTEXT, "raw_output": "abc", "output": 10**11})
    assert invariant.evaluate({**CONTEXT, "raw_output": "abc", "output": 3}) is True


def test_large_case_data_may_be_read_but_not_multiplied() -> None:
    big = "x" * (MAX_SEQUENCE + 10)
    assert compile_invariant("len(raw_output) > 1000").evaluate({**CONTEXT, "raw_output": big}) is True
    with pytest.raises(LimitExceeded):
        compile_invariant("len(raw_output + raw_output) > 0").evaluate({**CONTEXT, "raw_output": big})


def test_runtime_errors_are_failures_with_a_message() -> None:
    with pytest.raises(InvariantFailure, match="key 'nope' not found"):
        compile_invariant("output['nope'] == 1").evaluate(CONTEXT)
    with pytest.raises(InvariantFailure, match="no allowed method"):
        compile_invariant("output.lower() == 'x'").evaluate(CONTEXT)  # output is a dict here
    with pytest.raises(InvariantFailure, match="cannot index"):
        compile_invariant("output['confidence'][0]").evaluate(CONTEXT)


def test_methods_are_checked_against_the_receiver_type() -> None:
    # `.get` is a dict method; a string receiver must not reach str attributes of that name.
    with pytest.raises(InvariantFailure, match="str values have no allowed method '.get"):
        compile_invariant("raw_output.get('a')").evaluate(CONTEXT)
    # A type object (e.g. `dict`) is a value for isinstance, never a receiver of methods.
    with pytest.raises(InvariantFailure, match="type values"):
        compile_invariant("dict.get({}, 'a')").evaluate(CONTEXT)
