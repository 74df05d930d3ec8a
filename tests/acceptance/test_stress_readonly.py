"""No flakes: every read-only command, run many times two at a time, at the top level and in a subdirectory
of the repository, on a bound route, gives one answer and one exit code, and never an internal error.

This is the test that found ``route.verify`` crashing from a subdirectory (``KeyError: 0``) in 17% of runs:
two threads waited on one ``Later`` and only one of them got its answer.
"""

from __future__ import annotations

import os
import subprocess
from collections import defaultdict
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from tests.conftest import TEST_EMAIL, git
from tests.route_gate.gate import approve, approvers, commit_all, gated_route, route_set

RUNS = 10  # of each command in each directory; the old race showed in about one run in six

COMMANDS: dict[str, list[str]] = {
    "verify": ["route.verify"],
    "verify --all": ["route.verify", "--all"],
    "get --say": ["route.stone.get", "--stone", "@next-one", "--say"],
    "status --json": ["route.status", "--json"],
    "drive": ["route.drive"],
    "lint": ["route.lint"],
    "cached set": ["route.stone.set", "--stone", "2.plan", "--as", "passed"],
}


def _bound_route_half_done(repo: Path) -> Path:
    """A route bound to the branch: 1.vision approved and passed, 2.plan passed (reviews cached), 3.ship
    open; committed, with a subdirectory to run from."""
    git(repo, "switch", "-q", "-c", "work")
    route = gated_route(repo)
    approvers(repo, TEST_EMAIL)
    assert approve(repo, route, "1.vision").code == 0
    for stone in ("1.vision", "2.plan"):
        done = route_set(repo, route, stone)
        assert done.code == 0, (stone, done.out, done.err)
    (route / "3.ship.md").unlink()
    (repo / "src" / "deep").mkdir(parents=True)
    (repo / "src" / "deep" / "code.py").write_text("x = 1\n", encoding="utf-8")
    bound = subprocess.run(
        ["route.bind", "--set", str(route)], cwd=repo, capture_output=True, text=True, check=False
    )
    assert bound.returncode == 0, bound.stderr
    commit_all(repo, "half way")
    return route


def _run(argv: list[str], cwd: Path) -> tuple[int, str, str]:
    done = subprocess.run(
        argv, cwd=cwd, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120, check=False
    )
    return done.returncode, done.stdout, done.stderr


def test_read_only_commands_two_at_a_time_give_one_answer_and_never_crash(git_repo: Path) -> None:
    _bound_route_half_done(git_repo)
    places = {"top": git_repo, "subdirectory": git_repo / "src" / "deep"}
    jobs = [(name, place) for _ in range(RUNS) for name in COMMANDS for place in places]
    answers: dict[tuple[str, str], set[tuple[int, str]]] = defaultdict(set)
    crashes: list[str] = []
    with ThreadPoolExecutor(max_workers=2) as pool:  # two commands at once, all the way through
        futures = [(name, place, pool.submit(_run, COMMANDS[name], places[place])) for name, place in jobs]
        for name, place, future in futures:
            code, out, err = future.result()
            if "internal error" in err or "Traceback" in err or code not in (0, 1, 2):
                crashes.append(f"{name} in {place}: exit {code}: {err.strip()[-300:]}")
            answers[(name, place)].add((code, out))
    assert crashes == []
    varied = {key: sorted(found) for key, found in answers.items() if len(found) != 1}
    assert varied == {}, f"a command answered differently from one run to the next: {varied}"
    # The answers are the real ones, not one repeated failure: the route is half done and bound.
    expected_exits = {
        "verify": 2,  # 3.ship is not passed
        "verify --all": 2,
        "get --say": 0,
        "status --json": 0,
        "drive": 0,
        "lint": 0,
        "cached set": 0,
    }
    for (name, place), found in answers.items():
        ((code, out),) = found
        assert code == expected_exits[name], (name, place, code, out)
    ((_, say),) = answers[("get --say", "subdirectory")]
    assert "3.ship" in say and "Ship it." in say
    assert git(git_repo, "status", "--porcelain").strip() == "", "a read-only command changed the checkout"
    assert os.environ.get("ROUTEDRIVER_DEBUG") is None
