"""Procedure semantics (seed 004): read-only templates, one active tier, and crash recovery from files."""

from __future__ import annotations

import os
import pty
import signal
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

from tests.conftest import TEST_EMAIL, git
from tests.route.routes import definitions, make_route, run_route, stone_get, wait_for, write
from tests.route_gate.gate import (
    approve,
    approvers,
    commit_all,
    gated_route,
    hook,
    pass_all,
    pre_tool_event,
    route_set,
    session_start_event,
    stop_event,
    verify,
)


def test_no_command_but_del_writes_a_stone_or_guard(git_repo: Path) -> None:
    route = gated_route(git_repo)
    git(git_repo, "switch", "-q", "-c", "work")
    before = definitions(git_repo)
    # run_route asserts, around every command, that no .stone or .guard byte changed; here is all of them.
    steps = [
        (["route.bind", "--set", "route"], 0),
        (["route.bind", "--get"], 0),
        (["route.lint"], 0),
        (["route.stone.get", "--stone", "@next-all", "--say"], 0),
        (["route.drive"], 0),
        (["route.stone.set", "--stone", "1.vision", "--as", "passed"], 2),
        (["route.stone.set", "--stone", "1.vision", "--as", "approved"], 2),  # a robot: refused
        (["route.stone.judge", "--stone", "1.vision", "--mechanism", "reviewed?"], 0),
        (["route.verify", "--allow-incomplete"], 0),
        (["route.stone.del", "--stone", "9.*"], 2),
    ]
    for argv, code in steps:
        assert run_route(argv, git_repo).code == code, argv
    assert approve(git_repo, route, "1.vision").code == 0
    for stone in ("1.vision", "2.plan", "3.ship"):
        assert route_set(git_repo, route, stone).code == 0
    approvers(git_repo, TEST_EMAIL)
    for argv, event in (
        (["route.drive", "--when", "hook.onStop"], stop_event(git_repo, active=False)),
        (["route.drive", "--when", "hook.onBoot"], session_start_event(git_repo)),
        (["route.bounce"], pre_tool_event(git_repo, "Write", "route/1.vision.stone")),
    ):
        hook(argv, git_repo, event)
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "the route, passed")  # what CI checks out
    assert verify(git_repo, "--all").code == 0
    assert run_route(["route.bind", "--del"], git_repo).code == 0
    assert definitions(git_repo) == before


def test_never_two_active_tiers(git_repo: Path) -> None:
    route = make_route(
        git_repo,
        {"1.a": "a\n", "2.1.x": "x\n", "2.1.y": "y\n", "2.2.z": "z\n", "3.w": "w\n"},
    )
    for stone in ("1.a", "2.1.x"):
        write(route / f"{stone}.md", "done\n")
        assert route_set(git_repo, route, stone).code == 0
    # A stone of a later tier cannot pass while one of a lower tier is open.
    write(route / "2.2.z.md", "done\n")
    early = route_set(git_repo, route, "2.2.z")
    assert (early.code, early.out) == (2, "")
    assert early.err.startswith("error: 2.2.z must wait: 2.1.y, of a lower tier, is incomplete; ")
    for stone in ("2.1.y", "2.2.z", "3.w"):
        write(route / f"{stone}.md", "done\n")
        assert route_set(git_repo, route, stone).code == 0
    # A lower tier that goes stale makes it the active tier again; later passes wait behind it.
    write(route / "2.1.y.md", "changed\n")
    assert stone_get(git_repo, route, "--stone", "@next-all").out == "2.1.y\n"
    assert stone_get(git_repo, route, "--stone", "@next-one").out == "2.1.y\n"
    drive = run_route(["route.drive", "--route", str(route)], git_repo)
    assert "; next: 2.1.y\n" in drive.out and "## 2.2.z" not in drive.out
    assert "## 2.1.y (stale)" in drive.out


def test_an_approval_killed_mid_commit_is_committed_by_the_rerun(git_repo: Path, tmp_path: Path) -> None:
    route = gated_route(git_repo)
    commit_all(git_repo, "route")
    started = tmp_path / "signing-started"
    # The approver's signing program (their own global configuration: no hook runs in an approval) waits,
    # as a pinentry waiting for a passphrase would, and the approval is killed while it does.
    signer = write(tmp_path / "slow-gpg", f"#!/bin/sh\ntouch '{started}'\nsleep 60\n")
    signer.chmod(0o755)
    own = os.environ["GIT_CONFIG_GLOBAL"]
    config = write(
        tmp_path / "approver.gitconfig", f"[include]\n\tpath = {own}\n[commit]\n\tgpgsign = true\n"
    )
    config.write_text(config.read_text() + f"[gpg]\n\tprogram = {signer}\n")
    controller, terminal = pty.openpty()
    argv = ["route.stone.set", "--route", "route", "--stone", "1.vision", "--as", "approved"]
    try:
        victim = subprocess.Popen(
            argv,
            cwd=git_repo,
            env={**os.environ, "GIT_CONFIG_GLOBAL": str(config)},
            stdin=terminal,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        wait_for(started.exists, 60, "the approval's commit to start")
        os.killpg(victim.pid, signal.SIGKILL)  # the approval, git and its signing program, all at once
        victim.wait(timeout=10)
    finally:
        os.close(terminal)
        os.close(controller)
    marker = route / ".route" / "1.vision.approved"
    assert marker.is_file()  # the approval was recorded (whole: written atomically) …
    assert "approve 1.vision" not in git(git_repo, "log", "--format=%s")  # … but not committed
    lock = git_repo / ".git" / "index.lock"
    if lock.exists():  # git was killed holding its lock: the rerun says so, in one line
        blocked = approve(git_repo, route, "1.vision")
        assert blocked.code == 2 and "index.lock" in blocked.err and len(blocked.err.splitlines()) == 1
        lock.unlink()
    rerun = approve(git_repo, route, "1.vision")
    assert rerun.code == 0 and rerun.out.startswith("already approved: 1.vision")
    assert git(git_repo, "log", "-1", "--format=%s") == "route(route): approve 1.vision\n"
    assert git(git_repo, "show", "--name-only", "--format=", "HEAD").split() == [
        "route/.route/.gitignore",  # the driver's own, committed with the first approval
        "route/.route/1.vision.approved",
    ]


def test_a_killed_verify_leaves_no_half_report_and_the_rerun_agrees(git_repo: Path, tmp_path: Path) -> None:
    route = gated_route(git_repo)
    pass_all(git_repo, route)
    state = sorted((path.name, path.read_bytes()) for path in (route / ".route").iterdir())
    report = tmp_path / "junit.xml"
    for delay in (0.05, 0.15, 0.3):
        victim = subprocess.Popen(
            ["route.verify", "--route", "route", "--junit", str(report)],
            cwd=git_repo,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            victim.wait(timeout=delay)
        except subprocess.TimeoutExpired:
            victim.kill()
            victim.wait(timeout=10)
        if report.exists():
            ET.parse(report)  # whole, or not there at all
    assert sorted((path.name, path.read_bytes()) for path in (route / ".route").iterdir()) == state
    done = verify(git_repo, "--route", "route", "--junit", str(report))
    assert done.code == 0 and ET.parse(report).getroot().get("failures") == "0"
