"""threads.Batch and later.Later: concurrent work in daemon threads that a Ctrl-C does not wait for."""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from routedriver import threads
from routedriver.later import Later


def test_results_come_in_job_order_whatever_order_the_jobs_finish_in() -> None:
    def slow_first(number: int) -> int:
        time.sleep(0.05 * (5 - number))
        return number * 10

    assert threads.run_all(slow_first, range(5), workers=5) == [0, 10, 20, 30, 40]
    assert threads.run_all(slow_first, [], workers=3) == []


def test_at_most_workers_jobs_run_at_once() -> None:
    lock = threading.Lock()
    running, most = 0, 0

    def job(_: int) -> None:
        nonlocal running, most
        with lock:
            running += 1
            most = max(most, running)
        time.sleep(0.02)
        with lock:
            running -= 1

    threads.run_all(job, range(20), workers=3)
    assert most == 3


def test_the_first_failure_starts_nothing_new_waits_for_what_runs_and_is_raised() -> None:
    started: list[int] = []
    finished: list[int] = []
    one_running = threading.Event()

    def job(number: int) -> int:
        started.append(number)
        if number == 0:
            assert one_running.wait(5)
            raise ValueError("job 0 broke")
        one_running.set()
        time.sleep(0.3)  # still running when job 0 fails
        finished.append(number)
        return number

    batch = threads.Batch(job, range(10), workers=2)
    with pytest.raises(ValueError, match="job 0 broke"):
        batch.results()
    assert finished == [1]  # the running job was waited for …
    assert sorted(started) == [0, 1]  # … and no other one started
    with pytest.raises(ValueError, match="job 0 broke"):
        batch.results()  # asked again: the same answer


def test_iterating_gives_each_job_as_it_finishes_with_its_value_or_error() -> None:
    def job(number: int) -> int:
        time.sleep(0.05 * number)
        if number == 1:
            raise KeyError(number)
        return number

    done = list(threads.Batch(job, [2, 0, 1], workers=3))
    assert [(item.job, item.index) for item in done] == [(0, 1), (1, 2), (2, 0)]
    assert [item.value for item in done] == [0, None, 2]
    assert isinstance(done[1].error, KeyError) and done[0].error is None


def test_stopping_starts_no_new_job_and_leaves_the_running_one_alone() -> None:
    started: list[int] = []
    release = threading.Event()

    def job(number: int) -> int:
        started.append(number)
        release.wait(10)
        return number

    began = time.monotonic()
    with threads.Batch(job, range(5), workers=1) as batch:
        time.sleep(0.1)
    assert time.monotonic() - began < 5  # leaving the block did not wait for job 0
    assert batch.stopped and started == [0]
    release.set()
    assert [item.value for item in batch] == [0]  # the one that ran finished; no other started
    assert started == [0]


def test_later_runs_at_once_and_answers_the_same_every_time() -> None:
    ran = threading.Event()
    later = Later(lambda: ran.set() or 42)
    assert ran.wait(5)  # started before anybody asked
    assert later.get() == 42 and later.get() == 42

    def broken() -> int:
        raise OSError("no git")

    failing = Later(broken)
    for _ in range(2):
        with pytest.raises(OSError, match="no git"):
            failing.get()


def test_waiting_with_a_deadline_says_whether_the_work_finished_and_leaves_it_running() -> None:
    go = threading.Event()
    later = Later(lambda: go.wait(10) and 7)
    began = time.monotonic()
    assert later.wait(0.2) is False  # not yet: the deadline passed, the job goes on
    assert 0.2 <= time.monotonic() - began < 2
    go.set()
    assert later.wait(5) is True and later.get() == 7
    batch = threads.Batch(lambda job: time.sleep(0.05 * job), [1, 2], workers=2)
    assert batch.wait() is True and batch.results() == [None, None]
    stopped = threads.Batch(lambda job: time.sleep(0.1), [1, 2, 3], workers=1)
    stopped.stop()
    assert stopped.wait(5) is True  # what started finished and nothing else will start


def _four_waiters_on_one_later(attempt: int) -> tuple[list[object], list[int]]:
    calls: list[int] = []
    go = threading.Event()

    def compute() -> int:
        go.wait(5)
        calls.append(1)
        return attempt

    later = Later(compute)
    answers: list[object] = []

    def wait() -> None:
        try:
            answers.append(later.get())
        except BaseException as exc:  # noqa: BLE001 - the assertion names what went wrong
            answers.append(exc)

    waiters = [threading.Thread(target=wait) for _ in range(4)]
    for waiter in waiters:
        waiter.start()
    go.set()  # the job finishes while all four wait
    for waiter in waiters:
        waiter.join(10)
    return answers, calls


def test_many_threads_waiting_on_one_later_all_get_its_one_outcome() -> None:
    """The race that crashed route.verify from a subdirectory: two threads (there, the prefetch job and
    the main thread) waiting on one Later at once. Every waiter gets the one value, computed once."""
    for attempt in range(200):
        answers, calls = _four_waiters_on_one_later(attempt)
        assert answers == [attempt] * 4, f"attempt {attempt}: {answers!r}"
        assert calls == [1]


def test_many_threads_waiting_on_one_batch_see_the_same_values_and_the_same_failure() -> None:
    def job(number: int) -> int:
        time.sleep(0.001 * (number % 3))
        if number == 7:
            raise ValueError("seven")
        return number

    good = threads.Batch(lambda number: number * 2, range(30), workers=3)
    bad = threads.Batch(job, range(10), workers=1)
    answers: list[object] = []
    lock = threading.Lock()

    def wait() -> None:
        seen = [done.index for done in good]  # every iterator sees every job
        try:
            bad.results()
        except ValueError as exc:
            failure: object = str(exc)
        with lock:
            answers.append((good.results(), sorted(seen), failure))

    waiters = [threading.Thread(target=wait) for _ in range(6)]
    for waiter in waiters:
        waiter.start()
    for waiter in waiters:
        waiter.join(10)
    assert answers == [([n * 2 for n in range(30)], list(range(30)), "seven")] * 6


def test_results_of_a_batch_stopped_before_its_jobs_ran_say_so() -> None:
    release = threading.Event()
    batch = threads.Batch(lambda number: release.wait(5) and number, range(3), workers=1)
    batch.stop()
    release.set()
    with pytest.raises(RuntimeError, match="never ran"):
        batch.results()


CTRL_C = """
import pathlib, sys, time
from routedriver import threads
from routedriver.cli._exits import run

log = pathlib.Path(sys.argv[1])

def job(number):
    with log.open("a") as handle:
        handle.write(f"started {number}\\n")
    time.sleep(60)
    return number

def body():
    threads.run_all(job, range(6), workers=2)
    return 0

if sys.argv[2] == "cli":
    sys.exit(run("threads-test", body))
body()  # no handler of ours: Python's own KeyboardInterrupt
"""


@pytest.mark.parametrize("mode", ["cli", "plain"])
def test_ctrl_c_stops_the_wait_at_once_and_starts_no_new_job(tmp_path: Path, mode: str) -> None:
    script, log = tmp_path / "ctrl_c.py", tmp_path / "log"
    script.write_text(CTRL_C, encoding="utf-8")
    started = subprocess.Popen(
        [sys.executable, str(script), str(log), mode], stderr=subprocess.PIPE, text=True
    )
    deadline = time.monotonic() + 20
    while not (log.exists() and log.read_text().count("started") == 2):
        assert time.monotonic() < deadline, "the first two jobs never started"
        time.sleep(0.02)
    interrupted = time.monotonic()
    started.send_signal(signal.SIGINT)
    _, err = started.communicate(timeout=20)
    assert time.monotonic() - interrupted < 5  # nobody waited for the 60 s jobs
    if mode == "cli":
        assert (started.returncode, err) == (130, "error: interrupted\n")
    else:
        assert started.returncode != 0 and "KeyboardInterrupt" in err
    assert sorted(log.read_text().split("\n")[:-1]) == ["started 0", "started 1"]


ON_A_WORKER = """
import signal, sys, threading, time
from routedriver import proc, threads
from routedriver.cli._exits import run

def job(_):
    time.sleep(0.5)  # the main thread is waiting for this job by now
    # The kernel may hand a process's SIGINT to any thread; here it goes to this worker, on purpose.
    signal.pthread_kill(threading.get_ident(), signal.SIGINT)
    return proc.run(f"sleep 60 & echo $! > {sys.argv[1]}; wait", shell="bash")

sys.exit(run("threads-test", lambda: threads.run_all(job, [1], workers=1) and 0))
"""


def test_a_signal_that_lands_on_a_worker_thread_still_stops_the_command(tmp_path: Path) -> None:
    """Python runs signal handlers on the main thread only; one waiting without a timeout would never
    wake up to run it (a Ctrl-C ignored until the review ends: seen under load)."""
    script, pidfile = tmp_path / "worker.py", tmp_path / "child.pid"
    script.write_text(ON_A_WORKER, encoding="utf-8")
    begun = time.monotonic()
    done = subprocess.run(
        [sys.executable, str(script), str(pidfile)], capture_output=True, text=True, timeout=30, check=False
    )
    assert (done.returncode, done.stderr) == (130, "error: interrupted\n")
    assert time.monotonic() - begun < 10  # not the 60 s the job would take
    if pidfile.exists() and pidfile.read_text().strip():  # the child started before the stop was seen
        child = int(pidfile.read_text())
        deadline = time.monotonic() + 10
        while Path(f"/proc/{child}").exists() and "zombie" not in _state(child):
            assert time.monotonic() < deadline, "the command's child outlived it"
            time.sleep(0.02)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text().split("State:")[1].splitlines()[0].lower()
    except (OSError, IndexError):
        return "zombie"
