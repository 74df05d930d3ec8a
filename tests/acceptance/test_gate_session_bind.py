"""route.bind's edges: a directory that is not a route, ignore rules over the binding flag, and a pull
request checked out by GitHub Actions (a detached merge commit)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import git
from tests.route.routes import run_route, write
from tests.route_gate.gate import gated_route, pass_all

PR_ENV = {"GITHUB_ACTIONS": "true", "GITHUB_HEAD_REF": "feature/vision"}


def test_bind_refuses_a_directory_without_stones_and_writes_nothing(git_repo: Path) -> None:
    gated_route(git_repo)
    write(git_repo / "src" / "app.py", "print(1)\n")
    git(git_repo, "switch", "-q", "-c", "work")
    done = run_route(["route.bind", "--set", "src"], git_repo)
    assert (done.code, done.out) == (2, "")
    assert done.err == (
        "error: route not found: src (no <name>.stone files in it); check the path (a directory holding "
        "<name>.stone files)\n"
    )
    assert sorted(path.name for path in (git_repo / "src").iterdir()) == ["app.py"]
    assert run_route(["route.bind", "--get"], git_repo).code == 2


def test_an_ignore_rule_cannot_hide_a_binding(git_repo: Path) -> None:
    gated_route(git_repo)
    write(git_repo / ".gitignore", "*.flag\n")
    git(git_repo, "switch", "-q", "-c", "work")
    assert run_route(["route.bind", "--set", "route"], git_repo).out == "bound route to branch work\n"
    assert run_route(["route.bind", "--get"], git_repo).out == "route\n"
    assert run_route(["route.stone.get"], git_repo).out == "1.vision\n"
    again = run_route(["route.bind", "--set", "route"], git_repo)
    assert again.out == "route is already bound to branch work\n"
    assert "route/.route/.bind.work.flag" in git(git_repo, "status", "--porcelain", "--untracked-files=all")


def test_bind_refuses_up_front_when_git_ignores_the_whole_state_directory(git_repo: Path) -> None:
    route = gated_route(git_repo)
    write(git_repo / ".gitignore", "route/.route/\n")
    git(git_repo, "switch", "-q", "-c", "work")
    done = run_route(["route.bind", "--set", "route"], git_repo)
    assert (done.code, done.out) == (2, "")
    assert done.err == (
        "error: cannot bind: git ignores route/.route/.bind.work.flag (.gitignore:1:route/.route/), so no "
        "route.* command could find the binding; remove or narrow that rule (see git check-ignore -v "
        "route/.route/.bind.work.flag), then bind again\n"
    )
    assert not (route / ".route" / ".bind.work.flag").exists()


def test_a_pull_request_run_uses_the_route_bound_to_its_source_branch(git_repo: Path, tmp_path: Path) -> None:
    route = gated_route(git_repo)
    git(git_repo, "switch", "-q", "-c", "feature/vision")
    assert run_route(["route.bind", "--set", "route"], git_repo).code == 0
    pass_all(git_repo, route)  # commits the route's files, the binding flag among them
    # What actions/checkout does for a pull request: a fresh clone, the merge commit checked out detached.
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(git_repo), str(clone))
    git(clone, "switch", "-q", "--detach", "origin/main")
    git(clone, "merge", "-q", "--no-ff", "--no-edit", "origin/feature/vision")
    assert git(clone, "branch", "--show-current") == ""

    local = run_route(["route.verify"], clone)  # not a pull-request run: nothing says which branch
    assert (local.code, local.err) == (
        2,
        "error: no route bound to this branch (HEAD is detached); use --route, --all or route.bind --set\n",
    )
    gate = run_route(["route.verify"], clone, env=PR_ENV)
    assert gate.code == 0, gate.err
    assert "route.verify ok: 3 stones (3 passed)" in gate.out
    assert run_route(["route.bind", "--get"], clone, env=PR_ENV).out == "route\n"
    assert run_route(["route.stone.get", "--stone", "*"], clone, env=PR_ENV).code == 0

    other = {**PR_ENV, "GITHUB_HEAD_REF": "feature/other"}
    missing = run_route(["route.verify"], clone, env=other)
    assert (missing.code, missing.err) == (
        2,
        "error: no route bound to this branch (HEAD is detached; looked for the pull request's branch "
        "feature/other, $GITHUB_HEAD_REF); use --route, --all or route.bind --set\n",
    )
    # Binding still needs a real branch: a pull request's checkout is not one.
    detached = run_route(["route.bind", "--set", "route"], clone, env=PR_ENV)
    assert detached.code == 2 and "HEAD is detached" in detached.err
