from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

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


@pytest.mark.parametrize(
    ("cmd", "shell", "why"),
    [
        (["tr\0ue"], None, "the command holds a NUL byte, which no program can be given"),
        ("echo a\0b", "bash", "the command holds a NUL byte, which no program can be given"),
        (
            ["echo", "a\ud800"],
            None,
            "the command holds U+D800, a half of a UTF-16 pair that has no bytes to give a program",
        ),
    ],
)
def test_a_command_no_program_can_be_given_is_a_result_not_an_exception(
    cmd: list[str] | str, shell: str | None, why: str
) -> None:
    result = proc.run(cmd, shell=shell)
    assert (result.returncode, result.start_error, result.stderr) == (126, why, why + "\n")


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


def test_output_beyond_the_limit_keeps_the_beginning_and_the_end_and_counts_the_middle() -> None:
    command = "echo first; head -c 100000 /dev/zero | tr '\\0' x; echo; echo 'blockers: 2'"
    result = proc.run(command, shell="sh", max_output=1000)
    head, marker, rest = result.stdout.partition("\n[routedriver: ")
    gap, _, tail = rest.partition("]\n")
    assert marker, result.stdout[:200]
    assert head.startswith("first\nxxx")
    assert tail.endswith("xxx\nblockers: 2\n")  # what a command prints last survives
    assert len(head) + len(tail) == 1000  # the limit holds for what is kept
    total = len("first\n") + 100000 + len("\nblockers: 2\n")
    assert result.stdout_dropped == total - 1000
    assert gap == f"{result.stdout_dropped:,} bytes of output dropped here"


def test_output_within_the_limit_is_kept_whole_whatever_the_chunks() -> None:
    # Just over the head's share: the rest lands in the tail window, nothing is dropped, nothing marked.
    result = proc.run("head -c 300000 /dev/zero | tr '\\0' y", shell="sh", max_output=300000)
    assert result.stdout == "y" * 300000
    assert result.stdout_dropped == 0


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


def test_a_command_kill_running_stopped_is_interrupted_even_when_it_exits_0(tmp_path: Path) -> None:
    import threading

    ready = tmp_path / "ready"
    results: list[proc.ProcResult] = []
    # A child that answers SIGTERM with a clean exit: its exit status is our signal's doing, not a verdict.
    command = f"trap 'echo clean; exit 0' TERM; echo $$ > {ready}; sleep 60 & wait"
    worker = threading.Thread(target=lambda: results.append(proc.run(command, shell="bash")))
    worker.start()
    _wait_for(ready)
    assert proc.kill_running() == 1
    worker.join(10)
    (result,) = results
    assert (result.returncode, result.stdout) == (0, "clean\n")
    assert result.interrupted and not result.ok
    later = proc.run(["true"])  # without stop=True, commands after it run as usual
    assert later.ok and not later.interrupted


def test_once_stopping_for_good_no_command_starts(tmp_path: Path) -> None:
    ran = tmp_path / "ran"
    try:
        assert proc.kill_running(stop=True) == 0
        assert proc.stopping()
        result = proc.run(["touch", str(ran)])
        assert result.interrupted and not result.ok
        assert not ran.exists()
    finally:
        proc.resume()
    assert proc.run(["touch", str(ran)]).ok and ran.exists()


CLI_SCRIPTS = {
    "command": """
import click
from routedriver import proc
from routedriver.cli._command import Command

@click.command(cls=Command)
@click.argument("pidfile")
def main(pidfile):
    return work(pidfile)
""",
    "group": """
import click
from routedriver import proc
from routedriver.cli._command import Group

@click.group(cls=Group)
def main():
    pass

@main.command()
@click.argument("pidfile")
def sub(pidfile):
    return work(pidfile)
""",
}
# What both run: a review-like child in a worker thread, as route.stone.set runs reviews (threads.run_all).
CLI_WORK = """
from routedriver import threads

def work(pidfile):
    threads.run_all(lambda _: proc.run(f"sleep 60 & echo $! > {pidfile}; wait", shell="bash"), [1], workers=2)
    return 0

main()
"""


def _signal_a_command(tmp_path: Path, signum: int, kind: str = "command") -> tuple[int, str, int]:
    """Run a click command or group of ours whose child sleeps, send it ``signum`` once the child runs:
    (its exit code, its stderr, the child's pid)."""
    import subprocess
    import sys

    pidfile = tmp_path / "child.pid"
    script = tmp_path / "cmd.py"
    script.write_text(CLI_SCRIPTS[kind] + CLI_WORK, encoding="utf-8")
    argv = [sys.executable, str(script), *(["sub"] if kind == "group" else []), str(pidfile)]
    started = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
    child = int(_wait_for(pidfile))
    started.send_signal(signum)
    _, err = started.communicate(timeout=15)
    return started.returncode, err, child


def test_a_terminated_command_takes_its_running_children_down(tmp_path: Path) -> None:
    import signal

    returncode, err, child = _signal_a_command(tmp_path, signal.SIGTERM)
    assert returncode == 143
    assert err == "error: terminated\n"
    assert _gone(child)


@pytest.mark.parametrize("kind", ["command", "group"])
def test_an_interrupted_command_says_so_in_one_line_and_takes_its_children_down(
    tmp_path: Path, kind: str
) -> None:
    import signal

    returncode, err, child = _signal_a_command(tmp_path, signal.SIGINT, kind)
    assert returncode == 130
    assert err == "error: interrupted\n"  # not click's blank line and "aborted"
    assert _gone(child)


# -- terminal=: the caller's session, for a program that prompts there (a signing passphrase) --------------
TERMINAL_SCRIPT = """
import sys
from routedriver import proc
from routedriver.cli._exits import run

def body():
    if sys.argv[1] == "prompt":
        asked = proc.run(["sh", "-c", "IFS= read -r line < /dev/tty && echo got:$line"], terminal="stdin")
        cut_off = proc.run(["sh", "-c", "exec 3< /dev/tty"])  # the default: a session without the terminal
        print(asked.returncode, asked.stdout.strip(), cut_off.returncode, flush=True)
        return 0
    stuck = proc.run(["sh", "-c", f"echo $$ > {sys.argv[2]}; exec sleep 60"], terminal="stdin")
    print("not interrupted", stuck, flush=True)
    return 0

sys.exit(run("terminal-test", body))
"""


def _at_a_terminal(tmp_path: Path, *args: str) -> tuple[subprocess.Popen[str], int]:
    """Run TERMINAL_SCRIPT in a session whose controlling terminal is a new pty: (it, the pty's master)."""
    import fcntl
    import pty
    import sys
    import termios

    script = tmp_path / "terminal.py"
    script.write_text(TERMINAL_SCRIPT, encoding="utf-8")
    master, slave = pty.openpty()

    def take_terminal() -> None:
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)  # stdin (the pty) becomes the controlling terminal

    started = subprocess.Popen(
        [sys.executable, str(script), *args],
        stdin=slave,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=take_terminal,
    )
    os.close(slave)
    return started, master


def test_a_command_run_with_the_terminal_can_prompt_there(tmp_path: Path) -> None:
    started, master = _at_a_terminal(tmp_path, "prompt")
    try:
        os.write(master, b"secret\n")  # typed at the terminal; the child reads it from /dev/tty
        out, err = started.communicate(timeout=30)
    finally:
        os.close(master)
    assert started.returncode == 0, err
    asked, said, cut_off = out.split()
    assert (asked, said) == ("0", "got:secret")
    assert cut_off != "0"  # without terminal=, /dev/tty cannot be opened: that is what it changes


def test_ctrl_c_at_the_terminal_stops_a_command_run_with_it(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    started, master = _at_a_terminal(tmp_path, "wait", str(pidfile))
    try:
        child = int(_wait_for(pidfile))
        os.write(master, b"\x03")  # Ctrl-C: the terminal sends SIGINT to its foreground group, ours
        out, err = started.communicate(timeout=30)
    finally:
        os.close(master)
    assert (started.returncode, err, out) == (130, "error: interrupted\n", "")
    assert _gone(child)


def test_terminal_and_input_both_want_stdin() -> None:
    with pytest.raises(ValueError, match="stdin"):
        proc.run(["cat"], input="x", terminal="stdin")


def test_a_command_in_our_process_group_is_stopped_alone(tmp_path: Path) -> None:
    # terminal= puts the child in OUR process group: signalling "its group" would take the caller down too.
    from routedriver import threads

    pidfile = tmp_path / "child.pid"
    command = ["sh", "-c", f"echo $$ > {pidfile}; exec sleep 60"]
    batch = threads.Batch(lambda _: proc.run(command, terminal="stdin"), [None], workers=1)
    child = int(_wait_for(pidfile))
    assert os.getpgid(child) == os.getpgrp()
    assert proc.kill_running() == 1
    (stopped,) = batch.results()
    assert stopped.interrupted and _gone(child)
    timed = proc.run(["sleep", "60"], terminal="stdin", timeout=0.3)
    assert timed.timed_out and timed.returncode == -15  # and we are still here to see it
