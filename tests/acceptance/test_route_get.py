"""route.stone.get (seed usecases 1 and 6): the next stone, its instructions, and the status of stones."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.conftest import git, run_cli
from tests.route.routes import (
    definition_digest,
    make_route,
    record_pass,
    route_cmd,
    run_route,
    stone_get,
    stone_set,
    write,
)

TIERED = {
    "1.vision": "Write the vision.\n",
    "2.x": "Do x.\n",
    "3.1.a": "Part a.\n",
    "3.1.b": "Part b.\n",
    "3.1.c": "Part c.\n",
    "3.2.next": "Next.\n",
    "10.ship": "Ship it.\n",
}


def complete(repo: Path, route: Path, *stones: str) -> None:
    for stone in stones:
        write(route / f"{stone}.md", f"# {stone}\n")
        done = stone_set(repo, route, stone)
        assert done.code == 0, done.err


def test_next_one_is_the_first_incomplete_stone_and_say_echoes_it(git_repo: Path) -> None:
    route = make_route(git_repo, TIERED)
    plain = stone_get(git_repo, route, "--stone", "@next-one")
    assert (plain.code, plain.out, plain.err) == (0, "1.vision\n", "")
    said = stone_get(git_repo, route, "--stone", "@next-one", "--say")
    assert said.out == f"==> {route}/1.vision.stone (incomplete) <==\nWrite the vision.\n"
    default = stone_get(git_repo, route)  # --stone defaults to @next-one
    assert default.out == "1.vision\n"


def test_numeric_order_and_tiers_unlock_one_after_another(git_repo: Path) -> None:
    route = make_route(git_repo, TIERED)
    complete(git_repo, route, "1.vision", "2.x")
    tier = stone_get(git_repo, route, "--stone", "@next-all")
    assert tier.out == "3.1.a\n3.1.b\n3.1.c\n"
    complete(git_repo, route, "3.1.a", "3.1.b")
    assert stone_get(git_repo, route, "--stone", "@next-one").out == "3.1.c\n"
    assert stone_get(git_repo, route, "--stone", "@next-all").out == "3.1.c\n"
    complete(git_repo, route, "3.1.c")
    assert stone_get(git_repo, route, "--stone", "@next-one").out == "3.2.next\n"
    complete(git_repo, route, "3.2.next")
    assert stone_get(git_repo, route, "--stone", "@next-all").out == "10.ship\n"  # 10 after 3, not after 1
    complete(git_repo, route, "10.ship")
    for selector in ("@next-one", "@next-all"):
        finished = stone_get(git_repo, route, "--stone", selector, "--say")
        assert (finished.code, finished.out) == (0, "all stones passed\n")


def test_next_all_with_say_gives_each_stone_a_header(git_repo: Path) -> None:
    route = make_route(git_repo, TIERED)
    complete(git_repo, route, "1.vision", "2.x")
    said = stone_get(git_repo, route, "--stone", "@next-all", "--say")
    assert said.out == (
        f"==> {route}/3.1.a.stone (incomplete) <==\nPart a.\n\n"
        f"==> {route}/3.1.b.stone (incomplete) <==\nPart b.\n\n"
        f"==> {route}/3.1.c.stone (incomplete) <==\nPart c.\n"
    )


def test_names_and_globs_show_status(git_repo: Path) -> None:
    route = make_route(git_repo, TIERED)
    complete(git_repo, route, "1.vision")
    listed = stone_get(git_repo, route, "--stone", "*")
    assert listed.out.splitlines()[:2] == ["1.vision\tpassed", "2.x\tincomplete"]
    assert len(listed.out.splitlines()) == len(TIERED)
    one = stone_get(git_repo, route, "--stone", "1.vision", "--say")
    assert one.out == f"==> {route}/1.vision.stone (passed) <==\nWrite the vision.\n"
    missing = stone_get(git_repo, route, "--stone", "9.*")
    assert missing.code == 2
    assert missing.err.startswith("error: no stone matches '9.*' in ")


def test_json(git_repo: Path) -> None:
    route = make_route(git_repo, TIERED)
    complete(git_repo, route, "1.vision", "2.x")
    payload = json.loads(stone_get(git_repo, route, "--stone", "@next-all", "--json", "--say").out)
    assert payload["route"] == str(route) and payload["all_passed"] is False
    assert [(s["name"], s["status"], s["prefix"]) for s in payload["stones"]] == [
        ("3.1.a", "incomplete", "3.1"),
        ("3.1.b", "incomplete", "3.1"),
        ("3.1.c", "incomplete", "3.1"),
    ]
    assert payload["stones"][0]["content"] == "Part a.\n"
    assert payload["stones"][0]["path"] == f"{route}/3.1.a.stone"
    plain = json.loads(stone_get(git_repo, route, "--json").out)
    assert "content" not in plain["stones"][0]


def test_route_not_found_and_no_route(git_repo: Path) -> None:
    missing = stone_get(git_repo, git_repo / "nope")
    assert missing.code == 2 and missing.out == ""
    assert missing.err.startswith(f"error: route not found: {git_repo / 'nope'}")
    assert len(missing.err.splitlines()) == 1
    refused = run_route(["route.stone.get", "--stone", "@next-one"], git_repo)
    assert (refused.code, refused.err) == (
        2,
        "error: no route bound to this branch; use --route or route.bind --set\n",
    )
    failed_json = run_route(["route.stone.get", "--route", "nope", "--json"], git_repo)
    assert failed_json.code == 2 and json.loads(failed_json.out)["outcome"] == "refused"


def test_bad_stone_names_and_empty_routes_are_refused(git_repo: Path) -> None:
    route = make_route(git_repo, {"1.ok": "ok\n", "notes": "no number\n"})
    bad = stone_get(git_repo, route)
    assert (bad.code, bad.err) == (
        2,
        "error: stone name has no numeric prefix: notes.stone; rename it like 1.notes.stone\n",
    )
    empty = git_repo / "empty"
    empty.mkdir()
    assert stone_get(git_repo, empty).err.startswith("error: route has no stones: ")


def test_get_stays_lean_no_click_yaml_git_or_subprocess_imports(git_repo: Path) -> None:
    route = make_route(git_repo, TIERED, {"1.vision": "reviews: []\n"})
    before = definition_digest(route)
    probe = (
        "import atexit, sys\n"
        "heavy = ('click', 'yaml', 'jinja2', 'git', 'subprocess', 'concurrent.futures', 'anthropic',"
        " 'openai', 'routedriver.proc', 'dataclasses', 'pydantic', 'rich')\n"
        "atexit.register(lambda: print('heavy:', [m for m in heavy if m in sys.modules], file=sys.stderr))\n"
        f"sys.argv = ['route.stone.get', '--route', {str(route)!r}, '--say']\n"
        "from routedriver.cli.route_stone import get_main\n"
        "get_main()\n"
    )
    done = run_cli([sys.executable, "-c", probe], git_repo)
    assert done.code == 0 and "heavy: []" in done.err, done.err
    assert definition_digest(route) == before
    assert not (route / ".route").exists()  # get never writes


def hash_object_runs(trace: Path) -> int:
    """How many ``git hash-object`` processes wrote to the GIT_TRACE file ``trace``."""
    lines = trace.read_text().splitlines() if trace.exists() else []
    return sum("built-in: git hash-object" in line for line in lines)


def test_uncommitted_passes_are_hashed_by_one_git_process(git_repo: Path, tmp_path: Path) -> None:
    """A robot's artifacts are uncommitted for most of a route: their content ids come from the files, all
    of them asked of git at once (one process per stone made 2,000 stones take 5 s)."""
    names = [f"{index}.part-{index}" for index in range(1, 13)]
    route = make_route(git_repo, {name: f"Part {name}.\n" for name in names})
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "route")
    for name in names[:10]:
        record_pass(route, name)  # writes <name>.md, left uncommitted
    untracked = git(git_repo, "ls-files", "--others", "--exclude-standard", "route").split()
    assert sorted(path for path in untracked if path.endswith(".md")) == sorted(
        f"route/{name}.md" for name in names[:10]
    )
    trace = tmp_path / "trace"
    done = run_route(route_cmd("get", route, "--stone", "@next-one"), git_repo, env={"GIT_TRACE": str(trace)})
    assert (done.code, done.out) == (0, "11.part-11\n"), done.err
    assert hash_object_runs(trace) == 1
    write(route / "4.part-4.md", "changed after its pass\n")
    assert stone_get(git_repo, route, "--stone", "4.part-4").out == "4.part-4\tstale\n"
