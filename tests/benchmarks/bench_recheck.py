"""What ``route.verify --recheck`` costs (issue 20). Run with `make bench` (or this file directly).

A 50-stone route passed on ``main`` (the base); a pull request re-passes 5 of them with new artifacts. Each
stone's guard has a review, ``reviewed?`` and a shell judge, so recheck runs 10 commands (5 reviews, 5
judges) and holds the other 45 passes as the base's. Timed interleaved on the same checkout:

- plain ``route.verify --all --base main`` (the baseline: it runs no command);
- ``route.verify --all --base main --recheck``.

The review and the judge are the cheapest commands there are (``printf``, through the shell guards run in),
so the difference is recheck's own machinery plus ten process starts: what a team pays on top of its
reviewers' own time, which for an LLM review is seconds per command and dwarfs it. Also printed: the same
difference per command run. The target is loose (≤ 3× plain verify): it guards against recheck doing work
per stone it holds (re-hashing, a git call each), which would grow with the route, not with the claims.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import _harness as harness  # noqa: E402

STONES = 50
NEW_CLAIMS = 5
REVIEW = "printf 'blockers: 0\\nnitpicks: 0\\n'"
JUDGE = "printf 'passed: true\\nreason: fine\\n'"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def name(index: int) -> str:
    return f"{index + 1}.part-{index:02}"


def pass_stones(repo: Path, indexes: range | list[int]) -> None:
    cwd = os.getcwd()
    os.chdir(repo)
    try:
        from routedriver.route import api

        for index in indexes:
            outcome = api.set_passed("route", name(index)).evaluation.outcome
            assert outcome == "passed", (name(index), outcome)
    finally:
        os.chdir(cwd)


def build(workdir: Path) -> Path:
    """main: 50 stones passed and committed; checked out: a pull request that re-passes 5 of them."""
    repo = workdir / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.name", "Bench Human")
    git(repo, "config", "user.email", "bench@example.com")
    git(repo, "config", "commit.gpgsign", "false")
    route = repo / "route"
    route.mkdir()
    for index in range(STONES):
        (route / f"{name(index)}.stone").write_text(f"Write part {index}.\n")
        (route / f"{name(index)}.md").write_text(f"# part {index}\n" + "text\n" * 20)
        (route / f"{name(index)}.guard").write_text(
            f'reviews:\n  - "{REVIEW}"\njudges:\n  - "reviewed?"\n  - "{JUDGE}"\n'
        )
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the route")
    pass_stones(repo, range(STONES))
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "passed")
    git(repo, "checkout", "-q", "-b", "pull-request")
    changed = [index * (STONES // NEW_CLAIMS) for index in range(NEW_CLAIMS)]
    for index in changed:
        (route / f"{name(index)}.md").write_text(f"# part {index}, revised\n" + "more text\n" * 20)
    pass_stones(repo, changed)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "five parts revised")
    return repo


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="bench-recheck-") as tmp:
        repo = build(Path(tmp))
        verify = str(harness.commands_dir() / "route.verify")
        plain = [verify, "--all", "--base", "main"]
        recheck = [*plain, "--recheck"]
        done = subprocess.run(recheck, cwd=repo, capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        summary = done.stdout.splitlines()[-1]
        expected = f"recheck: {NEW_CLAIMS} new claims rechecked against "
        assert expected in summary and f"{2 * NEW_CLAIMS} commands" in summary, summary
        assert summary.endswith(f"; {STONES - NEW_CLAIMS} passes held by the base"), summary
        walls = harness.interleaved(
            {"plain": harness.command(plain, cwd=repo), "recheck": harness.command(recheck, cwd=repo)},
            rounds=11,
        )
        extra = walls["recheck"] - walls["plain"]
        print(
            f"info   route.verify --all --base main: {walls['plain'] * 1000:.1f} ms; with --recheck "
            f"({NEW_CLAIMS} new claims of {STONES}, {2 * NEW_CLAIMS} commands): "
            f"{walls['recheck'] * 1000:.1f} ms, +{extra * 1000:.1f} ms "
            f"(+{extra / (2 * NEW_CLAIMS) * 1000:.1f} ms per command run)",
            flush=True,
        )
        harness.report(
            f"route.verify --all --base --recheck, {STONES} stones, {NEW_CLAIMS} new claims "
            "(vs the same without --recheck)",
            walls["recheck"],
            walls["plain"],
            max_ratio=3,
        )
    return harness.exit_code()


if __name__ == "__main__":
    sys.exit(main())
