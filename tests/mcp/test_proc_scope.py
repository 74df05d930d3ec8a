"""``proc.Scope``: one caller's commands, stopped without touching anyone else's (route.mcp cancels so)."""

from __future__ import annotations

import contextvars
import threading
import time
from pathlib import Path

from routedriver import proc
from tests.route.routes import alive


def _wait_for(path: Path, timeout_s: float = 10.0) -> int:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return int(path.read_text().strip())
        time.sleep(0.02)
    raise AssertionError(f"{path} never appeared")


def _gone(pid: int, timeout_s: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while alive(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _sleeper(pidfile: Path) -> str:
    # A child that answers SIGTERM with a clean exit: its exit 0 is our signal's doing, not a verdict.
    return f"trap 'exit 0' TERM; echo $$ > {pidfile}; sleep 60 & wait"


def test_stopping_a_scope_stops_its_commands_only_and_none_starts_in_it_after(tmp_path: Path) -> None:
    mine, theirs = proc.Scope(), proc.Scope()
    results: dict[str, proc.ProcResult] = {}

    def work(scope: proc.Scope, name: str) -> None:
        with scope:
            results[name] = proc.run(_sleeper(tmp_path / f"{name}.pid"), shell="bash", timeout=30)

    threads = [threading.Thread(target=work, args=(s, n)) for s, n in ((mine, "mine"), (theirs, "theirs"))]
    for thread in threads:
        thread.start()
    pids = {name: _wait_for(tmp_path / f"{name}.pid") for name in ("mine", "theirs")}
    assert (mine.started, mine.running, theirs.running) == (1, 1, 1)
    assert mine.stop() == 1
    threads[0].join(10)
    assert results["mine"].interrupted and not results["mine"].ok, "a stopped command is no verdict"
    assert _gone(pids["mine"])
    assert alive(pids["theirs"]) and threads[1].is_alive(), "another caller's command runs on"
    assert (mine.finished, mine.running) == (1, 0)

    with mine:
        late = proc.run(["touch", str(tmp_path / "late")])
    assert late.interrupted and not (tmp_path / "late").exists()
    assert proc.run(["true"]).ok, "outside the stopped scope commands still start"

    theirs.stop()
    threads[1].join(10)
    assert results["theirs"].interrupted


def test_threads_that_copy_the_context_are_in_the_scope_and_others_are_not(tmp_path: Path) -> None:
    scope = proc.Scope()
    results: dict[str, proc.ProcResult] = {}

    def start(name: str) -> None:
        results[name] = proc.run(_sleeper(tmp_path / f"{name}.pid"), shell="bash", timeout=30)

    with scope:
        copied = threading.Thread(target=contextvars.copy_context().run, args=(start, "copied"))
        plain = threading.Thread(target=start, args=("plain",))
    for thread in (copied, plain):
        thread.start()
    pids = {name: _wait_for(tmp_path / f"{name}.pid") for name in ("copied", "plain")}
    assert scope.stop() == 1
    copied.join(10)
    assert results["copied"].interrupted and _gone(pids["copied"])
    assert alive(pids["plain"])
    proc.kill_running()  # the process-wide stop still reaches every command
    plain.join(10)
    assert results["plain"].interrupted and _gone(pids["plain"])
