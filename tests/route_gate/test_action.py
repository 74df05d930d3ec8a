"""The reusable action: a composite that installs routedriver from its own checkout and runs route.verify,
with every input passed through the environment and quoted (never spliced into a shell script)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
EXAMPLE = yaml.safe_load((ROOT / "examples" / "github" / "route-gate.yml").read_text(encoding="utf-8"))


def _steps() -> list[dict[str, Any]]:
    return ACTION["runs"]["steps"]


def test_it_is_a_composite_with_the_contract_inputs() -> None:
    assert ACTION["runs"]["using"] == "composite"
    assert {"route", "all", "approvers", "require-signed", "allow-incomplete", "python-version"} <= set(
        ACTION["inputs"]
    )
    uses = [step.get("uses", "") for step in _steps()]
    assert uses[0].startswith("actions/setup-python@")
    install = _steps()[1]
    assert install["env"] == {"ROUTEDRIVER_SOURCE": "${{ github.action_path }}"}
    assert '"$ROUTEDRIVER_SOURCE"' in install["run"] and "pip install" in install["run"]


def test_no_expression_is_ever_interpolated_into_a_script() -> None:
    for step in _steps():
        assert "${{" not in step.get("run", ""), step.get("name")
        assert "run" not in step or step["shell"] == "bash"  # composite run steps must name their shell


def _run_verify_step(tmp_path: Path, inputs: dict[str, str]) -> list[str]:
    """Run the action's verify script with a stand-in route.verify that prints its argv, one per line."""
    done = _verify_step(tmp_path, inputs)
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def _literal(default: str) -> str:
    return "" if "${{" in default else default


def _verify_step(
    tmp_path: Path, inputs: dict[str, str], extra_env: dict[str, str] | None = None, status_exit: int = 0
) -> subprocess.CompletedProcess[str]:
    step = next(step for step in _steps() if step.get("name") == "route.verify")
    env_names = {name: value for name, value in step["env"].items()}
    fake = tmp_path / "bin"
    fake.mkdir(exist_ok=True)
    stub = fake / "route.verify"
    stub.write_text('#!/bin/sh\nfor arg in "$@"; do printf "%s\\n" "$arg"; done\n')
    stub.chmod(0o755)
    board = fake / "route.status"  # prints its argv as a board would be printed, then exits as told
    board.write_text(
        '#!/bin/sh\nprintf "board:"; for arg in "$@"; do printf " [%s]" "$arg"; done\n'
        f"echo\nexit {status_exit}\n"
    )
    board.chmod(0o755)
    env = {"PATH": f"{fake}{os.pathsep}{os.environ['PATH']}", "HOME": str(tmp_path), **(extra_env or {})}
    # A default that is an expression (base: the pull request's base) is empty outside a pull request.
    defaults = {name: _literal(spec.get("default", "")) for name, spec in ACTION["inputs"].items()}
    for variable, expression in env_names.items():
        match = re.fullmatch(r"\$\{\{ inputs\.([a-z-]+) \}\}", expression)
        assert match, expression
        env[variable] = inputs.get(match[1], defaults[match[1]])
    return subprocess.run(
        ["bash", "-c", step["run"]], cwd=tmp_path, env=env, capture_output=True, text=True, check=False
    )


def test_inputs_become_flags_quoted_and_never_run(tmp_path: Path) -> None:
    assert _run_verify_step(tmp_path, {"route": "examples/gated-route"}) == [
        "--route",
        "examples/gated-route",
    ]
    hostile = "routes/a b; touch pwned $(touch pwned2) `touch pwned3`"
    argv = _run_verify_step(
        tmp_path,
        {
            "route": f"{hostile}\nroutes/second\n",
            "approvers": ".github/approvers file",
            "require-signed": "true",
            "allowed-signers": ".github/allowed signers",
            "allow-incomplete": "true",
            "junit": "reports/route verify.xml",
        },
    )
    assert argv == [
        "--route",
        hostile,
        "--route",
        "routes/second",
        "--approvers",
        ".github/approvers file",
        "--require-signed",
        "--allowed-signers",
        ".github/allowed signers",
        "--allow-incomplete",
        "--junit",
        "reports/route verify.xml",
    ]
    assert not list(tmp_path.glob("pwned*"))
    assert _run_verify_step(tmp_path, {"all": "true"}) == ["--all"]


def test_base_defaults_to_the_pull_requests_base_and_becomes_one_flag(tmp_path: Path) -> None:
    assert ACTION["inputs"]["base"]["default"] == "${{ github.event.pull_request.base.sha }}"
    base = "0123456789abcdef0123456789abcdef01234567"
    assert _run_verify_step(tmp_path, {"all": "true", "base": base}) == ["--all", "--base", base]
    hostile = "main; touch pwned $(touch pwned2)"
    assert _run_verify_step(tmp_path, {"base": hostile}) == ["--base", hostile]
    assert not list(tmp_path.glob("pwned*"))
    assert _run_verify_step(tmp_path, {"base": ""}) == []  # a push: no base, and route.verify says so


def test_the_step_summary_gets_the_board_of_the_same_routes_and_a_broken_board_never_decides(
    tmp_path: Path,
) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("earlier\n")
    env = {"GITHUB_STEP_SUMMARY": str(summary)}
    argv = _verify_step(tmp_path, {"route": "routes/a b\nroutes/c", "base": "abc123"}, env)
    assert argv.returncode == 0, argv.stderr
    assert summary.read_text() == "earlier\nboard: [--route] [routes/a b] [--route] [routes/c] [--markdown]\n"
    assert argv.stdout.splitlines()[:2] == ["--route", "routes/a b"]  # route.verify ran, after the board
    broken = _verify_step(tmp_path, {"all": "true"}, env, status_exit=1)
    assert broken.returncode == 0
    assert "::warning title=route.status::the board could not be drawn; route.verify decides" in broken.stdout
    assert broken.stdout.splitlines()[-1] == "--all"
    assert "--base" not in summary.read_text()  # the board takes only the routes


def test_true_false_inputs_read_in_any_case_and_anything_else_is_refused(tmp_path: Path) -> None:
    assert _run_verify_step(
        tmp_path, {"all": "True", "require-signed": "TRUE", "allow-incomplete": "False"}
    ) == [
        "--all",
        "--require-signed",
    ]
    # A typo must not quietly switch the signature check off: the step fails and names the input.
    done = _verify_step(tmp_path, {"all": "true", "require-signed": "yes"})
    assert done.returncode == 2
    assert done.stdout.splitlines() == [
        "::error title=route.verify::input require-signed must be true or false, not 'yes'"
    ]


def test_the_example_workflow_gates_pull_requests_with_full_history() -> None:
    triggers = EXAMPLE.get("on", EXAMPLE.get(True))  # PyYAML reads a bare `on:` key as True
    assert "pull_request" in triggers
    steps = [step for job in EXAMPLE["jobs"].values() for step in job["steps"]]
    checkout = next(step for step in steps if step.get("uses", "").startswith("actions/checkout@"))
    assert checkout["with"]["fetch-depth"] == 0
    gate = next(step for step in steps if step.get("name") == "route.verify")
    assert gate["uses"].endswith("/routedriver@v1")
    assert set(gate["with"]) <= set(ACTION["inputs"])  # only inputs the action declares
    assert gate["with"]["base"] == "${{ github.event.pull_request.base.sha }}"
    for step in steps:  # expressions reach scripts only through env
        assert "${{" not in step.get("run", ""), step.get("name")
