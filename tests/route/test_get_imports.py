"""``route.stone.get`` runs on every robot turn: on a route whose guards name no files it answers without the
guard's machinery (the guard file reader and PyYAML, the judges, the shell reader) and without ctypes, and
still checks every pass it has against the files, through git."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from tests.conftest import git, run_cli
from tests.route.routes import make_route, record_pass, write

BIN = Path(sys.executable).parent
NOT_ON_GETS_PATH = (
    "routedriver.route.api",
    "routedriver.route.guardfile",
    "routedriver.route.inputs",
    "routedriver.route.judges",
    "routedriver.route.subst",
    "routedriver.route.records",
    "routedriver.shellsyntax",
    "yaml",
    "ctypes",
)


def _imported(repo: Path) -> tuple[str, set[str]]:
    argv = [sys.executable, "-X", "importtime", str(BIN / "route.stone.get"), "--route", "route", "--say"]
    ran = run_cli(argv, repo)
    assert ran.code == 0, ran.err[-2000:]
    lines = [line for line in ran.err.splitlines() if line.startswith("import time:")]
    return ran.out, {line.rsplit("|", 1)[1].strip() for line in lines}


@pytest.mark.parametrize("guard", ["reviews: []\n", "reviews: []\nartifacts: ['$route/$stone*.md']\n"])
def test_get_over_passed_stones_loads_the_guards_machinery_only_for_a_guard_that_names_files(
    git_repo: Path, guard: str
) -> None:
    route = make_route(
        git_repo, {"1.a": "A.\n", "2.b": "B.\n", "3.c": "C.\n"}, {"1.a": guard, "2.b": "reviews: []\n"}
    )
    for stone in ("1.a", "2.b"):
        record_pass(route, stone)
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "two passed")
    write(route / "1.a.md", "changed, not committed\n")  # hashed from disk: 1.a is stale now
    record_pass(route, "1.a")  # ... and passed again for it, uncommitted

    out, modules = _imported(git_repo)
    assert out.startswith("==> route/3.c.stone (incomplete) <=="), out  # both passes checked and held
    assert "routedriver.gitops" in modules  # a pass to check: git was asked
    loaded = sorted(
        name for name in modules if any(name == m or name.startswith(m + ".") for m in NOT_ON_GETS_PATH)
    )
    if "artifacts" in guard:  # a guard that names files is parsed: what finds them is loaded then
        assert "routedriver.route.guardfile" in loaded and "yaml" in loaded, loaded
    else:
        assert loaded == [], loaded
