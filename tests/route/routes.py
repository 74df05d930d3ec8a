"""Helpers shared by the route tests: build routes in real repositories and drive the installed commands."""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from tests.conftest import Ran, run_cli

# A review command the tests steer through files in .ctl/: it counts its runs, prints .ctl/<name>.out
# (default: a clean review) and exits with .ctl/<name>.exit (default 0).
REVIEW_SCRIPT = """\
import os, pathlib, sys, time
control = pathlib.Path(sys.argv[1])
name = sys.argv[2]
control.mkdir(exist_ok=True)
# Whole or absent: a test polling for the pid file must never read it between its creation and its write.
(control / f"{name}.pid.new").write_text(str(os.getpid()))
os.replace(control / f"{name}.pid.new", control / f"{name}.pid")
with open(control / f"{name}.count", "a") as handle:
    handle.write(" ".join(sys.argv[3:]) + "\\n")
delay = control / f"{name}.sleep"
if delay.exists():
    time.sleep(float(delay.read_text()))
out = control / f"{name}.out"
sys.stdout.write(out.read_text() if out.exists() else "blockers: 0\\nnitpicks: 0\\n")
code = control / f"{name}.exit"
sys.exit(int(code.read_text()) if code.exists() else 0)
"""


def wait_for(condition: Callable[[], bool], timeout: float = 30.0, what: str = "condition") -> None:
    """Poll ``condition`` until it holds (the processes we wait on signal only through files)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie still answers kill(0)
        with open(f"/proc/{pid}/stat", encoding="utf-8") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def make_route(
    repo: Path, stones: Mapping[str, str], guards: Mapping[str, str] | None = None, name: str = "route"
) -> Path:
    """A route directory ``repo/name`` with ``<stone>.stone`` files (and guards), plus the review tool."""
    route = repo / name
    route.mkdir(parents=True, exist_ok=True)
    for stone, text in stones.items():
        write(route / f"{stone}.stone", text)
    for stone, text in (guards or {}).items():
        write(route / f"{stone}.guard", text)
    write(repo / "tools" / "review.py", REVIEW_SCRIPT)
    return route


def review(name: str) -> str:
    """The guard line that runs the steerable review ``name``."""
    return f"python3 tools/review.py .ctl {name} $route $stone $hash"


def runs(repo: Path, name: str) -> int:
    counter = repo / ".ctl" / f"{name}.count"
    return len(counter.read_text().splitlines()) if counter.exists() else 0


def steer(repo: Path, name: str, out: str | None = None, exit_code: int | None = None) -> None:
    if out is not None:
        write(repo / ".ctl" / f"{name}.out", out)
    if exit_code is not None:
        write(repo / ".ctl" / f"{name}.exit", str(exit_code))


def route_cmd(command: str, route: Path, *args: str) -> list[str]:
    return [f"route.stone.{command}", "--route", str(route), *args]


def stone_set(repo: Path, route: Path, stone: str, *extra: str, as_: str = "passed") -> Ran:
    """``route.stone.set``; an approval is a human act, so ``as_="approved"`` runs it at a terminal."""
    argv = route_cmd("set", route, "--stone", stone, "--as", as_, *extra)
    return run_route(argv, repo, human=as_ == "approved")


def stone_get(repo: Path, route: Path, *extra: str) -> Ran:
    return run_route(route_cmd("get", route, *extra), repo)


def pass_records(route: Path, stone: str) -> list[Path]:
    """The stone's pass records (``.route/<stone>.passed.<key>``), sorted by name."""
    state = route / ".route"
    if not state.is_dir():
        return []
    return sorted(
        path
        for path in state.iterdir()
        if path.name.startswith(f"{stone}.passed.") and len(path.name) == len(stone) + len(".passed.") + 16
    )


def passed_record(route: Path, stone: str) -> Path | None:
    """The stone's only pass record, or None (several: the test did not expect history here)."""
    found = pass_records(route, stone)
    assert len(found) <= 1, f"{stone} has {len(found)} pass records: {[path.name for path in found]}"
    return found[0] if found else None


def record_pass(route: Path, stone: str) -> Path:
    """A pass record for ``stone`` as it is now, written with the driver's own functions (what ``set``
    writes when a stone's judges pass), without running its guard or checking the tier order; writes a
    ``<stone>.md`` artifact first if the stone has none."""
    from routedriver.route import inputs, state, store

    context = inputs.stone_context(route, stone)
    artifacts = inputs.artifacts_or_refuse(context) if list(route.glob(f"{stone}*.md")) else None
    if artifacts is None:
        write(route / f"{stone}.md", f"{stone}\n")
        artifacts = inputs.artifacts_or_refuse(context)
    now = state.gather(context, {context.show(path): path for path in artifacts}, from_disk=True)
    store.ensure_state_dir(context.route)
    return state.write_pass(context.route, context.stone.name, now, judge_input_hash="0" * 64, files=[])


def state_files(route: Path) -> list[str]:
    return sorted(path.name for path in (route / ".route").iterdir()) if (route / ".route").exists() else []


def definition_digest(route: Path) -> dict[str, str]:
    """sha256 of every .stone and .guard file: the driver must never change one (only del removes)."""
    return {
        path.name: hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(route.iterdir())
        if path.suffix in (".stone", ".guard")
    }


def definitions(repo: Path) -> dict[str, str]:
    """sha256 of every .stone and .guard file anywhere in ``repo`` (read-only templates)."""
    return {
        str(path.relative_to(repo)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(repo.rglob("*"))
        if path.suffix in (".stone", ".guard") and path.is_file() and ".git" not in path.parts
    }


def run_route(
    argv: list[str],
    cwd: Path,
    *,
    human: bool = False,
    input: str | None = None,
    env: dict[str, str] | None = None,
) -> Ran:
    """Run a route.* command; unless it is route.stone.del, assert it changed no stone or guard byte.
    ``human``: stdin is a pseudo-terminal (a person at a keyboard) instead of /dev/null."""
    before = definitions(cwd)
    result = run_as_human(argv, cwd, env=env) if human else run_cli(argv, cwd, input=input, env=env)
    if argv[0] != "route.stone.del":
        assert definitions(cwd) == before, f"{argv[0]} changed a stone or guard"
    return result


def run_as_human(argv: list[str], cwd: Path, env: dict[str, str] | None = None, timeout: float = 120) -> Ran:
    """Run a command with a pseudo-terminal as its stdin, as when a person types it (python's pty)."""
    import pty
    import subprocess

    full_env = {**os.environ, **(env or {})}
    controller, terminal = pty.openpty()
    try:
        done = subprocess.run(
            argv,
            cwd=cwd,
            stdin=terminal,
            capture_output=True,
            text=True,
            env=full_env,
            timeout=timeout,
            check=False,
        )
    finally:
        os.close(terminal)
        os.close(controller)
    return Ran(done.returncode, done.stdout, done.stderr)
