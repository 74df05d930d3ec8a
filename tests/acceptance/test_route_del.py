"""route.stone.del (seed usecase 3): prune stones that produced nothing; never lose one that did."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli
from tests.route.routes import make_route, passed_record, route_cmd, state_files, stone_set, write


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


GATE = "artifacts: []\njudges:\n  - approved?\n"
GATE_ADVICE = "a human removes a gate by editing the route (deleting its files), not through del"


def test_a_human_gate_is_never_deleted_by_del(git_repo: Path) -> None:
    route = make_route(git_repo, {"1.build": "b\n", "2.signoff": "s\n", "3.ship": "x\n"}, {"2.signoff": GATE})
    write(route / "1.build.md", "built\n")
    assert stone_set(git_repo, route, "1.build").code == 0
    refused = delete(git_repo, route, "2.signoff")
    assert (refused.code, refused.out) == (2, "")
    assert refused.err == (
        f"error: cannot del; human gate; 2.signoff: {route}/2.signoff.guard judges approved?; {GATE_ADVICE}\n"
    )
    assert (route / "2.signoff.stone").exists() and (route / "2.signoff.guard").exists()
    assert run_cli(route_cmd("get", route), git_repo).out == "2.signoff\n"  # the gate still stands
    batch = delete(git_repo, route, "[23].*")
    assert (batch.code, batch.out) == (0, "3.ship\n")
    assert batch.err == (
        f"notice: kept 2.signoff: human gate ({route}/2.signoff.guard judges approved?); {GATE_ADVICE}\n"
    )
    assert (route / "2.signoff.stone").exists()


def test_a_stone_that_passed_or_was_approved_keeps_its_history(git_repo: Path) -> None:
    route = make_route(
        git_repo,
        {"1.gate": "g\n", "2.check": "c\n", "3.seen": "s\n", "4.new": "n\n"},
        {"1.gate": GATE, "2.check": "artifacts: []\n", "3.seen": "artifacts: []\n"},
    )
    assert stone_set(git_repo, route, "1.gate", "--no-commit", as_="approved").code == 0
    assert stone_set(git_repo, route, "1.gate").code == 0
    assert stone_set(git_repo, route, "2.check").code == 0
    write(route / ".route" / "3.seen.approved", "an approval, kept as it is\n")  # parsed or not: history
    before = state_files(route)
    record = passed_record(route, "2.check")
    assert record is not None
    refused = delete(git_repo, route, "2.check")
    assert refused.code == 2
    assert refused.err == f"error: cannot del; marker exists; 2.check: {record}\n"
    batch = delete(git_repo, route, "*")
    assert (batch.code, batch.out) == (0, "4.new\n")
    assert batch.err.splitlines() == [
        f"notice: kept 1.gate: human gate ({route}/1.gate.guard judges approved?); {GATE_ADVICE}",
        f"notice: kept 2.check: marker exists ({record})",
        f"notice: kept 3.seen: marker exists ({route}/.route/3.seen.approved)",
    ]
    payload = json.loads(delete(git_repo, route, "[123].*", "--json").out)
    assert payload["deleted"] == []
    assert payload["kept"] == [
        {"stone": "1.gate", "gate": f"{route}/1.gate.guard"},
        {"stone": "2.check", "marker": str(record)},
        {"stone": "3.seen", "marker": f"{route}/.route/3.seen.approved"},
    ]
    left = sorted(path.name for path in route.glob("*.stone"))
    assert left == ["1.gate.stone", "2.check.stone", "3.seen.stone"]
    assert state_files(route) == before  # .route/ is never touched


def test_a_file_of_a_stone_with_a_longer_name_is_not_an_artifact_that_blocks_del(git_repo: Path) -> None:
    route = make_route(git_repo, {"3.plan": "p\n", "3.plan-details": "d\n"})
    write(route / "3.plan-details.md", "details\n")
    refused = delete(git_repo, route, "3.plan-details")
    assert refused.err == f"error: cannot del; artifact exists; 3.plan-details: {route}/3.plan-details.md\n"
    done = delete(git_repo, route, "3.plan")
    assert (done.code, done.out) == (0, "3.plan\n")


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
