"""Routes and artifacts are what they seem (issue 19 §2): the adversary's tests.

A robot with a shell and this package works on branch ``robot`` of the shared repository; ``main`` is the
base, where a human passed (and approved, with a real SSH signing key) the route. CI is a fresh clone that
checks the robot's branch out and runs ``route.verify --all --base origin/main``. Each class the robot can
try is rejected naming the stone (or the route), and the legitimate flows pass:

- hidden routes: a route (or a directory above it) replaced by a symlink, by a file, by a submodule; its
  stones turned into directories or links; its ``.route/`` records replaced by a symlink;
- globs that stop walking: under ``artifacts: [src/**]``, a symlinked directory, a ``.route/`` (or
  ``.hg/``) that is no route's records, a submodule added after the approval;
- policy approval replay: an approval the base already holds approving the old, weaker guard again;
- guard programs: the repository files a guard's commands run are policy, however the command names them.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.acceptance.test_gate_policy import (
    Template,
    Upstream,
    changed,
    ci,
    edit,
    fork,
    human_approves_policy,
    rejected,
    robot_commit,
    robot_git,
    signed_template,
)
from tests.conftest import TEST_EMAIL, Ran, git
from tests.route.routes import run_route, write
from tests.route_gate.gate import lines_of, route_set


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Template:
    return signed_template(tmp_path_factory.mktemp("routes"))


@pytest.fixture
def upstream(template: Template, tmp_path: Path) -> Upstream:
    return fork(template, tmp_path, {})


# ---------------------------------------------------------------- hidden routes


def robots_easy_route(up: Upstream, name: str = "easy") -> Path:
    """A route the robot made itself, passed with nothing to pass: one stone, no guard."""
    easy = up.repo / name
    write(easy / "1.vision.stone", "Say hi.\n")
    write(easy / "1.vision.md", "hi\n")
    done = run_route(["route.stone.set", "--route", name, "--stone", "1.vision", "--as", "passed"], up.repo)
    assert done.code == 0, done.err
    return easy


def without_route(up: Upstream) -> None:
    """The robot removes the route from git and from disk (its ignored lock files too)."""
    robot_git(up.repo, "rm", "-r", "-q", "route")
    shutil.rmtree(up.route, ignore_errors=True)


def test_a_route_replaced_by_a_symlink_to_the_robots_route_is_broken(upstream: Upstream) -> None:
    up = upstream
    robots_easy_route(up)
    without_route(up)
    up.route.symlink_to("easy")
    robot_commit(up.repo, "the route, simplified")
    done = ci(up)
    lines = lines_of(done)
    assert done.code == 2, done.out
    assert lines["route/*"] == (
        "broken: route route is a symlink (to easy), not a directory of the repository; a route is checked "
        "where git has it: restore the directory"
    )
    assert lines["easy/1.vision"].startswith("passed")  # the robot's own route is checked for what it is
    # Named explicitly, the route is the symlink's path, not where it leads.
    named = run_route(["route.verify", "--route", "route", "--base", "origin/main"], up.tmp / "ci")
    assert named.code == 2
    assert lines_of(named) == {"route/*": lines["route/*"]}


def test_a_route_reached_through_a_symlinked_directory_above_it_is_broken(
    template: Template, tmp_path: Path
) -> None:
    up = fork(
        template,
        tmp_path,
        {"routes/demo/1.a.stone": "Do it.\n", "routes/demo/1.a.guard": "judges:\n  - approved?\n"},
    )
    # The robot moves the routes away and links the directory to its own, where demo asks for nothing.
    robot_git(up.repo, "rm", "-r", "-q", "routes")
    write(up.repo / "mine" / "demo" / "1.a.stone", "Do it.\n")
    write(up.repo / "mine" / "demo" / "1.a.md", "done\n")
    assert route_set(up.repo, up.repo / "mine" / "demo", "1.a").code == 0
    (up.repo / "routes").symlink_to("mine")
    robot_commit(up.repo, "routes, simplified")
    done = ci(up, "--allow-incomplete")
    assert done.code == 2, done.out
    assert lines_of(done)["routes/demo/*"] == (
        "broken: route routes/demo passes through the symlink routes (to mine); a route is checked where git "
        "has it: restore the directory"
    )


def test_a_route_replaced_by_a_symlink_leading_out_of_the_repository_is_broken(upstream: Upstream) -> None:
    up = upstream
    without_route(up)
    up.route.symlink_to("/tmp")
    robot_commit(up.repo, "gone elsewhere")
    assert lines_of(ci(up))["route/*"] == (
        "broken: route route is a symlink (to /tmp), not a directory of the repository; a route is checked "
        "where git has it: restore the directory"
    )


def test_stones_turned_into_directories_are_broken_stones_and_cannot_hide_the_route(
    upstream: Upstream,
) -> None:
    up = upstream
    for stone in ("1.vision", "2.plan", "3.ship"):
        robot_git(up.repo, "rm", "-q", f"route/{stone}.stone")
        # Each becomes a directory; the first holds a route of the robot's, which --all finds instead.
        write(up.route / f"{stone}.stone" / "keep", "x\n")
    inner = up.route / "1.vision.stone"
    write(inner / "1.hi.stone", "Say hi.\n")
    write(inner / "1.hi.md", "hi\n")
    assert route_set(up.repo, inner, "1.hi").code == 0
    robot_commit(up.repo, "stones as directories")
    done = ci(up)
    lines = lines_of(done)
    assert done.code == 2, done.out
    for stone in ("1.vision", "2.plan", "3.ship"):
        assert lines[f"route/{stone}"] == (
            f"broken: route/{stone}.stone is a directory; a stone is a regular file: restore it"
        )
    assert lines["route/*"].startswith("broken: no stones in route")
    assert lines["route/1.vision.stone/1.hi"].startswith("passed")


def test_a_stone_turned_into_a_symlink_is_broken(upstream: Upstream) -> None:
    up = upstream
    robots_easy_route(up)
    (up.route / "2.plan.stone").unlink()
    (up.route / "2.plan.guard").unlink()
    (up.route / "2.plan.stone").symlink_to("../easy/1.vision.stone")
    robot_commit(up.repo, "a simpler plan")
    lines = lines_of(ci(up))
    assert lines["route/2.plan"] == (
        "broken: route/2.plan.stone is a symlink (to ../easy/1.vision.stone); a stone is a regular file: "
        "restore it"
    )
    assert lines["route/*"] == changed(up, "route/2.plan.stone removed")


def test_a_route_replaced_by_a_file_is_broken(upstream: Upstream) -> None:
    up = upstream
    without_route(up)
    write(up.route, "not a route any more\n")
    robot_commit(up.repo, "route file")
    lines = lines_of(ci(up))
    assert (
        lines["route/*"]
        == "broken: route is not a directory: route; check --route (a directory holding <name>.stone files)"
    )


def test_a_route_renamed_by_letter_case_is_a_removed_route(upstream: Upstream) -> None:
    up = upstream
    robot_git(up.repo, "mv", "route", "Route")
    robot_commit(up.repo, "Route")
    lines = rejected(ci(up))
    assert lines["route/*"].startswith("policy-changed: policy changed: route route removed since ")
    # The human's approval does not travel with it: the robot's commit set Route/'s marker.
    assert lines["Route/1.vision"].startswith("forged: its approval marker arrived in commit ")


def submodule_repo(tmp: Path) -> Path:
    """Another repository holding a route that passes with nothing to pass (the robot's)."""
    other = tmp / "other"
    other.mkdir()
    git(other, "init", "-q")
    write(other / "1.vision.stone", "Say hi.\n")
    write(other / "1.vision.md", "hi\n")
    assert (
        run_route(["route.stone.set", "--route", ".", "--stone", "1.vision", "--as", "passed"], other).code
        == 0
    )
    git(other, "add", "-A")
    git(other, "commit", "-q", "-m", "easy")
    return other


@pytest.mark.parametrize("checked_out", [False, True], ids=["gitlink-only", "submodule-checked-out"])
def test_a_route_replaced_by_a_submodule_is_broken(upstream: Upstream, checked_out: bool) -> None:
    up = upstream
    other = submodule_repo(up.tmp)
    without_route(up)
    robot_git(up.repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(other), "route")
    robot_commit(up.repo, "the route lives elsewhere now")
    clone = up.tmp / "ci"
    done = ci(up)
    if checked_out:
        git(clone, "-c", "protocol.file.allow=always", "submodule", "update", "-q", "--init")
        done = run_route(["route.verify", "--all", "--base", "origin/main"], clone)
    lines = lines_of(done)
    assert done.code == 2, done.out + done.err
    if checked_out:
        assert lines["route/*"] == (
            "broken: route route is inside route, a repository of its own (a submodule or a clone); its "
            "history is not this repository's, so it cannot be checked here"
        )
        # Named explicitly, verify does not move into the submodule's history either.
        named = run_route(["route.verify", "--route", "route", "--base", "origin/main"], clone)
        assert named.code == 2 and lines_of(named)["route/*"] == lines["route/*"]
    else:
        assert lines["route/*"] == (
            f"broken: route route is a submodule now (a gitlink), where {up.base[:12]} has a route with 3 "
            "stones; its stones cannot be checked here (restore the route's directory)"
        )


def test_a_route_the_base_has_that_git_no_longer_lists_is_still_checked(upstream: Upstream) -> None:
    up = upstream
    # Locally the robot takes the route out of git and ignores it, files left on disk: --all does not find
    # it among git's files, but the base has it, so it is checked (and its approvals are git's to vouch for).
    robot_git(up.repo, "rm", "-r", "-q", "--cached", "route")
    write(up.repo / ".gitignore", "route/\n")
    robot_commit(up.repo, "route, untracked")
    done = run_route(["route.verify", "--all", "--base", "main"], up.repo)
    lines = lines_of(done)
    assert done.code == 2, done.out
    assert lines["route/1.vision"].startswith("forged: its approval marker is not tracked by git: commit "), (
        lines["route/1.vision"]
    )
    # Checked, not skipped: passed here, on files git ignores now (which the local gate names).
    assert lines["route/2.plan"].startswith("uncommitted: passed here"), lines["route/2.plan"]
    # CI's clone has no route there at all: the base's route is gone.
    assert rejected(ci(up))["route/*"].startswith("policy-changed: policy changed: route route removed")


def test_a_symlinked_records_directory_is_broken(upstream: Upstream) -> None:
    up = upstream
    # The robot keeps the route's records elsewhere: its own approvals and passes, under the route's name.
    elsewhere = up.repo / "records"
    robot_git(up.repo, "mv", "route/.route", "records")
    (up.route / ".route").symlink_to("../records")
    assert elsewhere.is_dir()
    robot_commit(up.repo, "records moved")
    lines = lines_of(ci(up))
    assert lines["route/*"] == (
        "broken: its records directory route/.route is a symlink (to ../records); a route's records "
        "(approvals, passes, reviews) live in its own .route/ directory: restore it"
    )


def test_the_untouched_route_still_passes_at_the_head_and_as_a_merge_commit(upstream: Upstream) -> None:
    up = upstream
    write(up.repo / "src" / "work.py", "print('work')\n")
    robot_commit(up.repo, "work")
    assert ci(up).code == 0
    git(up.repo, "checkout", "-q", "--detach", "main")
    git(up.repo, "-c", "commit.gpgsign=false", "merge", "-q", "--no-ff", "-m", "Merge robot", "robot")
    git(up.repo, "branch", "pr-merge")
    git(up.repo, "checkout", "-q", "robot")
    merged = ci(up, checkout="origin/pr-merge")
    assert merged.code == 0, merged.out + merged.err


# ---------------------------------------------------------------- globs that stop walking


class Src(NamedTuple):
    up: Upstream
    route: Path


SRC_GUARD = "artifacts: ['src/**']\njudges:\n  - approved?\n"


def human_approves_and_passes_code(up: Upstream, message: str) -> None:
    """On main, the human approves and passes 4.code and commits it as ``message``; the robot's branch is
    moved there and checked out."""
    approved = run_route(
        ["route.stone.set", "--route", "route", "--stone", "4.code", "--as", "approved"], up.repo, human=True
    )
    assert approved.code == 0
    assert route_set(up.repo, up.route, "4.code").code == 0
    git(up.repo, "add", "-A")
    git(up.repo, "commit", "-q", "-m", message)
    git(up.repo, "branch", "-f", "robot", "main")
    git(up.repo, "checkout", "-q", "robot")


@pytest.fixture
def src_stone(template: Template, tmp_path: Path) -> Src:
    """On main, stone 4.code (artifacts: src/**, approved?) approved and passed by the human, signed."""
    up = fork(template, tmp_path, {})
    git(up.repo, "checkout", "-q", "main")
    write(up.route / "4.code.stone", "Write the code.\n")
    write(up.route / "4.code.guard", SRC_GUARD)
    write(up.repo / "src" / "app.py", "print('app')\n")
    write(up.repo / "src" / "lib" / "util.py", "print('util')\n")
    git(up.repo, "add", "-A")
    git(up.repo, "commit", "-q", "-m", "4.code")
    human_approves_and_passes_code(up, "4.code passed")
    return Src(up._replace(base=git(up.repo, "rev-parse", "HEAD").strip()), up.route)


def test_the_approved_src_stone_passes(src_stone: Src) -> None:
    done = ci(src_stone.up)
    assert done.code == 0, done.out + done.err


@pytest.mark.parametrize("where", ["src/vendor", "src/lib/deep/er"])
def test_a_symlinked_directory_under_a_wildcard_makes_the_stone_broken(src_stone: Src, where: str) -> None:
    up = src_stone.up
    write(up.repo / "evil" / "payload.py", "import os  # unreviewed\n")
    link = up.repo / where
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(os.path.relpath(up.repo / "evil", link.parent))
    robot_commit(up.repo, "vendor the payload")
    line = lines_of(ci(up))["route/4.code"]
    assert line.startswith(f"broken: {where} is a symlink to a directory (")
    assert "the artifact glob src/** would walk into it" in line
    # Locally, the same reading: route.stone.set refuses it too.
    done = route_set(up.repo, up.route, "4.code")
    assert done.code == 2 and f"error: {where} is a symlink to a directory (" in done.err


@pytest.mark.parametrize(
    "hidden", ["src/.route/payload.py", "src/lib/.route/payload.py", "src/.hg/payload.py"]
)
def test_a_dot_route_or_hg_directory_that_is_no_routes_records_is_walked(src_stone: Src, hidden: str) -> None:
    up = src_stone.up
    write(up.repo / hidden, "import os  # unreviewed\n")
    robot_commit(up.repo, "hide it")
    line = lines_of(ci(up))["route/4.code"]
    assert line.startswith("stale: artifacts changed since the pass: added " + hidden), line


def test_a_routes_own_records_among_the_artifacts_are_still_not_walked(src_stone: Src) -> None:
    up = src_stone.up
    # A route that lives in src/ (legitimately): its .route/ records are that route's, not 4.code's output.
    write(up.repo / "src" / "docs" / "1.readme.stone", "Write the readme.\n")
    write(up.repo / "src" / "docs" / "1.readme.md", "# readme\n")
    git(up.repo, "checkout", "-q", "main")
    git(up.repo, "add", "-A")
    git(up.repo, "commit", "-q", "-m", "a route in src")
    assert route_set(up.repo, up.repo / "src" / "docs", "1.readme").code == 0
    git(up.repo, "add", "-A")
    git(up.repo, "commit", "-q", "-m", "readme passed")
    before = git(up.repo, "ls-files", "src/docs/.route").split()
    assert any(".passed." in path for path in before)
    # The human approves 4.code again over the new files (the route's stone and text are artifacts).
    human_approves_and_passes_code(up, "4.code again")
    # The inner route passes a stone again (new records under src/docs/.route/): 4.code stays passed.
    write(up.repo / "src" / "docs" / "1.readme.md", "# readme, better\n")
    assert route_set(up.repo, up.repo / "src" / "docs", "1.readme").code == 0
    robot_commit(up.repo, "readme again")
    lines = lines_of(ci(up, base="origin/main"))
    assert lines["route/4.code"].startswith(
        "stale: artifacts changed since the pass: changed src/docs/1.readme.md"
    )
    assert ".route" not in lines["route/4.code"]


@pytest.mark.parametrize("checked_out", [False, True], ids=["gitlink-only", "submodule-checked-out"])
def test_a_submodule_added_under_a_wildcard_makes_the_stone_broken(src_stone: Src, checked_out: bool) -> None:
    up = src_stone.up
    other = submodule_repo(up.tmp)
    robot_git(up.repo, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(other), "src/vendor")
    robot_commit(up.repo, "vendor a submodule")
    clone = up.tmp / "ci"
    done = ci(up)
    if checked_out:
        git(clone, "-c", "protocol.file.allow=always", "submodule", "update", "-q", "--init")
        done = run_route(["route.verify", "--all", "--base", "origin/main"], clone)
    line = lines_of(done)["route/4.code"]
    what = (
        "a repository of its own (it holds .git: a submodule or a clone)"
        if checked_out
        else ("a submodule (git's index holds it as a gitlink)")
    )
    assert line.startswith(f"broken: src/vendor is {what}, and the artifact glob src/** would walk into it")


# ---------------------------------------------------------------- policy approval replay


def replay_setup(template: Template, tmp_path: Path) -> Upstream:
    """main's history: the human weakened 2.plan's guard on a branch, approved that policy change (signed)
    and merged it; later the human re-gated 2.plan on main (reverting the guard). The robot forks from
    there."""
    up = fork(template, tmp_path, {})
    git(up.repo, "checkout", "-q", "main")
    git(up.repo, "checkout", "-q", "-b", "relax")
    edit(up.route / "2.plan.guard", "  - reviewed?\n", "")
    assert route_set(up.repo, up.route, "2.plan").code == 0
    git(up.repo, "add", "-A")
    git(up.repo, "commit", "-q", "-m", "relax 2.plan")
    human_approves_policy(up)
    git(up.repo, "checkout", "-q", "main")
    git(up.repo, "merge", "-q", "--no-ff", "-m", "Merge relax", "relax")
    # The re-gate, on main: the guard as it was (a revert), passed again.
    edit(up.route / "2.plan.guard", "judges:\n", "judges:\n  - reviewed?\n")
    assert route_set(up.repo, up.route, "2.plan").code == 0
    git(up.repo, "add", "-A")
    git(up.repo, "commit", "-q", "-m", "re-gate 2.plan")
    git(up.repo, "branch", "-f", "robot", "main")
    git(up.repo, "checkout", "-q", "robot")
    return up._replace(base=git(up.repo, "rev-parse", "HEAD").strip())


@pytest.fixture
def replayed(template: Template, tmp_path: Path) -> Upstream:
    up = replay_setup(template, tmp_path)
    # The robot puts the weaker guard back: the base's policy approval covers exactly these definitions.
    edit(up.route / "2.plan.guard", "  - reviewed?\n", "")
    robot_commit(up.repo, "relax 2.plan again")
    return up


def test_a_policy_approval_the_base_already_holds_cannot_approve_again(replayed: Upstream) -> None:
    up = replayed
    line = rejected(ci(up))["route/2.plan"]
    assert line.startswith(
        f"policy-changed: policy changed: route/2.plan.guard changed since {up.base[:12]}; its policy "
        "approval does not count: its approval (commit "
    )
    assert line.endswith(
        f"is already in the history of origin/main ({up.base[:12]}), and a policy approval approves only the "
        "difference from the base it was made against; a human approves this change: route.policy.approve "
        "--route route --base origin/main"
    )


def test_re_approving_against_the_base_makes_a_new_approval_that_counts(replayed: Upstream) -> None:
    up = replayed
    # Without --base the approval is the same content by the same person: a no-op, and still rejected.
    head = git(up.repo, "rev-parse", "HEAD")
    again = human_approves_policy(up)
    assert again.out.startswith("already approved: the policy of route by Test Human")
    assert git(up.repo, "rev-parse", "HEAD") == head
    assert rejected(ci(up))["route/2.plan"].endswith("--route route --base origin/main")
    # With --base the human approves the difference from this base: a new, signed approval commit.
    done = human_approves_policy(up, "--base", "main")
    assert done.out.startswith("policy approved: route by Test Human <human@example.com>\n")
    assert "  approved again: its last approval (commit " in done.out
    assert git(up.repo, "show", "--name-only", "--format=%ae", "HEAD").split() == [
        TEST_EMAIL,
        "route/.route/policy.approved",
    ]
    result = ci(up)
    assert result.code == 0, result.out
    # Once more with --base: this approval is not in the base's history, so it is the current one.
    head = git(up.repo, "rev-parse", "HEAD")
    assert human_approves_policy(up, "--base", "main").out.startswith("already approved:")
    assert git(up.repo, "rev-parse", "HEAD") == head


def test_policy_approve_refuses_a_base_git_cannot_find(upstream: Upstream) -> None:
    done = run_route(
        ["route.policy.approve", "--route", "route", "--base", "nope"], upstream.repo, human=True
    )
    assert done.code == 2
    assert done.err == (
        "error: --base nope: git cannot find that commit here; fetch the base's history or check the name\n"
    )


# ---------------------------------------------------------------- guard programs are policy


class Programs(NamedTuple):
    repo: Path  # on branch robot, forked from main where the route passed
    tmp: Path

    def ci(self, *extra: str) -> Ran:
        clone = self.tmp / "ci"
        if clone.exists():
            shutil.rmtree(clone)
        git(self.tmp, "clone", "-q", str(self.repo), str(clone))
        git(clone, "checkout", "-q", "--detach", "origin/robot")
        return run_route(["route.verify", "--all", "--base", "origin/main", *extra], clone)


CHECK = "import sys\nprint('passed: true')\nprint('reason: checked')\n"


def program_repo(
    tmp: Path, judge: str, files: dict[str, str], links: dict[str, str] | None = None
) -> Programs:
    """main: route/1.check (a judge running ``judge``) passed with ``files`` (and symlinks ``links``: path
    → target) in the repository."""
    repo = tmp / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    for name, text in files.items():
        write(repo / name, text)
        if name.endswith(".sh"):
            (repo / name).chmod(0o755)
    for name, target in (links or {}).items():
        (repo / name).symlink_to(target)
    write(repo / "route" / "1.check.stone", "Check it.\n")
    write(repo / "route" / "1.check.guard", "judges:\n  - " + json.dumps(judge) + "\n")
    write(repo / "route" / "1.check.md", "# checked\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "route")
    done = run_route(["route.stone.set", "--route", "route", "--stone", "1.check", "--as", "passed"], repo)
    assert done.code == 0, done.out + done.err
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "passed")
    git(repo, "checkout", "-q", "-b", "robot")
    return Programs(repo, tmp)


SH_CHECK = "#!/bin/sh\necho 'passed: true'\n"

# (id, the judge command, the files it needs, the program the robot edits or adds, what the robot writes)
PROGRAM_FORMS = [
    ("interpreter", "python3 tools/check.py", {"tools/check.py": CHECK}, "tools/check.py", None),
    ("dot-slash", "./tools/check.sh", {"tools/check.sh": SH_CHECK}, "tools/check.sh", None),
    ("through-route", "python3 $route/../tools/check.py", {"tools/check.py": CHECK}, "tools/check.py", None),
    ("in-the-route", "sh $route/check.sh", {"route/check.sh": SH_CHECK}, "route/check.sh", None),
    ("bash-c", "bash -c 'python3 tools/check.py'", {"tools/check.py": CHECK}, "tools/check.py", None),
    (
        "nested-sh-c",
        "sh -c \"bash -c 'sh tools/check.sh'\"",
        {"tools/check.sh": SH_CHECK},
        "tools/check.sh",
        None,
    ),
    ("substitution", 'sh -c "$(cat tools/check.sh)"', {"tools/check.sh": SH_CHECK}, "tools/check.sh", None),
    ("stdin", "python3 - < tools/check.py", {"tools/check.py": CHECK}, "tools/check.py", None),
    ("cd", "cd tools && python3 check.py", {"tools/check.py": CHECK}, "tools/check.py", None),
    (
        "option-value",
        "python3 tools/run.py --rules=tools/rules.txt",
        {"tools/run.py": "print(open('tools/rules.txt').read())\n", "tools/rules.txt": "passed: true\n"},
        "tools/rules.txt",
        None,
    ),
    (
        "module",
        "python3 -m tools.check",
        {"tools/__init__.py": "", "tools/check.py": CHECK},
        "tools/check.py",
        None,
    ),
    (
        "module-shadowing",  # -m runs the first module on sys.path, which starts with the top-level
        "python3 -m json.tool route/data.json > /dev/null && echo 'passed: true'",
        {"route/data.json": "{}\n"},
        "json/tool.py",
        "print('anything')\n",
    ),
    (
        "module-package-init",
        "PYTHONPATH=lib python3 -m checks.main",
        {"lib/checks/__init__.py": "", "lib/checks/main.py": CHECK},
        "lib/checks/__init__.py",
        "print('imported first')\n",
    ),
    # What Python's import runs in place of the source: an unchecked-hash .pyc in __pycache__, an extension
    # module (taken before the source), a sourceless .pyc where no source shadows it.
    (
        "module-bytecode-cache",
        "python3 -m tools.check",
        {"tools/__init__.py": "", "tools/check.py": CHECK},
        f"tools/__pycache__/check.{sys.implementation.cache_tag}.pyc",
        "the robot's bytecode\n",
    ),
    (
        "module-extension",
        "python3 -m tools.check",
        {"tools/__init__.py": "", "tools/check.py": CHECK},
        "tools/check.abi3.so",
        "the robot's extension module\n",
    ),
    (
        "module-sourceless-bytecode",
        "python3 -m json.tool route/data.json > /dev/null && echo 'passed: true'",
        {"route/data.json": "{}\n"},
        "json/tool.pyc",
        "the robot's bytecode\n",
    ),
    (
        "python-directory-bytecode",
        "python3 tools",
        {"tools/__main__.py": CHECK},
        f"tools/__pycache__/__main__.{sys.implementation.cache_tag}.pyc",
        "the robot's bytecode\n",
    ),
    (
        "module-parent-as-a-module",  # import takes json.py before the json package
        "python3 -m json.tool route/data.json > /dev/null && echo 'passed: true'",
        {"route/data.json": "{}\n"},
        "json.py",
        "print('anything')\n",
    ),
    (
        "module-in-an-option-cluster",
        "python3 -Bm tools.check",
        {"tools/__init__.py": "", "tools/check.py": CHECK},
        "tools/check.py",
        None,
    ),
    (
        "cd-with-an-option",
        "cd -P tools && python3 check.py",
        {"tools/check.py": CHECK},
        "tools/check.py",
        None,
    ),
    ("cd-in-a-group", "{ cd tools; python3 check.py; }", {"tools/check.py": CHECK}, "tools/check.py", None),
    ("env-chdir", "env -C tools python3 check.py", {"tools/check.py": CHECK}, "tools/check.py", None),
    ("python-directory", "python3 tools", {"tools/__main__.py": CHECK}, "tools/__main__.py", None),
    ("glob", "python3 tools/chec?.py", {"tools/check.py": CHECK}, "tools/check.py", None),
    (
        "wrappers",
        "env LC_ALL=C timeout 60 python3 tools/check.py",
        {"tools/check.py": CHECK},
        "tools/check.py",
        None,
    ),
    (
        "sourced",
        ". tools/lib.sh && check",
        {"tools/lib.sh": "check() { echo 'passed: true'; }\n"},
        "tools/lib.sh",
        None,
    ),
    ("eval", "eval 'python3 tools/check.py'", {"tools/check.py": CHECK}, "tools/check.py", None),
    (
        "heredoc",
        "bash <<'EOF'\npython3 tools/check.py\nEOF",
        {"tools/check.py": CHECK},
        "tools/check.py",
        None,
    ),
    ("braces", "python3 tools/{check,other}.py", {"tools/check.py": CHECK}, "tools/check.py", None),
    ("quotes", "python3 \"tools/\"'check'.py", {"tools/check.py": CHECK}, "tools/check.py", None),
]


@pytest.mark.parametrize(
    ("judge", "files", "program", "robots"),
    [pytest.param(*form[1:], id=form[0]) for form in PROGRAM_FORMS],
)
def test_a_changed_guard_program_is_a_policy_change_however_the_guard_names_it(
    tmp_path: Path, judge: str, files: dict[str, str], program: str, robots: str | None
) -> None:
    up = program_repo(tmp_path, judge, files)
    assert up.ci().code == 0  # the honest route
    # The robot's version says what it wants, whatever the work is (or shadows what the command runs).
    write(up.repo / program, robots or files[program] + "# the robot's version: always content\n")
    if program.startswith("json/"):
        write(up.repo / "json" / "__init__.py", "")
    robot_commit(up.repo, "simplify the check")
    done = up.ci()
    line = lines_of(done)["route/1.check"]
    assert done.code == 2, done.out
    kind = "added" if robots is not None and program not in files else "changed"
    assert line.startswith("policy-changed: policy changed: "), line
    assert f"{program} {kind} (a program route/1.check.guard runs)" in line
    # Named with --route, REF is listed for the route and, once more, for its programs: the same verdict.
    named = run_route(["route.verify", "--route", "route", "--base", "origin/main"], up.tmp / "ci")
    assert lines_of(named)["route/1.check"] == line
    assert line.endswith("a human runs route.policy.approve --route route"), line


def test_a_program_run_through_a_symlink_is_the_file_it_leads_to(tmp_path: Path) -> None:
    # On main the program is a link; the robot leaves the link alone and edits what it leads to.
    up = program_repo(
        tmp_path, "python3 tools/check.py", {"tools/impl.py": CHECK}, {"tools/check.py": "impl.py"}
    )
    assert up.ci().code == 0
    write(up.repo / "tools" / "impl.py", CHECK + "# the robot's version\n")
    robot_commit(up.repo, "tune the implementation")
    line = lines_of(up.ci())["route/1.check"]
    assert line.startswith(
        "policy-changed: policy changed: tools/impl.py changed (a program route/1.check.guard runs) since "
    ), line
    named = run_route(["route.verify", "--route", "route", "--base", "origin/main"], up.tmp / "ci")
    assert lines_of(named)["route/1.check"] == line


SH_JUDGE = (
    "#!/bin/sh\n"
    "# rejected while the artifact has a TODO\n"
    'if grep -q TODO "$1"\n'
    "then\n"
    "  echo 'passed: false'\n"
    "  exit 2\n"
    "fi\n"
    "echo 'passed: true'\n"
)


def judge_changed_with_and_without_recheck(up: Programs) -> None:
    for extra in ((), ("--recheck",)):
        done = up.ci(*extra)
        assert done.code == 2, done.out
        line = lines_of(done)["route/1.check"]
        assert line.startswith(
            "policy-changed: policy changed: tools/judge.sh changed (a program route/1.check.guard runs)"
        ), line


def test_a_carriage_return_a_text_attribute_hides_still_changes_the_program(tmp_path: Path) -> None:
    # A second red team: a CR after one line of a shell judge makes grep look for "x.md\r" (never there);
    # a `text` attribute the pull request adds made git hash the file without it, as the base's program.
    up = program_repo(tmp_path, "sh tools/judge.sh route/1.check.md", {"tools/judge.sh": SH_JUDGE})
    assert up.ci().code == 0
    judge = up.repo / "tools" / "judge.sh"
    judge.write_bytes(judge.read_bytes().replace(b'"$1"\n', b'"$1"\r\n', 1))
    robot_commit(up.repo, "judge.sh, one CRLF line")
    write(up.repo / ".gitattributes", "tools/judge.sh text\n")
    write(up.repo / "route" / "1.check.md", "# TODO: nothing done\n")
    robot_git(up.repo, "add", ".gitattributes", "route")  # judge.sh stays as committed, CR and all
    robot_git(up.repo, "commit", "-q", "-m", "the check")
    assert "tools/judge.sh" in git(up.repo, "diff", "--name-only", "main", "HEAD")  # the CR is committed
    judge_changed_with_and_without_recheck(up)


def test_a_program_swapped_for_a_symlink_whose_text_is_the_program_is_changed(tmp_path: Path) -> None:
    # A second red team: git's id of a symlink is the id of its text. A link whose text is the base's script
    # has the base script's blob id, and it leads (through a directory named .route, which the driver's own
    # files are skipped by) to the robot's judge.
    up = program_repo(tmp_path, "sh tools/judge.sh route/1.check.md", {"tools/judge.sh": SH_JUDGE})
    assert up.ci().code == 0
    _shebang, _slash, rest = SH_JUDGE.split("/", 2)
    hidden = up.repo / "hide" / ".route" / "bin"
    hidden.mkdir(parents=True)
    (hidden / rest).write_text("echo 'passed: true'\n", encoding="utf-8")
    (up.repo / "tools" / "#!").symlink_to("../hide/.route")
    (up.repo / "tools" / "judge.sh").unlink()
    (up.repo / "tools" / "judge.sh").symlink_to(SH_JUDGE)
    write(up.repo / "route" / "1.check.md", "# TODO: nothing done\n")
    robot_commit(up.repo, "the check")
    at_base = git(up.repo, "rev-parse", "main:tools/judge.sh").strip()
    assert git(up.repo, "rev-parse", "HEAD:tools/judge.sh").strip() == at_base  # the same blob id
    judge_changed_with_and_without_recheck(up)


def test_an_artifact_git_checks_out_as_other_bytes_is_broken(tmp_path: Path) -> None:
    # A second red team: a working-tree-encoding the pull request adds makes every checkout, CI's too, write
    # the artifact as UTF-16 while git stores (and the pass bound) UTF-8: a judge that greps the work tree
    # never saw the TODO git holds. route.stone.set now refuses such a pass ...
    up = program_repo(tmp_path, "sh tools/judge.sh route/1.check.md", {"tools/judge.sh": SH_JUDGE})
    attributes = "route/1.check.md working-tree-encoding=UTF-16LE\n"
    write(up.repo / ".gitattributes", attributes)
    (up.repo / "route" / "1.check.md").write_bytes("# TODO: nothing done\n".encode("utf-16-le"))
    refused = route_set(up.repo, up.repo / "route", "1.check")
    assert (refused.code, refused.out) == (2, ""), refused.out
    assert refused.err == (
        "error: git checks route/1.check.md out as other bytes than it stores "
        "(working-tree-encoding=UTF-16LE): reviews and judges read the work tree, a pass binds the stored "
        "bytes; remove that attribute for the file (git check-attr -a -- route/1.check.md shows where it is "
        "set)\n"
    )
    # ... and CI breaks a pass whatever made it: here one recorded before the attribute arrived.
    (up.repo / ".gitattributes").unlink()
    write(up.repo / "route" / "1.check.md", "# checked again\n")
    assert route_set(up.repo, up.repo / "route", "1.check").code == 0
    robot_commit(up.repo, "the check")
    write(up.repo / ".gitattributes", attributes)
    (up.repo / "route" / "1.check.md").write_bytes("# checked again\n".encode("utf-16-le"))  # as checked out
    robot_commit(up.repo, "attributes")  # git stores the same UTF-8 bytes: the pass still holds them
    for extra in ((), ("--recheck",)):
        done = up.ci(*extra)
        assert done.code == 2, done.out
        assert lines_of(done)["route/1.check"] == (
            "broken: git checks route/1.check.md out as other bytes than it stores "
            "(working-tree-encoding=UTF-16LE): reviews and judges read the work tree, a pass binds the "
            "stored bytes; remove that attribute for the file (git check-attr -a -- route/1.check.md shows "
            "where it is set)"
        )


def test_attributes_that_leave_the_bytes_as_stored_change_nothing(tmp_path: Path) -> None:
    up = program_repo(tmp_path, "sh tools/judge.sh route/1.check.md", {"tools/judge.sh": SH_JUDGE})
    # Common lines of a .gitattributes: normalized line endings, LF in the work tree; and eol=crlf on a file
    # with no line ending to convert.
    write(up.repo / ".gitattributes", "* text=auto eol=lf\nroute/1.check.md eol=crlf\n")
    (up.repo / "route" / "1.check.md").write_bytes(b"# checked")
    assert route_set(up.repo, up.repo / "route", "1.check").code == 0
    robot_commit(up.repo, "attributes")
    done = up.ci("--recheck")
    assert done.code == 0, done.out
    assert lines_of(done)["route/1.check"].startswith("passed")


def test_the_gated_routes_review_and_judge_programs_are_policy(upstream: Upstream) -> None:
    up = upstream
    edit(up.repo / "tools" / "judge.py", "print('passed: true')", "print('passed: true')  # always")
    robot_commit(up.repo, "a friendlier judge")
    lines = rejected(ci(up))
    assert lines["route/2.plan"] == changed(up, "tools/judge.py changed (a program route/2.plan.guard runs)")
    assert lines["route/1.vision"].startswith("passed")  # 1.vision's commands do not run it
    # The human approves the new program: it is part of what the policy approval covers.
    done = human_approves_policy(up)
    assert "covers 7 definition files" in done.out
    marker = (up.route / ".route" / "policy.approved").read_text()
    assert " tools/judge.py\n" in marker and " tools/review.py\n" in marker
    assert ci(up).code == 0
    # A later edit of the approved program is a change again.
    edit(up.repo / "tools" / "judge.py", "# always", "# always, really")
    robot_commit(up.repo, "friendlier still")
    assert (
        "it approves other definitions (since then: changed tools/judge.py)"
        in rejected(ci(up))["route/2.plan"]
    )


def test_the_review_program_of_a_stone_and_artifacts_named_by_a_guard(upstream: Upstream) -> None:
    up = upstream
    edit(up.repo / "tools" / "review.py", "import os", "import os  # tuned")
    robot_commit(up.repo, "tune the reviewer")
    lines = rejected(ci(up))
    for stone in ("1.vision", "2.plan"):
        assert lines[f"route/{stone}"] == changed(
            up, f"tools/review.py changed (a program route/{stone}.guard runs)"
        )


def test_artifacts_outside_programs_and_the_driver_are_not_guard_programs(tmp_path: Path) -> None:
    # The judge names its own artifact, a program outside the repository and the stone file: none of them is
    # a guard program; editing the artifact and passing again is ordinary work.
    judge = (
        "grep -q checked $route/$stone.md && test -f $route/1.check.stone "
        "&& python3 -c 'print(\"passed: true\")'"
    )
    up = program_repo(tmp_path, judge, {})
    write(up.repo / "route" / "1.check.md", "# checked, and more\n")
    assert route_set(up.repo, up.repo / "route", "1.check").code == 0
    robot_commit(up.repo, "more work")
    done = up.ci()
    assert done.code == 0, done.out + done.err


def test_lint_lists_each_routes_guard_programs(upstream: Upstream) -> None:
    up = upstream
    text = run_route(["route.lint", "--route", "route"], up.repo)
    assert text.code == 0, text.out + text.err
    assert text.out.splitlines() == [
        "route/1.vision.guard: program: tools/review.py",
        "route/2.plan.guard: program: tools/judge.py",
        "route/2.plan.guard: program: tools/review.py",
        "ok",
    ]
    payload = json.loads(run_route(["route.lint", "--all", "--json"], up.repo).out)
    assert payload["routes"][0]["programs"] == [
        {"stone": "1.vision", "file": "route/1.vision.guard", "program": "tools/review.py"},
        {"stone": "2.plan", "file": "route/2.plan.guard", "program": "tools/judge.py"},
        {"stone": "2.plan", "file": "route/2.plan.guard", "program": "tools/review.py"},
    ]


def test_guard_programs_is_public_and_answers_for_a_stone(upstream: Upstream) -> None:
    from routedriver import gitops
    from routedriver.route.guardfile import load_guard
    from routedriver.route.load import load_route
    from routedriver.route.programs import guard_programs, stone_programs

    repo = gitops.find_repo(upstream.repo)
    assert repo is not None
    route = load_route(upstream.route)
    guards = {stone.name: load_guard(route, stone) for stone in route.stones}
    assert guard_programs(route, guards, repo) == {
        "1.vision": ("tools/review.py",),
        "2.plan": ("tools/judge.py", "tools/review.py"),
    }
    plan = route.stone("2.plan")
    assert plan is not None
    assert stone_programs(route, plan, guards["2.plan"], repo) == ("tools/judge.py", "tools/review.py")
