"""route.stone.del (seed usecase 3): prune stones that produced nothing; never lose one that did."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli
from tests.route.routes import make_route, route_cmd, state_files, stone_set, write


def delete(repo: Path, route: Path, pattern: str, *extra: str) -> object:
    return run_cli(route_cmd("del", route, "--stone", pattern, *extra), repo)


def test_deletes_a_stone_and_its_guard_when_no_artifact_exists(git_repo: Path) -> None:
    route = make_route(
        git_repo, {"1.vision": "v\n", "2.research.a": "a\n"}, {"2.research.a": "reviews: []\n"}
    )
    done = run_cli(route_cmd("del", route, "--stone", "2.research.a"), git_repo)
    assert (done.code, done.out, done.err) == (0, "2.research.a\n", "")
    assert not (route / "2.research.a.stone").exists() and not (route / "2.research.a.guard").exists()
    assert (route / "1.vision.stone").exists()


def test_a_single_stone_with_an_artifact_is_refused(git_repo: Path) -> None:
    route = make_route(git_repo, {"1.vision": "v\n"}, {"1.vision": "reviews: []\n"})
    write(route / "1.vision.v1.md", "# produced\n")
    stone_set(git_repo, route, "1.vision")
    before = state_files(route)
    refused = run_cli(route_cmd("del", route, "--stone", "1.vision"), git_repo)
    assert refused.code == 2 and refused.out == ""
    assert refused.err == f"error: cannot del; artifact exists; 1.vision: {route}/1.vision.v1.md\n"
    assert (route / "1.vision.stone").exists() and (route / "1.vision.guard").exists()
    assert state_files(route) == before  # .route/ is never touched


def test_a_batch_deletes_the_rest_and_notices_each_skipped_stone(git_repo: Path) -> None:
    route = make_route(
        git_repo,
        {"1.vision": "v\n", "2.a.research.x": "x\n", "2.b.research.y": "y\n", "2.c.research.z": "z\n"},
        {"2.b.research.y": "artifacts: ['notes/y*.txt']\n"},
    )
    write(route / "2.a.research.x.md", "found things\n")
    write(git_repo / "notes" / "y1.txt", "guard-declared artifact\n")
    batch = run_cli(route_cmd("del", route, "--stone", "*.research.*"), git_repo)
    assert batch.code == 0
    assert batch.out == "2.c.research.z\n"
    assert batch.err.splitlines() == [
        f"notice: kept 2.a.research.x: artifact exists ({route}/2.a.research.x.md)",
        "notice: kept 2.b.research.y: artifact exists (notes/y1.txt)",
    ]
    assert sorted(path.name for path in route.glob("*.stone")) == [
        "1.vision.stone",
        "2.a.research.x.stone",
        "2.b.research.y.stone",
    ]
    assert (route / "2.a.research.x.md").exists()


def test_one_match_of_a_glob_counts_as_a_single_stone(git_repo: Path) -> None:
    route = make_route(git_repo, {"1.vision": "v\n", "2.research.a": "a\n"})
    write(route / "2.research.a.md", "a\n")
    refused = run_cli(route_cmd("del", route, "--stone", "*.research.*"), git_repo)
    assert refused.code == 2 and "cannot del; artifact exists; 2.research.a" in refused.err


def test_nothing_matched_and_json(git_repo: Path) -> None:
    route = make_route(git_repo, {"1.vision": "v\n", "2.x": "x\n", "3.y": "y\n"})
    write(route / "3.y.md", "y\n")
    nothing = run_cli(route_cmd("del", route, "--stone", "9.*"), git_repo)
    assert nothing.code == 2 and nothing.err.startswith("error: no stone matches '9.*' in ")
    payload = json.loads(run_cli(route_cmd("del", route, "--stone", "[23].*", "--json"), git_repo).out)
    assert payload["deleted"] == [{"stone": "2.x", "removed": [f"{route}/2.x.stone"]}]
    assert payload["kept"] == [{"stone": "3.y", "artifact": f"{route}/3.y.md"}]


def test_a_malformed_guard_refuses_the_whole_batch_before_deleting_anything(git_repo: Path) -> None:
    route = make_route(git_repo, {"2.a": "a\n", "2.b": "b\n"}, {"2.b": "artifacts: nope\n"})
    refused = run_cli(route_cmd("del", route, "--stone", "2.*"), git_repo)
    assert refused.code == 2 and "2.b.guard: artifacts: expected a list of strings" in refused.err
    assert (route / "2.a.stone").exists()
