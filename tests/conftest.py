"""Shared fixtures: a hermetic environment (git identity, caches, no colour) and real git repositories.

Tests run the installed console scripts as a user would; the venv's bin directory is put first on PATH so
``route.stone.get`` and friends resolve to this checkout's install.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

BIN_DIR = Path(sys.executable).parent
TEST_NAME = "Test Human"
TEST_EMAIL = "human@example.com"


@pytest.fixture(autouse=True, scope="session")
def _hermetic_environment(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    home = tmp_path_factory.mktemp("home")
    gitconfig = home / ".gitconfig"
    gitconfig.write_text(
        f"[user]\n\tname = {TEST_NAME}\n\temail = {TEST_EMAIL}\n"
        "[init]\n\tdefaultBranch = main\n[commit]\n\tgpgsign = false\n[advice]\n\tdetachedHead = false\n",
        encoding="utf-8",
    )
    saved = dict(os.environ)
    os.environ.update(
        {
            "PATH": f"{BIN_DIR}{os.pathsep}{os.environ.get('PATH', '')}",
            "GIT_CONFIG_GLOBAL": str(gitconfig),
            "GIT_CONFIG_NOSYSTEM": "1",
            "XDG_CACHE_HOME": str(home / ".cache"),
            "NO_COLOR": "1",
        }
    )
    for leaked in (
        "GITHUB_ACTIONS",
        "GITHUB_STEP_SUMMARY",
        "GITHUB_HEAD_REF",
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "QWEN_API_KEY",
        "DASHSCOPE_API_KEY",
        "ANTHROPIC_BASE_URL",
        "OPENAI_BASE_URL",
        "QWEN_BASE_URL",
        "GIT_DIR",
        "GIT_WORK_TREE",
        "ROUTEDRIVER_DEBUG",
    ):
        os.environ.pop(leaked, None)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def git(repo: Path, *args: str, check: bool = True) -> str:
    """Run git in ``repo`` and return its stdout."""
    done = subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {done.stderr}")
    return done.stdout


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    """An empty git repository on branch ``main`` with one initial commit."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "README.md").write_text("test repo\n", encoding="utf-8")
    git(repo, "add", "README.md")
    git(repo, "commit", "-q", "-m", "initial")
    return repo


@dataclass(frozen=True)
class Ran:
    code: int
    out: str
    err: str


def run_cli(
    argv: Sequence[str],
    cwd: Path,
    *,
    input: str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
) -> Ran:
    """Run an installed console script (or any program) the way a user's shell would."""
    full_env = dict(os.environ)
    if env:
        full_env.update(env)
    done = subprocess.run(
        list(argv),
        cwd=cwd,
        input=input,
        stdin=None if input is not None else subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
        check=False,
    )
    return Ran(done.returncode, done.stdout, done.stderr)
