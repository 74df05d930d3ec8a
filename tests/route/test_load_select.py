"""Stone discovery, numeric-prefix order and selection (@next-one, @next-all, names and globs)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from routedriver.errors import Refused
from routedriver.route.artifacts import Listings
from routedriver.route.load import load_route, numeric_prefix, resolve_route
from routedriver.route.select import match_names, select
from routedriver.route.state import Survey
from tests.route.routes import record_pass, write


def mark_passed(route: Path, name: str) -> None:
    record_pass(route, name)


def make(tmp_path: Path, *names: str) -> Path:
    route = tmp_path / "route"
    for name in names:
        write(route / f"{name}.stone", f"do {name}\n")
    return route


@pytest.mark.parametrize(
    ("name", "prefix"),
    [
        ("3.1.a", (3, 1)),
        ("10.ship", (10,)),
        ("1.vision", (1,)),
        ("1.2.3", (1, 2, 3)),
        ("007.bond", (7,)),
        ("foo", ()),
        ("1a.x", ()),
        ("١.arabic-digit", ()),
        ("2..x", (2,)),
    ],
)
def test_numeric_prefix(name: str, prefix: tuple[int, ...]) -> None:
    assert numeric_prefix(name) == prefix


def test_stones_are_ordered_number_by_number_then_by_name(tmp_path: Path) -> None:
    route = make(tmp_path, "10.ship", "2.b", "2.a", "3.1.a", "3.2.next", "3.10.late", "3.x", "1.vision")
    write(route / "2.a.guard", "reviews: []\n")
    write(route / "notes.md", "not a stone\n")
    (route / "dir.stone").mkdir()
    write(route / ".4.hidden.stone", "hidden\n")
    loaded = load_route(route)
    assert [stone.name for stone in loaded.stones] == [
        "1.vision",
        "2.a",
        "2.b",
        "3.x",
        "3.1.a",
        "3.2.next",
        "3.10.late",
        "10.ship",
    ]
    assert loaded.stone("2.a").guard_path == route / "2.a.guard"  # type: ignore[union-attr]
    assert loaded.stone("2.b").guard_path is None  # type: ignore[union-attr]


def test_a_stone_without_numeric_prefix_is_refused_naming_the_file(tmp_path: Path) -> None:
    route = make(tmp_path, "1.ok", "foo")
    with pytest.raises(Refused) as caught:
        load_route(route)
    assert (
        caught.value.line()
        == "error: stone name has no numeric prefix: foo.stone; rename it like 1.foo.stone"
    )


def test_missing_route_and_missing_option_are_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(Refused, match="route not found: .*nope"):
        load_route(tmp_path / "nope")
    monkeypatch.chdir(tmp_path)  # outside git: no branch, so no route can be bound
    with pytest.raises(Refused) as caught:
        resolve_route(None)
    assert caught.value.line() == (
        "error: no route bound to this branch (not in a git repository); use --route or route.bind --set"
    )


def test_next_one_next_all_and_tiers(tmp_path: Path) -> None:
    route = make(tmp_path, "1.vision", "2.x", "3.1.a", "3.1.b", "3.1.c", "3.2.next")
    loaded = load_route(route)
    assert [s.stone.name for s in select(loaded, "@next-one").stones] == ["1.vision"]
    for name in ("1.vision", "2.x"):
        mark_passed(route, name)
    assert [s.stone.name for s in select(loaded, "@next-all").stones] == ["3.1.a", "3.1.b", "3.1.c"]
    mark_passed(route, "3.1.a")
    mark_passed(route, "3.1.b")
    assert [s.stone.name for s in select(loaded, "@next-one").stones] == ["3.1.c"]
    assert [s.stone.name for s in select(loaded, "@next-all").stones] == ["3.1.c"]
    mark_passed(route, "3.1.c")
    assert [s.stone.name for s in select(loaded, "@next-all").stones] == ["3.2.next"]
    mark_passed(route, "3.2.next")
    finished = select(loaded, "@next-one")
    assert finished.stones == () and finished.all_passed


def test_next_all_skips_passed_stones_of_the_tier(tmp_path: Path) -> None:
    route = make(tmp_path, "3.1.a", "3.1.b", "3.1.c")
    mark_passed(route, "3.1.b")
    assert [s.stone.name for s in select(load_route(route), "@next-all").stones] == ["3.1.a", "3.1.c"]


def test_a_pass_record_that_does_not_hold_is_not_completion(tmp_path: Path) -> None:
    route = make(tmp_path, "1.a", "2.b", "3.c")
    loaded = load_route(route)
    record = record_pass(route, "1.a")
    # Locally a pass is found by its record's name (the name is the hash of what it covers): deciding
    # 10,000 stones reads no record. Reading one back (route.verify does, for every pass) refuses a record
    # that does not parse, or whose content is not what its name says it covers.
    good = record.read_text()
    survey = Survey(loaded, None, Path.cwd())
    (stone,) = [stone for stone in loaded.stones if stone.name == "1.a"]
    done = survey.check(stone)
    assert done.passed and survey.record(stone, done) is not None
    for bad in ("garbage\n", good.replace(good.split("review_input_hash: ")[1][:64], "a" * 64)):
        record.write_text(bad)
        assert Survey(loaded, None, Path.cwd()).record(stone, done) is None
    record.write_text(good)
    assert [s.stone.name for s in select(loaded, "@next-one").stones] == ["2.b"]
    # The marker of older routedriver versions is no pass: the stone is stale and says why.
    write(route / "2.b.md", "b\n")
    write(route / ".route" / "2.b.passed", "---\nstone: 2.b\nreview_input_hash: " + "a" * 64 + "\n---\n")
    assert [(s.stone.name, s.status) for s in select(loaded, "@next-one").stones] == [("2.b", "stale")]
    assert "older routedriver" in select(loaded, "@next-one").stones[0].done.why
    # The stone's instructions are part of what a pass covers.
    record_pass(route, "2.b")
    assert [s.stone.name for s in select(loaded, "@next-one").stones] == ["3.c"]
    write(route / "2.b.stone", "do 2.b, differently\n")
    (stale,) = select(loaded, "@next-one").stones
    assert (stale.stone.name, stale.status) == ("2.b", "stale")
    assert stale.done.why == f"its instructions changed since the pass ({route}/2.b.stone)"


def test_names_and_globs_report_status(tmp_path: Path) -> None:
    route = make(tmp_path, "1.vision", "2.a.research.x", "2.b.research.y", "3.ship")
    mark_passed(route, "2.a.research.x")
    loaded = load_route(route)
    chosen = select(loaded, "*.research.*")
    assert [(s.stone.name, s.status) for s in chosen.stones] == [
        ("2.a.research.x", "passed"),
        ("2.b.research.y", "incomplete"),
    ]
    assert not chosen.all_passed
    assert [s.stone.name for s in select(loaded, "3.ship.stone").stones] == ["3.ship"]
    with pytest.raises(Refused, match="no stone matches 'nothing'"):
        select(loaded, "nothing")
    with pytest.raises(Refused, match="unknown selector '@next'"):
        select(loaded, "@next")


def test_a_name_with_glob_characters_matches_itself_first(tmp_path: Path) -> None:
    route = make(tmp_path, "1.[draft]", "1.d")
    assert [stone.name for stone in match_names(load_route(route), "1.[draft]")] == ["1.[draft]"]


def test_a_link_that_cannot_be_followed_hides_no_other_entry_of_a_listing(tmp_path: Path) -> None:
    # A link in a loop, or to a name too long for the system, raises when is_file() follows it: listed first,
    # it used to end the listing there, and every artifact after it was missing.
    (tmp_path / "a.loop.md").symlink_to("a.loop.md")
    (tmp_path / "b.long.md").symlink_to("n" * 300)
    for name in ("c.md", "d.md"):
        (tmp_path / name).write_text("x\n", encoding="utf-8")
    with os.scandir(tmp_path) as found:
        entries = sorted(found, key=lambda entry: entry.name)  # the links first
    listing = Listings().record(os.fspath(tmp_path), entries)
    assert listing.names == ["a.loop.md", "b.long.md", "c.md", "d.md"]
    assert listing.is_file == {"a.loop.md": False, "b.long.md": False, "c.md": True, "d.md": True}
