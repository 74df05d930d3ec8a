"""route.stone.judge: the built-in judges as a command a person, a robot or CI can run."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import Ran
from tests.route.routes import make_route, review, route_cmd, run_route, steer, stone_set, write


def judge(repo: Path, route: Path, *args: str) -> Ran:
    return run_route(route_cmd("judge", route, "--stone", "1.doc", *args), repo)


def setup(repo: Path) -> Path:
    route = make_route(
        repo,
        {"1.doc": "Write the doc.\n"},
        {"1.doc": f"reviews: ['{review('r1')}', '{review('r2')}']\njudges: ['reviewed?']\n"},
    )
    write(route / "1.doc.md", "doc\n")
    return route


def test_reviewed_reads_the_latest_reviews_for_the_current_artifacts(git_repo: Path) -> None:
    route = setup(git_repo)
    none_yet = judge(git_repo, route, "--mechanism", "reviewed?")
    assert none_yet.code == 2 and none_yet.out.startswith("passed: false\nreason: no reviews to read")
    steer(git_repo, "r1", out="blockers: 1\nnitpicks: 1\n- blocker: it is empty\n")
    steer(git_repo, "r2", out="0 blockers, 2 nitpicks\n")
    stone_set(git_repo, route, "1.doc")
    strict = judge(git_repo, route, "--mechanism", "reviewed?")
    assert strict.code == 2
    assert strict.out.startswith("passed: false\nreason: blockers exceed threshold (1 > 0)")
    assert "- blocker: it is empty" in strict.out
    assert strict.err.startswith("error: 1.doc: reviewed? did not pass: blockers exceed threshold (1 > 0)")
    lenient = judge(
        git_repo, route, "--mechanism", "reviewed?", "--allow-blockers", "1", "--allow-nitpicks", "3"
    )
    assert (lenient.code, lenient.err) == (0, "")
    assert lenient.out.startswith("passed: true\nreason: within thresholds (blockers 1 ≤ 1, nitpicks 3 ≤ 3)")
    tight = judge(
        git_repo, route, "--mechanism", "reviewed?", "--allow-blockers", "1", "--allow-nitpicks", "2"
    )
    assert tight.code == 2 and "reason: nitpicks exceed threshold (3 > 2)" in tight.out
    write(route / "1.doc.md", "doc, edited\n")  # the reviews are for other content now
    stale = judge(git_repo, route, "--mechanism", "reviewed?")
    assert stale.code == 2 and "no reviews to read for the current artifacts" in stale.out


def test_unreadable_counts_are_a_malfunction(git_repo: Path) -> None:
    route = setup(git_repo)
    steer(git_repo, "r1", out="Looks great!\n")
    stone_set(git_repo, route, "1.doc")
    broken = judge(git_repo, route, "--mechanism", "reviewed?")
    assert broken.code == 1
    assert "passed:" not in broken.out and "review r1 has no readable blocker count" in broken.out
    assert broken.err.startswith(
        "error: 1.doc: reviewed? malfunctioned: review r1 has no readable blocker count"
    )


def test_approved(git_repo: Path) -> None:
    route = setup(git_repo)
    waiting = judge(git_repo, route, "--mechanism", "approved?")
    assert waiting.code == 2 and waiting.out.startswith("passed: false\nreason: wait for human approval\n")
    stone_set(git_repo, route, "1.doc", as_="approved")
    done = judge(git_repo, route, "--mechanism", "approved?")
    assert done.code == 0 and done.out.startswith(
        "passed: true\nreason: approved by Test Human <human@example.com> at "
    )
    flags = judge(git_repo, route, "--mechanism", "approved?", "--allow-blockers", "1")
    assert flags.code == 2 and "apply only to reviewed?" in flags.err
    unknown = judge(git_repo, route, "--mechanism", "tested?")
    assert unknown.code == 2 and unknown.err.startswith("error: Invalid value for '--mechanism'")
