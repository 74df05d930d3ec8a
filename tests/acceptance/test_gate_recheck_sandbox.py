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
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from routedriver.fsutil import remove_tree
from tests.conftest import Ran, git
from tests.route.routes import run_route, write
from tests.route_gate.gate import lines_of

RUN = """\
import pathlib, sys
route, stone = sys.argv[1], sys.argv[2]
exec(compile(pathlib.Path(route, stone + ".md").read_text(), stone + ".md", "exec"))
print("passed: true")
print("reason: it ran")
"""
# The artifact: code, as a test file is. It acts only in CI (CI_MARK), not when the robot passes it, and says
# what it managed on stdout, which recheck keeps in the judge's record (--recheck-dir).
HOSTILE = """\
import os, pathlib, socket
if os.environ.get("CI_MARK"):
    said = []
    for name, path, mode, text in (
        ("GATE_FILE", os.environ["GATE_FILE"], "a", "pwned\\n"),
        ("GITHUB_ENV", os.environ["GITHUB_ENV"], "a", "PWNED=1\\n"),
        ("git config", ".git/config", "a", "[core]\\n\\tfsmonitor = touch pwned\\n"),
        ("the next judge's program", "tools/check.py", "w", 'print("passed: true")\\n'),
    ):
        try:
            with open(path, mode) as handle:
                handle.write(text)
            said.append(f"{name}: written")
        except OSError as exc:
            said.append(f"{name}: {exc.strerror}")
    try:
        pathlib.Path(os.environ["TMPDIR"], "planted").write_text("a cache entry\\n")
        said.append("scratch: written")
    except OSError as exc:
        said.append(f"scratch: {exc.strerror}")
    for name in ("SSH_AUTH_SOCK", "DAEMON_SOCK"):
        try:
            with socket.socket(socket.AF_UNIX) as peer:
                peer.connect(os.environ[name])
            said.append(f"{name}: connected")
        except OSError as exc:
            said.append(f"{name}: {exc.strerror}")
    # As root, a kernel setting (core_pattern) would run a program outside any sandbox.
    said.append(f"proc sys writable: {os.access('/proc/sys/kernel/core_pattern', os.W_OK)}")
    # What the gate must remove after the command, with care: a tree too deep for a recursive removal, and
    # a directory it cannot write holding a link to the job's file (a cleanup that chmods through it).
    scratch = os.environ["TMPDIR"]
    os.chdir(scratch)
    for _ in range(3000):
        os.mkdir("d")
        os.chdir("d")
    os.chdir(scratch)
    os.mkdir("ro")
    os.symlink(os.environ["GATE_FILE"], "ro/link")
    os.chmod("ro", 0o500)
    os.chdir(os.environ["CHECKOUT"])
    gate = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if b"route.verify" in pathlib.Path(f"/proc/{pid}/cmdline").read_bytes():
                gate.append(pid)
        except OSError:
            pass
    said.append(f"gate seen: {bool(gate)}")
    print("\\n".join("said: " + line for line in said))
"""
# j2, the base's honest check: the hostile artifact fails it (unless j1 rewrote it). It says whether a file
# another command left in its scratch directory is there.
CHECK = """\
import os, pathlib
planted = pathlib.Path(os.environ.get("TMPDIR", "/nonexistent"), "planted").exists()
print(f"said: j2 sees the plant: {planted}")
print("passed: false")
print("reason: the honest check")
"""


@pytest.fixture
def pull_request(git_repo: Path) -> Path:
    """main: a route whose j1 runs the artifact and j2 is an honest check; branch robot: the hostile
    artifact, passed with the check swapped for one run (as a robot forges a pass), committed."""
    write(git_repo / "tools" / "run.py", RUN)
    write(git_repo / "tools" / "check.py", CHECK)
    write(git_repo / "route" / "1.x.stone", "Write the code.\n")
    guard = "judges:\n  - python3 tools/run.py $route $stone\n  - python3 tools/check.py\n"
    write(git_repo / "route" / "1.x.guard", guard)
    write(git_repo / "route" / "1.x.md", "print('hello')\n")
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "base")
    git(git_repo, "checkout", "-q", "-b", "robot")
    write(git_repo / "route" / "1.x.md", HOSTILE)
    write(git_repo / "tools" / "check.py", 'print("passed: true")\n')
    done = run_route(["route.stone.set", "--route", "route", "--stone", "1.x", "--as", "passed"], git_repo)
    assert done.code == 0, done.out + done.err
    write(git_repo / "tools" / "check.py", CHECK)
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "work")
    return git_repo


@pytest.fixture
def agent(tmp_path: Path) -> Iterator[Path]:
    """Two listening UNIX sockets: an agent's the environment names (SSH_AUTH_SOCK), and a daemon's nothing
    names, deep under the test's directory (as a docker daemon's may be anywhere)."""
    path = tmp_path / "agent.sock"
    (tmp_path / "d" / "e").mkdir(parents=True)
    with socket.socket(socket.AF_UNIX) as server, socket.socket(socket.AF_UNIX) as daemon:
        server.bind(str(path))
        server.listen(8)
        daemon.bind(str(tmp_path / "d" / "e" / "daemon.sock"))
        daemon.listen(8)
        yield path


def ci(
    repo: Path, tmp_path: Path, agent: Path, *flags: str, path: str | None = None
) -> tuple[Ran, list[str]]:
    """CI's recheck of the robot's branch; what the commands said they managed (from their records)."""
    clone, records = tmp_path / "ci", tmp_path / "records"
    for old in (clone, records):
        if old.exists():
            shutil.rmtree(old)
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    git(clone, "checkout", "-q", "--detach", "origin/robot")
    (tmp_path / "tmp").mkdir(exist_ok=True)
    env = {
        "CI_MARK": "1",
        "GATE_FILE": str(write(tmp_path / "gate" / "bound.py", "# the gate's own module\n")),
        "GITHUB_ENV": str(write(tmp_path / "runner" / "github_env", "")),
        "SSH_AUTH_SOCK": str(agent),
        "CHECKOUT": str(clone),
        "DAEMON_SOCK": str(tmp_path / "d" / "e" / "daemon.sock"),
        "TMPDIR": str(tmp_path / "tmp"),
        **({"PATH": path} if path is not None else {}),
    }
    argv = ["route.verify", "--all", "--base", "origin/main", "--recheck", "--recheck-dir", str(records)]
    done = run_route([*argv, *flags], clone, env=env)
    # An unsandboxed run left its commands' tree (thousands deep) in $TMPDIR: pytest's own cleanup recurses.
    remove_tree(tmp_path / "tmp")
    said = sorted(
        line.removeprefix("said: ")
        for record in records.rglob("*.md")
        for line in record.read_text().splitlines()
        if line.startswith("said: ")
    )
    return done, said


def test_without_the_sandbox_the_code_a_judge_runs_takes_the_gate_over(
    pull_request: Path, tmp_path: Path, agent: Path
) -> None:
    done, said = ci(pull_request, tmp_path, agent, "--recheck-sandbox", "off")
    # j1 rewrote the program j2 runs: the forged pass is rechecked "passed".
    assert done.code == 0, done.out + done.err
    said = [line for line in said if not line.startswith("proc sys writable: ")]  # root's, or not
    assert said == [
        "DAEMON_SOCK: connected",
        "GATE_FILE: written",
        "GITHUB_ENV: written",
        "SSH_AUTH_SOCK: connected",
        "gate seen: True",
        "git config: written",
        "scratch: written",
        "the next judge's program: written",
    ]
    assert (tmp_path / "gate" / "bound.py").read_text().endswith("pwned\n")


@pytest.mark.parametrize("mode", ["on", "auto"])
def test_in_the_sandbox_the_same_code_can_change_nothing_the_gate_or_another_command_reads(
    pull_request: Path, tmp_path: Path, agent: Path, mode: str
) -> None:
    done, said = ci(pull_request, tmp_path, agent, "--recheck-sandbox", mode)
    assert done.code == 2, done.out + done.err
    assert "without a sandbox" not in done.err
    line = lines_of(done)["route/1.x"]
    assert line.startswith(
        "rejected: failed on recheck: judge j2 (python3 tools/check.py) said no: the honest check"
    ), line
    assert said == [
        "DAEMON_SOCK: Connection refused",
        "GATE_FILE: Read-only file system",
        "GITHUB_ENV: Read-only file system",
        "SSH_AUTH_SOCK: Connection refused",
        "gate seen: False",
        "git config: Read-only file system",
        "j2 sees the plant: False",  # its own scratch directory, not j1's
        "proc sys writable: False",
        "scratch: written",
        "the next judge's program: Read-only file system",
    ]
    assert (tmp_path / "gate" / "bound.py").read_text() == "# the gate's own module\n"
    # No chmod through the link (the job's other file, written the same way, is the yardstick), and the gate's
    # temporary directory, the commands' scratch in it, is gone.
    mode = (tmp_path / "gate" / "bound.py").stat().st_mode
    assert mode == (tmp_path / "runner" / "github_env").stat().st_mode
    assert not list((tmp_path / "tmp").glob("route-recheck-*"))
    assert (tmp_path / "runner" / "github_env").read_text() == ""


def test_without_bubblewrap_on_refuses_and_auto_runs_unsandboxed_saying_so(
    pull_request: Path, tmp_path: Path, agent: Path
) -> None:
    # A PATH with what the commands need (git, python3, bash) and the driver, but no bwrap.
    tools = tmp_path / "no-bwrap"
    tools.mkdir()
    for name in ("git", "python3", "bash", "sh"):
        found = shutil.which(name)
        assert found is not None
        os.symlink(found, tools / name)
    path = f"{tools}{os.pathsep}{Path(shutil.which('route.verify') or '').parent}"
    refused, _said = ci(pull_request, tmp_path, agent, "--recheck-sandbox", "on", path=path)
    assert (refused.code, refused.out) == (2, "")
    assert refused.err.startswith(
        "error: --recheck-sandbox on needs bubblewrap, but bwrap is not on PATH; install bubblewrap "
    ), refused.err
    assert len(refused.err.splitlines()) == 1
    unsandboxed, said = ci(pull_request, tmp_path, agent, path=path)  # auto, the default
    assert unsandboxed.code == 0, unsandboxed.out + unsandboxed.err
    assert (
        "notice: recheck ran the pull request's commands without a sandbox (bwrap is not on PATH; "
        "--recheck-sandbox auto): code they run could change the gate; install bubblewrap"
    ) in unsandboxed.err
    assert "GATE_FILE: written" in said
