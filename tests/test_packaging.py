"""The package builds and installs cleanly (issue 21 §3): ``python -m build`` makes a wheel and an sdist that
``twine check`` accepts, the wheel holds the docs every ``--help`` points to, the templates and the offline
reviewer, and a fresh virtualenv that installs the wheel runs its console scripts from it.

Offline: the build runs ``--no-isolation`` with the dev extras' setuptools, the wheel is installed with
``--no-deps --no-index``, and the fresh environment borrows the dependencies (never routedriver itself) from
the environment running the tests through a ``.pth`` path line."""

from __future__ import annotations

import subprocess
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

from routedriver import __version__

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted(path.name for path in (ROOT / "docs").glob("*.md"))


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=600, check=False)
    said = f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    assert done.returncode == 0, f"{argv} exited {done.returncode}:\n{said}"
    return done


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    _run([sys.executable, "-m", "build", "--no-isolation", "--outdir", str(out), str(ROOT)], ROOT)
    return out


def test_build_makes_a_wheel_and_an_sdist_twine_accepts(dist: Path) -> None:
    wheel = dist / f"routedriver-{__version__}-py3-none-any.whl"
    sdist = dist / f"routedriver-{__version__}.tar.gz"
    assert wheel.is_file() and sdist.is_file()
    checked = _run([sys.executable, "-m", "twine", "check", "--strict", str(wheel), str(sdist)], dist)
    assert checked.stdout.count("PASSED") == 2


def test_the_wheel_ships_the_docs_the_templates_and_the_offline_reviewer(dist: Path) -> None:
    with zipfile.ZipFile(dist / f"routedriver-{__version__}-py3-none-any.whl") as wheel:
        names = set(wheel.namelist())
    assert {f"routedriver/docs/{name}" for name in DOCS} <= names
    assert len(DOCS) >= 8 and "mcp.md" in DOCS and "route.md" in DOCS
    assert "routedriver/brain/offline_review.yaml" in names
    assert "routedriver/templates/routes/feature/3.1.impl.guard" in names
    assert "routedriver/templates/review/default.md.j2" in names
    with tarfile.open(dist / f"routedriver-{__version__}.tar.gz") as sdist:
        members = {member.name.split("/", 1)[1] for member in sdist.getmembers() if "/" in member.name}
    assert {f"docs/{name}" for name in DOCS} <= members and "README.md" in members


def test_a_fresh_virtualenv_runs_the_installed_console_scripts(dist: Path, tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", str(venv)], tmp_path)
    python = venv / "bin" / "python"
    wheel = dist / f"routedriver-{__version__}-py3-none-any.whl"
    _run([str(python), "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", str(wheel)], tmp_path)
    # The dependencies come from the environment running the tests (offline); routedriver must not.
    purelib = "import sysconfig; print(sysconfig.get_paths()['purelib'])"
    site = Path(_run([str(python), "-c", purelib], tmp_path).stdout.strip())
    (site / "borrowed_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n", encoding="utf-8")
    where = _run([str(python), "-c", "import routedriver; print(routedriver.__file__)"], tmp_path).stdout
    assert where.startswith(str(site)), where

    version = _run([str(venv / "bin" / "route.init"), "--version"], tmp_path)
    assert version.stdout == f"route.init, version {__version__} (routedriver)\n"
    assert "feature (default)" in _run([str(venv / "bin" / "route.init"), "--list"], tmp_path).stdout
    helped = _run([str(venv / "bin" / "route.mcp"), "--help"], tmp_path).stdout
    assert '"command": "route.mcp"' in helped  # the config snippet, in the help itself
    installed_docs = site / "routedriver" / "docs"
    assert sorted(path.name for path in installed_docs.glob("*.md")) == DOCS
    (tmp_path / "a.md").write_text("A page. TODO: the rest\n", encoding="utf-8")
    offline = ["--skill", "review", "--atom", "scripted", "--input-file", "a.md"]
    review = subprocess.run(
        [str(venv / "bin" / "bhrain"), "run", *offline],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert review.returncode == 0, review.stderr
    assert review.stdout.startswith("Offline review") and review.stdout.endswith("blockers: 1\nnitpicks: 0\n")
