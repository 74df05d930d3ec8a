"""Before and after: the commands a user waits for, timed from two versions of routedriver interleaved.

    .venv/bin/python tests/benchmarks/ab.py REV_A [REV_B] [--only get,set,...] [--rounds N]

Builds a non-editable install of each (``REV_B`` left out: this checkout as it is on disk) and times, on the
same repositories, in rounds that run every command of both versions once (so a busy moment on the shared
machine falls on A and B alike), the figures issue 23 names:

- ``get-fresh``: a robot's first turn, ``route.stone.get @next-one --say`` on the ``feature`` starter route
  with nothing passed yet;
- ``get``: a robot turn, ``route.stone.get @next-one --say`` on 1,000 passed stones (committed);
- ``get-uncommitted``: the same on 1,000 stones of which 20 passed with uncommitted artifacts;
- ``get-200u``, ``get-2000u``: the same on 200 and on 2,000 passed stones whose artifacts are all
  uncommitted (issue 23: the second ≤ 2× the first);
- ``set``: ``route.stone.set --as passed`` on an unchanged, passed stone with 200 artifacts (no process);
- ``bounce``: ``route.bounce`` judging a Write to a file no ``protect:`` glob covers, on the ``feature``
  starter route (5 stones, one guard with ``protect:``);
- ``bounce-30``: the same on a route of 30 stones whose every guard has ``protect:``;
- ``behave``: ``bhrain behave --hook pre_tool`` judging a Write against the ``dev`` behavior profile (the
  Claude Code hook that runs before every tool call);
- ``verify``: a CI run, ``route.verify --all`` over 50 passed stones and 10,000 committed files;
- ``verify-100k``: the same over 100,000 files (only when named: building it takes a minute);
- ``drive-stop``: ``route.drive --when hook.onStop``, the Claude Code Stop hook, on the ``feature`` starter
  route with nothing passed (it sends the robot back); and ``judge``: ``route.stone.judge --mechanism
  reviewed?`` on the ``set`` stone (only when named: neither is a figure issue 23 names).

It prints each median for A and B, B − A and (B − A) / A, of the wall time and of the CPU time (user +
system, the command's and the git processes' it waited for): on a shared machine the CPU time moves less.
Not part of ``make bench`` (it builds two installs and repositories each time); the numbers it printed for
each removal of issue 23 are in the commit that made it and in docs/route-gate.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
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
import bench_route  # noqa: E402
import bench_verify  # noqa: E402

FIGURES = (
    "get-fresh",
    "get",
    "get-uncommitted",
    "get-200u",
    "get-2000u",
    "set",
    "bounce",
    "bounce-30",
    "behave",
    "verify",
    "verify-100k",
    "drive-stop",
    "judge",
)
DEFAULT = FIGURES[: FIGURES.index("verify-100k")]


def install(rev: str | None) -> Path:
    """The bin directory of a non-editable install of ``rev`` (None: the checkout on disk)."""
    if rev is None:
        return harness.commands_dir()
    sha = subprocess.run(
        ["git", "rev-parse", "--verify", f"{rev}^{{commit}}"], cwd=ROOT, capture_output=True, text=True
    )
    if sha.returncode != 0:
        raise SystemExit(f"error: {rev} is not a commit here")
    commit = sha.stdout.strip()
    source = ROOT / ".venv" / "bench-ab" / f"src-{commit[:12]}"
    if not source.exists():
        source.mkdir(parents=True)
        archive = subprocess.run(["git", "archive", commit], cwd=ROOT, capture_output=True, check=True)
        subprocess.run(["tar", "-x", "-C", str(source)], input=archive.stdout, check=True)
    built, why_not = harness.installed(source, ROOT / ".venv" / "bench-ab" / f"venv-{commit[:12]}")
    if built is None:
        raise SystemExit(f"error: cannot install {rev}: {why_not}")
    return built


Figure = tuple[Path, Callable[[Path], list[str]], bytes | None]  # repository, argv for a bin dir, stdin


def bounce_repo(workdir: Path, stones: int, name: str = "bounce") -> Path:
    """``stones`` 0: the feature starter route; else that many stones, each guard protecting ``src/**``."""
    repo = bench_route.new_repo(workdir, f"{name}-{stones}")
    route_dir = repo / "route"
    if not stones:
        shutil.copytree(ROOT / "templates" / "routes" / "feature", route_dir)
        (route_dir / "template.txt").unlink()
    else:
        route_dir.mkdir()
    for index in range(1, stones + 1):
        name = f"{index}.part-{index}"
        (route_dir / f"{name}.stone").write_text(f"Part {index}.\n")
        (route_dir / f"{name}.guard").write_text(
            "artifacts: ['$route/$stone.md']\nprotect: ['src/**']\nreviews: []\njudges: []\n"
        )
    bench_route.commit_all(repo)
    return repo


def bounce_figure(repo: Path) -> Figure:
    event = {
        "session_id": "bench",
        "cwd": str(repo),
        "hook_event_name": "PreToolUse",
        "tool_name": "Write",
        "tool_input": {"file_path": str(repo / "docs" / "notes.md"), "content": "x\n"},
    }
    argv: Callable[[Path], list[str]] = lambda bin_dir: [str(bin_dir / "route.bounce"), "--route", "route"]  # noqa: E731
    return repo, argv, json.dumps(event).encode()


BEHAVIOR_CONFIG = """\
atom: claude
security:
  behavior:
    profile: dev
    rule_definitions:
      - id: protect_migrations
        trigger: [edit, write]
        action: block
        condition:
          param_contains: { param: file_path, value: "migrations/" }
        message: "Migration files are protected."
"""


def behave_figure(root: Path) -> Figure:
    (root / "project").mkdir(parents=True)
    (root / "config.yaml").write_text(BEHAVIOR_CONFIG)
    event = {
        "session_id": "bench",
        "transcript_path": str(root / "transcript.jsonl"),
        "cwd": str(root / "project"),
        "hook_event_name": "PreToolUse",
        "tool_name": "Write",
        "tool_input": {"file_path": str(root / "project" / "notes.md"), "content": "x\n"},
    }
    flags = ["--config", str(root / "config.yaml"), "--state-dir", str(root / "state"), "--hook", "pre_tool"]
    argv: Callable[[Path], list[str]] = lambda bin_dir: [str(bin_dir / "bhrain"), "behave", *flags]  # noqa: E731
    return root / "project", argv, json.dumps(event).encode()


def drive_stop_figure(repo: Path) -> Figure:
    event = {"session_id": "bench", "cwd": str(repo), "hook_event_name": "Stop", "stop_hook_active": False}
    # a block count no run reaches: every round's answer is the same (keep going)
    flags = ["--route", "route", "--when", "hook.onStop", "--max-blocks", "1000000"]
    argv: Callable[[Path], list[str]] = lambda bin_dir: [str(bin_dir / "route.drive"), *flags]  # noqa: E731
    return repo, argv, json.dumps(event).encode()


def figures(workdir: Path, only: set[str]) -> dict[str, Figure]:
    found: dict[str, Figure] = {}
    feature = bounce_repo(workdir, 0) if {"get-fresh", "bounce"} & only else None
    if "get-fresh" in only:
        assert feature is not None
        found["get-fresh"] = (feature, bench_route.get_argv, None)
    if "get" in only:
        found["get"] = (bench_route.passed_route(workdir, 1000), bench_route.get_argv, None)
    if "get-uncommitted" in only:
        repo = bench_route.passed_route(workdir, 1000, uncommitted=20)
        found["get-uncommitted"] = (repo, bench_route.get_argv, None)
    for name, stones in (("get-200u", 200), ("get-2000u", 2000)):
        if name in only:
            repo = bench_route.passed_route(workdir, stones, uncommitted=stones - 1)
            found[name] = (repo, bench_route.get_argv, None)
    set_repo = bench_route.set_repo(workdir) if {"set", "judge"} & only else None
    if "set" in only:
        assert set_repo is not None
        found["set"] = (set_repo, bench_route.set_argv, None)
    if "judge" in only:
        assert set_repo is not None
        judge = ["--route", "route", "--stone", "1.big", "--mechanism", "reviewed?"]
        found["judge"] = (set_repo, lambda bin_dir: [str(bin_dir / "route.stone.judge"), *judge], None)
    if "bounce" in only:
        assert feature is not None
        found["bounce"] = bounce_figure(feature)
    if "bounce-30" in only:
        found["bounce-30"] = bounce_figure(bounce_repo(workdir, 30))
    if "drive-stop" in only:  # a repository of its own: the hook writes its state under the route's .route/
        found["drive-stop"] = drive_stop_figure(bounce_repo(workdir, 0, "drive"))
    if "behave" in only:
        found["behave"] = behave_figure(workdir / "behave")
    for name, files_per_stone in (("verify", 200), ("verify-100k", 2000)):
        if name in only:
            (workdir / name).mkdir()
            repo = bench_verify.build(workdir / name, files_per_stone)
            found[name] = (repo, lambda bin_dir: [str(bin_dir / "route.verify"), "--all"], None)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("rev_a")
    parser.add_argument("rev_b", nargs="?")
    parser.add_argument("--only", default=",".join(DEFAULT), help="figures, comma-separated")
    parser.add_argument("--rounds", type=int, default=21)
    args = parser.parse_args()
    only = set(args.only.split(","))
    if not only <= set(FIGURES):
        parser.error(f"figures: {', '.join(FIGURES)}")
    bins = {"A": install(args.rev_a), "B": install(args.rev_b)}
    print(f"info   A = {args.rev_a}, B = {args.rev_b or 'the checkout on disk'}", flush=True)
    workdir = Path(tempfile.mkdtemp(prefix="bench-ab-", dir=os.environ.get("BENCH_TMPDIR", "/var/tmp")))
    try:
        runs: dict[str, Callable[[], None]] = {}
        for name, (repo, argv, stdin) in figures(workdir, only).items():
            for side, bin_dir in bins.items():
                text = stdin.decode() if stdin is not None else None
                runs[f"{name} {side}"] = harness.command(argv(bin_dir), cwd=repo, stdin=text, bin_dir=bin_dir)
        runs["bare A"] = harness.command([str(bins["A"] / "python"), "-c", "pass"], bin_dir=bins["A"])
        cpu: dict[str, float] = {}
        walls = harness.interleaved(runs, rounds=args.rounds, cpu=cpu)
    finally:
        subprocess.run(["rm", "-rf", str(workdir)], check=False)
    print(
        f"info   bare python: {walls['bare A'] * 1000:.1f} ms (CPU {cpu['bare A'] * 1000:.1f} ms)", flush=True
    )
    for name in FIGURES:
        if name not in only:
            continue
        for what, found in (("wall", walls), ("CPU", cpu)):
            a, b = found[f"{name} A"], found[f"{name} B"]
            print(
                f"ab     {name:16} {what:4} A {a * 1000:8.1f} ms   B {b * 1000:8.1f} ms   "
                f"B−A {(b - a) * 1000:+7.1f} ms   {(b - a) / a * 100:+6.1f}%",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
