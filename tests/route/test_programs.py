"""What a guard command names (``route.programs.command_names``), as a data table: the command, and the paths
(relative to the top-level) its words must name, and those they must not. Which of them are programs is then
git's answer (tracked files); the acceptance tests (tests/acceptance/test_gate_routes.py) run that part."""

from __future__ import annotations

import pytest

from routedriver.route.programs import command_names

TOP = "/repo"
ROUTE = "routes/demo"

# (command, named, not named)
NAMES = [
    ("python3 tools/review.py", {"tools/review.py", "python3"}, set()),
    ("./tools/x.sh --fast", {"tools/x.sh", "--fast"}, set()),
    ("$route/check.sh", {"routes/demo/check.sh"}, set()),
    ("python3 ${route}/../tools/x.py", {"routes/tools/x.py"}, set()),
    ("python3 $route/../../tools/x.py", {"tools/x.py"}, set()),
    ("python3 $route/$stone.py", {"routes/demo/2.plan.py"}, set()),
    ('python3 "$route/my tool.py"', {"routes/demo/my tool.py"}, set()),
    ("python3 '$route/x.py'", {"routes/demo/x.py"}, set()),  # subst closes the quote around it
    ("bash -c 'python3 tools/x.py'", {"tools/x.py"}, set()),
    ("sh -c \"bash -c 'sh tools/deep.sh'\"", {"tools/deep.sh"}, set()),
    ("echo $(cat tools/a.txt)", {"tools/a.txt"}, set()),
    ("echo `cat tools/b.txt`", {"tools/b.txt"}, set()),
    ("diff <(cat tools/c.txt) x", {"tools/c.txt"}, set()),
    ("python3 - < tools/d.py", {"tools/d.py"}, set()),
    ("bash <<'EOF'\npython3 tools/e.py\nEOF", {"tools/e.py"}, set()),
    ("cd tools && python3 f.py", {"tools/f.py", "f.py"}, set()),
    ("pushd sub >/dev/null; sh g.sh", {"sub/g.sh"}, set()),
    ("run --rules=tools/rules.md", {"tools/rules.md"}, set()),
    ("RULES=tools/r.md run", {"tools/r.md"}, set()),
    ("python3 -m tools.check", {"tools/check.py", "tools/check/__main__.py", "tools/__init__.py"}, set()),
    ("python -mtools.check", {"tools/check.py"}, set()),
    ("uv run python3.11 -m pkg.mod", {"pkg/mod.py", "pkg/__init__.py"}, set()),
    ("PYTHONPATH=src python3 -m app", {"src/app.py", "src/app/__main__.py", "app.py"}, set()),
    ("python3 tools", {"tools/__main__.py"}, set()),
    ("python3 -m json.tool x.json", {"json.py", "json.pyc", "json/__init__.py", "json/tool.py"}, set()),
    ("python3 -Bm tools.check", {"tools/check.py", "tools.py"}, {"tools.check/__main__.py"}),
    ("python3 -uBmtools.check", {"tools/check.py"}, set()),
    ("python3 -W ignore -m tools.check", {"tools/check.py"}, {"ignore/__main__.py"}),
    ("python3 -c 'import x' tools/arg.py", set(), {"tools/arg.py/__main__.py"}),
    ("cd -P tools && ./check.sh", {"tools/check.sh"}, {"-P/check.sh"}),
    ("cd -- tools && ./check.sh", {"tools/check.sh"}, set()),
    ("{ cd tools; ./check.sh; } || exit 2", {"tools/check.sh"}, set()),
    ("if true; then cd tools; fi; ./check.sh", {"tools/check.sh"}, set()),
    ("builtin cd tools && ./check.sh", {"tools/check.sh"}, set()),
    ("env -C tools ./check.sh", {"tools/check.sh"}, set()),
    ("env --chdir=tools ./check.sh", {"tools/check.sh"}, set()),
    ("sudo -D tools ./check.sh", {"tools/check.sh"}, set()),
    # what a third red-team round found the reader missed
    ("cd tools && cd checks && ./run.sh", {"tools/checks/run.sh"}, set()),
    ("cd $route && cd ../../tools && ./check.sh", {"tools/check.sh"}, set()),
    ("PATH=tools:$PATH check.sh x", {"tools/check.sh"}, set()),
    ("CDPATH=tools cd checks && ./run.sh", {"tools/checks/run.sh"}, set()),
    ("awk -ftools/check.awk x", {"tools/check.awk"}, set()),
    ("make -s -ftools/check.mk check", {"tools/check.mk"}, set()),
    ("make -s -C tools -f check.mk check", {"tools/check.mk"}, set()),
    ("env -u LANG -C tools ./check.sh", {"tools/check.sh"}, set()),
    ("env -iC tools ./check.sh", {"tools/check.sh"}, set()),
    ("sudo -u x -D tools ./check.sh", {"tools/check.sh"}, set()),
    ("git -C tools status && ./x.sh", {"tools/x.sh"}, set()),
    ("~+/tools/check.sh x", {"tools/check.sh"}, set()),
    ("cd $route && ~-/tools/check.sh", {"tools/check.sh"}, set()),
    ("node tools/check x", {"tools/check.js", "tools/check/index.js"}, set()),
    ("node --require ./tools/gate tools/check.js", {"tools/gate.js"}, set()),
    ("python3 -m pytest -q tests/test_plan.py::test_good", {"tests/test_plan.py"}, set()),
    ("python3 -m unittest -q tests.test_plan", {"tests/test_plan.py"}, set()),
    ("eval cd tools && ./check.sh", {"tools/check.sh"}, set()),
    ("git commit -m message", set(), {"message.py"}),  # -m of a program that is no python
    ("python3 /repo/tools/abs.py", {"tools/abs.py"}, set()),
    ("python3 /usr/lib/x.py ../outside.py ~/home.py", set(), {"usr/lib/x.py", "outside.py"}),
    ("python3 tools/{a,b}.py", {"tools/a.py", "tools/b.py"}, set()),
    ("python3 \"tools/\"'q'.py", {"tools/q.py"}, set()),
    ("python3 $REVIEWER tools/ok.py", {"tools/ok.py"}, {"$REVIEWER"}),
    ("python3 tools/$hash.py", set(), set()),  # known only at run time
    ("python3 $(which tool) x.py", {"x.py"}, set()),
]


@pytest.mark.parametrize(("command", "named", "unnamed"), NAMES, ids=[row[0][:40] for row in NAMES])
def test_what_a_command_names(command: str, named: set[str], unnamed: set[str]) -> None:
    found = command_names(command, route=ROUTE, stone="2.plan", top=TOP)
    assert named <= found.paths, found.paths
    assert not unnamed & found.paths
    assert not any("$" in path or path.startswith("..") for path in found.paths), found.paths


def test_globs_are_kept_as_globs_and_nothing_computed_is_named() -> None:
    found = command_names("python3 tools/chec?.py $route/*.sh", route=ROUTE, stone="1.a", top=TOP)
    assert found.globs == {"tools/chec?.py", "routes/demo/*.sh"}
    assert not found.paths & {"tools/chec?.py"}
    hashed = command_names("python3 tools/run.py --in $route/$hash.md", route=ROUTE, stone="1.a", top=TOP)
    assert not any("hash" in path or "0000" in path for path in hashed.paths)


def test_a_glob_cd_target_starts_the_paths_after_it_as_globs() -> None:
    found = command_names("cd tools/checker-* && ./check.sh x", route=ROUTE, stone="1.a", top=TOP)
    assert "tools/checker-*/check.sh" in found.globs


def test_an_unreadable_command_names_what_it_can_and_never_fails() -> None:
    found = command_names("python3 tools/x.py 'unterminated", route=ROUTE, stone="1.a", top=TOP)
    assert "tools/x.py" in found.paths
    deep = "sh -c " + "'sh -c \"" * 30 + "python3 tools/deep.py"
    assert isinstance(command_names(deep, route=ROUTE, stone="1.a", top=TOP).paths, frozenset)
