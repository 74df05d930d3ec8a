"""The Python API of docs/route.md: every helper that takes a route and a stone takes a route's path or a
loaded Route, and a stone's name or a Stone, as the hash functions do."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from routedriver.errors import Refused
from routedriver.route import approval_state, load_guard, load_route, stone_context
from tests.route.routes import make_route, stone_set, write

GUARD = "artifacts: []\njudges:\n  - approved?\n"


def test_load_guard_takes_paths_names_and_loaded_values(git_repo: Path) -> None:
    route_dir = make_route(git_repo, {"1.vision": "v\n", "2.plain": "p\n"}, {"1.vision": GUARD})
    route = load_route(route_dir)
    stone = route.stone("1.vision")
    assert stone is not None
    expected = load_guard(route, stone)
    assert expected is not None and expected.judges == ("approved?",)
    for route_arg in (route_dir, str(route_dir), route):
        for stone_arg in ("1.vision", "1.vision.stone", str(route_dir / "1.vision.stone"), stone):
            assert load_guard(route_arg, stone_arg) == expected, (route_arg, stone_arg)
    assert load_guard(str(route_dir), "2.plain") is None
    with pytest.raises(Refused, match=r"no stone named '9\.nope'"):
        load_guard(str(route_dir), "9.nope")


def test_approval_state_takes_paths_names_and_loaded_values(git_repo: Path) -> None:
    route_dir = make_route(git_repo, {"1.vision": "v\n"}, {"1.vision": GUARD})
    relative = route_dir.relative_to(git_repo)
    absent = approval_state(str(route_dir), "1.vision")
    assert (absent.exists, absent.marker, absent.content_id) == (False, None, None)
    assert stone_set(git_repo, route_dir, "1.vision", "--no-commit", as_="approved").code == 0
    route = load_route(route_dir)
    stone = route.stone("1.vision")
    assert stone is not None
    expected = approval_state(route, stone)
    assert expected.exists and expected.marker is not None and expected.content_id is not None
    for route_arg in (route_dir, str(route_dir), route):
        for stone_arg in ("1.vision", "1.vision.stone", stone):
            assert approval_state(route_arg, stone_arg) == expected, (route_arg, stone_arg)
    # The same as the driver sees it: through stone_context, and from the repository's top-level.
    context = stone_context(str(route_dir), "1.vision")
    assert approval_state(context.route, context.stone) == expected
    code = (
        "from routedriver.route import approval_state, load_guard\n"
        f"state = approval_state({str(relative)!r}, '1.vision')\n"
        f"print(state.exists, state.content_id, load_guard({str(relative)!r}, '1.vision').judges)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=git_repo, capture_output=True, text=True)
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == f"True {expected.content_id} ('approved?',)\n"
    with pytest.raises(Refused, match=r"no stone named '9\.nope'"):
        approval_state(str(route_dir), "9.nope")
    write(route_dir / "2.later.stone", "l\n")
    assert not approval_state(load_route(route_dir), "2.later").exists
