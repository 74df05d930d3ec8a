"""Fixtures of the end-to-end suite: the real CLIs (installed once, cached), projects made with
``route.init``, and the scripted model servers, whose every request body is kept in the test's directory
(``requests.jsonl``) for whoever reads a failure."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import git
from tests.e2e.clients import CLAUDE_CODE, CODEX, VENV_BIN, installed
from tests.e2e.model import ScriptedModel
from tests.fakes.llm_servers import AnthropicServer, ResponsesServer, _FakeServer


@pytest.fixture(scope="session")
def claude() -> Path:
    return installed(CLAUDE_CODE)


@pytest.fixture(scope="session")
def codex() -> Path:
    return installed(CODEX)


def route_command(repo: Path, *argv: str, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        [str(VENV_BIN / argv[0]), *argv[1:]], cwd=repo, capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, (argv, done.stdout, done.stderr)
    return done.stdout


@pytest.fixture
def project(tmp_path: Path) -> Path:
    """A repository whose work branch has the feature template's route bound to it and the route hooks in
    .claude/settings.json, as ``route.init routes/feature --claude-code --bind`` writes them (committed)."""
    repo = tmp_path / "project"
    repo.mkdir()
    git(repo, "init", "-q")
    (repo / "README.md").write_text("# A small project\n", encoding="utf-8")
    (repo / ".gitignore").write_text("build/\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")
    git(repo, "switch", "-q", "-c", "feature/e2e")
    route_command(repo, "route.init", "routes/feature", "--claude-code", "--bind")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the route and its hooks")
    return repo


def keep_stones(repo: Path, *names: str) -> None:
    """The human trims the route to ``names`` (deleting the other stones and guards, as one removes a gate)
    and commits."""
    route = repo / "routes" / "feature"
    for path in [*route.glob("*.stone"), *route.glob("*.guard")]:
        if path.name.rsplit(".", 1)[0] not in names:
            path.unlink()
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a shorter route")


@contextmanager
def serving(kind: type[_FakeServer], model: ScriptedModel, log: Path) -> Iterator[_FakeServer]:
    """The scripted model behind a wire-format server; its requests are written to ``log`` whatever happens.
    Request validation is off: the client is the real one, and the API shapes it sends move with it."""
    server = kind(responder=model, validate=False)
    try:
        with server:
            yield server
    finally:
        with log.open("w", encoding="utf-8") as out:
            for recorded in server.requests:
                out.write(
                    json.dumps({"path": recorded.path, "headers": recorded.headers, "body": recorded.json})
                )
                out.write("\n")


__all__ = ["AnthropicServer", "ResponsesServer", "keep_stones", "route_command", "serving"]
