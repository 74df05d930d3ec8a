"""`make demo` is the README's first promise: it must keep working, so the suite runs it."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

from tests.conftest import BIN_DIR, run_cli

REPO_ROOT = Path(__file__).resolve().parents[2]
DEMO = REPO_ROOT / "examples" / "demo.py"


def outside_the_venv() -> dict[str, str]:
    """PATH without this checkout's .venv/bin, as in a shell where the venv is not activated (when the tests
    run from another environment, its PATH is kept: the demo must find the commands either way)."""
    if BIN_DIR != REPO_ROOT / ".venv" / "bin":
        return {}
    kept = [entry for entry in os.environ["PATH"].split(os.pathsep) if Path(entry) != BIN_DIR]
    return {"PATH": os.pathsep.join(kept)}


def test_the_demo_drives_the_example_route_end_to_end(tmp_path: Path) -> None:
    env = outside_the_venv()
    if env:
        assert shutil.which("route.stone.get", path=env["PATH"]) is None  # really outside the venv
    ran = run_cli(["python3", str(DEMO), "--keep", str(tmp_path / "demo")], REPO_ROOT, env=env, timeout=300)
    assert ran.code == 0, ran.out[-3000:] + ran.err
    out = ran.out
    # The story's turning points, in order: a blocker, a refused robot approval, a human approval, a
    # behaviorci rejection, the end of the route, a green gate, a caught edit, a forged pass caught by
    # recheck, a policy change caught, refused to the robot, approved by the human, and the board.
    markers = [
        "blockers exceed threshold (1 > 0)",
        "error: only humans can approve",
        "stone approved: 1.vision by Dana Human <dana@example.com>",
        "stone rejected: 3.prompt",
        "all stones passed",
        "route.verify ok: 4 stones (4 passed)",
        "stale      routes/launch/1.vision",
        # A forged pass (a fake behaviorci on the robot's PATH): plain verify passes it, recheck does not.
        "passed     routes/launch/3.prompt: passed and fresh (1 judge re-checked); 1 other pass record",
        "rejected   routes/launch/3.prompt: failed on recheck: judge j1 (behaviorci run "
        "$route/behavior/bundle.yaml) said no: 0/3 cases passed",
        "recheck: 1 new claim rechecked against ",
        "; 3 passes held by the base",
        "policy-changed routes/launch/1.vision: policy changed: routes/launch/1.vision.guard changed since ",
        "error: only humans can approve; a person runs route.policy.approve",
        "policy approved: routes/launch by Dana Human <dana@example.com>",
        "notice: policy: routes/launch changed since ",
        "route routes/launch: all 4 stones passed",
    ]
    at = 0
    for marker in markers:  # each one after the one before it
        found = out.find(marker, at)
        assert found >= 0, f"{marker!r} not found after position {at}"
        at = found + len(marker)
    route = tmp_path / "demo" / "repo" / "routes" / "launch"
    passed = sorted(p.name.rsplit(".passed.", 1)[0] for p in route.glob(".route/*.passed.*"))
    # 1.vision passed twice: under its first guard (kept as history) and under the approved new one.
    assert passed == ["1.vision", "1.vision", "2.1.api", "2.1.cli", "3.prompt"]
    # Every stone the demo passes shows its files: the output is cut at whole blocks, never inside the list
    # (it used to read "stone passed: 1.vision" and "… 6 more lines").
    answers = re.findall(r"route\.stone\.set [^\n]*--as passed\n(   stone passed.*?)\[exit 0\]", out, re.S)
    # 1.vision, 2.1.api, 2.1.cli, 3.prompt, 3.prompt forged (a fake behaviorci), 1.vision under its new guard
    assert len(answers) == 6
    for shown in answers:
        assert "   files:\n" in shown and "pass record: routes/launch/.route/" in shown, shown

    again = run_cli(["python3", str(DEMO), "--keep", str(tmp_path / "demo")], REPO_ROOT, timeout=60)
    finished = tmp_path / "demo" / "repo"
    assert again.code == 2 and again.err == (
        f"error: {finished} holds a finished demo; pick another --keep directory or remove it\n"
    )


def test_an_interrupted_demo_does_not_block_the_next_run(tmp_path: Path) -> None:
    keep = tmp_path / "demo"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with subprocess.Popen(
        [sys.executable, str(DEMO), "--keep", str(keep)],
        cwd=REPO_ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    ) as demo:
        assert demo.stdout is not None and demo.stderr is not None
        for line in demo.stdout:
            if "The robot asks what to do next" in line:
                break
        demo.send_signal(signal.SIGINT)
        demo.stdout.read()
        err = demo.stderr.read()
        code = demo.wait(timeout=60)
    assert code == 130 and "Traceback" not in err
    assert f"demo interrupted; a rerun with --keep {keep} replaces it" in err
    assert (keep / "repo").is_dir()  # half-built

    ran = run_cli([sys.executable, str(DEMO), "--keep", str(keep)], REPO_ROOT, timeout=300)
    assert ran.code == 0, ran.out[-3000:] + ran.err
    assert f"notice: replacing the unfinished demo in {keep} left by an earlier run" in ran.err
    assert "all stones passed" in ran.out


def test_without_the_commands_it_says_what_to_run_and_writes_nothing(tmp_path: Path) -> None:
    alone = tmp_path / "elsewhere"
    alone.mkdir()
    shutil.copy(DEMO, alone / "demo.py")  # no .venv next to it, and none on PATH
    ran = run_cli(
        ["python3", str(alone / "demo.py"), "--keep", str(tmp_path / "kept")],
        tmp_path,
        env={"PATH": os.pathsep.join(p for p in ("/usr/bin", "/bin") if Path(p).is_dir())},
    )
    assert ran.code == 2 and ran.out == ""
    assert ran.err.startswith("error: the route.* commands are not installed; run make demo in ")
    assert ran.err.count("\n") == 1 and "Traceback" not in ran.err
    assert not (tmp_path / "kept").exists()


def _cut() -> Callable[[list[str], int], list[str | int]]:
    spec = importlib.util.spec_from_file_location("demo_script", DEMO)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    cut: Callable[[list[str], int], list[str | int]] = module.cut
    return cut


def test_the_demo_cuts_output_at_whole_blocks_and_keeps_the_first_and_the_last() -> None:
    cut = _cut()
    lines = ["stone passed: x", "", "j1 feedback", "  a", "  b", "", "files:", "  r1", "  j1", "  record"]
    assert cut(lines, 20) == lines
    # Too long: the middle block goes whole, the list of files stays whole.
    assert cut(lines, 6) == ["stone passed: x", 4, "files:", "  r1", "  j1", "  record"]
    # Never the middle of a list, even when the last block alone is longer than asked.
    assert cut(lines, 2) == ["stone passed: x", 4, "files:", "  r1", "  j1", "  record"]
    many = ["head", "", "b1", "", "b2", "", "b3", "", "tail"]
    assert cut(many, 7) == ["head", "", "b1", "", "b2", 2, "tail"]
