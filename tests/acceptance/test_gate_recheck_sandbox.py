"""``route.verify --recheck`` runs a pull request's commands under bubblewrap (``--recheck-sandbox``).

A judge that runs the tests runs the robot's tests: here the base's judge (``tools/run.py``, unchanged)
executes the stone's artifact, as pytest executes the test files a stone binds. In CI that code tries what
a red team's test files did to take the gate over: write where the gate and the job's next steps read (a
stand-in for the gate's installed modules, ``$GITHUB_ENV``), rewrite git's configuration in the checkout
(which the gate's own git commands read afterwards), and find the gate's process. Unsandboxed, the writes
land (the baseline); in the sandbox the kernel refuses every one and the gate's process is not there to see.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import Ran, git
from tests.route.routes import run_route, write

RUN = """\
import pathlib, sys
route, stone = sys.argv[1], sys.argv[2]
exec(compile(pathlib.Path(route, stone + ".md").read_text(), stone + ".md", "exec"))
print("passed: true")
print("reason: it ran")
"""
# The artifact: code, as a test file is. It acts only in CI (CI_MARK), not when the robot passes it.
HOSTILE = """\
import os, pathlib
if os.environ.get("CI_MARK"):
    said = []
    for name in ("GATE_FILE", "GITHUB_ENV"):
        try:
            with open(os.environ[name], "a") as handle:
                handle.write("pwned\\n")
            said.append(f"{name}: written")
        except OSError as exc:
            said.append(f"{name}: {exc.strerror}")
    try:
        with open(".git/config", "a") as handle:
            handle.write("[core]\\n\\tfsmonitor = touch-pwned\\n")
        said.append("git config: written")
    except OSError as exc:
        said.append(f"git config: {exc.strerror}")
    gate = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if b"route.verify" in pathlib.Path(f"/proc/{pid}/cmdline").read_bytes():
                gate.append(pid)
        except OSError:
            pass
    said.append(f"gate seen: {bool(gate)}")
    pathlib.Path("sandbox-report.txt").write_text("\\n".join(said) + "\\n")
"""


@pytest.fixture
def pull_request(git_repo: Path) -> Path:
    """main: a route whose judge runs the artifact; branch robot: the hostile artifact, passed, committed."""
    write(git_repo / "tools" / "run.py", RUN)
    write(git_repo / "route" / "1.x.stone", "Write the code.\n")
    write(git_repo / "route" / "1.x.guard", "judges:\n  - python3 tools/run.py $route $stone\n")
    write(git_repo / "route" / "1.x.md", "print('hello')\n")
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "base")
    git(git_repo, "checkout", "-q", "-b", "robot")
    write(git_repo / "route" / "1.x.md", HOSTILE)
    done = run_route(["route.stone.set", "--route", "route", "--stone", "1.x", "--as", "passed"], git_repo)
    assert done.code == 0, done.out + done.err
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "work")
    return git_repo


def ci(repo: Path, tmp_path: Path, *flags: str, path: str | None = None) -> tuple[Ran, Path]:
    clone = tmp_path / "ci"
    if clone.exists():
        shutil.rmtree(clone)
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    git(clone, "checkout", "-q", "--detach", "origin/robot")
    env = {
        "CI_MARK": "1",
        "GATE_FILE": str(write(tmp_path / "gate" / "bound.py", "# the gate's own module\n")),
        "GITHUB_ENV": str(write(tmp_path / "runner" / "github_env", "")),
        **({"PATH": path} if path is not None else {}),
    }
    argv = ["route.verify", "--all", "--base", "origin/main", "--recheck", *flags]
    return run_route(argv, clone, env=env), clone


def test_without_the_sandbox_the_code_a_judge_runs_writes_where_the_gate_reads(
    pull_request: Path, tmp_path: Path
) -> None:
    done, clone = ci(pull_request, tmp_path, "--recheck-sandbox", "off")
    assert done.code == 0, done.out + done.err
    assert (clone / "sandbox-report.txt").read_text().splitlines() == [
        "GATE_FILE: written",
        "GITHUB_ENV: written",
        "git config: written",
        "gate seen: True",
    ]
    assert (tmp_path / "gate" / "bound.py").read_text().endswith("pwned\n")


@pytest.mark.parametrize("mode", ["on", "auto"])
def test_in_the_sandbox_the_same_code_can_change_nothing_the_gate_or_the_job_reads(
    pull_request: Path, tmp_path: Path, mode: str
) -> None:
    done, clone = ci(pull_request, tmp_path, "--recheck-sandbox", mode)
    assert done.code == 0, done.out + done.err
    assert "without a sandbox" not in done.err
    assert (clone / "sandbox-report.txt").read_text().splitlines() == [
        "GATE_FILE: Read-only file system",
        "GITHUB_ENV: Read-only file system",
        "git config: Read-only file system",
        "gate seen: False",
    ]
    assert (tmp_path / "gate" / "bound.py").read_text() == "# the gate's own module\n"
    assert (tmp_path / "runner" / "github_env").read_text() == ""
    assert "fsmonitor" not in (clone / ".git" / "config").read_text()


def test_without_bubblewrap_on_refuses_and_auto_runs_unsandboxed_saying_so(
    pull_request: Path, tmp_path: Path
) -> None:
    # A PATH with what the commands need (git, python3, bash) and the driver, but no bwrap.
    tools = tmp_path / "no-bwrap"
    tools.mkdir()
    for name in ("git", "python3", "bash", "sh"):
        found = shutil.which(name)
        assert found is not None
        os.symlink(found, tools / name)
    path = f"{tools}{os.pathsep}{Path(shutil.which('route.verify') or '').parent}"
    refused, _clone = ci(pull_request, tmp_path, "--recheck-sandbox", "on", path=path)
    assert (refused.code, refused.out) == (2, "")
    assert refused.err.startswith(
        "error: --recheck-sandbox on needs bubblewrap, but bwrap is not on PATH; install bubblewrap "
    ), refused.err
    assert len(refused.err.splitlines()) == 1
    unsandboxed, clone = ci(pull_request, tmp_path, path=path)  # auto, the default
    assert unsandboxed.code == 0, unsandboxed.out + unsandboxed.err
    assert (
        "notice: recheck ran the pull request's commands without a sandbox (bwrap is not on PATH; "
        "--recheck-sandbox auto): code they run could change the gate; install bubblewrap"
    ) in unsandboxed.err
    assert (clone / "sandbox-report.txt").read_text().startswith("GATE_FILE: written\n")
