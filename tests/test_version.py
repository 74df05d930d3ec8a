"""``--version`` on every console script the package installs: one shared option (cli/_command.py).

The scripts are read from pyproject.toml, so a script added later is covered without touching this test.
"""

from __future__ import annotations

import subprocess
import tomllib
from pathlib import Path

import pytest

from routedriver import __version__
from tests.conftest import BIN_DIR

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"
SCRIPTS = sorted(tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"]["scripts"])
NOTES = {"behaviorci": "; BehaviorCI 0.1.0 compatible"}  # behaviorci also says what it is compatible with


def test_the_package_installs_the_scripts_this_test_reads() -> None:
    assert {"bhrain", "behaviorci", "route.verify", "route.stone.get"} <= set(SCRIPTS)


@pytest.mark.parametrize("script", SCRIPTS)
def test_every_console_script_prints_its_version(script: str, tmp_path: Path) -> None:
    ran = subprocess.run(
        [str(BIN_DIR / script), "--version"],
        cwd=tmp_path,  # not a repository: --version needs none
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert (ran.returncode, ran.stderr) == (0, "")
    assert ran.stdout == f"{script}, version {__version__} (routedriver{NOTES.get(script, '')})\n"
    helped = subprocess.run(
        [str(BIN_DIR / script), "--help"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    # One --version line: a command that also declares click's own option would list it twice.
    assert (helped.stdout + helped.stderr).count("--version") == 1
