"""A newcomer's first pull request (issue 21 §3), walked the way the README tells it, and gated the way the
example workflow gates it: on the first try.

Real git repositories (a project with a bare "origin"), a real SSH signing key, the README's own commands
(its code blocks are run as written: the signing setup, the route's start, landing the gate on main), the
offline reviewer, a human approving at a pseudo-terminal, and then CI: a fresh clone with the pull
request's head checked out, the example workflow's steps run as GitHub runs them (its shell step with
``bash -e``, the action's own route.verify script with the workflow's inputs), the real route.verify."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import Ran, git
from tests.route.routes import run_as_human, write

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
WORKFLOW = ROOT / "examples" / "github" / "route-gate.yml"
ACTION = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
EMAIL = "human@example.com"  # the hermetic git identity's email (tests/conftest.py)
ROUTE = "routes/search"


def _code_block_after(marker: str) -> str:
    """The first fenced code block of the README after ``marker``, as written (its indentation removed)."""
    start = README.index(marker)
    found = re.search(r"```sh\n(.*?)\n\s*```", README[start:], re.S)
    assert found, f"no code block after {marker!r}"
    lines = found[1].splitlines()
    indent = min(len(line) - len(line.lstrip()) for line in lines if line.strip())
    return "\n".join(line[indent:] for line in lines) + "\n"


def _sh(script: str, cwd: Path, env: dict[str, str] | None = None) -> Ran:
    """A shell the way a person types the README's commands (and a GitHub run step: bash -e)."""
    done = subprocess.run(
        ["bash", "-e", "-o", "pipefail", "-c", script],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=300,
        check=False,
    )
    return Ran(done.returncode, done.stdout, done.stderr)


def _run(argv: list[str], cwd: Path) -> Ran:
    done = subprocess.run(
        argv, cwd=cwd, capture_output=True, text=True, timeout=300, check=False, stdin=subprocess.DEVNULL
    )
    return Ran(done.returncode, done.stdout, done.stderr)


def _set(repo: Path, stone: str) -> Ran:
    return _run(["route.stone.set", "--stone", stone, "--as", "passed"], repo)


def _approve(repo: Path, stone: str) -> None:
    done = run_as_human(["route.stone.set", "--stone", stone, "--as", "approved"], repo)
    assert done.code == 0, done.err
    assert "committed " in done.out


def _expression(text: str, values: dict[str, str]) -> str:
    """A workflow value with its ``${{ … }}`` expressions filled in; one this test does not know fails it."""

    def fill(match: re.Match[str]) -> str:
        assert match[1] in values, f"the workflow uses ${{{{ {match[1]} }}}}; teach this test its value"
        return values[match[1]]

    return re.sub(r"\$\{\{\s*([^}]+?)\s*\}\}", fill, text)


def _run_example_workflow(checkout: Path, values: dict[str, str], runner_temp: Path) -> Ran:
    """The example workflow's job after actions/checkout: each ``run`` step with ``bash -e`` and its env, and
    the routedriver action's route.verify step with the workflow's ``with:`` inputs (the action's defaults
    for the rest), as GitHub runs them. Returns what route.verify said."""
    workflow: dict[str, Any] = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    steps = [step for job in workflow["jobs"].values() for step in job["steps"]]
    verified: Ran | None = None
    for step in steps:
        uses = step.get("uses", "")
        if "run" in step:
            env = {name: _expression(str(value), values) for name, value in step.get("env", {}).items()}
            done = _sh(step["run"], checkout, {**env, "RUNNER_TEMP": str(runner_temp)})
            assert done.code == 0, f"step {step.get('name')!r} failed: {done.err}"
        elif uses.endswith("/routedriver@v1"):
            inputs = {name: _expression(str(value), values) for name, value in step["with"].items()}
            verified = _action_verify(checkout, inputs)
        else:
            assert uses.startswith(("actions/checkout@", "actions/upload-artifact@")), uses
    assert verified is not None, "the example workflow has no routedriver step"
    return verified


def _action_verify(checkout: Path, inputs: dict[str, str]) -> Ran:
    step = next(step for step in ACTION["runs"]["steps"] if step.get("name") == "route.verify")
    env: dict[str, str] = {}
    for variable, expression in step["env"].items():
        name = re.fullmatch(r"\$\{\{ inputs\.([a-z-]+) \}\}", expression)
        assert name, expression
        default = str(ACTION["inputs"][name[1]].get("default", ""))
        env[variable] = inputs.get(name[1], "" if "${{" in default else default)
    return _sh(step["run"], checkout, env)


def _project(tmp_path: Path) -> tuple[Path, Path]:
    """A small Python project on main, pushed to a bare "origin" (where it came from)."""
    origin, repo = tmp_path / "origin.git", tmp_path / "project"
    repo.mkdir()
    git(repo, "init", "-q")
    write(repo / "README.md", "# search\n")
    write(repo / "src" / "search.py", "def search(items, word):\n    return []\n")
    write(repo / ".gitignore", "__pycache__/\n.pytest_cache/\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "the project")
    git(tmp_path, "init", "-q", "--bare", str(origin))
    git(repo, "remote", "add", "origin", str(origin))
    git(repo, "push", "-q", "origin", "main")
    return repo, origin


SPEC = """# Spec: search

## Users
People with a list of notes who look for one.

## Problem
They scroll.

## Change
`search(items, word)` returns the items that contain the word.

## Out of scope
Ranking.

## Acceptance criteria
1. `search(["a cat", "a dog"], "cat")` returns `["a cat"]`.
"""
PLAN = """# Plan

## Steps
1. `src/search.py`: filter the items by the word; `pytest -q` shows it.

## Tests
`tests/test_search.py` proves criterion 1.

## Risks
Case: "Cat" and "cat" differ; the spec does not ask for more.
"""
IMPL = "# Impl\n\n## Changed\n- src/search.py: the filter\n\n## Deviations\nnone\n"
SHIP = "Search your notes for a word.\n\n## How to try it\n`search(notes, 'cat')`\n"
CODE = "def search(items, word):\n    return [item for item in items if word in item]\n"
TEST = """import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from search import search


def test_criterion_1():
    assert search(["a cat", "a dog"], "cat") == ["a cat"]
"""


def test_the_readme_path_passes_the_example_workflow_on_the_first_try(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A newcomer's machine: an SSH key in ~/.ssh, and Python writing __pycache__ as it does by default.
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    key = home / ".ssh" / "id_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", EMAIL, "-f", str(key)], check=True)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("PYTHONDONTWRITEBYTECODE", raising=False)
    repo, origin = _project(tmp_path)

    # README step 2 and the first-pull-request checklist, on main: approvers, signing, the workflow, landed.
    approvers = _run(["route.init", "--approver-me"], repo)
    assert approvers.code == 0, approvers.err
    assert (repo / ".route-approvers").read_text().splitlines()[-1] == EMAIL
    signing = _sh(_code_block_after("2. **Signing, on `main`:**"), repo)
    assert signing.code == 0, signing.err
    assert git(repo, "config", "commit.gpgsign").strip() == "true"
    signers = (repo / ".github" / "allowed_signers").read_text()
    assert signers.startswith(f'{EMAIL} namespaces="git" ssh-ed25519 ')
    (repo / ".github" / "workflows").mkdir()
    shutil.copy(WORKFLOW, repo / ".github" / "workflows" / "route-gate.yml")
    land = re.search(r"\*\*Land them:\*\* `([^`]+)`", README)
    assert land, "the checklist's 'Land them' command"
    landed = _sh(land[1], repo)
    assert landed.code == 0, landed.err

    # README step 3: the route on a work branch, bound, with the Claude Code hooks; the offline reviewer.
    started = _sh(_code_block_after("3. **Start a route**"), repo)
    assert started.code == 0, started.err
    assert started.out.rstrip().endswith("ok")  # route.lint
    for guard in (repo / ROUTE).glob("*.guard"):
        guard.write_text(guard.read_text().replace("--atom claude", "--atom scripted"), encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "search: the route")

    # The robot loop, and a human at a terminal for the two gates.
    write(repo / ROUTE / "1.spec.md", SPEC)
    assert _set(repo, "1.spec").code == 0
    write(repo / ROUTE / "2.plan.md", PLAN)
    waiting = _set(repo, "2.plan")
    assert (waiting.code, waiting.err) == (
        2,
        f"error: 2.plan: wait for human approval; who may approve: {EMAIL} (.route-approvers); a human runs, "
        "at a terminal: route.stone.set --route routes/search --stone 2.plan --as approved\n",
    )
    _approve(repo, "2.plan")
    assert _set(repo, "2.plan").code == 0
    write(repo / "src" / "search.py", CODE)
    write(repo / ROUTE / "3.1.impl.md", IMPL)
    assert _set(repo, "3.1.impl").code == 0
    write(repo / "tests" / "test_search.py", TEST)
    assert _run(["pytest", "-q"], repo).code == 0  # as the stone says; it leaves __pycache__ behind
    assert list((repo / "src").glob("__pycache__/*.pyc"))
    write(repo / ROUTE / "3.2.tests.md", "# Tests\n\n| criterion | test |\n|---|---|\n| 1 | criterion_1 |\n")
    assert _set(repo, "3.2.tests").code == 0
    write(repo / ROUTE / "4.ship.md", SHIP)
    assert _set(repo, "4.ship").code == 2
    _approve(repo, "4.ship")
    assert _set(repo, "4.ship").code == 0
    assert _run(["route.stone.get", "--stone", "@next-one"], repo).out == "all stones passed\n"

    # README step 6: before the commit the local gate says what CI would; after it, ok.
    local = _run(["route.verify"], repo)
    assert local.code == 2
    assert "uncommitted routes/search/1.spec: passed here, but not committed:" in local.out
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "search: the route's work")
    assert _run(["route.verify"], repo).code == 0
    # Checklist step 6: as CI will check it, then push.
    signed = ["--require-signed", "--allowed-signers", ".github/allowed_signers"]
    as_ci = _run(["route.verify", "--all", "--base", "main", *signed], repo)
    assert as_ci.code == 0, as_ci.out + as_ci.err
    git(repo, "push", "-q", "origin", "feature/search")

    # CI: actions/checkout with fetch-depth 0 (a full clone, the pull request's head), then the job's steps.
    checkout = tmp_path / "ci"
    git(tmp_path, "clone", "-q", str(origin), str(checkout))
    git(checkout, "checkout", "-q", "--detach", "origin/feature/search")
    assert not list(checkout.rglob("__pycache__"))  # a fresh clone: only what was committed
    runner_temp = tmp_path / "runner-temp"
    runner_temp.mkdir()
    values = {
        "github.base_ref": "main",
        "github.event.pull_request.base.sha": git(checkout, "rev-parse", "origin/main").strip(),
        "runner.temp": str(runner_temp),
    }
    gate = _run_example_workflow(checkout, values, runner_temp)
    assert gate.code == 0, gate.out + gate.err
    assert gate.out.splitlines()[-1] == "route.verify ok: 5 stones (5 passed)"
    for stone in ("1.spec", "2.plan", "3.1.impl", "3.2.tests", "4.ship"):
        assert f"passed     {ROUTE}/{stone}: passed and fresh" in gate.out
    assert "notice: policy: route routes/search added since " in gate.err  # compared with the base
    assert (checkout / "route-verify.xml").is_file()  # the junit report the workflow keeps
