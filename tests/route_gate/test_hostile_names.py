"""Routes and stones named to speak for the gate: every output of route.verify and route.status carries them
and none obeys them.

A pull request names its directories and files. Named with a newline, a route made route.verify print a
line of its choosing in the CI log (``::notice::…``; ``::stop-commands::`` would hide every ``::error``
after it); ``##[`` is a workflow command anywhere in a line; ``<!--`` in a step summary hides the rows
below it; a quote ends a Mermaid label. These tests run the installed commands on such names and read each
format as its reader would: the log as the GitHub runner does (``workflow_commands``), JSON with a JSON
parser, JUnit with an XML parser, the step summary with a CommonMark parser (GitHub's tables), the flowchart
with the Mermaid grammar.
"""

from __future__ import annotations

import html
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from routedriver.route import shown
from tests.conftest import git, run_cli
from tests.route_gate import mermaid, workflow_commands

# Names a file system and git accept, that mean something to a reader of the output.
PRINTABLE_ROUTES = [
    "routes/::stop-commands::token",
    "routes/##[error]boom",
    "routes/##[stop-commands]t2",
    "routes/%0A::warning::y%0D",
    "routes/<!-- hide the rest",
    "routes/a]]>&<b>x</b>",
    "routes/`code` | pipe --> end",
    'routes/x"]%%{init: {"theme":"dark"}}%%',
    "routes/[link](javascript:alert(1)) ![img](x)",
    "routes/$x^2$ *em* _u_ ~~s~~ &amp; #h",
]
# Names with characters that end or rewrite a line: refused as routes, shown escaped.
CONTROL_ROUTES = [
    "routes/x\n::notice::pwned",
    "routes/y\r::warning::z",
    "routes/e\x1b[31mred",
    "routes/l\u2028::error::m",
    "routes/n\x85::error::o",
    "routes/t\tab",
]
HOSTILE_STONES = ["1.<!--", "2.a|b", "3.`x`", "4.]]>&", "5.##[error]s", '6."]%%{init}%%', "7.-->"]
CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u2028\u2029]")  # a newline (\n) only ends a line
MARKDOWN = MarkdownIt("commonmark").enable("table").enable("strikethrough")


def rendered_as(name: str) -> str:
    """How a rendered step summary or board shows ``name``: itself, or (with a control character, which
    only the refused names hold) as the text line shows it."""
    return name if name.isprintable() else shown.line(name)


@pytest.fixture
def hostile(git_repo: Path) -> Path:
    for name in [*PRINTABLE_ROUTES, *CONTROL_ROUTES]:
        (git_repo / name).mkdir(parents=True)
        (git_repo / name / "1.a.stone").write_text("Do it.\n", encoding="utf-8")
    (git_repo / "routes" / "stones").mkdir()
    for stone in HOSTILE_STONES:
        (git_repo / "routes" / "stones" / f"{stone}.stone").write_text("Do it.\n", encoding="utf-8")
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "routes named to speak for the gate")
    return git_repo


def _no_line_is_theirs(output: str) -> list[workflow_commands.Command]:
    """Every workflow command in ``output`` is an annotation route.verify means to make, and no line holds a
    character that ends or rewrites it; returns the annotations."""
    assert not CONTROL.search(output), repr(CONTROL.search(output))
    assert "##[" not in output
    found = workflow_commands.commands(output)
    for command in found:
        assert command.name == "error", command
        assert command.properties["title"].startswith("route.verify "), command
        assert "\n" not in command.properties["title"] and "\r" not in command.properties["title"]
    starts = [line.lstrip() for line in output.splitlines() if line.lstrip().startswith("::")]
    assert all(line.startswith("::error file=") for line in starts), starts
    return found


def test_route_verify_text_and_annotations_show_hostile_names_and_obey_none(hostile: Path) -> None:
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(hostile.parent / "summary.md")}
    done = run_cli(["route.verify", "--all"], hostile, env=env)
    assert done.code == 2
    annotations = _no_line_is_theirs(done.out + done.err)
    lines = done.out.splitlines()
    for name in PRINTABLE_ROUTES:
        assert f"incomplete {shown.line(name)}/1.a: not passed yet" in lines
    for name in CONTROL_ROUTES:
        (line,) = [line for line in lines if line.startswith(f"broken     {shown.line(name)}/*: ")]
        assert "route path has a control character: " in line and shown.line(name) in line
    for stone in HOSTILE_STONES:
        assert f"incomplete routes/stones/{shown.line(stone)}: not passed yet" in lines
    # Each annotation names its file as the text line does: exactly (GitHub points at it), but for a
    # control character or a ##[ (no line of the log holds either).
    files = {command.properties["file"] for command in annotations}
    assert {shown.line(f"{name}/1.a.stone") for name in PRINTABLE_ROUTES} <= files
    assert "routes/<!-- hide the rest/1.a.stone" in files
    assert {shown.line(name) for name in CONTROL_ROUTES} <= files
    assert {shown.line(f"routes/stones/{stone}.stone") for stone in HOSTILE_STONES} <= files


def test_route_verify_json_carries_every_name_exactly(hostile: Path) -> None:
    done = run_cli(["route.verify", "--all", "--json"], hostile, env={"GITHUB_ACTIONS": "true"})
    assert done.code == 2
    _no_line_is_theirs(done.out + done.err)
    stones = json.loads(done.out)["stones"]
    assert {stone["route"] for stone in stones} == {*PRINTABLE_ROUTES, *CONTROL_ROUTES, "routes/stones"}
    assert {stone["stone"] for stone in stones if stone["route"] == "routes/stones"} == set(HOSTILE_STONES)


def test_junit_is_well_formed_xml_naming_each_route(hostile: Path, tmp_path: Path) -> None:
    report = tmp_path / "junit.xml"
    done = run_cli(["route.verify", "--all", "--junit", str(report)], hostile)
    assert done.code == 2
    text = report.read_text(encoding="utf-8")
    assert not CONTROL.search(text) and "##[" not in text
    root = ET.parse(report).getroot()  # the parser, not a regex: ]]> & < " are XML's to escape
    suites = {suite.get("name") for suite in root.iter("testsuite")}
    assert suites == {shown.line(name) for name in [*PRINTABLE_ROUTES, *CONTROL_ROUTES, "routes/stones"]}
    cases = {case.get("name") for case in root.iter("testcase") if case.get("classname") == "routes/stones"}
    assert cases == {shown.line(stone) for stone in HOSTILE_STONES}


def _render(markdown: str) -> str:
    rendered: str = MARKDOWN.render(markdown)
    return rendered


def _tags(rendered: str) -> set[str]:
    return set(re.findall(r"<(\w+)", rendered))


def _rows(rendered: str) -> list[list[str]]:
    """The table rows of rendered HTML, each cell's text unescaped."""
    return [
        [html.unescape(cell) for cell in re.findall(r"<td>(.*?)</td>", row, re.S)]
        for row in re.findall(r"<tr>(.*?)</tr>", rendered, re.S)
        if "<td>" in row
    ]


def test_the_step_summary_is_one_table_row_per_stone_with_the_names_as_text(hostile: Path) -> None:
    summary = hostile.parent / "summary.md"
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)}
    assert run_cli(["route.verify", "--all"], hostile, env=env).code == 2
    rendered = _render(summary.read_text(encoding="utf-8"))
    assert _tags(rendered) <= {"h3", "table", "thead", "tbody", "tr", "th", "td"}, _tags(rendered)
    rows = _rows(rendered)
    assert all(len(row) == 5 for row in rows)
    routes = {row[1] for row in rows}
    assert {rendered_as(name) for name in [*PRINTABLE_ROUTES, *CONTROL_ROUTES]} <= routes
    assert {row[2] for row in rows if row[1] == "routes/stones"} == set(HOSTILE_STONES)


def test_route_status_markdown_and_mermaid_read_the_names_as_text(hostile: Path) -> None:
    routes = [*PRINTABLE_ROUTES, "routes/stones"]
    argv = ["route.status", *(arg for name in routes for arg in ("--route", name)), "--markdown"]
    done = run_cli(argv, hostile)
    assert done.code == 0, done.err
    assert "##[" not in done.out and not CONTROL.search(done.out)
    rendered = _render(done.out)
    assert _tags(rendered) <= {"h3", "table", "thead", "tbody", "tr", "th", "td", "pre", "code"}
    headings = [html.unescape(text) for text in re.findall(r"<h3>(.*?)</h3>", rendered)]
    counts = {name: "0 of 1 stone" for name in PRINTABLE_ROUTES} | {"routes/stones": "0 of 7 stones"}
    assert headings == [f"route {name}: {counts[name]} passed" for name in routes]
    rows = _rows(rendered)
    assert all(len(row) == 6 for row in rows)
    assert {row[1] for row in rows} == {"1.a", *HOSTILE_STONES}
    blocks = mermaid.blocks(done.out)
    assert len(blocks) == len(routes)
    for block in blocks:
        assert "%%" not in block
        mermaid.parse(block)
    labels = mermaid.parse(blocks[-1]).nodes.values()
    assert {label.rpartition(": ")[0] for label in labels} == set(HOSTILE_STONES)


def test_route_status_json_and_text_carry_the_names(hostile: Path) -> None:
    routes = [*PRINTABLE_ROUTES, "routes/stones"]
    argv = ["route.status", *(arg for name in routes for arg in ("--route", name))]
    document = run_cli([*argv, "--json"], hostile)
    assert document.code == 0 and "##[" not in document.out
    assert [route["route"] for route in json.loads(document.out)["routes"]] == routes
    plain = run_cli(argv, hostile)
    assert plain.code == 0 and "##[" not in plain.out and not CONTROL.search(plain.out)
    assert f"route {shown.line(PRINTABLE_ROUTES[0])}: 0 of 1 stone passed" in plain.out.splitlines()


def test_a_route_named_with_a_control_character_is_refused_in_one_line(hostile: Path) -> None:
    for name in CONTROL_ROUTES:
        for command in (["route.status", "--route", name], ["route.stone.get", "--route", name, "--say"]):
            done = run_cli(command, hostile)
            assert done.code == 2 and done.out == ""
            assert done.err == (
                f"error: route path has a control character: {shown.line(name)}; rename the directory "
                "(and any directory above it) without it\n"
            )
    everything = run_cli(["route.status", "--all"], hostile)
    assert everything.code == 2 and len(everything.err.splitlines()) == 1
    assert not CONTROL.search(everything.err)


@pytest.mark.parametrize(
    ("text", "line"),
    [
        ("a\nb", "a\\nb"),
        ("a\r\n::x::", "a\\r\\n::x::"),
        ("\x1b[31m", "\\x1b[31m"),
        ("\x85\u2028\u2029", "\\x85\\u2028\\u2029"),
        ("bad \udcff byte", "bad \\xff byte"),
        ("x##[error]y ###[z", "x##\\[error]y ###\\[z"),
        ("plain routes/demo", "plain routes/demo"),
    ],
)
def test_shown_line_escapes_what_ends_or_commands_a_line(text: str, line: str) -> None:
    assert shown.line(text) == line


def test_shown_json_reads_back_exactly() -> None:
    document = {"route": "r\x85\u2028##[error]x\n\udcff"}
    text = shown.json_text(document)
    assert "##[" not in text and not CONTROL.search(text.replace("\n", ""))
    assert json.loads(text) == document
