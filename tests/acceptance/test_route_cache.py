"""The content-hash cache (seed usecase 9): what is reused, what reruns, and the cascade of hashes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from routedriver.route import compute_stone_judge_input_hash, compute_stone_review_input_hash
from tests.conftest import git
from tests.route.routes import make_route, review, runs, steer, stone_set, write

GUARD = "reviews:\n  - {r1}\n  - {r2}\njudges:\n  - reviewed? --allow-nitpicks 5\n  - approved?\n  - {j}\n"


def setup(repo: Path) -> Path:
    route = make_route(
        repo,
        {"1.spec": "Write the spec.\n"},
        {"1.spec": GUARD.format(r1=review("r1"), r2=review("r2"), j=review("j"))},
    )
    write(route / "1.spec.md", "# Spec v1\n")
    steer(repo, "j", out="passed: true\nreason: ok\n")
    return route


def evaluate(repo: Path, route: Path, expect: int | None = None) -> dict[str, Any]:
    result = stone_set(repo, route, "1.spec", "--json")
    payload: dict[str, Any] = json.loads(result.out)
    if expect is not None:
        assert result.code == expect, (result.out, result.err)
    return payload


def reused(payload: dict[str, Any], kind: str) -> list[bool]:
    return [entry["reused"] for entry in payload[kind]]


def counts(repo: Path) -> tuple[int, int, int]:
    return runs(repo, "r1"), runs(repo, "r2"), runs(repo, "j")


def test_same_hash_reuses_reviews_and_passed_judges(git_repo: Path) -> None:
    route = setup(git_repo)
    stone_set(git_repo, route, "1.spec", as_="approved")
    first = evaluate(git_repo, route, 0)
    assert reused(first, "reviews") == [False, False] and reused(first, "judges") == [False, False, False]
    second = evaluate(git_repo, route, 0)
    assert reused(second, "reviews") == [True, True] and reused(second, "judges") == [True, True, True]
    assert counts(git_repo) == (1, 1, 1)
    assert [r["path"] for r in second["reviews"]] == [r["path"] for r in first["reviews"]]
    # The public hash functions agree with what the driver used and named its files by.
    assert compute_stone_review_input_hash(route, "1.spec") == first["review_input_hash"]
    assert compute_stone_judge_input_hash(route, "1.spec") == first["judge_input_hash"]
    assert first["review_input_hash"][:16] in first["reviews"][0]["path"]
    assert first["judge_input_hash"][:16] in first["judges"][0]["path"]


def test_artifact_change_cascades_to_fresh_reviews_and_judges(git_repo: Path) -> None:
    route = setup(git_repo)
    stone_set(git_repo, route, "1.spec", as_="approved")
    first = evaluate(git_repo, route, 0)
    write(route / "1.spec.md", "# Spec v2\n")
    # The approval was for v1 (issue 3: approvals count for the content approved), so approved? now says
    # no (exit 2), but every review and judge still runs afresh for the new content.
    second = evaluate(git_repo, route, 2)
    assert second["review_input_hash"] != first["review_input_hash"]
    assert second["judge_input_hash"] != first["judge_input_hash"]
    assert reused(second, "reviews") == [False, False] and reused(second, "judges") == [False, False, False]
    assert counts(git_repo) == (2, 2, 2)
    assert all(".i2." in r["path"] for r in second["reviews"])
    assert all(".i2p1." in j["path"] for j in second["judges"])
    # A new versioned artifact is an artifact change too.
    write(route / "1.spec.v2.md", "# Spec v2, second file\n")
    third = evaluate(git_repo, route, 2)
    assert third["review_input_hash"] != second["review_input_hash"] and counts(git_repo) == (3, 3, 3)
    # Back to known content: the earlier results for that hash are found again.
    (route / "1.spec.v2.md").unlink()
    back = evaluate(git_repo, route, 2)
    assert back["review_input_hash"] == second["review_input_hash"] and counts(git_repo) == (3, 3, 3)


def test_approval_reuses_reviews_and_runs_fresh_judges(git_repo: Path) -> None:
    route = setup(git_repo)
    waiting = evaluate(git_repo, route, 2)
    assert [j["status"] for j in waiting["judges"]] == ["passed", "failed", "passed"]
    stone_set(git_repo, route, "1.spec", as_="approved")
    approved = evaluate(git_repo, route, 0)
    assert approved["review_input_hash"] == waiting["review_input_hash"]
    assert reused(approved, "reviews") == [True, True]
    assert approved["judge_input_hash"] != waiting["judge_input_hash"]
    assert reused(approved, "judges") == [False, False, False]
    assert all(".i1p2." in j["path"] for j in approved["judges"])
    assert counts(git_repo) == (1, 1, 2)


def test_a_failed_review_is_never_reused_and_reruns(git_repo: Path) -> None:
    route = setup(git_repo)
    stone_set(git_repo, route, "1.spec", as_="approved")
    steer(git_repo, "r2", out="network error\n", exit_code=1)
    broken = stone_set(git_repo, route, "1.spec")
    assert broken.code == 1
    assert broken.err.startswith("error: 1.spec: review r2 failed with exit 1; fix route/1.spec.guard or")
    # The way out is on stderr, once; which command broke and its file are on stdout. A broken review is
    # never reused, so the plain command runs it again (no --rerun needed).
    assert broken.err.rstrip().endswith("--stone 1.spec --as passed") and "--rerun" not in broken.err
    assert "review r2 failed with exit 1: " in broken.out
    assert "1.spec.guard.review.i1." in broken.out and ".r2.md" in broken.out
    assert counts(git_repo) == (1, 1, 0)  # judges do not run on a broken review
    steer(git_repo, "r2", out="blockers: 0\nnitpicks: 1\n", exit_code=0)
    retry = evaluate(git_repo, route, 0)
    assert reused(retry, "reviews") == [True, False]  # r1 succeeded before; r2 reruns
    assert ".i2." in retry["reviews"][1]["path"] and ".i1." in retry["reviews"][0]["path"]
    assert reused(retry, "judges") == [False, False, False]
    assert all(".i2p1." in j["path"] for j in retry["judges"])
    assert counts(git_repo) == (1, 2, 1)
    failed_file = route / ".route" / retry["reviews"][1]["path"].split("/")[-1].replace(".i2.", ".i1.")
    assert "status: failed" in failed_file.read_text()  # kept for the record, never trusted


def test_a_review_changing_its_output_changes_the_judge_input_hash(git_repo: Path) -> None:
    route = setup(git_repo)
    stone_set(git_repo, route, "1.spec", as_="approved")
    first = evaluate(git_repo, route, 0)
    for name in (route / ".route").iterdir():  # forget the reviews: they must run again
        if ".guard.review." in name.name:
            name.unlink()
    steer(git_repo, "r1", out="blockers: 0\nnitpicks: 2\n")
    again = evaluate(git_repo, route, 0)
    assert again["review_input_hash"] == first["review_input_hash"]
    assert again["judge_input_hash"] != first["judge_input_hash"]
    assert reused(again, "judges") == [False, False, False]


def test_editing_or_reordering_reviews_never_serves_a_stale_review(git_repo: Path) -> None:
    route = setup(git_repo)
    stone_set(git_repo, route, "1.spec", as_="approved")
    evaluate(git_repo, route, 0)
    guard = route / "1.spec.guard"
    guard.write_text(GUARD.format(r1=review("r1") + " --strict", r2=review("r2"), j=review("j")))
    edited = evaluate(git_repo, route, 0)
    assert reused(edited, "reviews") == [False, True]
    assert counts(git_repo)[:2] == (2, 1)
    guard.write_text(GUARD.format(r1=review("r2"), r2=review("r1") + " --strict", j=review("j")))
    reordered = evaluate(git_repo, route, 0)
    assert reused(reordered, "reviews") == [False, False]
    assert counts(git_repo)[:2] == (3, 2)


def test_corrupt_or_edited_cache_files_are_misses(git_repo: Path) -> None:
    route = setup(git_repo)
    stone_set(git_repo, route, "1.spec", as_="approved")
    first = evaluate(git_repo, route, 0)
    r1 = route / ".route" / first["reviews"][0]["path"].split("/")[-1]
    r1.write_text(r1.read_text().replace("blockers: 0", "blockers: 0 (edited)"))
    j3 = route / ".route" / first["judges"][2]["path"].split("/")[-1]
    j3.write_text(j3.read_text()[:40])
    write(route / ".route" / ".1.spec.guard.review.i9.0000000000000000.r1.md.tmp-abc123", "half a write")
    again = evaluate(git_repo, route, 0)
    assert reused(again, "reviews") == [False, True]
    assert counts(git_repo) == (2, 1, 2)


def test_committed_artifacts_hash_the_same_as_uncommitted(git_repo: Path) -> None:
    route = setup(git_repo)
    stone_set(git_repo, route, "1.spec", as_="approved")
    before = evaluate(git_repo, route, 0)
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "route")
    after = evaluate(git_repo, route, 0)
    assert after["review_input_hash"] == before["review_input_hash"]
    assert reused(after, "reviews") == [True, True] and counts(git_repo) == (1, 1, 1)
