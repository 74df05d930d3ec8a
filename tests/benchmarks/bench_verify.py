"""Speed targets of the CI gate (issue 23). Run with `make bench` (or this file directly; parts: 10k 100k).

- route.verify --all over 50 passed stones with 10,000 committed artifact files, and again with 100,000:
  median wall ≤ 1.5× ``verify_floor.py`` on the same repository, measured in the same rounds. The floor is
  the same interpreter asking git every question the gate cannot avoid, reading every file it must and
  parsing every guard with PyYAML (as the gate must: see its docstring), checking nothing: what is left of
  the 1.5× is the gate's own code, imported, and the checking.

Each stone has a guard with a review, the reviewed? judge and a shell judge; every fifth stone also needs a
human approval (approved via the Python API as a human, committed by a listed approver), so the run also
reads approval history.

Commands are timed from a non-editable install of this checkout (``_harness.installed``), as the GitHub
Action installs routedriver. Shown too, not targets: both against ``git ls-files -s`` + ``git status
--porcelain`` (issue 3's old baseline); what PyYAML costs the floor (its import and the parse of the 50
guards, against reading the same texts, each in a fresh interpreter); and route.verify split in two: its
imports beyond the floor's (hashlib and yaml), and the rest, its checking.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))

import _harness as harness  # noqa: E402

STONES = 50
FILES_PER_STONE = 200
REVIEW = "printf 'blockers: 0\\nnitpicks: 0\\n'"
JUDGE = "printf 'passed: true\\nreason: fine\\n'"


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, text=True).stdout


def build(workdir: Path, files_per_stone: int = FILES_PER_STONE) -> Path:
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
        for number in range(files_per_stone):
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


def git_baseline(repo: Path) -> Callable[[], None]:
    """The target's baseline, run once: ``git ls-files -s`` then ``git status --porcelain``."""
    ls_files = harness.command(["git", "ls-files", "-s"], cwd=repo)
    status = harness.command(["git", "status", "--porcelain"], cwd=repo)

    def once() -> None:
        ls_files()
        status()

    return once


GUARDS_BY_PYYAML = """
import pathlib, sys
from routedriver import userfile
for path in sorted(pathlib.Path("route").glob("*.guard")):
    userfile.parse_yaml(path.read_text(), shown=str(path))
"""
GUARDS_READ = """
import pathlib, sys
from routedriver import userfile
for path in sorted(pathlib.Path("route").glob("*.guard")):
    path.read_text()
"""


def measure(files_per_stone: int, rounds: int) -> None:
    """Build the repository, check every command answers what it must, then time them interleaved."""
    bin_dir = harness.commands_dir()
    python = str(bin_dir / "python")
    with tempfile.TemporaryDirectory(prefix="bench-verify-", dir=os.environ.get("BENCH_TMPDIR")) as tmp:
        repo = build(Path(tmp), files_per_stone)
        tracked = len(git(repo, "ls-files").splitlines())
        assert tracked >= STONES * files_per_stone, tracked
        verify = [str(bin_dir / "route.verify"), "--all"]
        done = subprocess.run(verify, cwd=repo, capture_output=True, text=True, check=False)
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout.count("\npassed") + done.stdout.startswith("passed") == STONES, done.stdout
        floor = [python, str(HERE / "verify_floor.py")]
        floor_check = subprocess.run(floor, cwd=repo, capture_output=True, text=True, check=True)
        assert floor_check.stdout.strip() == str(STONES), floor_check.stdout
        runs = {
            "verify": harness.command(verify, cwd=repo),
            "floor": harness.command(floor, cwd=repo),
            "baseline": git_baseline(repo),
        }
        runs["pyyaml"] = harness.command([python, "-c", GUARDS_BY_PYYAML], cwd=repo)
        runs["read"] = harness.command([python, "-c", GUARDS_READ], cwd=repo)
        imports = "import routedriver.cli.route_verify, yaml"  # yaml: imported when the first guard is read
        runs["imports"] = harness.command([python, "-c", imports], cwd=repo)
        runs["floor-imports"] = harness.command([python, "-c", "import hashlib, yaml"], cwd=repo)
        runs["bare"] = harness.bare_python()
        walls = harness.interleaved(runs, rounds=rounds)
    print(f"info   bare python: {walls['bare'] * 1000:.1f} ms", flush=True)
    harness.report(
        f"route.verify --all, {STONES} passed stones, {tracked:,} committed files vs verify_floor.py",
        walls["verify"],
        walls["floor"],
        max_ratio=1.5,
    )
    baseline = walls["baseline"]
    print(
        f"info   against git ls-files -s + git status --porcelain ({baseline * 1000:.1f} ms): route.verify "
        f"{walls['verify'] / baseline:.2f}×, the floor {walls['floor'] / baseline:.2f}×",
        flush=True,
    )
    yaml_cost = walls["pyyaml"] - walls["read"]
    print(
        f"info   PyYAML in the floor (import, and parsing the {STONES} guards): {yaml_cost * 1000:.1f} ms",
        flush=True,
    )
    # The floor has no code of its own to import; route.verify has, and then checks the claims.
    imports = walls["imports"] - walls["floor-imports"]
    bound = walls["floor"] + imports
    checking = walls["verify"] - bound
    print(
        f"info   route.verify's imports beyond the floor's: {imports * 1000:.1f} ms; floor + imports = "
        f"{bound * 1000:.1f} ms = {bound / walls['floor']:.2f}× the floor before a claim is checked; the "
        f"checking: {checking * 1000:.1f} ms = {checking / walls['floor']:.2f}× the floor",
        flush=True,
    )


PARTS = {"10k": (FILES_PER_STONE, 15), "100k": (2000, 9)}


def main(argv: list[str]) -> int:
    """Both sizes, or those named (``bench_verify.py 10k``); building the 100,000-file one takes ~1 min."""
    unknown = set(argv) - PARTS.keys()
    if unknown:
        print(f"error: no part {', '.join(sorted(unknown))}; parts: {', '.join(PARTS)}", file=sys.stderr)
        return 2
    for name, (files_per_stone, rounds) in PARTS.items():
        if not argv or name in argv:
            measure(files_per_stone, rounds)
    return harness.exit_code()


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
