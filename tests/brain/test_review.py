"""The review skill end to end: rubric rendering, machine-readable counts, one correction, never 0/0."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from jinja2.sandbox import ImmutableSandboxedEnvironment

from routedriver.brain.skills import read_counts, with_counts
from routedriver.route.judges import count_issues
from tests.brain.helpers import bhrain, scripted_run, write_script
from tests.fakes.llm_servers import AnthropicServer, Reply

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "bhrain"


def review(
    tmp_path: Path, turns: list[object], *extra: str, wrapper: Sequence[str] = ()
) -> tuple[int, str, str, dict[str, Any]]:
    (tmp_path / "vision.md").write_text("# Vision\nShip the thing.\n", encoding="utf-8")
    script = write_script(tmp_path / "review.json", turns)
    ran = bhrain(
        [*scripted_run(script, skill="review"), "--input-file", "vision.md", "--trace", "t.json", *extra],
        tmp_path,
        wrapper=wrapper,
    )
    trace = json.loads((tmp_path / "t.json").read_text()) if (tmp_path / "t.json").exists() else {}
    return ran.code, ran.out, ran.err, trace


def test_review_renders_the_rubric_and_ends_with_counts_the_judge_reads(tmp_path: Path) -> None:
    code, out, err, trace = review(
        tmp_path,
        [
            "Blockers:\n- the vision has no audience\n\nNitpicks:\n- title case\n- a typo\n\n"
            "blockers: 1\nnitpicks: 2"
        ],
    )
    assert code == 0, err
    assert out.endswith("\n\nblockers: 1\nnitpicks: 2\n")
    assert count_issues(out) == (1, 2)  # the route driver's reviewed? judge reads the same numbers
    request = trace["messages"][0]["text"]
    assert "=== artifact 1: vision.md ===\n# Vision\nShip the thing.\n" in request
    assert "blockers: <number>" in request
    assert trace["tools"] == ["read", "glob", "grep", "websearch"]  # review is read-only by default


def test_counts_written_in_prose_are_normalized_to_the_two_lines(tmp_path: Path) -> None:
    code, out, _, _ = review(tmp_path, ["Overall: **2 blockers** and 1 nitpick; details above."], "--json")
    data = json.loads(out)
    assert code == 0 and (data["blockers"], data["nitpicks"]) == (2, 1)
    assert data["result"].endswith("details above.\n\nblockers: 2\nnitpicks: 1")


def test_a_review_without_counts_gets_one_correction(tmp_path: Path) -> None:
    code, out, err, trace = review(
        tmp_path, ["Looks mostly fine.", "Looks mostly fine.\nblockers: 0\nnitpicks: 1"]
    )
    assert code == 0
    assert out == "Looks mostly fine.\n\nblockers: 0\nnitpicks: 1\n"
    correction = trace["messages"][2]
    assert correction["role"] == "user" and "does not end with readable counts" in correction["text"]
    assert "asking once for a corrected review" in err


def test_a_review_that_never_gives_counts_is_a_malfunction_not_zero(tmp_path: Path) -> None:
    code, out, err, _ = review(tmp_path, ["Looks fine.", "Still looks fine to me."], "--json")
    assert code == 1
    data = json.loads(out)
    assert "blockers" not in data and data["stop_reason"] == "review_without_counts"
    assert "blockers: 0" not in out
    assert "error: the review has no readable counts" in err


def deny_reading_a_secret(tmp_path: Path) -> dict[str, Any]:
    """secret.md and p.json, a permissions file denying reads of it; returns the script turn reading it."""
    (tmp_path / "secret.md").write_text("x\n", encoding="utf-8")
    (tmp_path / "p.json").write_text('{"permissions": {"deny": ["Read(./secret.md)"]}}', encoding="utf-8")
    return {"tool_calls": [{"name": "read", "arguments": {"file_path": "secret.md"}}]}


def test_a_review_with_counts_after_a_denied_call_is_done(tmp_path: Path) -> None:
    denied_read = deny_reading_a_secret(tmp_path)
    code, out, err, trace = review(
        tmp_path, [denied_read, "Fine.\nblockers: 0\nnitpicks: 0"], "--permissions", "p.json", "--json"
    )
    assert code == 0, err
    data = json.loads(out)
    assert (data["stop_reason"], data["exit_code"], data["blockers"], data["nitpicks"]) == ("done", 0, 0, 0)
    assert data["tool_calls"][0]["status"] == "denied" and "explanation" not in data
    assert trace["status"] == "done"
    assert "denied read" in err and "error:" not in err  # the denial is still reported


def test_a_review_that_gives_up_after_a_denied_call_ends_denied(tmp_path: Path) -> None:
    denied_read = deny_reading_a_secret(tmp_path)
    code, out, err, _ = review(
        tmp_path, [denied_read, "I need secret.md to review this."], "--permissions", "p.json"
    )
    assert code == 2 and out == "I need secret.md to review this.\n"
    assert "bhrain: stopped: the task ended after a tool call was denied (read)" in err


def test_custom_rubric_and_its_errors(tmp_path: Path) -> None:
    rubric = tmp_path / "rubric.j2"
    rubric.write_text(
        "Focus: {{ input }}\n{% for a in artifacts %}{{ a.path }}\n{% endfor %}", encoding="utf-8"
    )
    code, _, _, trace = review(
        tmp_path, ["blockers: 0\nnitpicks: 0"], "--rubric", str(rubric), "--input", "tone"
    )
    assert code == 0 and trace["messages"][0]["text"] == "Focus: tone\nvision.md\n"
    rubric.write_text("{{ artefacts }}", encoding="utf-8")
    code, _, err, _ = review(tmp_path, ["never"], "--rubric", str(rubric))
    assert code == 2 and "uses an undefined variable: 'artefacts' is undefined" in err
    rubric.write_text("{% for x in %}", encoding="utf-8")
    code, _, err, _ = review(tmp_path, ["never"], "--rubric", str(rubric))
    assert code == 2 and "has a template error on line 1" in err


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            '{% include "x" %}',
            "includes, imports or extends 'x', which a rubric cannot do; write the rubric as",
        ),
        ('{% extends "base.j2" %}', "includes, imports or extends 'base.j2'"),
        (
            "{{ 1/0 }}",
            "failed to render: ZeroDivisionError: division by zero; fix the expression in the rubric",
        ),
        ("{{ input.nope() }}", "uses an undefined variable"),
        # A rubric is text a pull request can change: it renders sandboxed, so it cannot reach Python
        # itself (the first rendered 442, the count of object's subclasses, before) or loop without end.
        (
            "{{ input.__class__.__mro__[1].__subclasses__()|length }}",
            "failed to render: SecurityError: access to attribute '__class__' of 'str' object is unsafe.",
        ),
        ("{{ cycler.__init__.__globals__.os }}", "failed to render: "),
        ("{% for i in range(10**9) %}x{% endfor %}", "failed to render: OverflowError: Range too big."),
        ("{% set _ = artifacts.append(1) %}", "failed to render: SecurityError: "),
        # Nor build text of any size: Jinja2 folded {{ 'x' * 10**9 }} at compile time (36 s, 3.9 GB).
        ("{{ 'x' * 10**9 }}", "failed to render: SecurityError: '*' would make 1,000,000,000 characters"),
        ("{{ 7 ** 1000000 }}", "failed to render: SecurityError: '**' would make an integer of about"),
        ("{{ '%999999999s' % input }}", "failed to render: SecurityError: '%' would make a field wider"),
        (
            "{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}",
            "failed to render: SecurityError: the rendered text is longer than a template may make",
        ),
        # Nor through a filter or a method whose result a number or a repeated argument sizes: each built
        # its gigabyte before the rendered text was measured (or died of it, under the memory cap below).
        ("{{ 'x'|center(10**9) }}", "SecurityError: the filter 'center' would make 1,000,000,000 characters"),
        ("{{ 'x'.ljust(10**9) }}", "SecurityError: str.ljust() would make 1,000,000,000 characters"),
        ("{{ 'x'.rjust(10**9) }}", "SecurityError: str.rjust() would make"),
        ("{{ 'x'.zfill(10**9) }}", "SecurityError: str.zfill() would make"),
        ("{{ ('x' ~ '\t' * 100).expandtabs(10**8) }}", "SecurityError: str.expandtabs() would make"),
        ("{{ ('x'|safe).center(10**9) }}", "SecurityError: Markup.center() would make"),
        ("{{ '{:>999999999}'.format(1) }}", "SecurityError: str.format() would make"),
        ("{{ '{:.999999999f}'.format(1.0) }}", "SecurityError: str.format() would make"),
        ("{{ '{:>{}}'.format('x', 10**9) }}", "SecurityError: str.format() would make"),
        ("{{ 'x'|indent(10**9) }}", "SecurityError: the filter 'indent' would make"),
        ("{{ ('x\n' * 1000)|indent('y' * 1000000) }}", "SecurityError: the filter 'indent' would make"),
        ("{{ ('a ' * 100000)|wordwrap(1, wrapstring='y' * 100000) }}", "the filter 'wordwrap' would make"),
        ("{{ 'ab'.replace('', 'x' * 8000000) }}", "SecurityError: str.replace() would make 24,000,002"),
        ("{{ 'ab'|replace('', 'x' * 8000000) }}", "SecurityError: the filter 'replace' would make"),
        ("{{ 'xx'.translate({120: 'y' * 8000000}) }}", "SecurityError: str.translate() would make"),
        ("{{ '%*s'|format(10**9, 'x') }}", "SecurityError: the filter 'format' would make a field wider"),
        ("{{ [1]|batch(10**9, 0)|list }}", "SecurityError: the filter 'batch' would make 1,000,000,000"),
        ("{{ [1]|slice(10**9)|list }}", "SecurityError: the filter 'slice' would make 1,000,000,000"),
        (
            "{{ range(100000)|map('center', 100000)|list }}",
            "SecurityError: the filter 'list' would keep more",
        ),
        ("{{ lipsum(10**8) }}", "SecurityError: lipsum() would make"),
        # A value that holds one long text many times is small; its text is not, nor what joins it.
        ("{% set s = 'x' * 8000000 %}{{ [s] * 100000 }}", "SecurityError: the value printed would make"),
        (
            "{% set s = 'x' * 8000000 %}{{ ([s] * 100000)|join }}",
            "SecurityError: the filter 'join' would make",
        ),
        ("{% set s = 'x' * 8000000 %}{{ '-'.join([s] * 100000) }}", "SecurityError: str.join() would make"),
        ("{% set s = 'x' * 8000000 %}{{ ([s] * 100000)|string }}", "the filter 'string' would make"),
        ("{% set s = 'x' * 8000000 %}{{ ([s] * 100000)|tojson }}", "the filter 'tojson' would make"),
        ("{% set s = 'x' * 8000000 %}{{ '%s' % ([s] * 100000,) }}", "SecurityError: '%' would make about"),
        (
            "{% set s = 'x' * 8000000 %}{{ '{!r}'.format([s] * 100000) }}",
            "SecurityError: str.format() would make",
        ),
        ("{% set s = 'x' * 8000000 %}{{ (s ~ s ~ s)|length }}", "SecurityError: '~' would make 16,000,000"),
        (
            "{% set s = 'x' * 8000000 %}{% set t %}{{ s }}{{ s }}{% endset %}{{ t|length }}",
            "SecurityError: the rendered text is longer than a template may make",
        ),
    ],
)
def test_a_rubric_that_cannot_render_is_refused_in_one_line(
    tmp_path: Path, source: str, expected: str
) -> None:
    rubric = tmp_path / "rubric.j2"
    rubric.write_text(source, encoding="utf-8")
    # Refused before anything large is built: quickly, and within 1 GiB of address space (bhrain, its
    # imports and a few texts of the 8 MiB cap fit; a gigabyte-sized text does not).
    started = time.monotonic()
    code, out, err, trace = review(tmp_path, ["never"], "--rubric", str(rubric), wrapper=_MEMORY_CAP)
    assert time.monotonic() - started < 5, source
    assert (code, out, trace) == (2, "", {}), err
    assert err.startswith(f"error: rubric {rubric} ") and expected in err, err
    assert len(err.strip().splitlines()) == 1 and "internal error" not in err


_MEMORY_CAP = ("prlimit", f"--as={1 << 30}")


def test_a_rubric_with_everyday_filters_and_methods_renders(tmp_path: Path) -> None:
    """The bounds leave ordinary templates as Jinja2's own sandbox renders them: small widths, joins,
    replacements, formats, macros."""
    source = (
        "{% macro row(a) %}{{ a.path|center(12) }}|{{ '%-4s|%3d'|format('ab', 7) }}"
        "|{{ '{:>4}'.format(1) }}{% endmacro %}"
        "{% for a in artifacts %}{{ row(a) }}\n{{ a.content|indent(2, first=True) }}{% endfor %}"
        "{{ artifacts|map(attribute='path')|join(', ') }} {{ 'aXb'|replace('X', '--') }}"
        " {{ 'a-b'.replace('-', '+') }} {{ ('word ' * 3)|wordwrap(5) }} {{ [1, 2]|tojson }}"
        " {{ artifacts[0] }} {{ 'x'.ljust(3) ~ '|' ~ 'x'.zfill(3) }} {{ '{a}'.format_map({'a': 1}) }}"
        " {{ lipsum(1)|length > 9 }}"
    )
    rubric = tmp_path / "rubric.j2"
    rubric.write_text(source, encoding="utf-8")
    code, _, err, trace = review(tmp_path, ["blockers: 0\nnitpicks: 0"], "--rubric", str(rubric))
    assert code == 0, err
    artifacts = [{"path": "vision.md", "content": "# Vision\nShip the thing.\n"}]
    plain = ImmutableSandboxedEnvironment(keep_trailing_newline=True).from_string(source)
    assert trace["messages"][0]["text"] == plain.render(artifacts=artifacts, input="")


def test_review_against_a_provider_server(tmp_path: Path) -> None:
    (tmp_path / "plan.md").write_text("# Plan\nTODO: everything\n", encoding="utf-8")
    with AnthropicServer(validate=True) as server:
        server.enqueue(
            Reply.tool_calls([("grep", {"pattern": "TODO"})]),
            Reply.text("Blockers:\n- plan.md:2 is a TODO\n\nblockers: 1\nnitpicks: 0"),
        )
        ran = bhrain(
            [
                "run",
                "--skill",
                "review",
                "--atom",
                "claude",
                "--input-file",
                "plan.md",
                "--base-url",
                server.base_url,
            ],
            tmp_path,
            env={"ANTHROPIC_API_KEY": "sk-ant-review-key"},
        )
        sent = json.dumps(server.requests[0].json["messages"][0])
        assert "=== artifact 1: plan.md ===" in sent and "TODO: everything" in sent
        assert [t["name"] for t in server.requests[0].json["tools"]] == ["read", "glob", "grep", "websearch"]
    assert ran.code == 0, ran.err
    assert count_issues(ran.out) == (1, 0)


@pytest.mark.parametrize(
    ("artifact", "counts"),
    [
        ("# Vision\nTODO: pick a name\n", (1, 0)),
        ("# Vision\nThe launch date is TBD.\n", (0, 1)),
        ("# Vision\nA clear plan.\n", (0, 0)),
    ],
)
def test_the_example_scripted_reviewer_needs_no_api_key(
    tmp_path: Path, artifact: str, counts: tuple[int, int]
) -> None:
    (tmp_path / "1.vision.md").write_text(artifact, encoding="utf-8")
    ran = bhrain(
        [*scripted_run(EXAMPLES / "review.script.yaml", skill="review"), "--input-file", "1.vision.md"],
        tmp_path,
    )
    assert ran.code == 0, ran.err
    assert count_issues(ran.out) == counts
    assert ran.out.endswith(f"blockers: {counts[0]}\nnitpicks: {counts[1]}\n")


def test_count_reading_forms() -> None:
    assert read_counts("blockers: 3\nnitpicks: 4") == (3, 4)
    assert read_counts("**Blockers**: 1, **Nitpicks:** 0") == (1, 0)
    assert read_counts("0 blockers, 2 nitpicks") == (0, 2)
    assert read_counts("blockers: 1 … later: blockers: 2\nnitpicks: 0") == (2, 0)  # the last mention wins
    assert read_counts("no blockers, no nitpicks") is None
    assert read_counts("blockers: 1") is None
    assert with_counts("Review.\nblockers: 1\nnitpicks: 2\n\n", 1, 2) == "Review.\n\nblockers: 1\nnitpicks: 2"


@pytest.mark.parametrize(
    ("text", "counts"),
    [
        # a number ending one line and the word opening the next are not "3 blockers"
        (
            "**Blockers:** 1\n**Nitpicks:** 0\n\n1. The TODO in step 3\n   blocker because of missing tests",
            (1, 0),
        ),
        ("blockers: 0, nitpicks: 1\nThe intro is long. In section 2\nNitpick: a typo", (0, 1)),
        # a heading over a numbered list is not "blockers: 1"
        ("Blockers:\n1. no tests\n2. no docs\nNitpicks:\n1. a typo\n\nblockers: 2\nnitpicks: 1", (2, 1)),
        ("Blockers:\n1. no tests\nNitpicks: 0", None),
        ("**Blockers**:\t**3**\n*nitpicks* = 0", (3, 0)),  # emphasis and blanks on the same line still read
    ],
)
def test_counts_are_read_on_one_line_only(text: str, counts: tuple[int, int] | None) -> None:
    assert read_counts(text) == counts


def test_a_number_on_the_line_above_the_word_does_not_change_the_printed_counts(tmp_path: Path) -> None:
    code, out, err, _ = review(
        tmp_path,
        ["**Blockers:** 1\n**Nitpicks:** 0\n\n1. The TODO in step 3\n   blocker because of missing tests"],
    )
    assert code == 0, err
    assert out.endswith("blocker because of missing tests\n\nblockers: 1\nnitpicks: 0\n")
    assert count_issues(out) == (1, 0)
