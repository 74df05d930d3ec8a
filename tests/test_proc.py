from __future__ import annotations

import os
import time
from pathlib import Path

from routedriver import proc


def test_captures_stdout_stderr_and_exit_code() -> None:
    result = proc.run("echo out; echo err >&2; exit 3", shell="sh")
    assert result.returncode == 3
    assert result.stdout == "out\n"
    assert result.stderr == "err\n"
    assert not result.timed_out
    assert not result.ok


def test_argv_is_never_interpreted_by_a_shell(tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    result = proc.run(["echo", f"$(touch {marker})", "; rm -rf /"])
    assert result.ok
    assert result.stdout == f"$(touch {marker}) ; rm -rf /\n"
    assert not marker.exists()


def test_missing_program_is_a_result_not_an_exception() -> None:
    result = proc.run(["definitely-not-a-program-xyz"])
    assert result.returncode == 127
    assert "definitely-not-a-program-xyz" in result.stderr


def test_stdin_is_closed_unless_input_given() -> None:
    assert proc.run(["cat"], timeout=5).stdout == ""
    assert proc.run(["cat"], input="hello", timeout=5).stdout == "hello"


def test_timeout_kills_the_whole_process_group_and_keeps_partial_output(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    started = time.monotonic()
    result = proc.run(f"echo before; sleep 30 & echo $! > {pidfile}; wait", shell="bash", timeout=0.5)
    assert time.monotonic() - started < 10
    assert result.timed_out
    assert result.stdout.startswith("before")
    child = int(pidfile.read_text())
    assert _gone(child), "the background child should have been killed with its group"


def test_leftover_children_holding_pipes_do_not_hang_the_caller(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    started = time.monotonic()
    result = proc.run(f"sleep 30 & echo $! > {pidfile}; echo done", shell="bash", timeout=20)
    assert time.monotonic() - started < 10
    assert result.returncode == 0
    assert result.stdout == "done\n"
    assert _gone(int(pidfile.read_text()))


def test_output_beyond_the_limit_is_counted_not_kept() -> None:
    result = proc.run("head -c 100000 /dev/zero | tr '\\0' x", shell="sh", max_output=1000)
    assert len(result.stdout) == 1000
    assert result.stdout_dropped == 99000


def test_extra_env_is_merged() -> None:
    result = proc.run('printf %s "$ROUTE_TEST_VAR"', shell="sh", extra_env={"ROUTE_TEST_VAR": "a b"})
    assert result.stdout == "a b"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); look at its state.
    try:
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().split()[2] != "Z"
    except FileNotFoundError:
        return False


def _gone(pid: int, timeout_s: float = 10.0) -> bool:
    """Whether ``pid`` is gone within ``timeout_s``: a signalled grandchild dies soon, but not at once on a
    loaded machine (a fixed sleep made these tests flaky)."""
    deadline = time.monotonic() + timeout_s
    while _alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _wait_for(path: Path, timeout_s: float = 10.0) -> str:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return path.read_text().strip()
        time.sleep(0.02)
    raise AssertionError(f"{path} never appeared")


def test_kill_running_stops_commands_started_by_other_threads(tmp_path: Path) -> None:
    import threading

    pidfile = tmp_path / "child.pid"
    results: list[proc.ProcResult] = []
    worker = threading.Thread(
        target=lambda: results.append(proc.run(f"sleep 60 & echo $! > {pidfile}; wait", shell="bash"))
    )
    worker.start()
    child = int(_wait_for(pidfile))
    assert proc.kill_running() == 1
    worker.join(10)
    assert not worker.is_alive()
    assert results and not results[0].ok
    assert _gone(child)
    assert proc.kill_running() == 0


CLI_SCRIPT = """
import sys
from concurrent.futures import ThreadPoolExecutor
import click
from routedriver import proc
from routedriver.cli._command import Command

@click.command(cls=Command)
@click.argument("pidfile")
def main(pidfile):
    with ThreadPoolExecutor(2) as pool:
        pool.submit(proc.run, f"sleep 60 & echo $! > {pidfile}; wait", shell="bash").result()
    return 0

main()
"""


def _signal_a_command(tmp_path: Path, signum: int) -> tuple[int, str, int]:
    """Run CLI_SCRIPT (a command whose review-like child sleeps), send it ``signum`` once the child runs:
    (its exit code, its stderr, the child's pid)."""
    import subprocess
    import sys

    pidfile = tmp_path / "child.pid"
    script = tmp_path / "cmd.py"
    script.write_text(CLI_SCRIPT, encoding="utf-8")
    started = subprocess.Popen([sys.executable, str(script), str(pidfile)], stderr=subprocess.PIPE, text=True)
    child = int(_wait_for(pidfile))
    started.send_signal(signum)
    _, err = started.communicate(timeout=15)
    return started.returncode, err, child


def test_a_terminated_command_takes_its_running_children_down(tmp_path: Path) -> None:
    import signal

    returncode, err, child = _signal_a_command(tmp_path, signal.SIGTERM)
    assert returncode == 143
    assert err.strip().splitlines()[-1] == "error: terminated"
    assert _gone(child)


def test_an_interrupted_command_takes_its_running_children_down(tmp_path: Path) -> None:
    import signal

    returncode, err, child = _signal_a_command(tmp_path, signal.SIGINT)
    assert returncode == 130
    assert "Traceback" not in err
    assert _gone(child)
