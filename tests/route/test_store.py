"""Files under .route/: names, the front-matter format, and readers that treat anything odd as a miss."""

from __future__ import annotations

from pathlib import Path

import pytest

from routedriver.route import frontmatter, hashing, records, store
from routedriver.route.load import load_route
from routedriver.route.model import ReviewRecord, Route
from routedriver.route.outcome import CommandOutcome
from tests.route.routes import write

RH, JH = "1" * 64, "2" * 64


@pytest.fixture
def route(tmp_path: Path) -> Route:
    write(tmp_path / "r" / "1.x.stone", "x\n")
    return load_route(tmp_path / "r")


def test_names_follow_the_contract() -> None:
    assert store.review_name("1.vision", 2, RH, 3) == f"1.vision.guard.review.i2.{'1' * 16}.r3.md"
    assert store.judge_name("1.vision", 2, 1, RH, JH, 4) == (
        f"1.vision.guard.judge.i2p1.{'1' * 16}.{'2' * 16}.j4.md"
    )


def test_names_parse_back_for_their_stone_only() -> None:
    names = [
        store.review_name("1.a", 1, RH, 1),
        store.review_name("1.a.guard.review.i1", 1, RH, 2),
        store.judge_name("1.a", 3, 2, RH, JH, 1),
        "1.a.passed",
        store.pass_name("1.a", RH),
        ".1.a.passed.tmp-abc",
        "junk.md",
    ]
    assert store.review_files(names, "1.a") == [(1, "1" * 16, 1, names[0])]
    assert store.judge_files(names, "1.a") == [(3, 2, "1" * 16, "2" * 16, 1, names[2])]
    assert store.review_files(names, "1.a.guard.review.i1") == [(1, "1" * 16, 2, names[1])]


@pytest.mark.parametrize(
    "value", ["plain", "", "  padded ", "null", '"quoted"', "multi\nline", "tab\there", "ü"]
)
def test_document_values_round_trip(value: str) -> None:
    text = frontmatter.render_document([("command", value), ("position", 3)], "body\n---\nmore")
    parsed = frontmatter.parse_document(text)
    assert parsed is not None
    fields, body = parsed
    assert fields == {"command": [value], "position": ["3"]}
    assert body == "body\n---\nmore"


def test_review_round_trip_and_every_kind_of_damage_is_a_miss(route: Route) -> None:
    outcome = CommandOutcome("ok", 0, 1.5, "blockers: 0\nnitpicks: 0\n", "a warning\n")
    record = records.write_review(route, "1.x", 1, 1, "python3 review.py '$route'", RH, outcome)
    assert record.stderr_tail == "a warning"
    assert record.path.parent == route.state_dir
    again = records.read_review(record.path, "1.x")
    # Read back as written, but for the run's duration: nothing that differs from run to run is in the file.
    assert again == record._replace(duration_s=0.0)
    original = record.path.read_text()
    assert "duration" not in original and "written_at" not in original
    slower = CommandOutcome("ok", 0, 9.0, outcome.stdout, outcome.stderr)
    same = records.write_review(route, "1.x", 1, 1, "python3 review.py '$route'", RH, slower)
    assert same.path.read_text() == original  # the same review, run again: the same bytes

    def damaged(text: str) -> ReviewRecord | None:
        record.path.write_text(text)
        return records.read_review(record.path, "1.x")

    assert damaged(original.replace("blockers: 0", "blockers: 9")) is None  # stdout edited by hand
    assert damaged(original[: len(original) // 2]) is None  # truncated
    assert damaged(original.replace("position: 1", "position: 2")) is None  # disagrees with its name
    assert damaged(original.replace("exit_code: 0", "exit_code: zero")) is None
    assert damaged("") is None
    record.path.write_bytes(b"---\n\xff\xfe\n---\n")
    assert records.read_review(record.path, "1.x") is None
    assert records.read_review(record.path, "other") is None
    assert records.read_review(route.state_dir / "missing.md", "1.x") is None


def test_judge_round_trip(route: Route) -> None:
    outcome = CommandOutcome("failed", 2, 0.0, "passed: false\n")
    record = records.write_judge(
        route, "1.x", 2, 3, 1, "approved?", RH, JH, outcome, "wait for human approval"
    )
    assert record.path.name == store.judge_name("1.x", 2, 3, RH, JH, 1)
    assert records.read_judge(record.path, "1.x") == record._replace(duration_s=0.0)
    record.path.write_text(record.path.read_text().replace("status: failed", "status: maybe"))
    assert records.read_judge(record.path, "1.x") is None


def test_pass_records_are_named_by_what_they_cover(route: Route) -> None:
    ids = {"stone_id": "3" * 40, "guard_id": "4" * 40, "approval_id": None}
    path = store.write_pass(
        route, "1.x", review_input_hash=RH, judge_input_hash=JH, files=["a.md", "b.md"], manifest={}, **ids
    )
    key = hashing.pass_key(RH, **ids)
    assert path.name == f"1.x.passed.{key[:16]}"
    record = store.read_pass(path, "1.x")
    assert record is not None
    assert (record.key, record.review_input_hash, record.judge_input_hash, record.files) == (
        key,
        RH,
        JH,
        ("a.md", "b.md"),
    )
    assert (record.stone_id, record.guard_id, record.approval_id) == ("3" * 40, "4" * 40, None)
    text = path.read_text()
    assert "_at:" not in text  # no time: the same pass writes the same bytes in any clone
    # Another stone's inputs, or edited contents, no longer hash to the name: not a record.
    path.write_text(text.replace("guard_id: " + "4" * 40, "guard_id: " + "5" * 40))
    assert store.read_pass(path, "1.x") is None
    path.write_text(text)
    assert store.read_pass(path, "1.y") is None
    assert store.pass_files([path.name, "1.x.passed", "1.x.passed.zz"], "1.x") == [path.name]
    assert store.has_marker(store.list_state(route), "1.x") and not store.has_marker(set(), "1.x")
    assert store.remove_pass(route, "1.x", key) and store.read_pass(path, "1.x") is None
    approved = store.read_marker(store.write_approved(route, "1.x", RH), "1.x")
    assert approved is not None and approved.review_input_hash == RH


def test_listing_ignores_temp_leftovers_and_gitignore_is_written_once(route: Route) -> None:
    store.ensure_state_dir(route)
    ignore = route.state_dir / ".gitignore"
    assert "*.lock" in ignore.read_text() and ".*.tmp-*" in ignore.read_text()
    ignore.write_text("# mine\n")
    store.ensure_state_dir(route)
    assert ignore.read_text() == "# mine\n"
    write(route.state_dir / ".1.x.passed.tmp-123abc", "half")
    assert ".1.x.passed.tmp-123abc" not in store.list_state(route)
