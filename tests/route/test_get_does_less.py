"""``route.stone.get`` runs on every robot turn, and does only what its answer needs: on a route whose guards
name no files it answers without the guard's machinery (the guard file reader and PyYAML, the judges, the
shell reader) and without ctypes, still checking every pass it has against the files, through git; and for
``@next-one`` it hashes nothing beyond the tier of the first stone that never passed."""

from __future__ import annotations

import os
import shlex
import shutil
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


def _git_logging_what_it_hashes(bin_dir: Path, log: Path) -> dict[str, str]:
    """An environment whose ``git`` is the real one, behind a script that copies the paths each ``git
    hash-object --stdin-paths`` is given to ``log``."""
    real = shutil.which("git")
    assert real is not None
    bin_dir.mkdir()
    script = bin_dir / "git"
    script.write_text(
        # the subcommand follows git's own options (-c core.fsmonitor=false): found among the words
        f'#!/bin/sh\ncase " $* " in *" hash-object "*)\n'
        f'  tee -a {shlex.quote(str(log))} | exec {real} "$@";;\nesac\n'
        f'exec {real} "$@"\n',
        encoding="utf-8",
    )
    script.chmod(0o755)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}


def test_next_one_hashes_nothing_beyond_the_tier_of_the_first_stone_that_never_passed(
    git_repo: Path, tmp_path: Path
) -> None:
    route = make_route(git_repo, {"1.a": "A.\n", "2.b": "B.\n", "2.c": "C.\n", "3.d": "D.\n"})
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "the route")
    for stone in ("1.a", "2.c", "3.d"):  # passed on work git does not have yet: their files must be read
        write(route / f"{stone}.md", f"{stone}, not committed\n")
        record_pass(route, stone)
    log = tmp_path / "hashed"
    env = _git_logging_what_it_hashes(tmp_path / "bin", log)

    def hashed(selector: str) -> tuple[str, set[str]]:
        log.unlink(missing_ok=True)
        argv = [str(BIN / "route.stone.get"), "--route", "route", "--stone", selector, "--json"]
        ran = run_cli(argv, git_repo, env=env)
        assert ran.code == 0, ran.err
        return ran.out, set(log.read_text(encoding="utf-8").split()) if log.exists() else set()

    out, files = hashed("@next-one")
    assert '"name": "2.b"' in out, out
    # 1.a's pass is checked, with what else of the open tier passed (2.c); 3.d is never asked about
    assert files == {"route/1.a.md", "route/2.c.md"}, files
    out, files = hashed("@next-all")  # the open tier: 2.b, and 2.c, whose pass is checked (it holds)
    assert '"name": "2.b"' in out and '"name": "2.c"' not in out, out
    assert files == {"route/1.a.md", "route/2.c.md"}, files
    out, files = hashed("3.d")  # asked by name: up to the first incomplete stone, and 3.d itself
    assert '"status": "passed"' in out and "route/3.d.md" in files, (out, files)
