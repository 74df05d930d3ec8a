"""What a Claude Code or Codex session waits for on routedriver (issue 21).

- ``route.mcp`` connecting: started, ``initialize`` and ``tools/list`` answered (the handshake is answered
  before the MCP SDK loads; ``claude -p`` sends its first request with the tools of the servers connected
  within about two seconds): ≤ 5× bare python start-up, click's import being most of it (it was ~30×)
- ``route.bounce`` judging a Bash call (the PreToolUse hook runs before every one; it asks git which route is
  bound): ≤ 10× bare python
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))
sys.path.insert(0, str(HERE))

from _harness import bare_python, command, commands_dir, exit_code, report, versus_bare  # noqa: E402

HANDSHAKE = "".join(
    json.dumps(message) + "\n"
    for message in (
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "bench", "version": "1"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
    )
)


def connected_s(repo: Path) -> float:
    """Seconds from starting route.mcp to its answers to initialize and tools/list: what a client waits
    for (the server's exit afterwards is not timed: nobody waits for it)."""
    env = {**os.environ, "PATH": f"{commands_dir()}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    started = time.perf_counter()
    server = subprocess.Popen(
        [str(commands_dir() / "route.mcp")],
        cwd=repo,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert server.stdin is not None and server.stdout is not None
    server.stdin.write(HANDSHAKE.encode())
    server.stdin.flush()
    for ident in (0, 1):
        answer = json.loads(server.stdout.readline())
        if answer.get("id") != ident or "result" not in answer:
            raise SystemExit(f"route.mcp answered {answer!r}")
    elapsed = time.perf_counter() - started
    server.stdin.close()
    server.wait(timeout=60)
    return elapsed


def connecting(repo: Path, rounds: int = 15) -> None:
    bare = bare_python()
    samples: dict[str, list[float]] = {"it": [], "bare": []}
    connected_s(repo)
    for _ in range(rounds):
        samples["it"].append(connected_s(repo))
        started = time.perf_counter()
        bare()
        samples["bare"].append(time.perf_counter() - started)
    it, baseline = statistics.median(samples["it"]), statistics.median(samples["bare"])
    report("route.mcp: initialize and tools/list answered", it, baseline, max_ratio=5)


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="bench-clients-") as tmp:
        repo = Path(tmp) / "repo"
        repo.mkdir()
        for step in (["git", "init", "-q"], ["git", "commit", "-q", "--allow-empty", "-m", "init"]):
            subprocess.run(step, cwd=repo, check=True, capture_output=True, env={**os.environ, **_IDENTITY})
        subprocess.run(
            [str(commands_dir() / "route.init"), "routes/feature"], cwd=repo, check=True, capture_output=True
        )
        subprocess.run(["git", "switch", "-q", "-c", "work"], cwd=repo, check=True)
        subprocess.run([str(commands_dir() / "route.bind"), "--set", "routes/feature"], cwd=repo, check=True)
        connecting(repo)
        event = json.dumps(
            {
                "hook_event_name": "PreToolUse",
                "cwd": str(repo),
                "tool_name": "Bash",
                "tool_input": {"command": "cd routes/feature && sed -i s/a/b/ 1.spec.md > /tmp/log 2>&1"},
            }
        )
        hook = command([str(commands_dir() / "route.bounce")], cwd=repo, stdin=event)
        versus_bare("route.bounce: a Bash call judged", hook, max_ratio=10)
    return exit_code()


_IDENTITY = {
    "GIT_AUTHOR_NAME": "Bench",
    "GIT_AUTHOR_EMAIL": "bench@example.com",
    "GIT_COMMITTER_NAME": "Bench",
    "GIT_COMMITTER_EMAIL": "bench@example.com",
}

if __name__ == "__main__":
    sys.exit(main())
