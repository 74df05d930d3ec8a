"""route.bounce and route.drive fed malformed hook events, as an adversary or a fuzzer would send them.

Each row of a table is one event (the exact bytes on stdin) and the exit code the installed hook must give:
route.bounce (PreToolUse) blocks (2) every file edit or Bash call it cannot read, and refuses what it judges
with Claude Code's JSON deny (0, "deny: …" in the table); the Stop hook never lets a robot off an
unfinished route because its event was unreadable; SessionStart still says where the robot is.
"""

from __future__ import annotations

import json
import random
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from tests.conftest import Ran, git
from tests.route.routes import run_route, write
from tests.route_gate.gate import denied, gated_route, pass_all, route_set, sent_back

DROP = object()  # a field the event leaves out
SESSION = "7f6c2d1e-4b1a-4c55-9e3d-2b8f0a1c9d42"


def event(where: Path, name: Any = "PreToolUse", **fields: Any) -> dict[str, Any]:
    """The JSON object Claude Code sends from ``where``, with ``fields`` changed (``DROP`` removes one)."""
    payload: dict[str, Any] = {
        "session_id": SESSION,
        "transcript_path": str(where / ".claude" / "transcript.jsonl"),
        "cwd": str(where),
        "permission_mode": "default",
        "hook_event_name": name,
        **fields,
    }
    return {key: value for key, value in payload.items() if value is not DROP}


def write_event(where: Path, path: Any = "docs/notes.md", tool: Any = "Write", **fields: Any) -> bytes:
    key = "notebook_path" if tool == "NotebookEdit" else "file_path"
    tool_input = {key: path, "content": "new content\n"}
    if path is DROP:
        del tool_input[key]
    fields.setdefault("tool_input", tool_input)
    return json.dumps(event(where, tool_name=tool, tool_use_id="toolu_01ABC", **fields)).encode("utf-8")


def run_hook(argv: list[str], cwd: Path, data: bytes) -> Ran:
    """The installed hook, with exactly ``data`` on stdin (bytes: not every event is text)."""
    done = subprocess.run(argv, cwd=cwd, input=data, capture_output=True, timeout=120, check=False)
    return Ran(
        done.returncode, done.stdout.decode("utf-8", "replace"), done.stderr.decode("utf-8", "replace")
    )


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository on branch ``work`` with a bound, unfinished route whose 2.plan protects ``src/**``."""
    root = tmp_path_factory.mktemp("events") / "repo"
    root.mkdir()
    git(root, "init", "-q")
    write(root / "README.md", "test repo\n")
    git(root, "add", "README.md")
    git(root, "commit", "-q", "-m", "initial")
    route = gated_route(root)
    write(route / "2.plan.guard", (route / "2.plan.guard").read_text() + "protect: ['src/**']\n")
    git(root, "switch", "-q", "-c", "work")
    assert run_route(["route.bind", "--set", "route"], root).code == 0
    return root


# ---------------------------------------------------------------- route.bounce

UNREADABLE = "so it cannot tell what the call would write; it blocks what it cannot read"
Build = Callable[[Path], bytes]
NESTED = b'{"tool_name": "Write", "tool_input": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"

# (what, the event's bytes, exit code, what stderr says). 2 = blocked; 1 = a wiring mistake Claude Code
# shows without blocking; 0 = allowed, silently.
BOUNCE_EVENTS: list[tuple[str, Build, int, str]] = [
    # stdin that is not one JSON object
    ("empty stdin", lambda cwd: b"", 2, "the hook event is empty"),
    ("whitespace only", lambda cwd: b"\n \t\n", 2, "the hook event is empty"),
    (
        "not UTF-8",
        lambda cwd: write_event(cwd, "route/1.vision.st\xffne").replace(b"\\u00ff", b"\xff"),
        2,
        "the hook event is not UTF-8",
    ),
    (
        "Latin-1 bytes",
        lambda cwd: b'{"tool_name": "Write", "tool_input": {"file_path": "caf\xe9.md"}}',
        2,
        "not UTF-8",
    ),
    (
        "truncated",
        lambda cwd: write_event(cwd, "route/1.vision.stone")[:-25],
        2,
        "the hook event is not JSON",
    ),
    (
        "cut after the tool name",
        lambda cwd: write_event(cwd)[: write_event(cwd).index(b"tool_input")],
        2,
        "not JSON",
    ),
    (
        "a JSON array",
        lambda cwd: b"[" + write_event(cwd, "route/1.vision.stone") + b"]",
        2,
        "the hook event is a JSON array, not a JSON object",
    ),
    ("null", lambda cwd: b"null", 2, "the hook event is null, not a JSON object"),
    ("a number", lambda cwd: b"42", 2, "the hook event is a number, not a JSON object"),
    ("a string", lambda cwd: b'"Write route/1.vision.stone"', 2, "the hook event is a string"),
    ("NaN", lambda cwd: b'{"tool_name": "Write", "x": NaN}', 2, "NaN is not a JSON number"),
    (
        "tool_name twice",
        lambda cwd: write_event(cwd, "route/1.vision.stone", "Read").replace(
            b'"tool_name": "Read"', b'"tool_name": "Read", "tool_name": "Write"'
        ),
        2,
        "the key 'tool_name' appears twice",
    ),
    ("nested too deep", lambda cwd: NESTED, 2, "nested too deeply"),
    # the envelope
    ("no tool_name", lambda cwd: write_event(cwd, tool=DROP), 2, "tool_name is missing"),
    (
        "tool_name a number",
        lambda cwd: write_event(cwd, tool=7),
        2,
        "tool_name is a number, not a tool's name",
    ),
    ("tool_name null", lambda cwd: write_event(cwd, tool=None), 2, "tool_name is null"),
    ("tool_name a list", lambda cwd: write_event(cwd, tool=["Write"]), 2, "tool_name is a JSON array"),
    ("tool_name empty", lambda cwd: write_event(cwd, tool=""), 2, "tool_name is empty"),
    (
        "hook_event_name a number",
        lambda cwd: write_event(cwd, hook_event_name=3),
        2,
        "hook_event_name is a number",
    ),
    ("cwd a list", lambda cwd: write_event(cwd, cwd=[str(cwd)]), 2, "cwd is a JSON array, not a path"),
    ("cwd with a NUL", lambda cwd: write_event(cwd, cwd=f"{cwd}\0/x"), 2, "cwd holds a NUL character"),
    # a file edit whose target cannot be told
    (
        "Write: tool_input missing",
        lambda cwd: write_event(cwd, tool_input=DROP),
        2,
        "tool_input is missing (a Write call)",
    ),
    (
        "Write: tool_input a string",
        lambda cwd: write_event(cwd, tool_input="route/1.vision.stone"),
        2,
        "tool_input is a string, not an object (a Write call)",
    ),
    (
        "Edit: tool_input a list",
        lambda cwd: write_event(cwd, tool="Edit", tool_input=[]),
        2,
        "tool_input is a JSON array",
    ),
    (
        "MultiEdit: tool_input null",
        lambda cwd: write_event(cwd, tool="MultiEdit", tool_input=None),
        2,
        "tool_input is null",
    ),
    ("Write: file_path missing", lambda cwd: write_event(cwd, DROP), 2, "tool_input.file_path is missing"),
    (
        "Write: file_path a list",
        lambda cwd: write_event(cwd, ["route/1.vision.stone"]),
        2,
        "tool_input.file_path is a JSON array, not a path",
    ),
    (
        "Edit: file_path a number",
        lambda cwd: write_event(cwd, 1, "Edit"),
        2,
        "tool_input.file_path is a number",
    ),
    ("Write: file_path null", lambda cwd: write_event(cwd, None), 2, "tool_input.file_path is null"),
    (
        "Write: file_path an object",
        lambda cwd: write_event(cwd, {"path": "x"}),
        2,
        "is an object, not a path",
    ),
    ("Write: file_path empty", lambda cwd: write_event(cwd, ""), 2, "tool_input.file_path is empty"),
    (
        "Write: NUL in file_path",
        lambda cwd: write_event(cwd, "docs/ok.md\0/../../route/1.vision.stone"),
        2,
        "tool_input.file_path holds a NUL character",
    ),
    (
        "NotebookEdit: notebook_path missing",
        lambda cwd: write_event(cwd, tool="NotebookEdit", tool_input={"file_path": "src/a.ipynb"}),
        2,
        "tool_input.notebook_path is missing",
    ),
    (
        "Write: a second path key that is not a path",
        lambda cwd: write_event(cwd, tool_input={"file_path": "docs/a.md", "notebook_path": 5}),
        2,
        "tool_input.notebook_path is a number",
    ),
    (
        "Write: a stone smuggled in a second path key",
        lambda cwd: write_event(
            cwd, tool_input={"file_path": "docs/a.md", "notebook_path": "route/1.vision.stone"}
        ),
        0,
        "deny: route.bounce: blocked route/1.vision.stone: stones (*.stone) are read-only",
    ),
    # a Bash call whose command cannot be read is blocked like an unreadable file edit
    (
        "Bash: tool_input a string",
        lambda cwd: write_event(cwd, tool="Bash", tool_input="rm route/1.vision.stone"),
        2,
        "tool_input is a string, not an object (a Bash call)",
    ),
    (
        "Bash: command a list",
        lambda cwd: write_event(cwd, tool="Bash", tool_input={"command": ["rm", "x"]}),
        2,
        "tool_input.command is a JSON array, not a command line",
    ),
    ("Bash: no command", lambda cwd: write_event(cwd, tool="Bash", tool_input={}), 2, "command is missing"),
    # tools bounce does not police pass, whatever their input holds
    ("Read: tool_input missing", lambda cwd: write_event(cwd, tool="Read", tool_input=DROP), 0, ""),
    ("Grep", lambda cwd: write_event(cwd, tool="Grep", tool_input={"pattern": "x"}), 0, ""),
    (
        "write, lower-case (not a Claude Code tool)",
        lambda cwd: write_event(cwd, "route/1.vision.stone", "write"),
        0,
        "",
    ),
    # well-formed events are judged as before, however large or odd
    ("Write docs/notes.md", lambda cwd: write_event(cwd), 0, ""),
    (
        "Write a stone",
        lambda cwd: write_event(cwd, "route/1.vision.stone"),
        0,
        "deny: stones (*.stone) are read-only",
    ),
    (
        "Write a protected path",
        lambda cwd: write_event(cwd, "src/app.py"),
        0,
        "deny: protected by stone 2.plan",
    ),
    (
        "Write 20 MB to docs",
        lambda cwd: write_event(cwd, tool_input={"file_path": "docs/big.md", "content": "x" * (20 << 20)}),
        0,
        "",
    ),
    (
        "Write 20 MB to a stone",
        lambda cwd: write_event(
            cwd, tool_input={"file_path": "route/2.plan.stone", "content": "x" * (20 << 20)}
        ),
        0,
        "deny: stones (*.stone) are read-only",
    ),
    (
        "Write a stone by an escaped name",
        lambda cwd: write_event(cwd, "route/1.vision\\u002estone").replace(b"\\\\u002e", b"\\u002e"),
        0,
        "deny: stones (*.stone) are read-only",
    ),
    (
        "Write a stone whose name is not UTF-8 on disk",
        lambda cwd: write_event(cwd, "route/\udcff.stone"),
        0,
        "deny: stones (*.stone) are read-only",
    ),
    (
        "Write a guard name too long for the file system",
        lambda cwd: write_event(cwd, "x" * 300 + ".guard"),
        0,
        "",
    ),
    (
        "Write a stone name too long for the file system",
        lambda cwd: write_event(cwd, "x" * 300 + ".stone"),
        0,
        "deny: stones (*.stone) are read-only",
    ),
    # names in another letter case are the same file on a case-insensitive file system (macOS, Windows)
    (
        "Write a stone in capitals",
        lambda cwd: write_event(cwd, "route/1.Vision.STONE"),
        0,
        "deny: stones (*.stone)",
    ),
    (
        "Edit a guard in capitals",
        lambda cwd: write_event(cwd, "route/2.plan.Guard", "Edit"),
        0,
        "deny: guards (*.guard)",
    ),
    (
        "Write under .ROUTE/",
        lambda cwd: write_event(cwd, "route/.ROUTE/1.vision.passed"),
        0,
        "deny: under a route's .route/",
    ),
    (
        "Write .Route-Approvers",
        lambda cwd: write_event(cwd, ".Route-Approvers"),
        0,
        "deny: the approvers file",
    ),
    # wired to another event: a mistake in settings.json, shown to the user; exit 2 there would trap the robot
    (
        "a Stop event",
        lambda cwd: json.dumps(event(cwd, "Stop", stop_hook_active=False)).encode(),
        1,
        "error: route.bounce judges PreToolUse events, and this is a Stop event (nothing blocked)",
    ),
    (
        "a UserPromptSubmit event",
        lambda cwd: json.dumps(event(cwd, "UserPromptSubmit", prompt="hi")).encode(),
        1,
        "wire route.bounce to PreToolUse in .claude/settings.json",
    ),
]


@pytest.mark.parametrize(
    ("what", "build", "code", "says"), BOUNCE_EVENTS, ids=[row[0] for row in BOUNCE_EVENTS]
)
def test_bounce_blocks_what_it_cannot_read(repo: Path, what: str, build: Build, code: int, says: str) -> None:
    done = run_hook(["route.bounce"], repo, build(repo))
    if says.startswith("deny: "):  # judged and refused: Claude Code's JSON deny, the reason in it
        assert (done.code, done.err) == (0, "") and says[6:] in denied(done), (what, done)
        return
    assert (done.code, done.out) == (code, ""), (what, done)
    assert says in done.err, (what, done.err)
    assert done.err.count("\n") == (0 if code == 0 else 1), done.err  # one line, no traceback
    if code == 2 and "tool call" in done.err:
        assert UNREADABLE in done.err and done.err.startswith("route.bounce: blocked this tool call: ")


def test_bounce_blocks_stdin_larger_than_any_event(repo: Path) -> None:
    data = write_event(repo, tool_input={"file_path": "docs/huge.md", "content": "x" * (64 << 20)})
    done = run_hook(["route.bounce"], repo, data)
    assert done.code == 2 and "the hook event is larger than 64 MiB" in done.err


def test_bounce_keeps_its_own_flag_mistakes_non_blocking(repo: Path) -> None:
    for argv in (["route.bounce", "--bogus"], ["route.bounce", "--route"]):
        done = run_hook(argv, repo, write_event(repo, "route/1.vision.stone"))
        assert done.code == 1 and done.err.startswith("error: "), argv


def test_bounce_fuzzed_events_never_crash_and_never_let_a_stone_through(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seeded mutations of real events (bytes flipped, cut, spliced): in-process, through click's runner.
    Whatever the bytes, the hook answers 0, 1 or 2 without an internal error, and a mutation that still
    reads as an edit of a stone is blocked."""
    from routedriver.cli.route_session import bounce_command

    seeds = [
        write_event(repo, "route/1.vision.stone"),
        write_event(repo, "route/2.plan.guard", "Edit"),
        write_event(repo, "route/.route/1.vision.approved", "MultiEdit"),
        write_event(repo, "route/3.ship.stone", "NotebookEdit"),
    ]
    monkeypatch.chdir(repo)  # where Claude Code runs hooks: the bound route is found from here
    rng = random.Random(20240611)
    runner = CliRunner()
    seen = {0: 0, 1: 0, 2: 0}
    for _ in range(300):
        data = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(1, 3)):
            where = rng.randrange(len(data))
            how = rng.randrange(4)
            if how == 0:
                data[where] = rng.randrange(256)
            elif how == 1:
                del data[where:]
            elif how == 2:
                data[where:where] = rng.choice([b"[", b"]", b"{", b"}", b'"', b",", b"\\", b"\x00", b"null"])
            else:
                del data[where]
        done = runner.invoke(bounce_command, [], input=bytes(data), catch_exceptions=False)
        code = done.exit_code
        assert code in (0, 1, 2) and "internal error" not in done.output, (bytes(data), done.output)
        seen[code] += 1
        if _still_edits_a_stone(bytes(data)):  # blocked as unreadable (2), or judged and denied
            assert code == 2 or denied(Ran(code, done.stdout, done.stderr)), (bytes(data), done.output)
        if code == 0:
            assert _reads_as_an_object(bytes(data)), bytes(data)
    assert seen[2] > 200  # the table's claim at scale: most damaged events are blocked


def _reads_as_an_object(data: bytes) -> bool:
    try:
        return isinstance(json.loads(data.decode("utf-8")), dict)
    except (UnicodeDecodeError, ValueError, RecursionError):
        return False


def _still_edits_a_stone(data: bytes) -> bool:
    """An oracle written apart from the hook: JSON whose tool and path say 'edit a stone' (read-only
    wherever it is, so the answer cannot depend on a mutated cwd)."""
    if not _reads_as_an_object(data):
        return False
    payload = json.loads(data.decode("utf-8"))
    tool_input = payload.get("tool_input")
    if payload.get("tool_name") not in ("Write", "Edit", "MultiEdit", "NotebookEdit"):
        return False
    if payload.get("hook_event_name", "PreToolUse") != "PreToolUse" or not isinstance(tool_input, dict):
        return False
    paths = [tool_input.get(key) for key in ("file_path", "notebook_path")]
    return any(isinstance(path, str) and path.endswith(".stone") for path in paths)


# ---------------------------------------------------------------- route.drive --when hook.onStop

STOP = ["route.drive", "--when", "hook.onStop"]
BOOT = ["route.drive", "--when", "hook.onBoot"]

# Stop events that do not say what they are. The route is unfinished and the robot can act: every one
# sends it back (exit 2); a malformed event never lets it off.
STOP_EVENTS: list[tuple[str, Build]] = [
    ("empty stdin", lambda cwd: b""),
    ("not UTF-8", lambda cwd: b'{"hook_event_name": "Stop", "stop_hook_active": \xff}'),
    ("truncated", lambda cwd: json.dumps(event(cwd, "Stop", stop_hook_active=False)).encode()[:40]),
    ("a JSON array", lambda cwd: b"[]"),
    ("null", lambda cwd: b"null"),
    ("a number", lambda cwd: b"0"),
    ("stop_hook_active twice", lambda cwd: b'{"stop_hook_active": true, "stop_hook_active": false}'),
    ("nested too deep", lambda cwd: b"[" * 100_000),
    (
        "stop_hook_active a string",
        lambda cwd: json.dumps(event(cwd, "Stop", stop_hook_active="false")).encode(),
    ),
    ("stop_hook_active missing", lambda cwd: json.dumps(event(cwd, "Stop")).encode()),
    ("hook_event_name a list", lambda cwd: json.dumps(event(cwd, ["Stop"], stop_hook_active=False)).encode()),
    ("well-formed", lambda cwd: json.dumps(event(cwd, "Stop", stop_hook_active=False)).encode()),
]


@pytest.mark.parametrize(("what", "build"), STOP_EVENTS, ids=[row[0] for row in STOP_EVENTS])
def test_a_malformed_stop_event_does_not_release_the_robot(repo: Path, what: str, build: Build) -> None:
    (repo / "route" / ".route" / ".drive.state").unlink(missing_ok=True)  # each row starts counting afresh
    done = run_hook(STOP, repo, build(repo))
    reason = sent_back(done)
    assert "The route is not finished; keep going.\nroute route: 0 of 3 stones passed" in reason, (what, done)
    assert "## 1.vision (ready)" in reason


def test_malformed_stop_events_still_end_in_the_loop_guard(repo: Path) -> None:
    (repo / "route" / ".route" / ".drive.state").unlink(missing_ok=True)
    kept = [bool(sent_back(run_hook([*STOP, "--max-blocks", "2"], repo, b"{broken"))) for _ in range(3)]
    assert kept == [True, True, False]  # an unreadable event counts as a repeat: a stuck robot is let go
    warned = run_hook([*STOP, "--max-blocks", "2"], repo, b"{broken")
    assert warned.err.startswith(
        "warning: the hook event is not JSON (Expecting property name enclosed in double quotes at line 1 "
        "column 2); route.drive answers from the route alone\n"
    )
    assert "letting the robot stop" in json.loads(warned.out)["systemMessage"]
    fresh = json.dumps(event(repo, "Stop", stop_hook_active=False)).encode()
    assert sent_back(run_hook([*STOP, "--max-blocks", "2"], repo, fresh))  # a new prompt: counting restarts


def test_a_malformed_stop_event_lets_the_robot_stop_where_only_a_human_can_act(git_repo: Path) -> None:
    route = gated_route(git_repo)
    git(git_repo, "switch", "-q", "-c", "work")
    assert run_route(["route.bind", "--set", "route"], git_repo).code == 0
    assert route_set(git_repo, route, "1.vision").code == 2  # reviewed; it waits for a human now
    waiting = run_hook(STOP, git_repo, b"")
    assert waiting.code == 0 and waiting.err == ""
    assert json.loads(waiting.out)["systemMessage"].startswith(
        "route route: waiting for human approval of 1.vision"
    )
    pass_all(git_repo, route)
    done = run_hook(STOP, git_repo, b"[1, 2]")
    assert done.code == 0 and json.loads(done.out) == {"systemMessage": "route route: all 3 stones passed."}
    assert done.err == (
        "warning: the hook event is a JSON array, not a JSON object; "
        "route.drive answers from the route alone\n"
    )


@pytest.mark.parametrize("data", [b"", b"{not json", b"\xff\xfe", b"[]", b'{"hook_event_name": 1}'])
def test_session_start_says_where_the_robot_is_whatever_its_event(repo: Path, data: bytes) -> None:
    done = run_hook(BOOT, repo, data)
    assert done.code == 0 and done.out.startswith("route.drive: route route: 0 of 3 stones passed")
    readable = data in (b"", b'{"hook_event_name": 1}')  # no event at all, or one that parses
    assert done.err == "" if readable else done.err.startswith("warning: "), done.err


def test_drive_hook_flag_mistakes_stay_non_blocking(repo: Path) -> None:
    for argv in ([*STOP, "--json"], [*STOP, "--bogus"], ["route.drive", "--when", "hook.onWhatever"]):
        done = run_hook(argv, repo, json.dumps(event(repo, "Stop", stop_hook_active=False)).encode())
        assert done.code == 1 and done.err.startswith("error: ") and done.err.count("\n") == 1, argv
