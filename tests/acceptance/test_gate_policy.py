"""Route definitions are policy, and policy comes from the base (issue 12 §1).

Each test plays a pull request in real repositories: ``upstream`` is the shared repository (``main`` is the
base, where a human passed and approved the route with signed commits), the robot works on branch ``robot``
in it with its own identity and no signing key, and CI is a fresh clone that checks the robot's branch out
and runs ``route.verify --all --base origin/main --require-signed``. Every weakening the robot can commit
must be rejected with the stone named; the legitimate flows must pass.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import NamedTuple

import pytest

from routedriver.route.policy import PolicyApproval, read_approval
from tests.conftest import TEST_EMAIL, Ran, git
from tests.route.routes import run_route, write
from tests.route_gate.gate import gated_route, lines_of, pass_all, route_set, ssh_signing

ROBOT_EMAIL = "robot@example.com"
# The robot's shell: its own identity, and no signing (it does not hold the human's key).
ROBOT = {
    "GIT_AUTHOR_NAME": "Robot",
    "GIT_AUTHOR_EMAIL": ROBOT_EMAIL,
    "GIT_COMMITTER_NAME": "Robot",
    "GIT_COMMITTER_EMAIL": ROBOT_EMAIL,
    "GIT_CONFIG_COUNT": "1",
    "GIT_CONFIG_KEY_0": "commit.gpgsign",
    "GIT_CONFIG_VALUE_0": "false",
}
STRICT = "  - reviewed? --allow-blockers 0\n"


class Template(NamedTuple):
    repo: Path  # main: the gated route passed, approved and committed, signed by the human
    keys: Path  # the human's SSH signing key pair
    allowed: Path  # allowed-signers file trusting it


class Upstream(NamedTuple):
    repo: Path  # the shared repository, on branch robot (forked from main)
    route: Path
    base: str  # main's commit when the robot forked: what CI's --base names
    allowed: Path
    tmp: Path


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Template:
    return signed_template(tmp_path_factory.mktemp("policy"))


def signed_template(tmp: Path) -> Template:
    """main: the gated route passed, approved and committed, signed by the human (a real SSH key)."""
    repo = tmp / "template"
    repo.mkdir()
    git(repo, "init", "-q")
    write(repo / "README.md", "a project\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "initial")
    keys = tmp / "keys"
    keys.mkdir()
    allowed = ssh_signing(repo, keys)
    pass_all(repo, gated_route(repo))  # the approval and the passes, committed and signed by the human
    return Template(repo, keys, allowed)


@pytest.fixture
def upstream(template: Template, tmp_path: Path) -> Upstream:
    return fork(template, tmp_path, {})


def fork(template: Template, tmp_path: Path, files: dict[str, str]) -> Upstream:
    """Upstream whose main has ``files`` added by the human (signed), the robot's branch forked from it."""
    repo = tmp_path / "upstream"
    git(tmp_path, "clone", "-q", str(template.repo), str(repo))
    sign_as_human(repo, template.keys)
    for name, text in files.items():
        write(repo / name, text)
    if files:
        git(repo, "add", "-A")
        git(repo, "commit", "-q", "-m", "on main")
    git(repo, "checkout", "-q", "-b", "robot")
    return Upstream(repo, repo / "route", git(repo, "rev-parse", "HEAD").strip(), template.allowed, tmp_path)


def sign_as_human(repo: Path, keys: Path) -> None:
    git(repo, "config", "gpg.format", "ssh")
    git(repo, "config", "user.signingkey", str(keys / "signing_key.pub"))
    git(repo, "config", "commit.gpgsign", "true")


def robot_git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=repo, env={**os.environ, **ROBOT}, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def robot_commit(repo: Path, message: str, *extra: str) -> None:
    robot_git(repo, "add", "-A")
    robot_git(repo, "commit", "-q", "-m", message, *extra)


def robot_set(up: Upstream, *stones: str) -> None:
    for stone in stones:
        done = route_set(up.repo, up.route, stone)
        assert done.code == 0, (stone, done.out, done.err)


def ci(
    up: Upstream, *extra: str, base: str = "origin/main", checkout: str = "origin/robot", signed: bool = True
) -> Ran:
    """A fresh clone of upstream, the robot's branch checked out detached (as CI does), route.verify."""
    clone = up.tmp / "ci"
    if clone.exists():
        shutil.rmtree(clone)
    git(up.tmp, "clone", "-q", str(up.repo), str(clone))
    git(clone, "checkout", "-q", "--detach", checkout)
    signatures = ["--require-signed", "--allowed-signers", str(up.allowed)] if signed else []
    return run_route(["route.verify", "--all", "--base", base, *signatures, *extra], clone)


def changed(up: Upstream, files: str, hits: str = "route") -> str:
    """The line verify prints for an unapproved policy change."""
    return (
        f"policy-changed: policy changed: {files} since {up.base[:12]}; a human runs "
        f"route.policy.approve --route {hits}"
    )


def policy_of(marker: Path) -> PolicyApproval:
    found = read_approval(marker)
    assert found is not None, marker.read_text()
    return found


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, (path, text)
    path.write_text(text.replace(old, new), encoding="utf-8")


def human_approves_policy(up: Upstream, *extra: str) -> Ran:
    done = run_route(["route.policy.approve", "--route", "route", *extra], up.repo, human=True)
    assert done.code == 0, done.err
    return done


def rejected(done: Ran) -> dict[str, str]:
    assert done.code == 2, done.out
    assert "error: " in done.err and "policy-changed" in done.err
    return lines_of(done)


def weaken(up: Upstream) -> None:
    edit(up.route / "2.plan.guard", "  - reviewed?\n", "")
    robot_set(up, "2.plan")
    robot_commit(up.repo, "weaken 2.plan")


# ---------------------------------------------------------------- the robot weakens the policy


def test_the_untouched_route_passes_and_without_base_the_checkout_is_trusted_out_loud(
    upstream: Upstream,
) -> None:
    write(upstream.repo / "notes.txt", "unrelated work\n")
    robot_commit(upstream.repo, "unrelated")
    done = ci(upstream)
    assert done.code == 0, done.out + done.err
    assert "notice:" not in done.err
    plain = run_route(["route.verify", "--all"], upstream.tmp / "ci")
    assert plain.code == 0
    assert plain.err.splitlines() == [
        "notice: the route definitions (*.stone, *.guard, approvers) were trusted from the checkout; give "
        "--base REF (the pull request's base) to check that they are the base's or approved by a human"
    ]


def test_lowered_allow_blockers_passes_without_base_and_is_caught_with_it(upstream: Upstream) -> None:
    up = upstream
    edit(up.route / "1.vision.guard", "--allow-blockers 0", "--allow-blockers 5")
    robot_set(up, "1.vision")  # the guard changed: passed again, under the weaker guard
    robot_commit(up.repo, "relax the review")
    done = ci(up)
    assert rejected(done)["route/1.vision"] == changed(up, "route/1.vision.guard changed")
    assert lines_of(done)["route/2.plan"].startswith("passed")
    # The hole as it was: without --base every file is an honest record of the weaker policy.
    signed = ["--require-signed", "--allowed-signers", str(up.allowed)]
    plain = run_route(["route.verify", "--all", *signed], up.tmp / "ci")
    assert plain.code == 0, plain.out


@pytest.mark.parametrize(
    ("guard", "old", "new", "stone"),
    [
        pytest.param("1.vision", "  - approved?\n", "", "1.vision", id="removed-approved"),
        pytest.param("2.plan", "  - reviewed?\n", "", "2.plan", id="removed-reviewed"),
        pytest.param(
            "2.plan",
            "judges:\n",
            "artifacts:\n  - route/2.plan-summary*.md\njudges:\n",
            "2.plan",
            id="narrowed",
        ),
    ],
)
def test_a_weakened_guard_fails_its_stone(
    upstream: Upstream, guard: str, old: str, new: str, stone: str
) -> None:
    up = upstream
    edit(up.route / f"{guard}.guard", old, new)
    if "artifacts" in new:
        write(up.route / "2.plan-summary.md", "# A summary nobody reviews closely\n")
    robot_set(up, stone)
    robot_commit(up.repo, "weaken a guard")
    lines = rejected(ci(up))
    assert lines[f"route/{stone}"] == changed(up, f"route/{guard}.guard changed")
    assert lines["route/3.ship"].startswith("passed")


def test_a_deleted_guard_fails_its_stone(upstream: Upstream) -> None:
    up = upstream
    (up.route / "2.plan.guard").unlink()
    robot_set(up, "2.plan")
    robot_commit(up.repo, "no more guard")
    assert rejected(ci(up))["route/2.plan"] == changed(up, "route/2.plan.guard removed")


def test_edited_stone_text_fails_the_stone(upstream: Upstream) -> None:
    up = upstream
    write(up.route / "2.plan.stone", "Write a plan. Any plan will do.\n")
    robot_commit(up.repo, "simplify the instructions")
    assert rejected(ci(up))["route/2.plan"] == changed(up, "route/2.plan.stone changed")


def test_a_deleted_gated_stone_fails_the_route(upstream: Upstream) -> None:
    up = upstream
    for name in ("1.vision.stone", "1.vision.guard"):
        (up.route / name).unlink()
    robot_commit(up.repo, "drop the human gate")
    lines = rejected(ci(up))
    assert lines["route/*"] == changed(up, "route/1.vision.stone removed")
    assert "route/1.vision" not in lines


def test_a_renamed_gated_stone_is_removed_plus_added_and_the_removed_side_decides(upstream: Upstream) -> None:
    up = upstream
    robot_git(up.repo, "mv", "route/1.vision.stone", "route/1.visionary.stone")
    robot_git(up.repo, "mv", "route/1.vision.md", "route/1.visionary.md")
    robot_git(up.repo, "rm", "-q", "route/1.vision.guard")
    robot_set(up, "1.visionary")  # no guard any more: passes on its artifact alone
    robot_commit(up.repo, "rename")
    done = ci(up)
    lines = rejected(done)
    assert lines["route/*"] == changed(up, "route/1.vision.stone removed")
    assert lines["route/1.visionary"].startswith("passed")
    short = up.base[:12]
    assert (
        f"notice: policy: route/1.visionary added since {short} (a new stone needs no approval)" in done.err
    )


def test_a_new_stone_whose_name_only_looks_like_a_gated_one_is_spelled_out(upstream: Upstream) -> None:
    # A second red team: "2.pl\u0430n" (a Cyrillic a) beside the gated 2.plan holds a plan the human never
    # saw. A new stone needs no approval; the notice spells its name in ASCII, so a reader sees it is new.
    up = upstream
    look_alike = "2.pl\u0430n"
    write(up.route / f"{look_alike}.stone", "Plan it.\n")
    write(up.route / f"{look_alike}.md", "# the plan nobody approved\n")
    robot_set(up, look_alike)
    robot_commit(up.repo, "another plan")
    done = ci(up)
    assert done.code == 0, done.out
    assert (
        f"notice: policy: route/{look_alike} added since {up.base[:12]} (a new stone needs no approval; "
        "not ASCII, spelled 2.pl\\u0430n)"
    ) in done.err


def test_a_new_stone_whose_name_extends_one_the_base_has_takes_its_files_only_with_a_human(
    template: Template, tmp_path: Path
) -> None:
    # A second red team: 2.plan's default artifacts (2.plan*.md) hold 2.plan-risks.md, which its review read.
    # A new stone 2.plan-risks (no guard: it passes on its artifact alone) takes that file, since a file both
    # defaults match is the longer name's; the robot rewrites it, and 2.plan passes again on 2.plan.md alone.
    # 4.notes names its artifacts in its guard: a longer name takes nothing from it, so 4.notes-extra is new.
    up = fork(
        template,
        tmp_path,
        {
            "route/2.plan-risks.md": "# Risks: the review read these\n",
            "route/4.notes.stone": "Take notes.\n",
            "route/4.notes.guard": "artifacts: ['$route/notes/*.md']\n",
            "route/notes/a.md": "a note\n",
        },
    )
    write(up.route / "2.plan-risks.stone", "List the risks.\n")
    write(up.route / "2.plan-risks.md", "# Risks: none\n")
    write(up.route / "4.notes-extra.stone", "More notes.\n")
    write(up.route / "4.notes-extra.md", "more\n")
    robot_set(up, "2.plan", "2.plan-risks", "4.notes", "4.notes-extra")
    robot_commit(up.repo, "risks of their own")
    done = ci(up)
    lines = rejected(done)
    assert lines["route/2.plan"] == changed(
        up,
        "route/2.plan-risks.stone added (its name extends 2.plan's: it takes the files both default globs "
        "match)",
    )
    assert lines["route/2.plan-risks"].startswith("passed")
    assert lines["route/4.notes"].startswith("passed")
    assert "2.plan-risks added" not in done.err  # a policy change, not a notice that it needs no approval
    assert f"route/4.notes-extra added since {up.base[:12]} (a new stone needs no approval)" in done.err
    # A human who agrees approves the definitions; then CI accepts the route.
    human_approves_policy(up)
    assert ci(up).code == 0


def test_a_removed_route_fails_with_no_approval_path(upstream: Upstream) -> None:
    up = upstream
    robot_git(up.repo, "rm", "-r", "-q", "route")
    write(up.repo / "elsewhere" / "1.easy.stone", "Say hi.\n")
    write(up.repo / "elsewhere" / "1.easy.md", "hi\n")
    assert (
        run_route(
            ["route.stone.set", "--route", "elsewhere", "--stone", "1.easy", "--as", "passed"], up.repo
        ).code
        == 0
    )
    robot_commit(up.repo, "a simpler route")
    done = ci(up)
    lines = rejected(done)
    assert lines["route/*"] == (
        f"policy-changed: policy changed: route route removed since {up.base[:12]} (it had 3 stones); humans "
        "remove routes on the base branch (no route is left here to hold a policy approval)"
    )
    assert lines["elsewhere/1.easy"].startswith("passed")
    assert f"notice: policy: route elsewhere added since {up.base[:12]}" in done.err
    # Named explicitly, the missing route is the same refusal (not a bare "route not found").
    named = run_route(["route.verify", "--route", "route", "--base", "origin/main"], up.tmp / "ci")
    assert named.code == 2
    assert lines_of(named)["route/*"].startswith("policy-changed: policy changed: route route removed")


def test_a_changed_route_approvers_file_fails_the_route_and_cannot_approve_itself(upstream: Upstream) -> None:
    up = upstream
    # The robot lists itself as the route's approver, then approves the policy change itself at a
    # pseudo-terminal: committed with its own identity, as a listed approver of the new file.
    write(up.route / ".route" / "approvers", f"{ROBOT_EMAIL}\n")
    robot_commit(up.repo, "route approvers")
    done = run_route(["route.policy.approve", "--route", "route"], up.repo, human=True, env=ROBOT)
    assert done.code == 0, done.err
    assert rejected(ci(up, "--approvers", str(up.repo / ".route-approvers")))["route/*"].startswith(
        f"policy-changed: policy changed: route/.route/approvers added since {up.base[:12]}; its policy "
        f"approval does not count: its approval was committed by {ROBOT_EMAIL}"
    )
    # Without --approvers the route's own file would be consulted: for the policy change, only the base's
    # approvers count (the new file cannot approve its own addition).
    lines = rejected(ci(up))
    assert lines["route/*"].startswith(
        f"policy-changed: policy changed: route/.route/approvers added since {up.base[:12]}; its policy "
        f"approval does not count: its approval was committed by {ROBOT_EMAIL} (commit "
    )
    assert lines["route/*"].endswith(
        "who is not in .route-approvers; a listed approver runs, in a terminal: "
        "route.policy.approve --route route"
    )


def test_the_top_level_approvers_file_cannot_approve_a_change_made_with_it(
    upstream: Upstream,
) -> None:
    up = upstream
    weaken(up)
    edit(up.repo / ".route-approvers", f"{TEST_EMAIL}\n", f"{TEST_EMAIL}\n{ROBOT_EMAIL}\n")
    robot_commit(up.repo, "me too")
    assert run_route(["route.policy.approve", "--route", "route"], up.repo, human=True, env=ROBOT).code == 0
    # Even without signatures: a policy approval is vouched for by the approvers as the base has them.
    line = rejected(ci(up, signed=False))["route/2.plan"]
    assert f"its approval was committed by {ROBOT_EMAIL} (commit " in line
    assert line.endswith(
        "who is not in .route-approvers; a listed approver runs, in a terminal: "
        "route.policy.approve --route route"
    )


def test_an_author_the_pull_request_lists_cannot_approve_its_own_work(upstream: Upstream) -> None:
    """A stone approval, not a policy one: the robot adds itself to .route-approvers, rewrites the approved
    vision and approves it at a pseudo-terminal as itself. Without signatures, the approvers file decided;
    with --base it is the base's, which does not list the robot."""
    up = upstream
    edit(up.repo / ".route-approvers", f"{TEST_EMAIL}\n", f"{TEST_EMAIL}\n{ROBOT_EMAIL}\n")
    write(up.route / "1.vision.md", "# Vision, the robot's own\n")
    robot_commit(up.repo, "me too")
    argv = ["route.stone.set", "--route", "route", "--stone", "1.vision", "--as", "approved"]
    assert run_route(argv, up.repo, human=True, env=ROBOT).code == 0
    robot_set(up, "1.vision", "2.plan", "3.ship")
    robot_commit(up.repo, "passed")
    done = ci(up, signed=False)
    assert done.code == 2, done.out
    line = lines_of(done)["route/1.vision"]
    assert line.startswith(f"forged: its approval was committed by {ROBOT_EMAIL} (commit "), line
    assert "who is not in .route-approvers" in line, line
    # Merged to main by a human, the new approver counts from then on: the base lists them.
    assert ci(up, signed=False, base="origin/robot").code == 0


def test_an_edited_route_approvers_file_is_judged_by_the_base_version(
    template: Template, tmp_path: Path
) -> None:
    # A route with its own approvers file on main; the robot adds itself to it.
    up = fork(template, tmp_path, {"route/.route/approvers": f"{TEST_EMAIL}\n"})
    assert ci(up).code == 0
    write(up.route / ".route" / "approvers", f"{TEST_EMAIL}\n{ROBOT_EMAIL}\n")
    robot_commit(up.repo, "me too")
    assert run_route(["route.policy.approve", "--route", "route"], up.repo, human=True, env=ROBOT).code == 0
    line = rejected(ci(up))["route/*"]
    assert line.startswith(
        f"policy-changed: policy changed: route/.route/approvers changed since {up.base[:12]}"
    )
    assert f"committed by {ROBOT_EMAIL}" in line and "who is not in route/.route/approvers" in line
    # The human listed at the base approves the new list: accepted, and it now vouches for approvals.
    human_approves_policy(up)
    assert ci(up).code == 0


# ---------------------------------------------------------------- policy approvals the robot made


def test_a_policy_approval_written_by_the_robot_is_rejected(upstream: Upstream) -> None:
    up = upstream
    weaken(up)
    # Written by the robot in the driver's own format, naming the human, committed under the human's name.
    done = run_route(
        ["route.policy.approve", "--route", "route", "--no-commit"],
        up.repo,
        human=True,
        env={**ROBOT, "GIT_AUTHOR_NAME": "Test Human", "GIT_AUTHOR_EMAIL": TEST_EMAIL},
    )
    assert done.code == 0, done.err
    # Left uncommitted, the local gate says so (and names the command once).
    local = run_route(["route.verify", "--all", "--base", "main"], up.repo)
    assert lines_of(local)["route/2.plan"] == (
        f"policy-changed: policy changed: route/2.plan.guard changed since {up.base[:12]}; its policy "
        "approval does not count: its approval marker was never committed (written by hand?); a human "
        "approves with: route.policy.approve --route route"
    )
    robot_commit(up.repo, "approve", f"--author=Test Human <{TEST_EMAIL}>")
    line = rejected(ci(up))["route/2.plan"]
    assert line.startswith(
        f"policy-changed: policy changed: route/2.plan.guard changed since {up.base[:12]}; its policy "
        "approval does not count: its approval commit "
    )
    assert "has no signature" in line


def test_a_policy_approval_committed_by_the_robot_is_rejected(upstream: Upstream) -> None:
    up = upstream
    weaken(up)
    done = run_route(["route.policy.approve", "--route", "route"], up.repo, human=True, env=ROBOT)
    assert done.code == 0, done.err
    assert "policy approved: route by Robot <robot@example.com>" in done.out
    line = rejected(ci(up))["route/2.plan"]
    assert f"its approval was committed by {ROBOT_EMAIL}" in line
    assert line.endswith(
        "who is not in .route-approvers; a listed approver runs, in a terminal: "
        "route.policy.approve --route route"
    )


def test_a_policy_approval_edited_after_the_human_approved_is_rejected(upstream: Upstream) -> None:
    up = upstream
    weaken(up)
    human_approves_policy(up)
    assert ci(up).code == 0
    # The robot weakens further and rewrites the approval to cover it, keeping the human's name.
    edit(up.route / "1.vision.guard", "  - approved?\n", "")
    robot_set(up, "1.vision")
    marker = up.route / ".route" / "policy.approved"
    subprocess.run(
        ["python3", "-c", _REHASH, str(marker), str(up.repo)], check=True, capture_output=True, text=True
    )
    assert policy_of(marker).approver_email == TEST_EMAIL
    local = lines_of(run_route(["route.verify", "--all", "--base", "main"], up.repo))
    assert local["route/1.vision"].startswith(
        "policy-changed: policy changed: route/1.vision.guard changed since "
    )
    assert "its approval marker differs from what commit " in local["route/1.vision"]
    assert local["route/1.vision"].endswith("(edited since); a human runs route.policy.approve --route route")
    robot_commit(up.repo, "keep the approval current", f"--author=Test Human <{TEST_EMAIL}>")
    lines = rejected(ci(up))
    # Committed with everything else under the human's name: not an approval commit of its own (and unsigned).
    assert "its approval marker arrived in commit " in lines["route/1.vision"]
    assert "together with other changes" in lines["route/2.plan"]


# Rewrites a policy.approved for the definitions on disk, as a careful robot would (not with the driver).
_REHASH = """
import sys
from pathlib import Path
from routedriver import gitops
from routedriver.route import policy
from routedriver.route.load import load_route
marker, repo = Path(sys.argv[1]), gitops.find_repo(sys.argv[2])
ids = policy.definitions(load_route(marker.parent.parent), repo)
old = policy.read_approval(marker)
lines = [l for l in marker.read_text().splitlines() if not l.startswith(("definitions_hash:", "file:"))]
at = lines.index("approved_at: " + old.approved_at)
new = [f"definitions_hash: {policy.definitions_hash(ids)}"]
new += [f"file: {b} {p}" for p, b in sorted(ids.items())]
marker.write_text("\\n".join(lines[:at] + new + lines[at:]) + "\\n")
"""


def test_a_policy_approval_for_older_definitions_is_rejected(upstream: Upstream) -> None:
    up = upstream
    weaken(up)
    human_approves_policy(up)
    edit(up.route / "2.plan.stone", "Write the plan.", "Write any plan.")
    robot_commit(up.repo, "one more change after the approval")
    assert rejected(ci(up))["route/2.plan"] == (
        f"policy-changed: policy changed: route/2.plan.stone changed, route/2.plan.guard changed since "
        f"{up.base[:12]}; its policy approval does not count: it approves other definitions (since then: "
        "changed route/2.plan.stone); a human runs route.policy.approve --route route"
    )


# ---------------------------------------------------------------- the legitimate flows


def test_a_humans_signed_policy_approval_at_a_terminal_is_accepted(upstream: Upstream) -> None:
    up = upstream
    weaken(up)
    write(up.repo / "staged.txt", "someone's staged work\n")
    git(up.repo, "add", "staged.txt")
    done = human_approves_policy(up)
    assert done.out.startswith("policy approved: route by Test Human <human@example.com>\n")
    assert "  covers 7 definition files (definitions hash " in done.out
    # Only the marker was committed, with the human's identity and signature; the staged work stays staged.
    assert git(up.repo, "show", "--name-only", "--format=%ae", "HEAD").split() == [
        TEST_EMAIL,
        "route/.route/policy.approved",
    ]
    assert git(up.repo, "diff", "--cached", "--name-only").split() == ["staged.txt"]
    git(up.repo, "-c", f"gpg.ssh.allowedSignersFile={up.allowed}", "verify-commit", "HEAD")
    git(up.repo, "reset", "-q", "staged.txt")
    (up.repo / "staged.txt").unlink()
    marker = (up.route / ".route" / "policy.approved").read_text(encoding="utf-8")
    assert (
        f"approver_email: {TEST_EMAIL}\n" in marker and "file: " in marker and "definitions_hash: " in marker
    )
    result = ci(up)
    assert result.code == 0, result.out
    assert result.err.startswith(
        f"notice: policy: route changed since {up.base[:12]}; approved by {TEST_EMAIL} in commit "
    )
    # Again on the same definitions: a no-op that says so, and no new commit.
    head = git(up.repo, "rev-parse", "HEAD")
    again = human_approves_policy(up)
    assert again.out.startswith(
        "already approved: the policy of route by Test Human <human@example.com> (nothing"
    )
    assert git(up.repo, "rev-parse", "HEAD") == head


def test_a_policy_approval_in_a_shallow_clone_is_refused_for_want_of_the_base_history(
    upstream: Upstream,
) -> None:
    # Where the base's history is cut, git says "not an ancestor" of an approval the base may hold already:
    # a replayed approval (brought back by a merge) would pass for a new one. So a shallow clone refuses it.
    up = upstream
    weaken(up)
    human_approves_policy(up)
    assert ci(up).code == 0  # a full clone
    clone = up.tmp / "shallow"
    git(up.tmp, "clone", "-q", "--depth", "2", "--no-single-branch", f"file://{up.repo}", str(clone))
    git(clone, "checkout", "-q", "--detach", "origin/robot")
    done = run_route(
        [
            "route.verify",
            "--all",
            "--base",
            "origin/main",
            "--require-signed",
            "--allowed-signers",
            str(up.allowed),
        ],
        clone,
    )
    line = rejected(done)["route/2.plan"]
    assert re.search(
        r"its policy approval does not count: this clone is shallow, so whether the history of origin/main "
        r"already holds its approval \(commit [0-9a-f]{12}\) cannot be told, .*fetch the whole history "
        r"\(actions/checkout with fetch-depth: 0\)",
        line,
    ), line


def test_policy_approval_with_no_commit_then_the_humans_signed_commit(upstream: Upstream) -> None:
    up = upstream
    weaken(up)
    done = human_approves_policy(up, "--no-commit")
    *_, said, command = done.out.splitlines()
    assert said == "  not committed (--no-commit); commit it alone, with hooks off:"
    assert command == (
        "  git add -- route/.route/policy.approved && git -c core.hooksPath=/dev/null commit --no-verify "
        "-m 'route(route): approve policy' -- route/.route/policy.approved"
    )
    assert rejected(ci(up))["route/2.plan"].endswith("a human runs route.policy.approve --route route")
    subprocess.run(["bash", "-c", command], cwd=up.repo, check=True)  # what the human types
    assert ci(up).code == 0


def test_a_robot_cannot_run_policy_approve(upstream: Upstream) -> None:
    up = upstream
    weaken(up)
    head = git(up.repo, "rev-parse", "HEAD")
    done = run_route(["route.policy.approve", "--route", "route"], up.repo)
    assert done.code == 2
    assert done.err == (
        "error: only humans can approve; a person runs route.policy.approve --route route in a terminal\n"
    )
    assert done.out == ""
    assert not (up.route / ".route" / "policy.approved").exists()
    assert git(up.repo, "rev-parse", "HEAD") == head


def test_added_stones_and_routes_need_no_human(upstream: Upstream) -> None:
    up = upstream
    write(up.route / "4.docs.stone", "Document it.\n")
    write(up.route / "4.docs.md", "# Docs\n")
    robot_set(up, "4.docs")
    write(up.repo / "second" / "1.more.stone", "More.\n")
    write(up.repo / "second" / "1.more.md", "more\n")
    assert (
        run_route(
            ["route.stone.set", "--route", "second", "--stone", "1.more", "--as", "passed"], up.repo
        ).code
        == 0
    )
    robot_commit(up.repo, "more stones")
    done = ci(up, "--json")
    assert done.code == 0, done.out
    short = up.base[:12]
    assert done.err.splitlines() == [
        f"notice: policy: route/4.docs added since {short} (a new stone needs no approval)",
        f"notice: policy: route second added since {short} (a new route needs no approval)",
    ]
    policy = json.loads(done.out)["policy"]
    assert policy["base"] == "origin/main" and policy["commit"] == up.base
    assert [(route["route"], route["state"], route["added"]) for route in policy["routes"]] == [
        ("route", "compared", ["4.docs"]),
        ("second", "added", ["1.more"]),
    ]


def test_pruning_with_route_stone_del_needs_no_human(template: Template, tmp_path: Path) -> None:
    up = fork(template, tmp_path, {"route/4.research.stone": "Research it.\n"})
    done = run_route(["route.stone.del", "--route", "route", "--stone", "4.research"], up.repo)
    assert done.code == 0, done.err
    robot_commit(up.repo, "prune")
    result = ci(up)
    assert result.code == 0, result.out
    assert result.err.splitlines() == [
        f"notice: policy: route/4.research pruned since {up.base[:12]} (it had no guard, artifact or marker "
        "there)"
    ]


# What the base had of a stone the robot removes (its .stone and .guard files): pruning, or a policy change.
PRUNING = [
    pytest.param({}, True, id="nothing"),
    pytest.param({"route/4.research.guard": "judges:\n  - approved?\n"}, False, id="a-guard"),
    pytest.param({"route/4.research.md": "# notes\n"}, False, id="its-artifact"),
    pytest.param({"route/4.research.v2.md": "# notes\n"}, False, id="a-versioned-artifact"),
    pytest.param({"route/.route/4.research.approved": "x\n"}, False, id="an-approval-marker"),
    pytest.param({"route/.route/4.research.passed": "x\n"}, False, id="a-pass-marker"),
    pytest.param(
        {"route/4.research-deep.stone": "Deeper.\n", "route/4.research-deep.md": "# deep\n"},
        True,
        id="a-longer-stones-artifact",
    ),
]


@pytest.mark.parametrize(("at_base", "pruned"), PRUNING)
def test_a_removed_stone_is_pruning_only_when_it_had_nothing_at_the_base(
    template: Template, tmp_path: Path, at_base: dict[str, str], pruned: bool
) -> None:
    up = fork(template, tmp_path, {"route/4.research.stone": "Research it.\n", **at_base})
    for name in ("4.research.stone", "4.research.guard"):
        if (up.route / name).exists():
            (up.route / name).unlink()
    robot_commit(up.repo, "remove 4.research")
    done = ci(up, "--allow-incomplete")
    if pruned:
        assert done.code == 0, done.out
        assert f"notice: policy: route/4.research pruned since {up.base[:12]}" in done.err
    else:
        assert rejected(done)["route/*"] == changed(up, "route/4.research.stone removed")


def test_a_removed_unguarded_stone_with_a_pass_is_not_pruning(template: Template, tmp_path: Path) -> None:
    up = fork(template, tmp_path, {})  # 3.ship: no guard, but its artifact and a pass marker at the base
    (up.route / "3.ship.stone").unlink()
    robot_commit(up.repo, "drop 3.ship")
    assert rejected(ci(up))["route/*"] == changed(up, "route/3.ship.stone removed")


def test_the_base_may_be_the_merge_base_of_the_pull_request(upstream: Upstream) -> None:
    up = upstream
    write(up.repo / "work.txt", "the robot's work\n")
    robot_commit(up.repo, "work")
    # Meanwhile on main, a human adds (and passes) a stone: the robot's branch does not have it.
    git(up.repo, "checkout", "-q", "main")
    write(up.route / "4.docs.stone", "Document it.\n")
    write(up.route / "4.docs.md", "# Docs\n")
    robot_set(up, "4.docs")
    git(up.repo, "add", "-A")
    git(up.repo, "commit", "-q", "-m", "docs on main")
    git(up.repo, "checkout", "-q", "robot")
    # The branch's own checkout against main's tip: main's new stone looks removed.
    assert rejected(ci(up))["route/*"].startswith(
        "policy-changed: policy changed: route/4.docs.stone removed"
    )
    clone = up.tmp / "ci"
    merge_base = git(clone, "merge-base", "origin/main", "HEAD").strip()
    assert merge_base == up.base
    assert ci(up, base=merge_base).code == 0
    # GitHub's checkout of a pull request: the merge commit, compared with main's tip.
    git(up.repo, "checkout", "-q", "--detach", "main")
    git(up.repo, "-c", "commit.gpgsign=false", "merge", "-q", "--no-ff", "-m", "Merge robot", "robot")
    git(up.repo, "branch", "pr-merge")
    git(up.repo, "checkout", "-q", "robot")
    merged = ci(up, checkout="origin/pr-merge")
    assert merged.code == 0, merged.out
    assert merged.err == ""


def test_base_is_refused_when_git_cannot_find_it(upstream: Upstream) -> None:
    up = upstream
    shallow = up.tmp / "shallow"
    git(up.tmp, "clone", "-q", "--depth=1", "--branch=robot", up.repo.as_uri(), str(shallow))
    done = run_route(["route.verify", "--all", "--base", "0123456789abcdef0123456789abcdef01234567"], shallow)
    assert done.code == 2
    assert done.out == ""
    assert done.err == (
        "error: --base 0123456789abcdef0123456789abcdef01234567: git cannot find that commit here; fetch "
        "the base's history (actions/checkout with fetch-depth: 0, or git fetch origin <base>) or check the "
        "name\n"
    )
    assert run_route(["route.verify", "--all", "--base", "--json"], shallow).code == 2


def test_reports_name_the_policy_change_everywhere(upstream: Upstream, tmp_path: Path) -> None:
    up = upstream
    weaken(up)
    summary = tmp_path / "summary.md"
    junit = tmp_path / "verify.xml"
    assert ci(up).code == 2
    clone = up.tmp / "ci"
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)}
    result = run_route(
        ["route.verify", "--all", "--base", "origin/main", "--json", "--junit", str(junit)], clone, env=env
    )
    assert result.code == 2
    report = json.loads(result.out)
    assert report["counts"] == {"passed": 2, "policy-changed": 1}
    plan = next(stone for stone in report["stones"] if stone["stone"] == "2.plan")
    assert plan["status"] == "policy-changed" and plan["file"] == "route/2.plan.guard"
    assert report["policy"]["routes"][0]["changes"] == [
        {"file": "route/2.plan.guard", "change": "changed", "stone": "2.plan"}
    ]
    assert report["policy"]["routes"][0]["accepted"] is False
    assert "::error file=route/2.plan.guard,title=route.verify policy-changed%3A route/2.plan::" in result.err
    assert '<failure message="policy changed: route/2.plan.guard changed since' in junit.read_text()
    assert 'type="policy-changed"' in junit.read_text()
    assert "| ❌ | route | 2.plan | policy-changed |" in summary.read_text()


def test_a_sha256_repository_is_compared_in_its_own_object_format(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "--object-format=sha256")
    write(repo / "route" / "1.a.stone", "Do it.\n")
    write(repo / "route" / "1.a.guard", "judges:\n  - approved?\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "base")
    same = run_route(["route.verify", "--all", "--base", "HEAD", "--allow-incomplete"], repo)
    assert same.code == 0, same.out + same.err
    write(repo / "route" / "1.a.guard", "judges: []\n")
    done = run_route(["route.verify", "--all", "--base", "HEAD", "--allow-incomplete"], repo)
    head = git(repo, "rev-parse", "HEAD").strip()
    assert len(head) == 64
    assert lines_of(done)["route/1.a"] == (
        f"policy-changed: policy changed: route/1.a.guard changed since {head[:12]}; a human runs "
        "route.policy.approve --route route"
    )


def test_policy_approve_json_a_failed_commit_and_outside_git(git_repo: Path, tmp_path: Path) -> None:
    route = gated_route(git_repo)
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "route")
    lock = git_repo / ".git" / "index.lock"
    lock.write_text("")
    failed = run_route(["route.policy.approve", "--route", "route"], git_repo, human=True)
    assert failed.code == 2
    assert failed.err.startswith(
        "error: approval recorded in route/.route/policy.approved but not committed: fatal: Unable to create "
    )
    assert failed.err.endswith(
        "; fix that, then run the same command again (it commits the recorded approval)\n"
    )
    lock.unlink()
    done = run_route(["route.policy.approve", "--route", "route", "--json"], git_repo, human=True)
    assert done.code == 0, done.err
    payload = json.loads(done.out)
    head = git(git_repo, "rev-parse", "HEAD").strip()
    assert payload["outcome"] == "already-approved" and payload["commit"] == head  # the rerun committed it
    assert payload["marker"] == "route/.route/policy.approved" and payload["committed"] is True
    assert [entry["path"] for entry in payload["files"]] == [
        "route/1.vision.guard",
        "route/1.vision.stone",
        "route/2.plan.guard",
        "route/2.plan.stone",
        "route/3.ship.stone",
        "tools/judge.py",  # guard programs: 2.plan's judge and both stones' review
        "tools/review.py",
    ]
    assert policy_of(route / ".route" / "policy.approved").definitions_hash == payload["definitions_hash"]
    # Outside git there is no commit to make: refused, nothing written.
    plain = tmp_path / "plain"
    write(plain / "r" / "1.a.stone", "Do it.\n")
    outside = run_route(["route.policy.approve", "--route", "r"], plain, human=True)
    assert outside.code == 2
    assert outside.err == (
        "error: r is not in a git repository; a policy approval is a commit: run it in the routes' git work "
        "tree\n"
    )
    assert not (plain / "r" / ".route").exists()


def test_a_policy_approval_binds_the_bytes_on_disk_not_what_the_robot_staged(upstream: Upstream) -> None:
    up = upstream
    guard = up.route / "1.vision.guard"
    # The robot stages a weaker guard, puts the old bytes back on disk with the staged size and times, and
    # tells git to trust the index (so git itself would say the work tree matches what is staged).
    long_ago = (1_600_000_000, 1_600_000_000)  # well before the index is written: not "racily clean"
    edit(guard, "--allow-blockers 0", "--allow-blockers 9")
    os.utime(guard, long_ago)
    robot_git(up.repo, "add", "route/1.vision.guard")
    edit(guard, "--allow-blockers 9", "--allow-blockers 0")
    os.utime(guard, long_ago)
    robot_git(up.repo, "config", "core.checkStat", "minimal")
    robot_git(up.repo, "config", "core.trustctime", "false")
    assert robot_git(up.repo, "diff-files", "--name-only") == ""  # git no longer sees the difference
    human_approves_policy(up)  # the human reviewed the guard on disk: the strict one
    marker = policy_of(up.route / ".route" / "policy.approved")
    strict = git(up.repo, "rev-parse", f"{up.base}:route/1.vision.guard").strip()
    assert marker.files["route/1.vision.guard"] == strict
    robot_git(up.repo, "commit", "-q", "-m", "what was staged")  # the weaker guard reaches the branch
    assert "--allow-blockers 9" in git(up.repo, "show", "HEAD:route/1.vision.guard")
    assert rejected(ci(up))["route/1.vision"].startswith(
        f"policy-changed: policy changed: route/1.vision.guard changed since {up.base[:12]}; its policy "
        "approval does not count: it approves other definitions (since then: changed route/1.vision.guard)"
    )
