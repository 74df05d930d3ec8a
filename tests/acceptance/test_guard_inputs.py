"""A guard's ``inputs:`` (issue 21 §3): files a stone depends on but did not make, hashed into its review
input, so editing an approved plan makes the stones built on it stale everywhere (get, status, drive, set,
route.verify), in real repositories through the installed commands."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from routedriver.route import hashing
from tests.conftest import git, run_cli
from tests.route.routes import make_route, review, runs, stone_get, stone_set, write
from tests.route_gate.gate import approvers, commit_all, lines_of, verify

PLAN_GUARD = f"reviews:\n  - {review('r2')}\njudges:\n  - reviewed?\n  - approved?\n"
IMPL_GUARD = (
    'artifacts: ["$route/3.impl.md", "src/**"]\n'
    'inputs: ["$route/2.plan.md"]\n'
    f"reviews:\n  - {review('r3')}\njudges:\n  - reviewed?\n"
)


def _planned_route(repo: Path, impl_guard: str = IMPL_GUARD) -> Path:
    route = make_route(
        repo,
        {"2.plan": "Plan it.\n", "3.impl": "Build it.\n"},
        {"2.plan": PLAN_GUARD, "3.impl": impl_guard},
    )
    write(route / "2.plan.md", "# Plan\n1. add search\n")
    write(route / "3.impl.md", "# Impl\nsearch added\n")
    write(repo / "src" / "search.py", "def search(): ...\n")
    approvers(repo, "human@example.com")
    commit_all(repo, "route")
    assert stone_set(repo, route, "2.plan", as_="approved").code == 0
    for stone in ("2.plan", "3.impl"):
        done = stone_set(repo, route, stone)
        assert done.code == 0, (stone, done.out, done.err)
    commit_all(repo, "route passed")
    return route


def test_an_edited_approved_plan_makes_the_stone_built_on_it_stale_everywhere(git_repo: Path) -> None:
    route = _planned_route(git_repo)
    assert verify(git_repo, "--route", "route").code == 0
    record = next((route / ".route").glob("3.impl.passed.*")).read_text(encoding="utf-8")
    plan_id = git(git_repo, "hash-object", "route/2.plan.md").strip()
    assert f"input: {plan_id} route/2.plan.md\n" in record  # the pass says what it was built on

    write(route / "2.plan.md", "# Plan\n1. add search\n2. and a second thing nobody reviewed\n")
    why = "its inputs changed since the pass: changed route/2.plan.md"
    # get: 3.impl is among the next stones again (2.plan too: its own artifact changed).
    got = stone_get(git_repo, route, "--stone", "3.impl")
    assert got.code == 0 and got.out == "3.impl\tstale\n"
    status = json.loads(run_cli(["route.status", "--route", "route", "--json"], git_repo).out)
    impl = next(stone for stone in status["routes"][0]["stones"] if stone["name"] == "3.impl")
    assert impl["state"] == "stale" and why in impl["detail"], impl
    drive = run_cli(["route.drive", "--route", "route"], git_repo)
    assert "2.plan" in drive.out and "stale" in drive.out
    # CI: the edit committed, route.verify fails the stone for the same reason.
    commit_all(git_repo, "edit the plan")
    checked = verify(git_repo, "--route", "route")
    assert checked.code == 2
    assert lines_of(checked)["route/3.impl"] == f"stale: {why}"
    # set: once the new plan is approved and passed, the stone's reviews run again on it.
    assert stone_set(git_repo, route, "2.plan", as_="approved").code == 0
    assert stone_set(git_repo, route, "2.plan").code == 0
    before = runs(git_repo, "r3")
    assert stone_set(git_repo, route, "3.impl").code == 0
    assert runs(git_repo, "r3") == before + 1


def test_inputs_take_globs_and_paths_from_the_top_level(git_repo: Path) -> None:
    guard = IMPL_GUARD.replace('inputs: ["$route/2.plan.md"]', 'inputs: ["$route/2.*.md", "docs/api/*.md"]')
    write(git_repo / "docs" / "api" / "search.md", "GET /search\n")
    route = _planned_route(git_repo, guard)
    record = next((route / ".route").glob("3.impl.passed.*")).read_text(encoding="utf-8")
    assert "route/2.plan.md\n" in record and " docs/api/search.md\n" in record
    write(git_repo / "docs" / "api" / "search.md", "GET /search?q=\n")
    got = stone_get(git_repo, route, "--stone", "3.impl")
    assert got.out == "3.impl\tstale\n"
    # A new file matching an input glob is a change too.
    write(git_repo / "docs" / "api" / "search.md", "GET /search\n")
    assert stone_get(git_repo, route, "--stone", "3.impl").out == "3.impl\tpassed\n"
    write(git_repo / "docs" / "api" / "index.md", "the index\n")
    status = json.loads(run_cli(["route.status", "--route", "route", "--json"], git_repo).out)
    impl = next(stone for stone in status["routes"][0]["stones"] if stone["name"] == "3.impl")
    assert "its inputs changed since the pass: added docs/api/index.md" in impl["detail"]


def test_a_guard_without_inputs_keeps_its_review_input_hash() -> None:
    ids = {"route/1.a.md": "a" * 40}
    assert hashing.review_input_hash(ids) == hashing.review_input_hash(ids, {})
    assert hashing.review_input_hash(ids) != hashing.review_input_hash(ids, {"route/0.b.md": "b" * 40})


@pytest.mark.parametrize(
    ("inputs", "problem"),
    [
        ('["/etc/passwd"]', "inputs[1]: '/etc/passwd' is outside the repository (an absolute path)"),
        ('["~/notes.md"]', "inputs[1]: '~/notes.md' is outside the repository (an absolute path)"),
        ('["$route/x.md", "$route/../../x.md"]', "inputs[2]: '$route/../../x.md' could escape the"),
        ('["../other/2.plan.md"]', "inputs[1]: '../other/2.plan.md' could escape the repository ('..')"),
        ('["$route/.route/2.plan.passed.x"]', "inputs[1]: '$route/.route/2.plan.passed.x' names the"),
        ('"$route/2.plan.md"', "inputs: expected a list of strings, got str"),
        ("[3]", "inputs[1]: expected a string, got int"),
    ],
)
def test_inputs_are_validated_like_every_guard_key(git_repo: Path, inputs: str, problem: str) -> None:
    route = make_route(
        git_repo, {"1.x": "Do x.\n"}, {"1.x": f"inputs: {inputs}\nreviews:\n  - {review('r1')}\n"}
    )
    write(route / "1.x.md", "x\n")
    done = run_cli(["route.stone.set", "--route", "route", "--stone", "1.x", "--as", "passed"], git_repo)
    assert done.code == 2 and len(done.err.splitlines()) == 1
    assert done.err.startswith(f"error: route/1.x.guard: {problem}"), done.err
    linted = run_cli(["route.lint", "--route", "route"], git_repo)
    assert linted.code == 2 and "route/1.x.guard: error: " + problem in linted.out
    assert runs(git_repo, "r1") == 0  # refused before any command ran


def test_the_feature_template_names_what_each_stone_is_built_on(git_repo: Path) -> None:
    assert run_cli(["route.init", "routes/search"], git_repo).code == 0
    route = git_repo / "routes" / "search"
    from routedriver.route.guardfile import load_guard
    from routedriver.route.load import load_route

    loaded = load_route(route)
    named = {stone.name: load_guard(loaded, stone) for stone in loaded.stones}
    assert {name: guard.inputs for name, guard in named.items() if guard is not None} == {
        "1.spec": (),
        "2.plan": ("$route/1.spec.md",),
        "3.1.impl": ("$route/1.spec.md", "$route/2.plan.md"),
        "3.2.tests": ("$route/1.spec.md",),
        "4.ship": ("$route/1.spec.md",),
    }
