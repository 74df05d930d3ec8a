"""The real Claude Code and Codex CLIs: installed from the npm registry (pinned, cached outside the
repository) and run headless against the scripted model servers of ``tests/fakes`` on 127.0.0.1.

The cache is ``$ROUTEDRIVER_E2E_CACHE`` or ``~/.cache/routedriver-e2e``, one directory per package and
version, filled under a lock (two test workers never install at once) and moved into place only once the
CLI answers ``--version``. A CLI that cannot be installed FAILS the test that needs it, with npm's own
last lines: these tests exist to run the real clients, so a missing one is an error, never a skip.

Each run gets an isolated home (``HOME``, ``CLAUDE_CONFIG_DIR``, ``CODEX_HOME``), a dummy API key, the
model server's address as its only endpoint, and telemetry, auto-update and other outside traffic off.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from routedriver.fsutil import FileLock
from tests.fakes.llm_servers import Recorded

VENV_BIN = Path(sys.executable).parent  # route.*, bhrain: this checkout's console scripts


@dataclass(frozen=True)
class Client:
    slug: str
    package: str
    version: str
    command: str


CLAUDE_CODE = Client("claude-code", "@anthropic-ai/claude-code", "2.1.332", "claude")
CODEX = Client("codex", "@openai/codex", "0.171.0", "codex")


def cache_dir() -> Path:
    configured = os.environ.get("ROUTEDRIVER_E2E_CACHE")
    return Path(configured) if configured else Path.home() / ".cache" / "routedriver-e2e"


def installed(client: Client) -> Path:
    """The CLI's executable, installed from the npm registry into the cache if it is not there yet."""
    home = cache_dir() / f"{client.slug}-{client.version}"
    binary = home / "node_modules" / ".bin" / client.command
    if _answers(binary, client):
        return binary
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail(f"cannot install {client.package}@{client.version}: npm is not on PATH (install Node.js)")
    with FileLock(cache_dir() / f".{client.slug}.lock", timeout=900):
        if _answers(binary, client):  # another worker installed it meanwhile
            return binary
        for left in home.parent.glob(f".{home.name}.*"):  # an install killed half-way (we hold the lock)
            shutil.rmtree(left, ignore_errors=True)
        staging = home.with_name(f".{home.name}.{os.getpid()}")
        staging.mkdir(parents=True)
        argv = [npm, "install", "--prefix", str(staging), "--no-audit", "--no-fund", "--no-save"]
        argv += ["--loglevel=error", f"{client.package}@{client.version}"]
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=900, check=False)
        except subprocess.TimeoutExpired:
            shutil.rmtree(staging, ignore_errors=True)
            pytest.fail(f"cannot install {client.package}@{client.version}: npm install took over 15 minutes")
        staged = staging / "node_modules" / ".bin" / client.command
        if done.returncode != 0 or not _answers(staged, client):
            said = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
            shutil.rmtree(staging, ignore_errors=True)
            pytest.fail(
                f"cannot install {client.package}@{client.version} from the npm registry "
                f"(npm exited {done.returncode}; the CLI does not answer --version):\n{said}"
            )
        shutil.rmtree(home, ignore_errors=True)
        os.replace(staging, home)
    return binary


def _answers(binary: Path, client: Client) -> bool:
    if not binary.exists():
        return False
    try:
        done = subprocess.run(
            [str(binary), "--version"],
            capture_output=True,
            text=True,
            timeout=60,
            env=_base_env(),
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0 and client.version in done.stdout


def _base_env() -> dict[str, str]:
    """PATH with this checkout's commands first, then node's; git's hermetic settings from conftest."""
    node = shutil.which("node")
    path = [str(VENV_BIN), *([str(Path(node).parent)] if node else []), "/usr/local/bin", "/usr/bin", "/bin"]
    env = {"PATH": os.pathsep.join(dict.fromkeys(path)), "LANG": "C.UTF-8", "NO_COLOR": "1", "CI": "true"}
    for name in ("GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM", "XDG_CACHE_HOME", "TMPDIR"):
        if name in os.environ:
            env[name] = os.environ[name]
    return env


@dataclass
class Run:
    """One headless run: its exit code, its event stream (one JSON object a line) and stderr."""

    code: int
    events: list[dict[str, Any]]
    stderr: str
    requests: list[Recorded] = field(default_factory=list)

    def of_type(self, kind: str, subtype: str | None = None) -> list[dict[str, Any]]:
        return [
            e
            for e in self.events
            if e.get("type") == kind and (subtype is None or e.get("subtype") == subtype)
        ]

    def text(self) -> str:
        return "\n".join(json.dumps(event) for event in self.events)


def _events(stdout: str) -> list[dict[str, Any]]:
    found = []
    for line in stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                found.append(json.loads(line))
            except ValueError:
                continue
    return found


def run_claude(
    binary: Path,
    repo: Path,
    home: Path,
    base_url: str,
    prompt: str,
    *,
    allowed_tools: Sequence[str],
    env: Mapping[str, str] | None = None,
    timeout: float = 120,
) -> Run:
    """``claude -p PROMPT --output-format stream-json --verbose`` in ``repo``, requests to ``base_url``."""
    home.mkdir(parents=True, exist_ok=True)
    full_env = {
        **_base_env(),
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "ANTHROPIC_BASE_URL": base_url,
        "ANTHROPIC_API_KEY": "sk-ant-e2e-dummy-key",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "DISABLE_ERROR_REPORTING": "1",
        "DISABLE_BUG_COMMAND": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        **(env or {}),
    }
    argv = [str(binary), "-p", prompt, "--output-format", "stream-json", "--verbose"]
    argv += ["--permission-mode", "acceptEdits", "--allowedTools", ",".join(allowed_tools)]
    return _run_client(argv, repo, full_env, timeout)


def codex_config(base_url: str, *, mcp_env: Mapping[str, str]) -> str:
    """Codex's config.toml: the scripted Responses server as its only provider, route.mcp as its MCP
    server (this checkout's, with the environment its reviews need), nothing else reaching out."""
    server_env = ", ".join(f"{key} = {json.dumps(value)}" for key, value in mcp_env.items())
    return f"""\
model = "gpt-e2e"
model_provider = "scripted"
approval_policy = "never"
sandbox_mode = "danger-full-access"
check_for_update_on_startup = false

[analytics]
enabled = false

[otel]
exporter = "none"

[model_providers.scripted]
name = "scripted"
base_url = "{base_url}"
env_key = "E2E_OPENAI_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0

[mcp_servers.route]
command = "{VENV_BIN / "route.mcp"}"
args = []
startup_timeout_sec = 60
env = {{ {server_env} }}
"""


def run_codex(binary: Path, repo: Path, home: Path, config: str, prompt: str, *, timeout: float = 120) -> Run:
    """``codex exec --json PROMPT`` in ``repo`` with ``config`` as its whole configuration."""
    codex_home = home / "codex"
    codex_home.mkdir(parents=True, exist_ok=True)
    (codex_home / "config.toml").write_text(config, encoding="utf-8")
    full_env = {
        **_base_env(),
        "HOME": str(home),
        "CODEX_HOME": str(codex_home),
        "E2E_OPENAI_KEY": "sk-e2e-dummy",
    }
    # --strict-config: a key this version does not know (a setting that would not switch traffic off) fails
    argv = [str(binary), "exec", "--json", "--strict-config", "--skip-git-repo-check", prompt]
    return _run_client(argv, repo, full_env, timeout)


def _run_client(argv: list[str], repo: Path, env: Mapping[str, str], timeout: float) -> Run:
    """A client CLI run to its end in ``repo``, no stdin, its JSON lines read as events."""
    done = subprocess.run(
        argv,
        cwd=repo,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return Run(done.returncode, _events(done.stdout), done.stderr)
