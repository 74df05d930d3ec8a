"""Runaway processes: nothing a command starts outlives it (issue 16, items 6 and 7).

Every way a command can leave a process behind — in the background, holding our pipes or not, in a new
session (``setsid``), as a double-forked daemon, ignoring SIGTERM — is played by a real shell, through
``proc.run`` itself, a route's review and judge (``route.stone.set``, the installed console script) and
bhrain's bash tool. behaviorci starts no processes (its providers are HTTP clients), so it has no case here.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from routedriver import leftovers, proc, threads
from routedriver.brain.tools import builtin_tools
from routedriver.brain.tools.base import ToolContext, ToolSettings
from tests.conftest import run_cli
from tests.route.routes import make_route, write

# What a command leaves behind: a name → a shell line that starts it and writes its pid to <pids>/<name>.
LEFTOVERS = {
    "background": "sleep 1000 >/dev/null 2>&1 & echo $! > {pids}/background",
    "holding": "sleep 1000 & echo $! > {pids}/holding",  # in the background, holding our pipes open
    "setsid": "setsid sleep 1000 >/dev/null 2>&1 & echo $! > {pids}/setsid",
    "stubborn": (  # a session of its own, and SIGTERM ignored
        "setsid sh -c 'trap \"\" TERM HUP; echo $$ > {pids}/stubborn; exec sleep 1000' >/dev/null 2>&1 &"
    ),
    "daemon": "( setsid sh -c 'sleep 1000 & echo $! > {pids}/daemon' & ) >/dev/null 2>&1",  # double fork
    "nohup": "nohup sleep 1000 >/dev/null 2>&1 & echo $! > {pids}/nohup",
}


def leaving_everything(pids: Path) -> str:
    """A command that starts every kind of leftover, waits until each has written its pid, and exits 0."""
    starts = "\n".join(line.format(pids=pids) for line in LEFTOVERS.values())
    wait = f"for f in {' '.join(LEFTOVERS)}; do until [ -s {pids}/$f ]; do sleep 0.01; done; done"
    return f"{starts}\n{wait}; echo done"


def started(pids: Path) -> dict[str, int]:
    return {path.name: int(path.read_text()) for path in pids.iterdir()}


def reaped(pid: int, timeout_s: float = 10.0) -> bool:
    """Whether ``pid`` is gone from /proc: not running, and not a zombie left for anybody to reap."""
    deadline = time.monotonic() + timeout_s
    while os.path.exists(f"/proc/{pid}"):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


@pytest.fixture
def pids(tmp_path: Path) -> Path:
    folder = tmp_path / "pids"
    folder.mkdir()
    return folder


def assert_all_gone(pids: Path) -> None:
    found = started(pids)
    assert sorted(found) == sorted(LEFTOVERS)
    left = {name: pid for name, pid in found.items() if not reaped(pid)}
    for pid in left.values():  # a failing run must not leave them running either
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    assert not left, f"still running (or unreaped): {left}"


def test_a_command_leaves_nothing_running_however_its_leftovers_hide(pids: Path) -> None:
    began = time.monotonic()
    result = proc.run(leaving_everything(pids), shell="bash", timeout=60)
    assert (result.returncode, result.stdout) == (0, "done\n")
    assert time.monotonic() - began < 10  # the pipes a leftover held were not waited on
    assert_all_gone(pids)


def test_a_timed_out_command_leaves_nothing_running_either(pids: Path) -> None:
    result = proc.run(leaving_everything(pids) + "; sleep 1000", shell="bash", timeout=2)
    assert result.timed_out and result.stdout == "done\n"
    assert_all_gone(pids)


def test_a_command_stopped_by_kill_running_leaves_nothing_running(pids: Path) -> None:
    command = leaving_everything(pids) + f"; touch {pids.parent}/ready; sleep 1000"
    batch = threads.Batch(lambda _: proc.run(command, shell="bash", timeout=60), [None], workers=1)
    deadline = time.monotonic() + 20
    while not (pids.parent / "ready").exists():
        assert time.monotonic() < deadline
        time.sleep(0.02)
    assert proc.kill_running() == 1
    (result,) = batch.results()
    assert result.interrupted
    assert_all_gone(pids)


def test_a_command_may_leave_a_daemon_when_asked_to(tmp_path: Path) -> None:
    # Git may start daemons meant to outlive it (fsmonitor--daemon, gc --auto): kill_leftovers=False.
    result = proc.run("setsid sleep 1000 >/dev/null 2>&1 & echo $!", shell="bash", kill_leftovers=False)
    daemon = int(result.stdout)
    try:
        time.sleep(0.2)
        assert os.path.exists(f"/proc/{daemon}")
        proc.run(["true"])  # another command's sweep does not take it: it carries no live mark
        assert os.path.exists(f"/proc/{daemon}")
    finally:
        os.kill(daemon, signal.SIGKILL)
    # It was re-parented to us (we are a subreaper); reap it, as its owner would have had to.
    os.waitpid(daemon, 0)


def test_concurrent_commands_keep_their_exit_codes_and_foreign_children_are_left_alone() -> None:
    # Children proc does not own, one still running in a session of its own and one about to exit 7: no
    # sweep may kill the first or reap the second (its Popen would then read exit 0).
    bystander = subprocess.Popen(["sleep", "1000"], start_new_session=True)
    exiting = subprocess.Popen(["sh", "-c", "sleep 0.3; exit 7"])

    def command(number: int) -> proc.ProcResult:
        delay = f"sleep 0.{number % 4}; " if number % 2 else ""
        return proc.run(f"{delay}setsid sleep 1000 >/dev/null 2>&1 & echo $!; exit {number}", shell="bash")

    try:
        results = threads.run_all(command, range(24), workers=12)
        assert [result.returncode for result in results] == list(range(24))
        assert all(reaped(int(result.stdout)) for result in results)
        assert exiting.wait(timeout=10) == 7
        assert bystander.poll() is None
    finally:
        bystander.kill()
        bystander.wait()


def test_a_command_too_long_for_execve_is_a_result_saying_so() -> None:
    result = proc.run("echo " + "x" * (128 << 10), shell="bash")
    assert result.returncode == 126 and not result.ok
    assert result.start_error.startswith("the command is too long to start: 131,077 bytes in one argument")
    assert result.stderr == result.start_error + "\n"
    missing = proc.run(["true"], cwd="/no/such/directory")
    assert (missing.returncode, missing.start_error) == (127, "/no/such/directory: No such file or directory")


# -- through the driver and bhrain ---------------------------------------------------------------------------
def test_a_review_and_a_judge_leave_nothing_running_after_set_returns(git_repo: Path, tmp_path: Path) -> None:
    review_pids, judge_pids = tmp_path / "review", tmp_path / "judge"
    review_pids.mkdir()
    judge_pids.mkdir()
    review_line = leaving_everything(review_pids) + "; echo 'blockers: 0'"
    judge_line = leaving_everything(judge_pids) + "; echo 'passed: true'"
    route = make_route(
        git_repo,
        {"1.x": "x\n"},
        {"1.x": f"timeout: 60\nreviews:\n  - {_block(review_line)}judges:\n  - {_block(judge_line)}"},
    )
    write(route / "1.x.md", "x\n")
    began = time.monotonic()
    done = run_cli(["route.stone.set", "--route", str(route), "--stone", "1.x", "--as", "passed"], git_repo)
    assert done.code == 0, done.err
    assert time.monotonic() - began < 30
    assert_all_gone(review_pids)
    assert_all_gone(judge_pids)


def test_a_review_too_long_for_execve_is_one_line_naming_the_guard_and_the_review(git_repo: Path) -> None:
    route = make_route(git_repo, {"1.x": "x\n"}, {"1.x": f"reviews:\n  - 'echo {'x' * (128 << 10)}'\n"})
    write(route / "1.x.md", "x\n")
    done = run_cli(["route.stone.set", "--route", "route", "--stone", "1.x", "--as", "passed"], git_repo)
    assert done.code == 2
    assert done.err.startswith(
        "error: route/1.x.guard: review r1 cannot start: the command is too long to start: "
    )
    assert done.err.endswith("; move the command into a script\n") and done.err.count("\n") == 1
    assert not (route / ".route").exists() or not list((route / ".route").glob("*.review.*"))


def test_bhrains_bash_tool_leaves_nothing_running(tmp_path: Path, pids: Path) -> None:
    (bash,) = (
        tool for tool in builtin_tools(["bash"], ToolSettings(workdir=tmp_path)) if tool.name == "bash"
    )
    outcome = bash.run({"command": leaving_everything(pids)}, ToolContext(tmp_path))
    assert outcome.ok and "done" in outcome.output
    assert_all_gone(pids)


def test_bhrain_run_leaves_nothing_running_after_it_exits(tmp_path: Path, pids: Path) -> None:
    from tests.brain.helpers import bhrain, call, scripted_run, write_script

    script = write_script(
        tmp_path / "script.json",
        [{"tool_calls": [call("bash", command=leaving_everything(pids))]}, "finished"],
    )
    # Unsandboxed: the pids the command writes are the host's only outside the sandbox's pid namespace (what
    # a sandboxed command leaves is in tests/brain/test_sandbox_cli.py).
    args = [*scripted_run(script), "--tools", "bash", "--sandbox", "off", "--input", "leave things behind"]
    done = bhrain(args, tmp_path)
    assert done.code == 0, done.err
    assert_all_gone(pids)


def _block(command: str) -> str:
    """``command`` as a YAML block scalar in a list item: its lines kept as they are."""
    return "|\n" + "".join(f"      {line}\n" for line in command.splitlines())


def test_a_sweep_leaves_a_commands_leader_to_its_own_popen() -> None:
    # kill_running sweeps every live command's group while their threads still wait for the leaders: a
    # leader reaped by the sweep would make its Popen read "exit 0" for a command that did otherwise.
    leader = subprocess.Popen(["sh", "-c", "exit 3"], start_new_session=True)
    deadline = time.monotonic() + 10
    while Path(f"/proc/{leader.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z":
        assert time.monotonic() < deadline
        time.sleep(0.01)
    leftovers.sweep([], [leader.pid], within_s=0.5)
    assert leader.wait(timeout=5) == 3
