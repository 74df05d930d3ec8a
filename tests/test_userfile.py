"""The one loader for user files (issue 16, item 2), and the torture table every reader must survive.

Every kind of file a user writes or a pull request commits — guards, bhrain configs, permission files,
scripts, rubrics, behavior configs and profiles, behaviorci bundles, prompts, datasets and schemas — is
made hostile in every way in ``HOSTILE`` and read by the installed command that reads it. Each must end in
one ``error:`` line naming the file (and the key), exit 2 (a Claude Code hook: exit 1, its contract), no
traceback, no internal error, and no hang (a FIFO would wait for a writer forever).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Literal, NamedTuple

import pytest

from routedriver import userfile
from routedriver.errors import Refused
from tests.conftest import Ran, git, run_cli

Format = Literal["yaml", "json", "jsonl", "text"]


def _bomb() -> str:
    """A billion laughs: 10 aliases on each of 9 levels, 10^9 values once expanded, 350 bytes written."""
    text, previous = "a: &a [" + ", ".join(["lol"] * 10) + "]\n", "a"
    for name in "bcdefghi":
        text += f"{name}: &{name} [" + ", ".join([f"*{previous}"] * 10) + "]\n"
        previous = name
    return text


DIGITS = "9" * 5000
DEEP = "[" * 5000 + "]" * 5000
# The content of each hostile case, per format; the dataset's lines must each be one JSON object.
CONTENT: dict[str, dict[Format, str]] = {
    "duplicate keys": {
        "yaml": "timeout: 1\ntimeout: 2\n",
        "json": '{"timeout": 1, "timeout": 2}',
        "jsonl": '{"input": {"timeout": 1, "timeout": 2}}\n',
    },
    "alias bomb": {"yaml": _bomb()},
    "deep nesting": {"yaml": DEEP + "\n", "json": DEEP, "jsonl": '{"input": {"x": ' + DEEP + "}}\n"},
    "huge integer": {
        "yaml": f"timeout: {DIGITS}\n",
        "json": f'{{"timeout": {DIGITS}}}',
        "jsonl": f'{{"input": {{"timeout": {DIGITS}}}}}\n',
    },
}
# What the one line must say for each case (besides naming the file).
SAYS = {
    "FIFO": "a named pipe (FIFO), not a regular file",
    "link to /dev/zero": "a symlink to /dev/zero, a character device, not a regular file",
    "directory": "a directory, not a regular file",
    "oversize": "more than",
    "not UTF-8": "line 2: not UTF-8 text",
    "duplicate keys": "timeout' appears twice",
    "alias bomb": "aliases expand to more than 10,000 values",
    "deep nesting": "nested deeper than 100 levels",
    "huge integer": "timeout: an integer of 5,000 digits",
}
HOSTILE = [*SAYS, "empty"]


def make_hostile(path: Path, case: str, fmt: Format, limit: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if case == "FIFO":
        os.mkfifo(path)
    elif case == "link to /dev/zero":
        path.symlink_to("/dev/zero")
    elif case == "directory":
        path.mkdir()
    elif case == "oversize":
        with path.open("wb") as handle:
            handle.truncate(limit + 1)  # sparse: the size is refused before a byte is read
    elif case == "not UTF-8":
        path.write_bytes(b"# fine\n" + (b'{"x": "caf\xe9"}' if fmt in ("json", "jsonl") else b"x: caf\xe9\n"))
    elif case == "empty":
        path.write_bytes(b"")
    else:
        path.write_text(CONTENT[case][fmt], encoding="utf-8")


class Reader(NamedTuple):
    """One kind of user file, and the installed command that reads it."""

    fmt: Format
    file: str  # where the hostile file goes, relative to the work directory
    shown: str  # how the error line names it
    run: Callable[[Path], Ran]  # writes everything else it needs under the directory, runs the command
    # An empty file may mean "nothing set" (accepted); an empty rubric is an empty task, which bhrain asks
    # about on stdout (exit 2) as it does for an empty --input.
    empty: Literal["accepted", "refused", "asks"]
    refused_exit: int = 2  # Claude Code hooks exit 1: their exit 2 would block the robot
    limit: int = userfile.MAX_BYTES
    says: dict[str, str] = {}  # what its line says instead of SAYS, for a case it reads its own way


def _good_script(root: Path) -> Path:
    script = root / "good-script.json"
    script.write_text(json.dumps({"turns": ["done"]}), encoding="utf-8")
    return script


def _bhrain(root: Path, *extra: str, script: str | None = None, skill: str = "act") -> Ran:
    script = script or str(_good_script(root))
    argv = [
        "bhrain",
        "run",
        "--skill",
        skill,
        "--atom",
        "scripted",
        "--script",
        script,
        *extra,
        "--input",
        "x",
    ]
    return run_cli(argv, root)


def _route_set(root: Path) -> Ran:
    git(root, "init", "-q")
    (root / "route" / "1.x.stone").write_text("do x\n", encoding="utf-8")
    (root / "route" / "1.x.md").write_text("x\n", encoding="utf-8")  # the artifact an empty guard asks for
    return run_cli(["route.stone.set", "--route", "route", "--stone", "1.x", "--as", "passed"], root)


BEHAVIOR = "security:\n  behavior:\n    profile: '{{behavior.mine}}'\n"


def _behave(root: Path, config: str = "behavior.yaml") -> Ran:
    event = {"session_id": "s", "cwd": str(root), "hook_event_name": "PreToolUse", "tool_name": "Bash"}
    event["tool_input"] = {"command": "ls"}  # type: ignore[assignment]
    argv = ["bhrain", "behave", "--config", config, "--state-dir", str(root / "state"), "--hook", "pre_tool"]
    return run_cli(argv, root, input=json.dumps(event))


def _behave_with_profile(root: Path) -> Ran:
    (root / "behavior.yaml").write_text(BEHAVIOR, encoding="utf-8")
    return _behave(root)


def _bundle(root: Path, **paths: str) -> Ran:
    bundle = root / "b"
    bundle.mkdir(exist_ok=True)
    files = {
        "prompt_path": "prompt.md",
        "dataset_path": "dataset.jsonl",
        "schema_path": "schema.json",
    } | paths
    defaults = {
        "prompt.md": "Question: {{ question }}\n",
        "dataset.jsonl": '{"input": {"question": "q"}, "mock_output": {"a": 1}}\n',
        "schema.json": '{"type": "object"}',
    }
    for name, text in defaults.items():
        if not os.path.lexists(bundle / name):
            (bundle / name).write_text(text, encoding="utf-8")
    if not os.path.lexists(bundle / "bundle.yaml"):
        (bundle / "bundle.yaml").write_text(
            f"name: t\nprompt_path: {files['prompt_path']}\ndataset_path: {files['dataset_path']}\n"
            f"provider: {{name: mock}}\noutput_contract: {{schema_path: {files['schema_path']}}}\n",
            encoding="utf-8",
        )
    return run_cli(["behaviorci", "validate", "b/bundle.yaml"], root)


READERS: dict[str, Reader] = {
    "guard": Reader("yaml", "route/1.x.guard", "route/1.x.guard", _route_set, "accepted"),
    "bhrain config": Reader(
        "yaml", "c.yaml", "config file c.yaml", lambda root: _bhrain(root, "--config", "c.yaml"), "accepted"
    ),
    "permissions file (YAML)": Reader(
        "yaml",
        "p.yaml",
        "permissions file p.yaml",
        lambda root: _bhrain(root, "--permissions", "p.yaml"),
        "refused",
    ),
    "permissions file (JSON)": Reader(
        "json",
        "p.json",
        "permissions file p.json",
        lambda root: _bhrain(root, "--permissions", "p.json"),
        "refused",
    ),
    "script (YAML)": Reader(
        "yaml", "s.yaml", "script file s.yaml", lambda r: _bhrain(r, script="s.yaml"), "refused"
    ),
    "script (JSON)": Reader(
        "json", "s.json", "script file s.json", lambda r: _bhrain(r, script="s.json"), "refused"
    ),
    "rubric": Reader(
        "text",
        "r.md",
        "rubric r.md",
        lambda root: _bhrain(root, "--rubric", "r.md", skill="review"),
        "asks",
    ),
    "behavior config (hook)": Reader(
        "yaml", "behavior.yaml", "behavior.yaml", _behave, "refused", refused_exit=1
    ),
    "behavior profile (hook)": Reader(
        "yaml", "behavior/mine.yaml", "behavior/mine.yaml", _behave_with_profile, "accepted", refused_exit=1
    ),
    "bundle": Reader(  # a directory named on the command line is a bundle's directory
        "yaml", "b/bundle.yaml", "b/bundle.yaml", _bundle, "refused", says={"directory": "no bundle.yaml in"}
    ),
    # A directory where a bundle's file belongs is said in the bundle's own words (its likeliest slip).
    "prompt": Reader(
        "text", "b/prompt.md", "b/prompt.md", _bundle, "accepted", says={"directory": "is a directory"}
    ),
    "dataset": Reader(
        "jsonl",
        "b/dataset.jsonl",
        "b/dataset.jsonl",
        _bundle,
        "refused",
        limit=1 << 30,
        says={"directory": "is a directory"},
    ),
    "schema": Reader(
        "json", "b/schema.json", "b/schema.json", _bundle, "refused", says={"directory": "is a directory"}
    ),
}


def _applies(reader: Reader, case: str) -> bool:
    if case in CONTENT:
        return reader.fmt in CONTENT[case]  # a text file has no keys; JSON no aliases
    return True


TORTURE = [
    pytest.param(name, case, id=f"{name}: {case}")
    for name, reader in READERS.items()
    for case in HOSTILE
    if _applies(reader, case)
]


@pytest.mark.parametrize(("name", "case"), TORTURE)
def test_every_reader_refuses_every_hostile_file_in_one_line(tmp_path: Path, name: str, case: str) -> None:
    reader = READERS[name]
    root = tmp_path / "work"
    (root / "route").mkdir(parents=True)
    make_hostile(root / reader.file, case, reader.fmt, reader.limit)
    began = time.monotonic()
    ran = reader.run(root)
    assert time.monotonic() - began < 60
    assert "Traceback" not in ran.err and "internal error" not in ran.err, ran.err
    if case == "empty" and reader.empty == "accepted":
        assert ran.code == 0, ran.err  # nothing set is a valid file for this reader
        return
    if case == "empty" and reader.empty == "asks":
        assert (ran.code, ran.err) == (2, "") and "What should I do?" in ran.out
        return
    assert ran.code == reader.refused_exit, ran.err
    assert ran.err.startswith("error: ") and ran.err.count("\n") == 1, ran.err
    if case == "empty":
        assert reader.file in ran.err, ran.err  # refused by the reader's own checks, naming the file
    else:
        assert reader.shown in ran.err and reader.says.get(case, SAYS[case]) in ran.err, ran.err


# -- the gate: a hostile guard committed to a passed stone fails that stone closed ---------------------------
@pytest.mark.parametrize(
    "case", ["link to /dev/zero", "not UTF-8", "duplicate keys", "alias bomb", "huge integer"]
)
def test_route_verify_fails_a_stone_closed_whose_committed_guard_is_hostile(
    git_repo: Path, case: str
) -> None:
    route = git_repo / "route"
    route.mkdir()
    for stone in ("1.x", "2.y"):
        (route / f"{stone}.stone").write_text("do it\n", encoding="utf-8")
        (route / f"{stone}.guard").write_text("artifacts: []\n", encoding="utf-8")
        assert (
            run_cli(
                ["route.stone.set", "--route", "route", "--stone", stone, "--as", "passed"], git_repo
            ).code
            == 0
        )
    (route / "1.x.guard").unlink()
    make_hostile(route / "1.x.guard", case, "yaml", userfile.MAX_BYTES)
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "a hostile guard")
    ran = run_cli(["route.verify", "--route", "route"], git_repo, timeout=60)
    assert ran.code == 2, ran.err
    assert "route/1.x: route/1.x.guard: " in ran.out and SAYS[case] in ran.out, ran.out
    assert "passed     route/2.y" in ran.out  # the other stone is still checked, and passes
    errors = [line for line in ran.err.splitlines() if not line.startswith("notice: ")]
    assert "Traceback" not in ran.err and len(errors) == 1 and errors[0].startswith("error: ")


@pytest.mark.parametrize("case", ["link to /dev/zero", "FIFO", "directory", "oversize"])
def test_route_verify_refuses_an_approval_when_the_approvers_file_is_hostile(
    git_repo: Path, case: str
) -> None:
    from tests.route_gate.gate import commit_all, gated_route, lines_of, pass_all

    route = gated_route(git_repo)
    commit_all(git_repo, "the route")
    pass_all(git_repo, route)  # approved by the test human, who .route-approvers lists
    listed = git_repo / ".route-approvers"
    listed.unlink()
    make_hostile(listed, case, "text", userfile.MAX_BYTES)
    ran = run_cli(["route.verify", "--route", "route"], git_repo, timeout=60)
    assert ran.code == 2 and "Traceback" not in ran.err
    said = lines_of(ran)["route/1.vision"]  # fails closed: nobody is an approver
    assert said.startswith(f"unapproved: the approvers file .route-approvers: {SAYS[case]}"), said


# -- the loader itself ---------------------------------------------------------------------------------------
YAML_CASES = [
    ("a: 1\nb:\n  c: 2\n  c: 3\n", "f.yaml: line 4: key 'b.c' appears twice (line 3 and line 4)"),
    ("l:\n  - {x: 1}\n  - {x: " + "1" * 40 + "}\n", "f.yaml: line 3: l[2].x: an integer of 40 digits"),
    ("a: &a\n  b: *a\n", "f.yaml: line 2: a: alias *a refers to itself"),
    ("? [1]\n: 2\n", "f.yaml: line 1: malformed YAML (a key that is a list or a mapping)"),
    ("a: [\n", "f.yaml: line 2: malformed YAML (expected the node content, but found '<stream end>')"),
    ("a: b\x00\n", "f.yaml: line 1: malformed YAML (character #x0000 is not allowed)"),
    ("[" * 101 + "]" * 101, "f.yaml: line 1: nested deeper than 100 levels"),
]


@pytest.mark.parametrize(("text", "says"), YAML_CASES)
def test_yaml_refusals_name_the_line_and_the_key(text: str, says: str) -> None:
    with pytest.raises(Refused) as caught:
        userfile.parse_yaml(text, shown="f.yaml")
    assert caught.value.line().startswith(f"error: {says}"), caught.value.line()


def test_yaml_within_the_limits_reads_as_pyyaml_reads_it() -> None:
    text = "base: &base {a: 1, b: [x, y]}\nuse:\n  <<: *base\n  b: [z]\nnum: " + "9" * 32 + "\n"
    assert userfile.parse_yaml(text, shown="f") == {
        "base": {"a": 1, "b": ["x", "y"]},
        "use": {"a": 1, "b": ["z"]},  # a merged key may be overridden: no duplicate
        "num": int("9" * 32),
    }
    nested = "[" * 100 + "]" * 100
    assert userfile.parse_yaml(nested, shown="f") is not None  # exactly the limit is fine
    assert userfile.parse_yaml("", shown="f") is None


def test_a_bomb_is_refused_at_once() -> None:
    began = time.monotonic()
    with pytest.raises(Refused, match="aliases expand to more than 10,000 values"):
        userfile.parse_yaml(_bomb(), shown="f")
    assert time.monotonic() - began < 2


JSON_CASES = [
    ('{"a": {"b": 1, "b": 2}}', "f.json: key 'a.b' appears twice"),
    ('{"t": [1, -' + "1" * 40 + "]}", "f.json: t[2]: an integer of 40 digits"),
    ("[" * 100000, "f.json: nested deeper than 100 levels"),
    ("[" * 101 + "]" * 101, "f.json: nested deeper than 100 levels"),
    (
        '{"a":\n 1,,}',
        "f.json: line 2: malformed JSON (Expecting property name enclosed in double quotes at column 4)",
    ),
]


@pytest.mark.parametrize(("text", "says"), JSON_CASES)
def test_json_refusals_name_the_key(text: str, says: str) -> None:
    with pytest.raises(Refused) as caught:
        userfile.parse_json(text, shown="f.json")
    assert caught.value.line().startswith(f"error: {says}"), caught.value.line()


def test_reading_refuses_by_kind_before_reading_and_by_size_while_reading(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(Refused, match="a named pipe"):
        userfile.read_bytes(fifo, what="guard")
    grown = tmp_path / "grown"
    grown.write_bytes(b"x" * 11)
    with pytest.raises(Refused, match=r"^guard .*grown: more than 10 bytes \(11\); a guard may have at"):
        userfile.read_bytes(grown, what="guard", limit=10)
    # /proc files say they are empty and are not: the limit holds while reading too.
    with pytest.raises(Refused, match=r"environ: more than 15 bytes; "):
        userfile.read_bytes(Path("/proc/self/environ"), what="guard", limit=15)
    custom = type("CustomError", (Refused,), {})
    with pytest.raises(custom, match="^g: not found"):
        userfile.read_text(tmp_path / "missing", what="guard", shown="g", error=custom)
    bom = tmp_path / "bom"
    bom.write_bytes(b"\xef\xbb\xbfa: 1\n")
    assert userfile.read_text(bom, what="x", bom=True) == "a: 1\n"
    assert userfile.load_yaml(bom, what="x") == {"a": 1}


def test_a_device_is_refused_without_being_opened(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Opening some devices acts (a watchdog starts counting, a tape rewinds): look before opening.
    opened: list[str] = []
    real_open = os.open

    def spying_open(path: str | os.PathLike[str], flags: int, *args: int, **kwargs: int) -> int:
        opened.append(os.fspath(path))
        return real_open(path, flags, *args, **kwargs)

    link = tmp_path / "guard"
    link.symlink_to("/dev/null")
    monkeypatch.setattr(os, "open", spying_open)
    with pytest.raises(Refused, match="a symlink to /dev/null, a character device, not a regular file"):
        userfile.read_bytes(link, what="guard")
    assert opened == []


def test_a_record_is_read_or_is_an_oserror_never_a_hang_or_a_flood(tmp_path: Path) -> None:
    # The driver's own files (records under .route/, a hook's state, a cache entry) are read tolerantly:
    # what read_bytes refuses is an OSError there, which their readers take as "no such record".
    record = tmp_path / "record"
    record.write_bytes(b"kind: pass\n")
    assert userfile.read_record(record) == b"kind: pass\n"
    with pytest.raises(FileNotFoundError):
        userfile.read_record(tmp_path / "missing")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    began = time.monotonic()
    with pytest.raises(OSError, match="not a regular file"):
        userfile.read_record(fifo)
    assert time.monotonic() - began < 5
    zero = tmp_path / "zero"
    zero.symlink_to("/dev/zero")
    with pytest.raises(OSError, match="not a regular file"):
        userfile.read_record(zero)
    with pytest.raises(OSError, match="more than 4 bytes"):
        userfile.read_record(record, limit=4)
    with pytest.raises(OSError, match="more than 15 bytes"):  # /proc says 0 bytes: counted while reading
        userfile.read_record("/proc/self/environ", limit=15)
