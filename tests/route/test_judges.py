"""Judge verdicts, review counts and the built-in judges reviewed? and approved?."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from routedriver.route import builtin_judges, judges
from routedriver.route.model import Marker, ReviewRecord
from tests.route.routes import make_route, passed_record, run_route, stone_set, write
from tests.route_gate.gate import forge_pass


def show(path: Path) -> str:
    return path.name


def review(stdout: str, position: int = 1) -> ReviewRecord:
    return ReviewRecord(
        path=Path(f"/r/.route/s.guard.review.i1.{'a' * 16}.r{position}.md"),
        stone="s",
        iteration=1,
        position=position,
        command=f"review {position}",
        review_input_hash="a" * 64,
        status="ok",
        exit_code=0,
        duration_s=0.1,
        stdout=stdout,
        stdout_sha256="b" * 64,
    )


@pytest.mark.parametrize(
    ("stdout", "code", "status", "reason"),
    [
        ("passed: true\nreason: all good\n", 0, "passed", "all good"),
        ("passed: false\nreason: tests fail\n", 2, "failed", "tests fail"),
        ("PASSED: TRUE\r\nReason: shouting\r\n", 0, "passed", "shouting"),
        ("passed: false\npassed: true\nreason: changed its mind\n", 0, "passed", "changed its mind"),
        ("passed: false\n", 0, "failed", "printed passed: false"),  # a printed "no" stands at any exit
        ("passed: false\nreason: 2 cases failed\n", 1, "failed", "2 cases failed"),
        ("passed: false\n", 127, "failed", "printed passed: false"),
        # a printed "yes" counts only with exit 0: `pytest -q || exit 2` with a test that printed it
        (
            "passed: true\nF\n1 failed in 0.01s\n",
            2,
            "failed",
            "exit 2 overrides the printed passed: true; 1 failed in 0.01s",
        ),
        ("passed: true\n", 2, "failed", "exit 2 overrides the printed passed: true"),
        (
            "passed: true\nreason: fine\n",
            1,
            "malfunction",
            "exit 1 contradicts the printed passed: true; reason: fine",
        ),
        ("passed: true\n", 3, "malfunction", "exit 3 contradicts the printed passed: true"),
        ("  passed: true\n", 2, "failed", "exit 2: passed: true"),  # indented lines are not verdicts
        ("all 10 tests passed\n", 0, "passed", "exit 0: all 10 tests passed"),
        ("3 failed\n", 2, "failed", "exit 2: 3 failed"),
        ("Traceback ...\n", 1, "malfunction", "exit 1: Traceback ..."),
        ("", 127, "malfunction", "exit 127"),
    ],
)
def test_parse_verdict(stdout: str, code: int, status: str, reason: str) -> None:
    verdict = judges.parse_verdict(stdout, code)
    assert (verdict.status, verdict.reason) == (status, reason)


def test_timeout_is_a_malfunction_whatever_was_printed() -> None:
    verdict = judges.parse_verdict("passed: true\n", 0, timed_out=True, timeout_s=5)
    assert verdict.status == "malfunction"
    assert verdict.reason == "timed out after 5s; its process group was killed"


@pytest.mark.parametrize(
    ("text", "counts"),
    [
        ("1 blocker\n3 nitpicks\n", (1, 3)),
        ("blockers: 2\nnitpicks: 0\n", (2, 0)),
        ("Blocker: 1, Nitpick: 1", (1, 1)),
        ("**Blockers**: 4\n**Nitpicks:** 5\n", (4, 5)),
        ("Summary: 0 blockers, 12 nitpicks", (0, 12)),
        ("early: 5 blockers\n...\nfinal: 0 blockers, 1 nitpick\n", (0, 1)),  # the last mention wins
        ("no blockers found\n2 nitpicks\n", (None, 2)),
        ("blockers: 0\n", (0, None)),
        ("nothing to say", (None, None)),
    ],
)
def test_count_issues(text: str, counts: tuple[int | None, int | None]) -> None:
    assert judges.count_issues(text) == counts


def test_reviewed_passes_within_thresholds() -> None:
    verdict = judges.reviewed([review("blockers: 0\nnitpicks: 1\n")], show, 0, 2)
    assert verdict.status == "passed"
    assert verdict.output.startswith("passed: true\nreason: within thresholds")
    assert judges.parse_verdict(verdict.output, 0).status == "passed"


def test_reviewed_fails_on_blockers_with_the_review_feedback() -> None:
    text = (
        "## Blockers\n- the vision names no user\n\n## Nitpicks\n- typo in title\n\n"
        "blockers: 1\nnitpicks: 1\n"
    )
    verdict = judges.reviewed([review(text)], show, 0, 2)
    assert verdict.status == "failed"
    assert verdict.reason.startswith("blockers exceed threshold (1 > 0)")
    assert "the vision names no user" in verdict.reason
    assert "    - the vision names no user" in verdict.output
    assert "typo in title" not in verdict.output  # nitpicks are within their threshold
    assert judges.parse_verdict(verdict.output, 2).status == "failed"


def test_reviewed_fails_on_nitpicks() -> None:
    verdict = judges.reviewed(
        [review("0 blockers\n3 nitpicks\n- nitpick: a\n- nitpick: b\n- nitpick: c\n")], show, 0, 2
    )
    assert verdict.status == "failed"
    assert verdict.reason == "nitpicks exceed threshold (3 > 2)"
    assert "    - nitpick: c" in verdict.output


def test_reviewed_sums_across_reviews_and_defaults_to_any_nitpicks() -> None:
    reviews = [review("blockers: 1\nnitpicks: 9\n", 1), review("blockers: 1\nnitpicks: 9\n", 2)]
    assert judges.reviewed(reviews, show, 2).status == "passed"
    failed = judges.reviewed(reviews, show, 1)
    assert failed.reason.startswith("blockers exceed threshold (2 > 1)")


def test_a_review_without_readable_counts_is_a_malfunction_never_zero() -> None:
    verdict = judges.reviewed([review("looks fine to me\n")], show, 0, 2)
    assert verdict.status == "malfunction"
    assert "review r1 has no readable blocker count" in verdict.reason
    assert judges.parse_verdict(verdict.output, 1).status == "malfunction"
    nitless = judges.reviewed([review("blockers: 0\n")], show)
    assert nitless.status == "malfunction" and "nitpick count" in nitless.reason


def test_approved() -> None:
    waiting = judges.approved(None, False, None, show, "route.stone.set --as approved")
    assert (waiting.status, waiting.reason) == ("failed", "wait for human approval")
    assert "route.stone.set --as approved" in waiting.output
    broken = judges.approved(None, True, None, show, "hint")
    assert broken.status == "failed" and "does not parse" in broken.output
    marker = Marker(
        path=Path("/r/.route/s.approved"),
        stone="s",
        review_input_hash="a" * 64,
        at="2025-01-01T00:00:00Z",
    )
    assert judges.approved(marker, True, "b" * 64, show, "hint", require_current=False).status == "passed"
    # Issue 3: by default an approval counts only for the artifacts it was given for.
    assert judges.APPROVAL_MUST_MATCH_ARTIFACTS is True
    older = judges.approved(marker, True, "b" * 64, show, "hint")
    assert older.status == "failed" and older.reason.startswith("wait for human approval (an approval exists")
    assert judges.approved(marker, True, "a" * 64, show, "hint").status == "passed"


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("pytest -q", None),
        ("reviewed?", ("reviewed?", {"allow_blockers": 0, "allow_nitpicks": None})),
        (
            "reviewed? --allow-blockers 1 --allow-nitpicks=4",
            ("reviewed?", {"allow_blockers": 1, "allow_nitpicks": 4}),
        ),
        ("approved?", ("approved?", {})),
    ],
)
def test_parse_builtin(command: str, expected: tuple[str, dict[str, int | None]] | None) -> None:
    spec = builtin_judges.parse_builtin(command)
    assert (None if spec is None else (spec.name, dict(spec.values))) == expected


@pytest.mark.parametrize(
    ("text", "blockers", "nitpicks"),
    [
        # a count line of 0 owns nothing and ends nothing: the item stays with the blockers
        ("blockers: 1\nnitpicks: 0\n- remove TODO\n", ["- remove TODO"], []),
        ("nitpicks: 2\nblockers: 0\n- typo\n- wording\n", [], ["- typo", "- wording"]),
        ("Summary: 1 blocker, 0 nitpicks\n- remove TODO\n", ["- remove TODO"], []),
        # blank lines end nothing; under a Markdown heading, neither does a line of text
        ("## Blockers\n\n- no user named\n\n## Nitpicks\n\n- typo\n", ["- no user named"], ["- typo"]),
        ("## Blockers\nThese must change:\n- no user named\n", ["- no user named"], []),
        # a label owns the list right after it, up to a line of other text
        ("Blockers:\n- no user named\nOverall fine.\n- an aside\n", ["- no user named"], []),
        ("blockers: 1\nnitpicks: 2\n- typo\n", [], ["- typo"]),  # after a nonzero nitpick count: nitpicks
        (
            "1 blocker: the vision names no user\n- nor a goal\n",
            ["1 blocker: the vision names no user", "- nor a goal"],
            [],
        ),
        ("- blocker: no user\n- nitpick: typo\n", ["- blocker: no user"], ["- nitpick: typo"]),
    ],
)
def test_feedback_lines(text: str, blockers: list[str], nitpicks: list[str]) -> None:
    assert judges.feedback_lines(text, "blocker") == blockers
    assert judges.feedback_lines(text, "nitpick") == nitpicks


def test_reviewed_shows_a_blocker_listed_after_a_zero_nitpick_count() -> None:
    verdict = judges.reviewed([review("blockers: 1\nnitpicks: 0\n- remove TODO\n")], show)
    assert verdict.status == "failed"
    assert verdict.reason == "blockers exceed threshold (1 > 0) — r1: - remove TODO"
    assert "    - remove TODO" in verdict.output.splitlines()


def test_a_judge_printing_passed_true_is_overridden_by_exit_2(git_repo: Path) -> None:
    """The documented `pytest -q || exit 2` judge, with a failing test that printed "passed: true": the
    stone is rejected, and route.verify (re-reading the recorded output) never takes it for a pass."""
    route = make_route(
        git_repo, {"1.code": "Code it.\n"}, {"1.code": "judges:\n  - python -m pytest -q tests || exit 2\n"}
    )
    write(route / "1.code.md", "done\n")
    write(git_repo / "tests" / "test_x.py", 'def test_x():\n    print("passed: true")\n    assert 1 == 2\n')
    result = stone_set(git_repo, route, "1.code")
    assert result.code == 2, result.out
    assert "exit 2 overrides the printed passed: true; " in result.out
    assert passed_record(route, "1.code") is None
    # A judge file an older driver recorded as passed for the same output is caught as forged.
    judge = next((route / ".route").glob("1.code.guard.judge.*.j1.md"))
    text = judge.read_text().replace("status: failed", "status: passed")
    judge.write_text(text)
    hashes = [
        re.search(rf"^{key}: (\w+)$", text, re.M)[1]  # type: ignore[index]
        for key in ("review_input_hash", "judge_input_hash")
    ]
    forge_pass(git_repo, route, "1.code", hashes[0], hashes[1], [judge.name])
    done = run_route(["route.verify", "--route", "route"], git_repo)
    assert done.code != 0
    line = next(line for line in done.out.splitlines() if line.startswith("forged "))
    assert "route/1.code: judge file j1" in line and "exit 2 overrides the printed passed: true" in line
