"""examples/mcp/: the configs say the same thing, load without a mistake, and the .mcp.json really works."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path

from routedriver.brain.config import load_config
from routedriver.mcp.servers_config import load_mcp_config
from tests.brain.helpers import bhrain, call, scripted_run, write_script
from tests.conftest import git, run_cli
from tests.mcp.helpers import vision_route

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "mcp"


def test_every_client_config_starts_the_same_route_mcp() -> None:
    (claude_code,) = load_mcp_config(EXAMPLES / ".mcp.json")
    codex = tomllib.loads((EXAMPLES / "codex-config.toml").read_text(encoding="utf-8"))["mcp_servers"][
        "route"
    ]
    bhrain_config = load_config(EXAMPLES / "bhrain.yaml")
    assert bhrain_config.mcp_servers is not None
    (from_bhrain,) = bhrain_config.mcp_servers
    assert (claude_code.name, claude_code.command, claude_code.args) == ("route", "route.mcp", ())
    assert (codex["command"], codex["args"]) == ("route.mcp", [])
    assert (from_bhrain.name, from_bhrain.command, from_bhrain.args) == ("route", "route.mcp", ())
    # The key reaches the server only because the example passes it, and an unset key is no error.
    assert from_bhrain.expanded({}).env == (("ANTHROPIC_API_KEY", ""),)


def test_the_dot_mcp_json_serves_the_route_bound_to_the_branch(git_repo: Path, tmp_path: Path) -> None:
    vision_route(git_repo)
    git(git_repo, "switch", "-q", "-c", "feature/vision")
    assert run_cli(["route.bind", "--set", "route"], git_repo).code == 0
    script = write_script(
        tmp_path / "s.json", [{"tool_calls": [call("mcp__route__route_next")]}, {"text": "ok"}]
    )
    ran = bhrain(
        [
            *scripted_run(script),
            "--input",
            "go",
            "--tools",
            "none",
            "--mcp-config",
            str(EXAMPLES / ".mcp.json"),
        ]
        + ["--json"],
        git_repo,
    )
    assert ran.code == 0, ran.err
    (record,) = json.loads(ran.out)["tool_calls"]
    assert (record["name"], record["status"]) == ("mcp__route__route_next", "ok")
