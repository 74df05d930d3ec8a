"""A file that is not a regular file or a symlink, where the driver hashes one, never hangs a command.

Whatever a pass covers is hashed: the artifacts, the stone, its guard and its approval marker. Git opens a
FIFO it is asked to hash and waits for a writer that never comes, so a robot with a shell that puts one
where an approval marker (or a committed artifact) was would hang ``route.status``, ``route.drive`` (the
Stop hook: a hook that times out lets the robot stop) and ``route.verify``. Such a file is refused before
git is asked: the stone it belongs to is broken, and every other stone is answered as before.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.conftest import Ran, git, run_cli
from tests.route_gate.gate import gated_route, lines_of, pass_all, stop_event

QUICK_S = 30  # far longer than any of these commands takes; a hang is what exceeds it


def _status(repo: Path) -> dict[str, dict[str, object]]:
    ran = run_cli(["route.status", "--route", "route", "--json"], repo, timeout=QUICK_S)
    assert ran.code in (0, 2), (ran.code, ran.out, ran.err)
    assert "Traceback" not in ran.err and "internal error" not in ran.err, ran.err
    [route] = json.loads(ran.out)["routes"]
    return {stone["name"]: stone for stone in route["stones"]}


MARKER = ".route/1.vision.approved"


def _passed_route_with_a_fifo_marker(repo: Path, *, committed: bool) -> Path:
    """The gated route, passed and committed, with 1.vision's approval marker replaced by a FIFO: the marker
    git has (``committed``: git sees it modified), or one git never had (untracked, as a marker a robot
    placed looks)."""
    route = gated_route(repo)
    pass_all(repo, route)
    if not committed:
        git(repo, "rm", "-q", "--cached", f"route/{MARKER}")
        git(repo, "commit", "-q", "-m", "the marker is no longer in git")
    marker = route / MARKER
    marker.unlink()
    os.mkfifo(marker)
    return route


@pytest.mark.parametrize("committed", [True, False], ids=["committed", "placed"])
def test_route_status_and_get_answer_at_once_and_the_stone_with_a_fifo_marker_is_broken(
    git_repo: Path, committed: bool
) -> None:
    _passed_route_with_a_fifo_marker(git_repo, committed=committed)
    stones = _status(git_repo)
    assert stones["1.vision"]["state"] == "malfunction", stones["1.vision"]  # how status shows broken
    assert "FIFO), not a regular file" in str(stones["1.vision"]["detail"]), stones["1.vision"]
    assert {stones[name]["state"] for name in ("2.plan", "3.ship")} == {"passed"}, stones

    argv = ["route.stone.get", "--route", "route", "--stone", "*", "--json"]
    get = run_cli(argv, git_repo, timeout=QUICK_S)
    assert "Traceback" not in get.err, get.err
    states = {stone["name"]: stone["status"] for stone in json.loads(get.out)["stones"]}
    assert states == {"1.vision": "broken", "2.plan": "passed", "3.ship": "passed"}, states


def test_route_drive_stop_hook_answers_at_once_with_a_fifo_as_approval_marker(git_repo: Path) -> None:
    _passed_route_with_a_fifo_marker(git_repo, committed=True)
    argv = ["route.drive", "--route", "route", "--when", "hook.onStop"]
    ran = run_cli(argv, git_repo, input=stop_event(git_repo, active=True), timeout=QUICK_S)
    assert "Traceback" not in ran.err, ran.err
    # A broken stone is a human's to fix: the hook says so (the robot cannot), naming the stone and why.
    assert ran.code == 0, (ran.code, ran.out, ran.err)
    message = json.loads(ran.out)["systemMessage"]
    assert "1.vision" in message and "FIFO), not a regular file" in message, message


@pytest.mark.parametrize("committed", [True, False], ids=["committed", "placed"])
def test_route_verify_fails_the_stone_whose_marker_is_a_fifo(git_repo: Path, committed: bool) -> None:
    _passed_route_with_a_fifo_marker(git_repo, committed=committed)
    ran = run_cli(["route.verify", "--route", "route"], git_repo, timeout=QUICK_S)
    assert ran.code == 2, (ran.code, ran.out, ran.err)
    assert "Traceback" not in ran.err and "internal error" not in ran.err, ran.err
    verdicts = lines_of(Ran(ran.code, ran.out, ran.err))
    # Failed, whichever check meets the FIFO first (its marker is read before the claim is hashed).
    assert verdicts["route/1.vision"].split(":")[0] in ("broken", "forged", "unapproved"), verdicts
    assert verdicts["route/3.ship"].startswith("passed"), verdicts
