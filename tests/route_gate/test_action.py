"""The reusable action: a composite that installs routedriver from its own files outside the checkout and runs
route.verify, with every input passed through the environment and quoted (never spliced into a script).

The steps run in a simulated runner (``actionsim``: GitHub's contexts, ``bash -eo pipefail``, step outputs,
setup-python stood in for) against real git repositories. The checkout is the pull request's, so the
adversary here writes files into it: a ``pip/`` package, ``sitecustomize.py``, a ``.python-version``, a
``git`` on a PATH entry that points into it, an edited ``.route-approvers``, routes named to speak for the
gate in the log. None of it may change what runs or what decides.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from routedriver.route import shown
from tests.conftest import git
from tests.route_gate import actionsim, workflow_commands
from tests.route_gate.actionsim import ActionRun

ROOT = Path(__file__).resolve().parents[2]
ACTION = actionsim.load(ROOT / "action.yml")
EXAMPLE = actionsim.load(ROOT / "examples" / "github" / "route-gate.yml")
RECHECK_EXAMPLE = actionsim.load(ROOT / "examples" / "github" / "route-recheck.yml")
CI = actionsim.load(ROOT / ".github" / "workflows" / "ci.yml")
RUNNER_PATH = "/usr/local/bin:/usr/bin:/bin"  # a job's PATH: the runner's programs, nothing of the checkout
INSTALL = ("Check the Python version", "Set up Python", "Install routedriver outside the checkout")
VERIFY = ("route.verify",)
SHA = re.compile(r"[0-9a-f]{40}")


def _steps() -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = ACTION["runs"]["steps"]
    return steps


@pytest.fixture(scope="session")
def standin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return actionsim.standin_wheel(tmp_path_factory.mktemp("standin"))


@pytest.fixture(scope="session")
def tool_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("hostedtoolcache") / "Python"


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory, standin: Path, tool_cache: Path) -> ActionRun:
    """The action's setup and install steps, run for real once, in a workspace with nothing in it."""
    work = tmp_path_factory.mktemp("installed")
    (work / "ws").mkdir()
    run = actionsim.run_action(
        ACTION,
        workspace=work / "ws",
        temp=work / "temp",
        source=standin,
        tool_cache=tool_cache,
        path=RUNNER_PATH,
        only=INSTALL,
    )
    assert run.ok, run.steps
    return run


def _bin(installed: ActionRun) -> str:
    return installed.step(INSTALL[-1]).outputs["bin"]


def _verify_step(
    installed: ActionRun,
    standin: Path,
    tool_cache: Path,
    workspace: Path,
    inputs: dict[str, str],
    *,
    base: str = "",
    env: dict[str, str] | None = None,
    path: str = RUNNER_PATH,
) -> ActionRun:
    """Only the route.verify step, with the virtualenv the install step made."""
    return actionsim.run_action(
        ACTION,
        workspace=workspace,
        temp=workspace.parent / "temp",
        source=standin,
        tool_cache=tool_cache,
        inputs=inputs,
        base_sha=base,
        path=path,
        env=env,
        only=VERIFY,
        outputs={"install": {"bin": _bin(installed)}},
    )


def _argv(run: ActionRun) -> list[str]:
    (record,) = run.records("route.verify")
    argv: list[str] = record["argv"]
    return argv


def _ours(run: ActionRun) -> list[str]:
    """The action's own workflow commands (``::<level> title=route.verify::…``) in the step's output."""
    lines = run.output.splitlines()
    return [line for line in lines if line.startswith("::") and "title=route.verify::" in line]


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _pull_request(
    tmp_path: Path, base_files: dict[str, str], head_files: dict[str, str | None]
) -> tuple[Path, str]:
    """A workspace checked out at a pull request's head: the base commit has ``base_files``; the head
    commit writes (or, for None, deletes) ``head_files``. Returns the workspace and the base's sha."""
    repo = tmp_path / "ws"
    repo.mkdir(parents=True)
    git(repo, "init", "-q")
    _write(repo / "routes" / "demo" / "1.a.stone", "Do it.\n")
    for name, text in base_files.items():
        _write(repo / name, text)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    base = git(repo, "rev-parse", "HEAD").strip()
    for name, change in head_files.items():
        if change is None:
            (repo / name).unlink()
        else:
            _write(repo / name, change)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", "the pull request")
    return repo, base


# ------------------------------------------------------------------ the action's shape


def test_it_is_a_composite_with_the_contract_inputs() -> None:
    assert ACTION["runs"]["using"] == "composite"
    assert {"route", "all", "approvers", "require-signed", "allow-incomplete", "python-version"} <= set(
        ACTION["inputs"]
    )
    (setup,) = [step for step in _steps() if "uses" in step]
    owner, _, ref = setup["uses"].partition("@")
    assert owner == "actions/setup-python" and SHA.fullmatch(ref), "setup-python is pinned by commit"
    assert re.search(rf"actions/setup-python@{ref} # v5\.\d+\.\d+\n", (ROOT / "action.yml").read_text())
    # The job's PATH and environment stay the caller's.
    assert str(setup["with"]["update-environment"]).lower() == "false"
    install = next(step for step in _steps() if step.get("name") == INSTALL[-1])
    assert install["env"]["ROUTEDRIVER_SOURCE"] == "${{ github.action_path }}"
    assert '"$ROUTEDRIVER_SOURCE"' in install["run"] and "-I -m pip install" in install["run"]


def test_no_expression_is_ever_interpolated_into_a_script() -> None:
    for step in _steps():
        assert "${{" not in step.get("run", ""), step.get("name")
        assert "run" not in step or step["shell"] == "bash"  # composite run steps must name their shell


# ------------------------------------------------------------------ nothing of the checkout runs


def _hostile_checkout(workspace: Path, markers: Path) -> None:
    """Every file a pull request could add to make a careless action run its code, each leaving a marker
    in ``markers`` if it ever runs (or is read)."""

    def mark(name: str) -> str:
        return f"open({str(markers / name)!r}, 'w').close()\n"

    # `python -m pip` with the checkout as the working directory imports this pip, which then puts a
    # route.verify that always passes next to the interpreter (on the job's PATH).
    _write(workspace / "pip" / "__init__.py", mark("pip"))
    _write(
        workspace / "pip" / "__main__.py",
        "import os, sys\n"
        + mark("pip-main")
        + "fake = os.path.join(os.path.dirname(sys.executable), 'route.verify')\n"
        "open(fake, 'w').write('#!/bin/sh\\necho route.verify ok\\n')\n"
        "os.chmod(fake, 0o755)\n",
    )
    for module in ("sitecustomize", "usercustomize", "routedriver_standin", "json", "shutil"):
        _write(workspace / f"{module}.py", mark(module))
    _write(workspace / "evil.pth", "import os; " + mark("pth").replace("\n", ""))
    # pip reads no configuration from the working directory; if it did, this would send the install away.
    hijacked = workspace.parent / "hijacked"
    for config in ("pip.conf", "pip.ini"):
        _write(workspace / config, f"[global]\nno-index = true\n[install]\ntarget = {hijacked}\n")
    _write(workspace / "setup.cfg", f"[install]\nprefix = {hijacked}\n")
    _write(workspace / "pyproject.toml", '[build-system]\nrequires = ["evil"]\n')
    _write(workspace / ".python-version", "2.7\n")
    for program in ("git", "python", "python3", "mktemp", "route.verify", "route.status", "cmp", "grep"):
        for where in ("bin", "tools"):
            script = _write(workspace / where / program, f"#!/bin/sh\ntouch {markers / program}\nexit 0\n")
            script.chmod(0o755)


def test_a_hostile_checkout_changes_nothing_that_runs(
    tmp_path: Path, standin: Path, tool_cache: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    git(workspace, "init", "-q")
    _write(workspace / "routes" / "demo" / "1.a.stone", "Do it.\n")
    markers = tmp_path / "markers"
    markers.mkdir()
    _hostile_checkout(workspace, markers)
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "-m", "a pull request")
    # PATH entries that name the checkout: relative ones (the working directory) and the workspace's own.
    path = f"bin::tools:{workspace / 'bin'}:{RUNNER_PATH}"
    run = actionsim.run_action(
        ACTION,
        workspace=workspace,
        temp=tmp_path / "temp",
        source=standin,
        tool_cache=tool_cache,
        inputs={"route": "routes/demo"},
        path=path,
        env={"GITHUB_STEP_SUMMARY": str(tmp_path / "summary.md")},
    )
    assert sorted(marker.name for marker in markers.iterdir()) == []
    assert not (tmp_path / "hijacked").exists()
    assert run.ok, run.steps
    verify, status = run.records("route.verify"), run.records("route.status")
    assert len(verify) == 1 and len(status) == 1
    for record in (*verify, *status):
        # The virtualenv under $RUNNER_TEMP, isolated: no working directory, user site or PYTHON* on sys.path.
        assert Path(record["prefix"]).parent == tmp_path / "temp"
        assert (record["isolated"], record["safe_path"], record["no_user_site"]) == (1, True, 1)
        assert record["cwd"] == str(workspace)
        assert not [entry for entry in record["sys_path"] if entry in ("", ".") or str(workspace) in entry]
        assert record["git"] == shutil.which("git", path=RUNNER_PATH)
        assert str(workspace) not in record["PATH"] and "::" not in record["PATH"]
        assert all(entry.startswith("/") for entry in record["PATH"].split(":"))
        assert record["customize"] == {} or str(workspace) not in str(record["customize"])
    assert verify[0]["argv"] == ["--route", "routes/demo"]


def test_the_python_never_comes_from_the_checkout_and_the_job_is_left_as_it_was(
    tmp_path: Path, standin: Path, tool_cache: Path, installed: ActionRun
) -> None:
    # Left to itself, setup-python reads the checkout's .python-version: the pull request would choose.
    workspace = tmp_path / "ws"
    _write(workspace / ".python-version", "2.7\n")
    run = actionsim.run_action(
        ACTION,
        workspace=workspace,
        temp=tmp_path / "temp",
        source=standin,
        tool_cache=tool_cache,
        inputs={"python-version": ""},
        path=RUNNER_PATH,
    )
    assert not run.python_version_file_read
    assert [(step.name, step.code) for step in run.steps] == [("Check the Python version", 2)]
    assert run.steps[0].stdout == (
        "::error title=route.verify::input python-version must name a Python (3.11 or later)\n"
    )
    # The default run put nothing on the job's PATH or in its environment for the steps after it.
    assert (installed.job_path, installed.job_env) == ([], {})
    assert not installed.python_version_file_read


# ------------------------------------------------------------------ inputs become flags


def test_inputs_become_flags_quoted_and_never_run(
    tmp_path: Path, standin: Path, tool_cache: Path, installed: ActionRun
) -> None:
    workspace, _base = _pull_request(tmp_path, {}, {})

    def argv(inputs: dict[str, str]) -> list[str]:
        run = _verify_step(installed, standin, tool_cache, workspace, inputs)
        assert run.ok, run.steps
        return _argv(run)

    assert argv({"route": "routes/demo"}) == ["--route", "routes/demo"]
    hostile = "routes/a b; touch pwned $(touch pwned2) `touch pwned3`"
    # No base (a push): repository paths are the checkout's, named from its top level.
    assert argv(
        {
            "route": f"{hostile}\nroutes/second\n",
            "approvers": ".github/approvers file",
            "require-signed": "true",
            "allowed-signers": ".github/allowed signers",
            "allow-incomplete": "true",
            "junit": "reports/route verify.xml",
        }
    ) == [
        "--route",
        hostile,
        "--route",
        "routes/second",
        "--approvers",
        f"{workspace}/.github/approvers file",
        "--require-signed",
        "--allowed-signers",
        f"{workspace}/.github/allowed signers",
        "--allow-incomplete",
        "--junit",
        "reports/route verify.xml",
    ]
    assert not list(workspace.glob("pwned*")) and not list(tmp_path.glob("pwned*"))
    assert argv({"all": "true"}) == ["--all"]


def test_base_defaults_to_the_pull_requests_base_and_becomes_one_flag(
    tmp_path: Path, standin: Path, tool_cache: Path, installed: ActionRun
) -> None:
    assert ACTION["inputs"]["base"]["default"] == "${{ github.event.pull_request.base.sha }}"
    workspace, base = _pull_request(tmp_path, {}, {})
    run = _verify_step(installed, standin, tool_cache, workspace, {"all": "true"}, base=base)
    assert run.ok, run.steps
    assert _argv(run) == ["--all", "--base", base]
    for hostile in ("main; touch pwned $(touch pwned2)", "--output=/tmp/x"):
        refused = _verify_step(installed, standin, tool_cache, workspace, {"base": hostile})
        assert not refused.ok and refused.records("route.verify") == []
    assert not list(workspace.glob("pwned*"))
    push = _verify_step(installed, standin, tool_cache, workspace, {"base": ""})
    assert push.ok and _argv(push) == []  # a push: no base, and route.verify says so
    assert _ours(push) == [
        "::notice title=route.verify::no base commit (a push): who may approve and their keys are read "
        "from the checkout"
    ]


def test_the_step_summary_gets_the_board_of_the_same_routes_and_a_broken_board_never_decides(
    tmp_path: Path, standin: Path, tool_cache: Path, installed: ActionRun
) -> None:
    workspace, base = _pull_request(tmp_path, {}, {})
    summary = _write(tmp_path / "summary.md", "earlier\n")
    env = {"GITHUB_STEP_SUMMARY": str(summary)}
    run = _verify_step(
        installed, standin, tool_cache, workspace, {"route": "routes/a b\nroutes/c"}, base=base, env=env
    )
    assert run.ok, run.steps
    (board,) = run.records("route.status")
    assert board["argv"] == ["--route", "routes/a b", "--route", "routes/c", "--markdown"]
    assert summary.read_text() == "earlier\n--route\nroutes/a b\n--route\nroutes/c\n--markdown\n"
    assert _argv(run)[:2] == ["--route", "routes/a b"]  # route.verify ran, after the board
    assert [record["command"] for record in run.log] == ["route.status", "route.verify"]


def test_a_board_that_cannot_be_drawn_never_decides(
    tmp_path: Path, standin: Path, tool_cache: Path, installed: ActionRun
) -> None:
    workspace, _base = _pull_request(tmp_path, {}, {})
    env = {"GITHUB_STEP_SUMMARY": str(tmp_path / "no such directory" / "summary.md")}
    run = _verify_step(installed, standin, tool_cache, workspace, {"all": "true"}, env=env)
    assert run.ok
    assert "::warning title=route.verify::the board could not be drawn; route.verify decides" in _ours(run)
    assert _argv(run) == ["--all"]


def test_true_false_inputs_read_in_any_case_and_anything_else_is_refused(
    tmp_path: Path, standin: Path, tool_cache: Path, installed: ActionRun
) -> None:
    workspace, _base = _pull_request(tmp_path, {}, {})
    run = _verify_step(
        installed,
        standin,
        tool_cache,
        workspace,
        {"all": "True", "require-signed": "TRUE", "allow-incomplete": "False"},
    )
    assert _argv(run) == ["--all", "--require-signed"]
    # A typo must not quietly switch the signature check off: the step fails, naming the input, before
    # anything runs.
    done = _verify_step(installed, standin, tool_cache, workspace, {"all": "true", "require-signed": "yes"})
    assert done.steps[0].code == 2 and done.log == []
    assert done.steps[0].stdout.splitlines() == [
        "::error title=route.verify::input require-signed must be true or false, not 'yes'"
    ]


def test_require_bound_is_off_by_default_and_needs_a_base(
    tmp_path: Path, standin: Path, tool_cache: Path, installed: ActionRun
) -> None:
    assert ACTION["inputs"]["require-bound"]["default"] == "false"
    workspace, base = _pull_request(tmp_path, {}, {})
    run = _verify_step(installed, standin, tool_cache, workspace, {"require-bound": "True"}, base=base)
    assert _argv(run) == ["--base", base, "--require-bound"]
    for inputs, message, given in (
        ({"require-bound": "yes"}, "input require-bound must be true or false, not 'yes'", base),
        (
            {"require-bound": "true"},
            "input require-bound needs a base commit (a pull request's): what it changes is counted from it",
            "",
        ),
    ):
        refused = _verify_step(installed, standin, tool_cache, workspace, inputs, base=given)
        assert refused.steps[0].code == 2 and refused.log == []
        assert _ours(refused) == [f"::error title=route.verify::{message}"]


def test_recheck_is_off_by_default_and_on_writes_outside_the_checkout_within_a_bound(
    tmp_path: Path, standin: Path, tool_cache: Path, installed: ActionRun
) -> None:
    assert ACTION["inputs"]["recheck"]["default"] == "false"
    assert ACTION["outputs"]["recheck-dir"]["value"] == "${{ steps.verify.outputs.recheck-dir }}"
    workspace, base = _pull_request(tmp_path, {}, {})
    run = _verify_step(installed, standin, tool_cache, workspace, {"all": "true"}, base=base)
    assert _argv(run) == ["--all", "--base", base] and "recheck-dir" not in run.step("route.verify").outputs
    run = _verify_step(
        installed, standin, tool_cache, workspace, {"all": "True", "recheck": "TRUE"}, base=base
    )
    assert run.ok, run.steps
    argv = _argv(run)
    assert argv[:3] == ["--all", "--base", base]
    assert argv[3:5] == ["--recheck", "--recheck-dir"]
    assert argv[6:] == ["--recheck-sandbox", "auto", "--recheck-max", "50"]
    outputs = Path(argv[5])
    # A new, empty directory under $RUNNER_TEMP, outside the checkout; the step says where (for the upload).
    assert outputs.parent == workspace.parent / "temp" and outputs.is_dir() and not any(outputs.iterdir())
    assert run.step("route.verify").outputs["recheck-dir"] == str(outputs)
    unbounded = _verify_step(
        installed, standin, tool_cache, workspace, {"recheck": "true", "recheck-max": ""}, base=base
    )
    assert "--recheck-max" not in _argv(unbounded)
    jailed = _verify_step(
        installed, standin, tool_cache, workspace, {"recheck": "true", "recheck-sandbox": "on"}, base=base
    )
    assert _argv(jailed)[5:7] == ["--recheck-sandbox", "on"]
    # A typo in the bound, or recheck on a push (no base to hold passes), fails the step before anything runs.
    for inputs, message in (
        (
            {"recheck": "true", "recheck-max": "20; touch pwned"},
            "input recheck-max must be a whole number (or empty for no limit), not '20; touch pwned'",
        ),
        (
            {"recheck": "yes"},
            "input recheck must be true or false, not 'yes'",
        ),
        (
            {"recheck": "true", "recheck-sandbox": "maybe; touch pwned"},
            "input recheck-sandbox must be on, off or auto, not 'maybe; touch pwned'",
        ),
    ):
        refused = _verify_step(installed, standin, tool_cache, workspace, inputs, base=base)
        assert refused.steps[0].code == 2 and refused.log == []
        assert _ours(refused) == [f"::error title=route.verify::{message}"]
    push = _verify_step(installed, standin, tool_cache, workspace, {"recheck": "true"}, base="")
    assert push.steps[0].code == 2 and push.log == []
    assert _ours(push) == [
        "::error title=route.verify::input recheck needs a base commit (a pull request's): a pass the base "
        "holds is not run again"
    ]
    assert not list(workspace.glob("pwned*"))


# ------------------------------------------------------------------ who may approve comes from the base

ADA = "ada@example.com\n"
WITH_ROBOT = "ada@example.com\nrobot@example.com\n"

# (what the base has, what the pull request changes, the inputs, the --approvers content route.verify
#  gets (None: no flag, its usual lookup) and the --allowed-signers content, or the error the step fails with)
FROM_BASE: list[tuple[str, dict[str, str], dict[str, str | None], dict[str, str], str | None, str | None]] = [
    # Without the approvers input no --approvers is given: route.verify --base reads who may approve from
    # the base itself (tests/acceptance/test_gate_policy.py proves it on real approvals).
    (
        "the pull request lists its own author in .route-approvers",
        {".route-approvers": ADA},
        {".route-approvers": WITH_ROBOT},
        {"all": "true"},
        None,
        None,
    ),
    (
        "the pull request adds a .route-approvers the base does not have",
        {},
        {".route-approvers": WITH_ROBOT},
        {"all": "true"},
        None,
        None,
    ),
    (
        "a repository path given as the approvers input, edited by the pull request",
        {".github/approvers": ADA},
        {".github/approvers": WITH_ROBOT},
        {"approvers": ".github/approvers"},
        ADA,
        None,
    ),
    (
        "the allowed signers, edited by the pull request to hold the robot's key",
        {".github/allowed_signers": "ada@example.com ssh-ed25519 AAAA-ada\n"},
        {".github/allowed_signers": "robot@example.com ssh-ed25519 AAAA-robot\n"},
        {"allowed-signers": "./.github/allowed_signers", "require-signed": "true"},
        None,
        "ada@example.com ssh-ed25519 AAAA-ada\n",
    ),
]


@pytest.mark.parametrize(
    ("base_files", "head_files", "inputs", "approvers", "signers"),
    [case[1:] for case in FROM_BASE],
    ids=[case[0] for case in FROM_BASE],
)
def test_who_may_approve_and_their_keys_come_from_the_base(
    tmp_path: Path,
    standin: Path,
    tool_cache: Path,
    installed: ActionRun,
    base_files: dict[str, str],
    head_files: dict[str, str | None],
    inputs: dict[str, str],
    approvers: str | None,
    signers: str | None,
) -> None:
    workspace, base = _pull_request(tmp_path, base_files, head_files)
    run = _verify_step(installed, standin, tool_cache, workspace, inputs, base=base)
    assert run.ok, run.steps
    (record,) = run.records("route.verify")
    assert record["files"].get("--approvers") == approvers
    assert record["files"].get("--allowed-signers") == signers
    for flag in ("--approvers", "--allowed-signers"):
        if flag in record["argv"]:  # a file of ours, outside the checkout
            given = Path(record["argv"][record["argv"].index(flag) + 1])
            assert given.parent.parent == tmp_path / "temp"
    assert record["argv"][record["argv"].index("--base") + 1] == base


def test_a_replace_ref_does_not_stand_in_for_the_bases_signers(
    tmp_path: Path, standin: Path, tool_cache: Path, installed: ActionRun
) -> None:
    """refs/replace/<base> (a robot can push one; a checkout that fetches every ref takes it) makes git show
    another commit for the base: the step reads the base's files as they are."""
    ada, robot = "ada@example.com ssh-ed25519 AAAA-ada\n", "ada@example.com ssh-ed25519 AAAA-robot\n"
    workspace, base = _pull_request(tmp_path, {".github/allowed_signers": ada}, {})
    _write(workspace / ".github" / "allowed_signers", robot)
    git(workspace, "add", "-A")
    tree = git(workspace, "write-tree").strip()
    fake = git(workspace, "commit-tree", tree, "-m", "the base, as the robot would have it").strip()
    git(workspace, "reset", "-q", "--hard")
    git(workspace, "replace", base, fake)
    assert git(workspace, "show", f"{base}:.github/allowed_signers") == robot  # git itself is fooled
    inputs = {"allowed-signers": ".github/allowed_signers", "require-signed": "true"}
    run = _verify_step(installed, standin, tool_cache, workspace, inputs, base=base)
    assert run.ok, run.steps
    (record,) = run.records("route.verify")
    assert record["files"].get("--allowed-signers") == ada


# (what the base has, what the pull request changes, the inputs, the error the step fails with)
REFUSED: list[tuple[str, dict[str, str], dict[str, str | None], dict[str, str], str]] = [
    (
        "an absolute path into the checkout",
        {".route-approvers": ADA},
        {},
        {"approvers": "{workspace}/.route-approvers"},
        "input approvers: {workspace}/.route-approvers is in the checkout, which the pull request writes",
    ),
    (
        "a repository path the base does not have",
        {},
        {".github/approvers": WITH_ROBOT},
        {"approvers": ".github/approvers"},
        "input approvers: the base ({short}) has no file .github/approvers",
    ),
    (
        "a base the checkout does not hold",
        {},
        {},
        {"base": "0123456789abcdef0123456789abcdef01234567"},
        "base 0123456789abcdef0123456789abcdef01234567: git cannot find that commit here",
    ),
]


@pytest.mark.parametrize(
    ("base_files", "head_files", "inputs", "error"),
    [case[1:] for case in REFUSED],
    ids=[case[0] for case in REFUSED],
)
def test_what_cannot_be_read_from_the_base_fails_the_step(
    tmp_path: Path,
    standin: Path,
    tool_cache: Path,
    installed: ActionRun,
    base_files: dict[str, str],
    head_files: dict[str, str | None],
    inputs: dict[str, str],
    error: str,
) -> None:
    workspace, base = _pull_request(tmp_path, base_files, head_files)
    short = git(workspace, "rev-parse", "--short=12", base).strip()
    filled = {name: value.format(workspace=workspace) for name, value in inputs.items()}
    run = _verify_step(installed, standin, tool_cache, workspace, {"base": base, **filled})
    assert run.steps[0].code == 2 and run.records("route.verify") == []
    (line,) = _ours(run)
    assert line.startswith("::error title=route.verify::" + error.format(workspace=workspace, short=short))


def test_an_unchanged_approvers_file_keeps_route_verifys_own_lookup(
    tmp_path: Path, standin: Path, tool_cache: Path, installed: ActionRun
) -> None:
    """The legitimate flow: the base's files are the checkout's, so route.verify reads them as usual (a
    route's own approvers file too, which --base compares with the base)."""
    base_files = {".route-approvers": ADA, "routes/demo/.route/approvers": ADA}
    workspace, base = _pull_request(tmp_path, base_files, {"routes/demo/1.a.md": "done\n"})
    run = _verify_step(installed, standin, tool_cache, workspace, {"all": "true"}, base=base)
    assert run.ok and _argv(run) == ["--all", "--base", base] and _ours(run) == []
    nothing, nothing_base = _pull_request(tmp_path / "none", {}, {})
    run = _verify_step(installed, standin, tool_cache, nothing, {"all": "true"}, base=nothing_base)
    assert run.ok and _argv(run) == ["--all", "--base", nothing_base]


def test_a_file_made_outside_the_checkout_is_used_as_given(
    tmp_path: Path, standin: Path, tool_cache: Path, installed: ActionRun
) -> None:
    workspace, base = _pull_request(tmp_path, {".route-approvers": ADA}, {".route-approvers": WITH_ROBOT})
    made = _write(tmp_path / "temp" / "route-approvers", "grace@example.com\n")
    run = _verify_step(installed, standin, tool_cache, workspace, {"approvers": str(made)}, base=base)
    assert run.ok
    (record,) = run.records("route.verify")
    assert record["files"]["--approvers"] == "grace@example.com\n"


# ------------------------------------------------------------------ no line of the log is the repository's

HOSTILE_ROUTES = [
    "routes/x\n::notice::pwned",
    "routes/y\r::warning::pwned",
    "routes/::stop-commands::token",
    "routes/##[error]boom",
    "routes/%0A::error::z",
    "routes/w\u2028::error::u",
]


def test_hostile_route_names_never_speak_for_the_gate_in_the_log(
    tmp_path: Path, standin: Path, tool_cache: Path, installed: ActionRun
) -> None:
    workspace, base = _pull_request(tmp_path, {}, {})
    for name in HOSTILE_ROUTES:
        _write(workspace / name / "1.a.stone", "Do it.\n")
    git(workspace, "add", "-A")
    git(workspace, "commit", "-q", "-m", "hostile routes")
    summary = tmp_path / "summary.md"
    # The real route.verify and route.status, behind the installed stand-ins.
    env = {"ROUTEDRIVER_STANDIN_REAL": "1", "GITHUB_STEP_SUMMARY": str(summary)}
    inputs = {"all": "true", "allow-incomplete": "true"}
    # This checkout's commands are on the job's PATH too, where a setup-python that installed them puts them.
    path = f"{actionsim.REAL_BIN}:{RUNNER_PATH}"
    run = _verify_step(installed, standin, tool_cache, workspace, inputs, env=env, path=path)
    found = workflow_commands.commands(run.output)
    assert {command.name for command in found} <= {"error", "notice", "warning"}
    for command in found:
        # Each command is one the gate sends: the action's own, or route.verify's annotation of a stone.
        title = command.properties.get("title", "")
        assert title == "route.verify" or title.startswith("route.verify "), command
    broken = {command.properties["file"]: command for command in found if "file" in command.properties}
    for name in HOSTILE_ROUTES:
        if name.isprintable():
            # Incomplete, and allowed: no annotation.
            assert not [file for file in broken if file.startswith(name)]
        else:
            # Refused, and named as the text line shows it, on one line.
            command = broken[shown.line(name)]
            assert command.data.startswith("route path has a control character: ")
            assert "\n" not in command.properties["title"] and "\r" not in command.properties["title"]
    assert run.steps[0].code == 2  # the broken routes fail the gate
    assert [record["command"] for record in run.log] == ["route.status", "route.verify"]


def test_the_example_workflow_gates_pull_requests_with_full_history_and_no_credentials() -> None:
    triggers = EXAMPLE.get("on", EXAMPLE.get(True))  # PyYAML reads a bare `on:` key as True
    assert "pull_request" in triggers and "pull_request_target" not in triggers
    assert EXAMPLE["permissions"] == {"contents": "read"}
    steps = [step for job in EXAMPLE["jobs"].values() for step in job["steps"]]
    checkout = next(step for step in steps if step.get("uses", "").startswith("actions/checkout@"))
    assert checkout["with"]["fetch-depth"] == 0
    assert checkout["with"]["persist-credentials"] is False
    gate = next(step for step in steps if step.get("name") == "route.verify")
    assert gate["uses"].startswith("OWNER/routedriver@")
    assert set(gate["with"]) <= set(ACTION["inputs"])  # only inputs the action declares
    assert gate["with"]["base"] == "${{ github.event.pull_request.base.sha }}"
    # Repository paths: the action reads them as the base has them (no hand-made copies needed).
    assert gate["with"]["approvers"] == ".route-approvers"
    assert gate["with"]["allowed-signers"] == ".github/allowed_signers"
    for step in steps:  # expressions reach scripts only through env; third-party actions by commit
        assert "${{" not in step.get("run", ""), step.get("name")
        if step.get("uses", "").startswith("actions/"):
            assert SHA.fullmatch(step["uses"].partition("@")[2]), step["uses"]


def test_the_recheck_example_runs_where_the_pull_request_cannot_change_it() -> None:
    triggers = RECHECK_EXAMPLE.get("on", RECHECK_EXAMPLE.get(True))
    # The workflow comes from the base branch (pull_request_target); the pull request is checked out as data.
    assert list(triggers) == ["pull_request_target"]
    assert RECHECK_EXAMPLE["permissions"] == {"contents": "read"}
    (job,) = RECHECK_EXAMPLE["jobs"].values()
    steps = job["steps"]
    checkout, install, gate, upload = steps
    # The one step that runs a command installs the runner's own bubblewrap: nothing of the checkout.
    assert install["run"].split() == [
        *("sudo", "apt-get", "install", "-y", "--no-install-recommends", "bubblewrap"),
        *("sudo", "sysctl", "-w", "kernel.apparmor_restrict_unprivileged_userns=0", "||", "true"),
    ]
    assert gate["with"]["recheck-sandbox"] == "on"
    assert checkout["uses"].startswith("actions/checkout@")
    assert checkout["with"]["ref"] == "refs/pull/${{ github.event.pull_request.number }}/merge"
    assert checkout["with"]["fetch-depth"] == 0 and checkout["with"]["persist-credentials"] is False
    assert gate["uses"].startswith("OWNER/routedriver@") and set(gate["with"]) <= set(ACTION["inputs"])
    assert gate["with"]["recheck"] == "true" and gate["with"]["recheck-max"] == "20"
    assert gate["with"]["require-bound"] == "true"
    assert gate["with"]["base"] == "${{ github.event.pull_request.base.sha }}"
    # The reviewers' key, and only it, from the secrets.
    assert gate["env"] == {"ANTHROPIC_API_KEY": "${{ secrets.ANTHROPIC_API_KEY }}"}
    assert "${{ steps.gate.outputs.recheck-dir }}" in upload["with"]["path"]
    for step in (checkout, gate, upload):
        assert "run" not in step  # nothing of the pull request runs in this job but what the gate vouches for
        if step["uses"].startswith("actions/"):
            assert SHA.fullmatch(step["uses"].partition("@")[2]), step["uses"]


def test_ci_runs_with_read_only_permissions_and_keeps_no_credentials() -> None:
    assert CI["permissions"] == {"contents": "read"}
    for job in CI["jobs"].values():
        for step in job["steps"]:
            uses = step.get("uses", "")
            if uses.startswith("actions/checkout@"):
                assert step["with"]["persist-credentials"] is False
            if uses.startswith("actions/"):
                assert SHA.fullmatch(uses.partition("@")[2]), uses


def test_the_scripts_are_bash_that_parses() -> None:
    for step in _steps():
        if "run" in step:
            done = subprocess.run(["bash", "-n"], input=step["run"], capture_output=True, text=True)
            assert done.returncode == 0, (step["name"], done.stderr)
