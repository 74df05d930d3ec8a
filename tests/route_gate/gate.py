"""Helpers for the gate tests: routes in real repositories, human approvals at a pseudo-terminal, commits,
approvers files, and the JSON events Claude Code sends to hooks."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.conftest import TEST_EMAIL, Ran, git
from tests.route.routes import make_route, review, run_route, write

GATED_GUARD = "reviews:\n  - {review}\njudges:\n  - reviewed? --allow-blockers 0\n  - approved?\n"
COUNTER_JUDGE = "python3 tools/judge.py"
JUDGE_SCRIPT = """\
import pathlib
pathlib.Path('.ctl').mkdir(exist_ok=True)
with open('.ctl/judge.count', 'a') as handle:
    handle.write('run\\n')
print('passed: true')
print('reason: the judge script is content')
"""


def gated_route(repo: Path, name: str = "route") -> Path:
    """1.vision (review + reviewed? + approved?), 2.plan (review + a shell judge), 3.ship (no guard)."""
    route = make_route(
        repo,
        {"1.vision": "Write the vision.\n", "2.plan": "Write the plan.\n", "3.ship": "Ship it.\n"},
        {
            "1.vision": GATED_GUARD.format(review=review("r1")),
            "2.plan": f"reviews:\n  - {review('r2')}\njudges:\n  - reviewed?\n  - {COUNTER_JUDGE}\n",
        },
        name=name,
    )
    write(repo / "tools" / "judge.py", JUDGE_SCRIPT)
    write(route / "1.vision.md", "# Vision\n")
    write(route / "2.plan.md", "# Plan\n")
    write(route / "3.ship.md", "# Shipped\n")
    return route


def forge_pass(
    repo: Path, route: Path, stone: str, review_input_hash: str, judge_input_hash: str, files: list[str]
) -> Path:
    """What a robot with a shell and this package can write: a pass record for the stone's files as they
    are (content ids from ``git hash-object``, the key as the driver computes it), claiming the hashes and
    the review and judge files it names."""
    from routedriver.route import store
    from routedriver.route.load import load_route

    def content_id(path: Path) -> str | None:
        if not path.exists():
            return None
        return git(repo, "hash-object", "--", str(path.relative_to(repo))).strip()

    loaded = load_route(route)
    stone_id = content_id(route / f"{stone}.stone")
    assert stone_id is not None
    return store.write_pass(
        loaded,
        stone,
        review_input_hash=review_input_hash,
        stone_id=stone_id,
        guard_id=content_id(route / f"{stone}.guard"),
        approval_id=content_id(route / ".route" / f"{stone}.approved"),
        judge_input_hash=judge_input_hash,
        files=files,
        manifest={},
    )


def commit_marker(repo: Path, route: Path, stone: str, message: str, author: str | None = None) -> None:
    """Commit the stone's approval marker alone (an approval-only commit), optionally as ``author``."""
    marker = str((route / ".route" / f"{stone}.approved").relative_to(repo))
    git(repo, "add", "--", marker)
    extra = [f"--author={author}"] if author else []
    git(repo, "commit", "-q", "-m", message, *extra, "--", marker)


def commit_all(repo: Path, message: str = "work", author: str | None = None) -> None:
    git(repo, "add", "-A")
    extra = [f"--author={author}"] if author else []
    git(repo, "commit", "-q", "-m", message, *extra)


def approvers(repo: Path, *emails: str) -> Path:
    return write(repo / ".route-approvers", "# who may approve\n" + "".join(f"{email}\n" for email in emails))


def route_set(repo: Path, route: Path, stone: str, *extra: str) -> Ran:
    return run_route(
        ["route.stone.set", "--route", str(route), "--stone", stone, "--as", "passed", *extra], repo
    )


def approve(repo: Path, route: Path, stone: str, *extra: str, env: dict[str, str] | None = None) -> Ran:
    """A human approves at a terminal (stdin is a pseudo-terminal)."""
    argv = ["route.stone.set", "--route", str(route), "--stone", stone, "--as", "approved", *extra]
    return run_route(argv, repo, human=True, env=env)


def pass_all(repo: Path, route: Path) -> None:
    """Approve 1.vision as the test human, pass every stone, commit everything."""
    assert approve(repo, route, "1.vision").code == 0
    for stone in ("1.vision", "2.plan", "3.ship"):
        done = route_set(repo, route, stone)
        assert done.code == 0, (stone, done.out, done.err)
    approvers(repo, TEST_EMAIL)
    commit_all(repo, "route passed")


def verify(repo: Path, *args: str, env: dict[str, str] | None = None) -> Ran:
    return run_route(["route.verify", *args], repo, env=env)


def lines_of(result: Ran) -> dict[str, str]:
    """route.verify's text output: ``{"<route>/<stone>": "<status>: <why>"}``."""
    found = {}
    for line in result.out.splitlines():
        if line.startswith("route.verify "):
            continue
        status, _, rest = line.partition(" ")
        name, _, why = rest.strip().partition(": ")
        found[name] = f"{status}: {why}"
    return found


# ---------------------------------------------------------------- Claude Code hook events


def hook_event(event: str, cwd: Path, **fields: Any) -> str:
    """The JSON Claude Code writes to a command hook's stdin (common fields, then the event's own)."""
    payload = {
        "session_id": "7f6c2d1e-4b1a-4c55-9e3d-2b8f0a1c9d42",
        "transcript_path": str(cwd / ".claude" / "transcript.jsonl"),
        "cwd": str(cwd),
        "permission_mode": "default",
        "hook_event_name": event,
        **fields,
    }
    return json.dumps(payload)


def stop_event(cwd: Path, active: bool) -> str:
    return hook_event("Stop", cwd, stop_hook_active=active)


def session_start_event(cwd: Path, source: str = "startup") -> str:
    return hook_event("SessionStart", cwd, source=source)


def pre_tool_event(cwd: Path, tool: str, path: str) -> str:
    inputs: dict[str, dict[str, Any]] = {
        "Write": {"file_path": path, "content": "new content\n"},
        "Edit": {"file_path": path, "old_string": "a", "new_string": "b", "replace_all": False},
        "MultiEdit": {"file_path": path, "edits": [{"old_string": "a", "new_string": "b"}]},
        "NotebookEdit": {
            "notebook_path": path,
            "new_source": "print(1)",
            "cell_id": "c1",
            "edit_mode": "replace",
        },
        "Bash": {"command": f"echo hi > {path}", "description": "write a file"},
        "Read": {"file_path": path},
    }
    return hook_event("PreToolUse", cwd, tool_name=tool, tool_input=inputs[tool], tool_use_id="toolu_01ABC")


def hook(argv: list[str], cwd: Path, event: str) -> Ran:
    return run_route(argv, cwd, input=event)


def ssh_signing(repo: Path, tmp: Path, email: str = TEST_EMAIL, passphrase: str = "") -> Path:
    """Make ``repo`` sign commits with a fresh SSH key (locked by ``passphrase``, if one is given); returns
    an allowed-signers file trusting it."""
    key = tmp / "signing_key"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", passphrase, "-C", email, "-f", str(key)], check=True
    )
    git(repo, "config", "gpg.format", "ssh")
    git(repo, "config", "user.signingkey", str(key) + ".pub")
    git(repo, "config", "commit.gpgsign", "true")
    public = (tmp / "signing_key.pub").read_text().strip()
    return write(tmp / "allowed_signers", f'{email} namespaces="git" {public}\n')


def denied(ran: Ran) -> str:
    """The reason a PreToolUse hook refused the call with, as Claude Code reads it: its JSON deny on stdout,
    exit 0 (the model reads only the reason); '' when it did not refuse that way."""
    if ran.code != 0 or not ran.out.startswith("{"):
        return ""
    output = json.loads(ran.out).get("hookSpecificOutput") or {}
    if (output.get("hookEventName"), output.get("permissionDecision")) != ("PreToolUse", "deny"):
        return ""
    return str(output["permissionDecisionReason"])


def sent_back(ran: Ran) -> str:
    """The reason a Stop hook keeps the robot going with, as Claude Code reads it: ``decision: block`` on
    stdout, exit 0; '' when it lets the robot stop."""
    if ran.code != 0 or not ran.out.startswith("{"):
        return ""
    answer = json.loads(ran.out)
    return str(answer["reason"]) if answer.get("decision") == "block" else ""
