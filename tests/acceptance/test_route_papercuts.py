"""The wording papercuts a new user hit (issue 14, item 8), through the installed commands."""

from __future__ import annotations

import json
from pathlib import Path

from tests.route.routes import make_route, review, run_route, write
from tests.route_gate.gate import commit_all, lines_of, route_set, verify


def test_counts_are_said_in_words_that_agree(git_repo: Path) -> None:
    route = make_route(git_repo, {"1.only": "Do it.\n"}, {"1.only": f"reviews: ['{review('r1')}']\n"})
    write(route / "1.only.md", "done\n")
    assert route_set(git_repo, route, "1.only").code == 0
    status = run_route(["route.status", "--route", "route"], git_repo).out
    assert status.splitlines()[-1] == "route route: its one stone passed"
    commit_all(git_repo, "passed")
    drive = run_route(["route.drive", "--route", "route"], git_repo)
    assert drive.out == "route route: its one stone passed; nothing left to do.\n"  # not "all 1 stones"
    # A guard whose reviews are all its checks re-checks no judge: it does not say "0 judges re-checked".
    assert lines_of(verify(git_repo, "--route", "route"))["route/1.only"] == "passed: passed and fresh"


def test_reviewed_on_a_stone_without_reviews_says_why_instead_of_sending_the_robot_to_set(
    git_repo: Path,
) -> None:
    route = make_route(git_repo, {"1.bare": "Do it.\n"})
    write(route / "1.bare.md", "done\n")
    done = run_route(
        ["route.stone.judge", "--mechanism", "reviewed?", "--route", "route", "--stone", "1.bare"], git_repo
    )
    assert done.code == 2
    assert "reason: 1.bare has no reviews (it has no guard): reviewed? judges what reviews say" in done.out
    assert "route.stone.set" not in done.out + done.err


def test_set_names_files_from_the_top_level_as_verify_does_from_a_subdirectory(git_repo: Path) -> None:
    make_route(git_repo, {"1.a": "a\n"}, {"1.a": f"reviews: ['{review('r1')}']\n"}, name="routes/r")
    write(git_repo / "routes" / "r" / "1.a.md", "a\n")
    sub = git_repo / "routes"
    done = run_route(["route.stone.set", "--route", "r", "--stone", "1.a", "--as", "passed", "--json"], sub)
    assert done.code == 0, done.err
    payload = json.loads(done.out)
    assert payload["reviews"][0]["path"].startswith("routes/r/.route/1.a.guard.review.")
    assert payload["marker"].startswith("routes/r/.route/1.a.passed.")
    commit_all(git_repo, "passed")
    checked = json.loads(run_route(["route.verify", "--route", "r", "--json"], sub).out)
    assert checked["stones"][0]["route"] == "routes/r"
