"""A GitHub runner for ``action.yml``'s composite steps, on this machine: what the action's tests run.

It does with each step what the runner does with a composite action's steps:

- ``env:`` and ``with:`` values are evaluated against the contexts: ``inputs`` (with the action's
  defaults), ``github`` (``action_path``, ``workspace``, ``event.pull_request.base.sha``), ``runner.temp``
  and earlier steps' ``steps.<id>.outputs``. Only ``${{ <name.name…> }}`` is understood; anything else is
  an error, so the action cannot quietly grow an expression these tests do not read.
- a ``run:`` step is written to a file and run as ``bash --noprofile --norc -eo pipefail FILE`` (GitHub's
  ``shell: bash``) in the job's working directory, the workspace (or the step's ``working-directory``),
  with ``$GITHUB_OUTPUT`` (read back as the step's outputs), ``$GITHUB_ENV``/``$GITHUB_PATH`` (what the
  job's later steps would get), ``$RUNNER_TEMP``, ``$GITHUB_WORKSPACE`` and ``GITHUB_ACTIONS=true``.
  The first step that fails ends the run.
- ``actions/setup-python`` is stood in for, as that action behaves: the version is its input, else the
  checkout's ``.python-version`` (recorded: the pull request chose it), else the ``python`` on PATH;
  ``python-path`` is an interpreter of its own tool cache (a virtualenv without pip, so nothing is ever
  installed into this machine's Python); with ``update-environment`` (default true) its bin directory goes
  on the job's PATH.

The action's own files (``github.action_path``, what the action installs) are stood in for by a wheel of a
stand-in routedriver (``standin_wheel``): its ``route.verify`` and ``route.status`` record where and how they
run (interpreter flags, ``sys.path``, working directory, which ``git``, the files ``--approvers`` and
``--allowed-signers`` name), then print their arguments, or, with ``ROUTEDRIVER_STANDIN_REAL=1``, hand over
to this checkout's real command.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import subprocess
import sys
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

SETUP_PYTHON = "actions/setup-python@"
REAL_BIN = Path(sys.executable).parent  # this checkout's install (tests run under its venv)

STANDIN = '''\
"""A stand-in routedriver: records how it was started, then prints its argv (or runs the real command)."""
import json
import os
import shutil
import sys


def _main(name):
    argv = sys.argv[1:]
    files = {}
    for flag in ("--approvers", "--allowed-signers"):
        if flag in argv:
            try:
                with open(argv[argv.index(flag) + 1], encoding="utf-8") as handle:
                    files[flag] = handle.read()
            except OSError:
                files[flag] = None
    record = {
        "command": name,
        "argv": argv,
        "files": files,
        "executable": sys.executable,
        "prefix": sys.prefix,
        "isolated": sys.flags.isolated,
        "safe_path": sys.flags.safe_path,
        "no_user_site": sys.flags.no_user_site,
        "sys_path": sys.path,
        "cwd": os.getcwd(),
        "PATH": os.environ.get("PATH", ""),
        "git": shutil.which("git"),
        "customize": {
            module: getattr(sys.modules[module], "__file__", None)
            for module in ("sitecustomize", "usercustomize")
            if module in sys.modules
        },
    }
    with open(os.environ["ROUTEDRIVER_STANDIN_LOG"], "a", encoding="utf-8") as handle:
        handle.write(json.dumps(record) + "\\n")
    if os.environ.get("ROUTEDRIVER_STANDIN_REAL") == "1":
        real = os.path.join(REAL_BIN, name)
        os.execv(real, [real, *argv])
    for arg in argv:
        print(arg)
    return 0


def verify():
    return _main("route.verify")


def status():
    return _main("route.status")
'''


def standin_wheel(directory: Path) -> Path:
    """A wheel of the stand-in routedriver (``routedriver`` 0.0.0, console scripts ``route.verify`` and
    ``route.status``), made by hand: no build backend, no index."""
    dist = "routedriver-0.0.0.dist-info"
    files = {
        "routedriver_standin.py": f"REAL_BIN = {str(REAL_BIN)!r}\n{STANDIN}",
        f"{dist}/METADATA": "Metadata-Version: 2.1\nName: routedriver\nVersion: 0.0.0\n",
        f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{dist}/entry_points.txt": (
            "[console_scripts]\n"
            "route.verify = routedriver_standin:verify\n"
            "route.status = routedriver_standin:status\n"
        ),
    }
    record = []
    for name, text in files.items():
        data = text.encode("utf-8")
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append(f"{dist}/RECORD,,")
    files[f"{dist}/RECORD"] = "\n".join(record) + "\n"
    directory.mkdir(parents=True, exist_ok=True)
    wheel = directory / "routedriver-0.0.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, text in files.items():
            archive.writestr(name, text)
    return wheel


def tool_cache_python(directory: Path) -> Path:
    """setup-python's interpreter, stood in for by a virtualenv without pip (nothing lands in ours)."""
    python = directory / "bin" / "python"
    if not python.exists():
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(directory)], check=True)
    return python


@dataclass
class StepRun:
    name: str
    code: int
    stdout: str
    stderr: str
    outputs: dict[str, str]


@dataclass
class ActionRun:
    steps: list[StepRun] = field(default_factory=list)
    job_path: list[str] = field(default_factory=list)  # what $GITHUB_PATH would add for the job's next steps
    job_env: dict[str, str] = field(default_factory=dict)  # what $GITHUB_ENV would set
    python_version_file_read: bool = False  # setup-python took the version from the checkout
    log: list[dict[str, Any]] = field(default_factory=list)  # the stand-in commands' records

    @property
    def ok(self) -> bool:
        return all(step.code == 0 for step in self.steps)

    @property
    def stdout(self) -> str:
        return "".join(step.stdout for step in self.steps)

    @property
    def output(self) -> str:
        """Everything the runner reads workflow commands from: every step's stdout and stderr."""
        return "".join(step.stdout + step.stderr for step in self.steps)

    def step(self, name: str) -> StepRun:
        return next(step for step in self.steps if step.name == name)

    def records(self, command: str) -> list[dict[str, Any]]:
        return [record for record in self.log if record["command"] == command]


_EXPRESSION = re.compile(r"\$\{\{\s*([A-Za-z0-9_.-]+)\s*\}\}")


def _evaluate(text: str, contexts: dict[str, Any]) -> str:
    def value(match: re.Match[str]) -> str:
        found: Any = contexts
        for part in match[1].split("."):
            if not isinstance(found, dict) or part not in found:
                raise AssertionError(f"the simulated runner cannot evaluate {match[0]}")
            found = found[part]
        return str(found)

    evaluated = _EXPRESSION.sub(value, text)
    assert "${{" not in evaluated, f"an expression the simulated runner does not read: {text}"
    return evaluated


def _outputs(path: Path) -> dict[str, str]:
    """``name=value`` lines and ``name<<DELIMITER`` blocks, as the runner reads $GITHUB_OUTPUT."""
    found: dict[str, str] = {}
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    index = 0
    while index < len(lines):
        line = lines[index]
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            end = lines.index(delimiter, index + 1)
            found[name] = "\n".join(lines[index + 1 : end])
            index = end + 1
            continue
        name, _, value = line.partition("=")
        found[name] = value
        index += 1
    return found


def run_action(
    action: dict[str, Any],
    *,
    workspace: Path,
    temp: Path,
    source: Path,
    tool_cache: Path,
    inputs: dict[str, str] | None = None,
    base_sha: str = "",
    path: str,
    env: dict[str, str] | None = None,
    only: tuple[str, ...] = (),
    outputs: dict[str, dict[str, str]] | None = None,
) -> ActionRun:
    """Run ``action``'s steps (or only the named ones, with ``outputs`` standing for the steps skipped)
    for a job whose PATH is ``path``, in ``workspace``."""
    given = inputs or {}
    unknown = set(given) - set(action["inputs"])
    assert not unknown, f"inputs the action does not declare: {unknown}"
    github = {
        "action_path": str(source),
        "workspace": str(workspace),
        "event": {"pull_request": {"base": {"sha": base_sha}}},
    }
    defaults_context = {"github": github, "runner": {"temp": str(temp)}}
    resolved = {
        name: given[name] if name in given else _evaluate(str(spec.get("default", "")), defaults_context)
        for name, spec in action["inputs"].items()
    }
    temp.mkdir(parents=True, exist_ok=True)
    log = temp.parent / f"{temp.name}.standin.log"
    log.write_text("", encoding="utf-8")
    result = ActionRun()
    steps: dict[str, dict[str, dict[str, str]]] = {
        name: {"outputs": dict(values)} for name, values in (outputs or {}).items()
    }
    base_env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("GITHUB_", "RUNNER_", "INPUT_", "PYTHON", "VIRTUAL_ENV"))
    }
    base_env.update(
        {
            "GITHUB_ACTIONS": "true",
            "GITHUB_WORKSPACE": str(workspace),
            "RUNNER_TEMP": str(temp),
            "PIP_NO_INDEX": "1",  # no network in tests: the stand-in wheel has no dependencies
            "ROUTEDRIVER_STANDIN_LOG": str(log),
            **(env or {}),
        }
    )
    for number, step in enumerate(action["runs"]["steps"]):
        name = step.get("name", f"step {number}")
        if only and name not in only:
            continue
        contexts = {
            "inputs": resolved,
            "github": github,
            "runner": {"temp": str(temp)},
            "steps": steps,
        }
        job_path = os.pathsep.join([*reversed(result.job_path), path]) if result.job_path else path
        if "uses" in step:
            assert step["uses"].startswith(SETUP_PYTHON), f"a step the simulated runner cannot run: {step}"
            with_ = {key: _evaluate(str(value), contexts) for key, value in step.get("with", {}).items()}
            version = with_.get("python-version", "")
            if not version and (workspace / ".python-version").exists():
                result.python_version_file_read = True
            python = tool_cache_python(tool_cache)
            if with_.get("update-environment", "true").lower() == "true":
                result.job_path.append(str(python.parent))
                result.job_env["pythonLocation"] = str(python.parent.parent)
            run = StepRun(name, 0, "", "", {"python-path": str(python), "python-version": version})
        else:
            assert step.get("shell") == "bash", f"{name}: a composite run step names its shell"
            step_env = {key: _evaluate(str(value), contexts) for key, value in step.get("env", {}).items()}
            scratch = temp.parent / f"{temp.name}.step{number}"
            scratch.mkdir(parents=True, exist_ok=True)
            files = {kind: scratch / kind for kind in ("output", "env", "path")}
            for file in files.values():
                file.write_text("", encoding="utf-8")
            script = scratch / "script.sh"
            script.write_text(step["run"], encoding="utf-8")
            cwd = Path(_evaluate(step.get("working-directory", str(workspace)), contexts))
            done = subprocess.run(
                ["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                cwd=cwd,
                env={
                    **base_env,
                    **result.job_env,
                    **step_env,
                    "PATH": job_path,
                    "GITHUB_OUTPUT": str(files["output"]),
                    "GITHUB_ENV": str(files["env"]),
                    "GITHUB_PATH": str(files["path"]),
                },
                stdin=subprocess.DEVNULL,
                capture_output=True,
                text=True,
                timeout=300,
                check=False,
            )
            run = StepRun(name, done.returncode, done.stdout, done.stderr, _outputs(files["output"]))
            result.job_env.update(_outputs(files["env"]))
            result.job_path += files["path"].read_text(encoding="utf-8").split()
        result.steps.append(run)
        if "id" in step:
            steps[step["id"]] = {"outputs": run.outputs}
        if run.code != 0:
            break
    result.log = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines() if line]
    return result


def load(path: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(path.read_text(encoding="utf-8"))
    return loaded
