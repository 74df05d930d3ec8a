"""The driver's own files, replaced by whoever has the repository or a shell: read through ``userfile``.

A record under ``.route/`` (an approval marker, a hook's state), bhrain behave's session state and a cache
entry are written by the driver, but a robot with a shell can put a FIFO in their place, and a pull request
can commit a symlink to ``/dev/zero`` as an approval marker. Reading one must never hang (a Stop hook that
times out lets the robot stop; a PreToolUse gate that times out lets the call through) nor read forever: an
unreadable record counts as absent, or as broken where a claim rests on it.
"""

from __future__ import annotations

import json
import os
import resource
import stat
import subprocess
from pathlib import Path

from tests.conftest import Ran, git, run_cli
from tests.route_gate.gate import commit_all, gated_route, lines_of, pass_all, sent_back, stop_event

QUICK_S = 30  # far longer than any of these commands takes; a hang is what exceeds it


def test_a_fifo_for_the_stop_hooks_state_neither_hangs_it_nor_releases_the_robot(git_repo: Path) -> None:
    route = gated_route(git_repo)
    commit_all(git_repo, "the route")
    state = route / ".route"
    state.mkdir(exist_ok=True)
    for name in (".drive.state", ".session.state"):  # session.STATE_FILE, drive.SESSION_FILE
        os.mkfifo(state / name)
    argv = ["route.drive", "--route", "route", "--when", "hook.onStop"]
    ran = run_cli(argv, git_repo, input=stop_event(git_repo, active=True), timeout=QUICK_S)
    assert "1.vision" in sent_back(ran), (ran.code, ran.out, ran.err)  # unfinished: sent back, at once
    assert "Traceback" not in ran.err


def test_links_for_the_stop_hooks_state_are_replaced_not_written_through(
    git_repo: Path, tmp_path: Path
) -> None:
    # Through a link the state would land wherever the robot points it: as root, on a device (/dev/full was
    # replaced by a regular file that way). The driver's own files are regular files: the links go.
    route = gated_route(git_repo)
    commit_all(git_repo, "the route")
    state = route / ".route"
    state.mkdir(exist_ok=True)
    elsewhere = tmp_path / "pipe"
    os.mkfifo(elsewhere)
    for name in (".drive.state", ".session.state"):
        (state / name).symlink_to(elsewhere)
    argv = ["route.drive", "--route", "route", "--when", "hook.onStop"]
    ran = run_cli(argv, git_repo, input=stop_event(git_repo, active=True), timeout=QUICK_S)
    assert "1.vision" in sent_back(ran), (ran.code, ran.out, ran.err)
    assert stat.S_ISFIFO(os.lstat(elsewhere).st_mode)  # untouched
    # What the Stop hook wrote (its blocks count) is a regular file now; what it did not write is as it was.
    modes = {name: os.lstat(state / name).st_mode for name in (".drive.state", ".session.state")}
    assert any(stat.S_ISREG(mode) for mode in modes.values()), modes
    assert all(stat.S_ISREG(mode) or stat.S_ISLNK(mode) for mode in modes.values()), modes


def _limited_memory() -> None:
    # Reading /dev/zero to its end would take all the memory there is: 2 GiB ends it as a MemoryError.
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def test_an_approval_marker_committed_as_a_link_to_dev_zero_fails_its_stone_in_ci(
    git_repo: Path, tmp_path: Path
) -> None:
    route = gated_route(git_repo)
    pass_all(git_repo, route)
    marker = route / ".route" / "1.vision.approved"
    marker.unlink()
    marker.symlink_to("/dev/zero")
    commit_all(git_repo, "a robot's marker")
    clone = tmp_path / "ci"
    git(tmp_path, "clone", "-q", str(git_repo), str(clone))
    done = subprocess.run(
        ["route.verify", "--route", "route"],
        cwd=clone,
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=_limited_memory,  # the limit is set in the child, before it runs route.verify
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr, done.stderr
    verdicts = lines_of(Ran(done.returncode, done.stdout, done.stderr))
    assert not verdicts["route/1.vision"].startswith("passed"), verdicts


def test_a_fifo_for_bhrain_behaves_session_state_neither_hangs_nor_lets_a_denied_call_through(
    tmp_path: Path,
) -> None:
    from routedriver.brain.behavior.claude_code import session_file_stem

    config = tmp_path / "behavior.yaml"
    config.write_text("security:\n  behavior:\n    profile: dev\n", encoding="utf-8")
    state_dir = tmp_path / "state"
    state_dir.mkdir()
    os.mkfifo(state_dir / f"{session_file_stem('s')}.json")
    event = {
        "session_id": "s",
        "cwd": str(tmp_path),
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "git push --force origin main"},
    }
    argv = ["bhrain", "behave", "--config", str(config), "--state-dir", str(state_dir)]
    ran = run_cli(argv, tmp_path, input=json.dumps(event), timeout=QUICK_S)
    assert "Traceback" not in ran.err
    assert ran.code == 2 or '"deny"' in ran.out, (ran.code, ran.out, ran.err)
