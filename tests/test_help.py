"""Every ``--help`` stands on its own (issue 21 §3): an install has no checkout to read, so a help that names
a doc says where the installed package holds it (and that file is there), and the commands a user wires into
a client's config show the snippet in their help."""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

import pytest

from tests.conftest import BIN_DIR

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = sorted(tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["scripts"])
SUBCOMMANDS = {"bhrain": ["run", "behave"], "behaviorci": ["init", "validate", "run"]}
COMMANDS = [[script] for script in SCRIPTS] + [
    [group, sub] for group, subs in SUBCOMMANDS.items() for sub in subs
]


def _help(argv: list[str], tmp_path: Path) -> str:
    done = subprocess.run(
        [str(BIN_DIR / argv[0]), *argv[1:], "--help"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 0, done.stderr
    return " ".join(done.stdout.split())  # click wraps lines; read it as one text


@pytest.mark.parametrize("argv", COMMANDS, ids=" ".join)
def test_a_help_that_names_a_doc_says_where_the_install_has_it(argv: list[str], tmp_path: Path) -> None:
    text = _help(argv, tmp_path)
    assert "examples/" not in text  # a checkout's directory, which an install does not have
    for name in re.findall(r"(?<![\w/])docs/([\w.-]+\.md)", text):
        assert f"routedriver/docs/{name}" in text, f"{argv}: docs/{name} without where it is installed"
        assert (ROOT / "docs" / name).is_file()  # shipped as routedriver/docs/ (tests/test_packaging.py)


def test_route_mcp_help_holds_the_client_config(tmp_path: Path) -> None:
    text = _help(["route.mcp"], tmp_path)
    assert "claude mcp add route -- route.mcp" in text
    assert '{"mcpServers": {"route": {"command": "route.mcp", "args": []}}}' in text
    assert '[mcp_servers.route] command = "route.mcp"' in text
    for tool in ("route_next", "route_status", "route_drive", "route_set_passed", "route_judge"):
        assert tool in text
    assert "see docs/mcp.md)" not in text  # it used to send the reader to a file an install lacks


def test_bhrain_help_says_what_bhrain_is_in_plain_words(tmp_path: Path) -> None:
    text = _help(["bhrain"], tmp_path)
    opening = text.split("Usage: bhrain [OPTIONS] COMMAND [ARGS]... ", 1)[1].split(". ", 1)[0]
    assert opening == "bhrain: an LLM agent for the command line"
    assert "struct.v1" not in text
    assert "--atom scripted --input-file 1.vision.md # offline: no key, no model" in text


def test_the_hooks_show_their_settings_snippet(tmp_path: Path) -> None:
    assert '"command": "route.drive --when hook.onStop"' in _help(["route.drive"], tmp_path)
    assert '"matcher": "*"' in _help(["bhrain", "behave"], tmp_path)
