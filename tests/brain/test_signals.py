"""Stop means stop: Ctrl-C (SIGINT) or SIGTERM sent to the INSTALLED ``bhrain`` while a tool runs.

The tool's process group is killed, no further tool call and no further model call is made, the trace is
written as an interrupted run, stdout carries no answer (a stopped review prints no counts) and the exit is
130 / 143 with ``error: interrupted`` / ``error: terminated``. Real processes throughout: the scripted atom
or the real anthropic SDK against the fake Messages API server, and ``bash sleep 30`` as the tool (in the
sandbox where bubblewrap is installed: ``auto`` is the default; and without it, ``--sandbox off``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.brain.helpers import BHRAIN, call, scripted_run, write_script
from tests.fakes.llm_servers import AnthropicServer, Reply

SIGNALS = [(signal.SIGINT, 130, "interrupted"), (signal.SIGTERM, 143, "terminated")]
# A tool that says it started and then sleeps.
SLEEPER = "echo $$ > {name}.pid; sleep 30"


def wait_for(check: Callable[[], bool], what: str, timeout: float = 20) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.02)


def live_commands(bhrain: int) -> list[int]:
    """Live processes (zombies are dead: not counted) that a command of the ``bhrain`` process started: they
    carry its mark (``routedriver.leftovers``: ``ROUTEDRIVER_PROC`` holds ``<pid>-<n>``), in the sandbox or
    not, in its process group or not."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        marks = next(
            (v[len(b"ROUTEDRIVER_PROC=") :] for v in environ if v.startswith(b"ROUTEDRIVER_PROC=")), b""
        )
        ours = any(mark.startswith(f"{bhrain}-".encode()) for mark in marks.split())
        if ours and stat[stat.rindex(")") + 2] != "Z":  # after "pid (comm) ": the state
            found.append(int(entry.name))
    return found


def start(args: Sequence[str], cwd: Path, env: Mapping[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [BHRAIN, *args],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # as under a robot: the signal reaches bhrain only, as the test sends it
    )


def stop(
    victim: subprocess.Popen[str], tmp_path: Path, sleepers: Sequence[str], signum: int
) -> tuple[str, str]:
    """Wait until every sleeper runs, send ``signum`` to bhrain, and return its stdout and stderr."""
    pids = [tmp_path / f"{name}.pid" for name in sleepers]
    wait_for(lambda: all(p.exists() and p.read_text().strip() for p in pids), "the tools to start")
    assert live_commands(victim.pid)
    victim.send_signal(signum)
    out, err = victim.communicate(timeout=30)
    # nothing the tools started is left behind
    wait_for(lambda: not live_commands(victim.pid), "the commands to be gone", timeout=5)
    return out, err


def trace_of(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


@pytest.mark.parametrize("sandbox", ["auto", "off"])
@pytest.mark.parametrize(("signum", "code", "word"), SIGNALS)
def test_a_signal_during_a_lone_bash_call_stops_the_run_with_nothing_after_it(
    tmp_path: Path, signum: int, code: int, word: str, sandbox: str
) -> None:
    script = write_script(
        tmp_path / "s.json",
        [
            {"tool_calls": [call("bash", command=SLEEPER.format(name="one"))]},
            {"tool_calls": [call("write", file_path="after.txt", content="x")]},
            {"text": "all done"},
        ],
    )
    victim = start(
        [*scripted_run(script), "--input", "go", "--trace", "t.json", "--sandbox", sandbox], tmp_path
    )
    out, err = stop(victim, tmp_path, ["one"], signum)
    assert (victim.returncode, out, err) == (code, "", f"error: {word}\n")
    assert not (tmp_path / "after.txt").exists()
    trace = trace_of(tmp_path / "t.json")
    assert (trace["status"], trace["exit_code"], trace["totals"]["iterations"]) == (word, code, 1)
    assert [(c["name"], c["status"]) for c in trace["iterations"][0]["tool_calls"]] == [
        ("bash", "interrupted")
    ]
    assert "no further tool call or model call was made" in trace["explanation"]


@pytest.mark.parametrize(("signum", "code", "word"), SIGNALS)
def test_a_signal_during_concurrent_calls_kills_them_all_and_runs_no_later_call(
    tmp_path: Path, signum: int, code: int, word: str
) -> None:
    script = write_script(
        tmp_path / "s.json",
        [
            {
                "tool_calls": [
                    call("bash", command=SLEEPER.format(name="a")),
                    call("bash", command=SLEEPER.format(name="b")),
                ]
            },
            {"tool_calls": [call("write", file_path="after.txt", content="x")]},
            {"text": "all done"},
        ],
    )
    victim = start([*scripted_run(script), "--input", "go", "--json", "--trace", "t.json"], tmp_path)
    out, err = stop(victim, tmp_path, ["a", "b"], signum)
    assert (victim.returncode, err) == (code, f"error: {word}\n")
    payload = json.loads(out)  # --json still says what was done, as for any run that ended early
    assert (payload["stop_reason"], payload["exit_code"], payload["iterations"]) == (word, code, 1)
    assert payload["error"] == f"error: {word}"
    assert [c["status"] for c in payload["tool_calls"]] == ["interrupted", "interrupted"]
    assert not (tmp_path / "after.txt").exists()
    assert trace_of(tmp_path / "t.json")["status"] == word


@pytest.mark.parametrize(("signum", "code", "word"), SIGNALS)
def test_the_claude_atom_asks_the_model_nothing_after_the_signal(
    tmp_path: Path, signum: int, code: int, word: str
) -> None:
    with AnthropicServer(api_key="sk-ant-signal") as server:
        server.enqueue(
            Reply.tool_calls([("bash", {"command": SLEEPER.format(name="one")})]),
            Reply.tool_calls([("write", {"file_path": "after.txt", "content": "x"})]),
            Reply.text("all done"),
        )
        victim = start(
            ["run", "--skill", "act", "--atom", "claude", "--base-url", server.base_url, "--input", "go"],
            tmp_path,
            env={"ANTHROPIC_API_KEY": "sk-ant-signal"},
        )
        out, err = stop(victim, tmp_path, ["one"], signum)
        assert (victim.returncode, out, err) == (code, "", f"error: {word}\n")
        assert len(server.requests) == 1  # the model was not asked again
        assert server.pending == 2
    assert not (tmp_path / "after.txt").exists()


def test_a_signal_while_the_model_answers_ends_the_run_at_once(tmp_path: Path) -> None:
    with AnthropicServer() as server:
        server.enqueue(Reply.tool_calls([("write", {"file_path": "after.txt", "content": "x"})], delay_s=30))
        victim = start(
            [
                *("run", "--skill", "act", "--atom", "claude", "--base-url", server.base_url),
                *("--input", "go", "--trace", "t.json"),
            ],
            tmp_path,
            env={"ANTHROPIC_API_KEY": "sk-ant-any"},
        )
        wait_for(lambda: len(server.requests) == 1, "the model call")
        started = time.monotonic()
        victim.send_signal(signal.SIGINT)
        out, err = victim.communicate(timeout=30)
        assert time.monotonic() - started < 10  # not after the 30 s answer
    assert (victim.returncode, out, err) == (130, "", "error: interrupted\n")
    assert not (tmp_path / "after.txt").exists()
    trace = trace_of(tmp_path / "t.json")
    assert (trace["status"], trace["iterations"]) == ("interrupted", [])


def test_a_stopped_review_prints_no_counts(tmp_path: Path) -> None:
    (tmp_path / "1.vision.md").write_text("the vision\n", encoding="utf-8")
    script = write_script(
        tmp_path / "s.json",
        [
            {
                "text": "blockers: 0\nnitpicks: 0",
                "tool_calls": [call("bash", command=SLEEPER.format(name="r"))],
            },
            {"text": "Looks fine.\nblockers: 0\nnitpicks: 0"},
        ],
    )
    args = [*scripted_run(script, skill="review"), "--tools", "files,bash", "--input-file", "1.vision.md"]
    victim = start(args, tmp_path)
    out, err = stop(victim, tmp_path, ["r"], signal.SIGINT)
    assert (victim.returncode, out, err) == (130, "", "error: interrupted\n")


@pytest.mark.parametrize(("signum", "code", "word"), SIGNALS)
def test_a_signal_during_a_grep_that_backtracks_without_end_stops_the_run(
    tmp_path: Path, signum: int, code: int, word: str
) -> None:
    """``(a|aa)+$`` on a long line of ``a`` backtracks for ages: with ``re`` the search held the GIL in C, the
    loop's thread never ran its signal handler, and only SIGKILL ended bhrain."""
    (tmp_path / "f.txt").write_text("a" * 80 + "b\n", encoding="utf-8")
    script = write_script(
        tmp_path / "s.json",
        [
            {"tool_calls": [call("bash", command="touch started")]},
            {"tool_calls": [call("grep", pattern="(a|aa)+$", path="f.txt")]},
            {"tool_calls": [call("write", file_path="after.txt", content="x")]},
            {"text": "all done"},
        ],
    )
    victim = start([*scripted_run(script), "--input", "go", "--sandbox", "off"], tmp_path)
    try:
        wait_for(lambda: (tmp_path / "started").exists(), "the first call")
        time.sleep(1)  # the grep is searching
        victim.send_signal(signum)
        out, err = victim.communicate(timeout=10)
    finally:
        victim.kill()
        victim.wait()
    assert (victim.returncode, out, err) == (code, "", f"error: {word}\n")
    assert not (tmp_path / "after.txt").exists()
