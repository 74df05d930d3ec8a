"""Speed target of the CI gate (issue 3). Run with `make bench` (or this file directly).

- route.verify --all over 50 passed stones with 10,000 committed artifact files: median wall ≤ 3× the time
  of `git ls-files -s` + `git status --porcelain` on the same repository, measured in the same run.

Each stone has a guard with a review, the reviewed? judge and a shell judge; every fifth stone also needs a
human approval (approved via the Python API as a human, committed by a listed approver), so the run also
reads approval history.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))
sys.path.insert(0, str(HERE))

import _harness as harness  # noqa: E402

STONES = 50
FILES_PER_STONE = 200
REVIEW = "printf 'blockers: 0\\nnitpicks: 0\\n'"
JUDGE = "printf 'passed: true\\nreason: fine\\n'"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def build(workdir: Path) -> Path:
    repo = workdir / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "config", "user.name", "Bench Human")
    git(repo, "config", "user.email", "bench@example.com")
    git(repo, "config", "commit.gpgsign", "false")
    route = repo / "route"
    for index in range(STONES):
        name = f"{index + 1}.part-{index:02}"
        folder = route / "art" / f"{index:02}"
        folder.mkdir(parents=True)
        for number in range(FILES_PER_STONE):
            (folder / f"{number:03}.md").write_text(f"# part {index} file {number}\n" + "text\n" * 20)
        (route / f"{name}.stone").write_text(f"Write part {index}.\n")
        judges = ["reviewed? --allow-nitpicks 0", JUDGE] + (["approved?"] if index % 5 == 0 else [])
        judge_lines = "".join(f'  - "{judge}"\n' for judge in judges)
        (route / f"{name}.guard").write_text(
            f"artifacts: ['$route/art/{index:02}/*.md']\nreviews:\n  - \"{REVIEW}\"\njudges:\n{judge_lines}"
        )
    (repo / ".route-approvers").write_text("bench@example.com\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "route and artifacts")
    cwd = os.getcwd()
    os.chdir(repo)
    try:
        from routedriver.route import api

        for index in range(STONES):
            name = f"{index + 1}.part-{index:02}"
            if index % 5 == 0:
                api.set_approved("route", name, human=True)
            outcome = api.set_passed("route", name).evaluation.outcome
            assert outcome == "passed", (name, outcome)
    finally:
        os.chdir(cwd)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "driver records")
    return repo


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="bench-verify-") as tmp:
        repo = build(Path(tmp))
        tracked = len(git(repo, "ls-files").splitlines())
        assert tracked >= STONES * FILES_PER_STONE, tracked
        verify = [str(harness.BIN_DIR / "route.verify"), "--all"]
        done = subprocess.run(verify, cwd=repo, capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout.count("\npassed") + done.stdout.startswith("passed") == STONES, done.stdout

        ls_files = harness.command(["git", "ls-files", "-s"], cwd=repo)
        status = harness.command(["git", "status", "--porcelain"], cwd=repo)

        def baseline_once() -> None:
            ls_files()
            status()

        baseline = harness.median_wall(baseline_once, repeat=15)
        wall = harness.median_wall(harness.command(verify, cwd=repo), repeat=15)
        harness.report(
            f"route.verify --all, {STONES} passed stones, {tracked} committed files "
            "(vs git ls-files -s + git status --porcelain)",
            wall,
            baseline,
            max_ratio=3,
        )
    return harness.exit_code()


if __name__ == "__main__":
    raise SystemExit(main())
