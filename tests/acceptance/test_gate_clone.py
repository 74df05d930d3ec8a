"""A human approving in the robot's clone cannot be made to approve something else (issue 19 §1).

The robot has the repository, a shell, and the clone's ``.git/`` (hooks, configuration, info/attributes),
but not the human's signing key. The human types ``route.stone.set --as approved`` at a terminal (a
pseudo-terminal here) with their own global git configuration: their identity and an SSH signing key
(``gpg.format=ssh``) that signs without asking, so anything the robot gets git to run in the human's session
could sign with it too. CI is a fresh clone running ``route.verify --all --require-signed`` with the human's
key as the only allowed signer. Each attack below must leave the robot's stone unapproved in CI; the
legitimate flows (an honest approval, approving again, ``--no-commit`` and the printed command, approving
in a clean clone of one's own and merging) must stay accepted.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path
from typing import NamedTuple

import pytest

from routedriver.errors import Refused
from tests.conftest import TEST_EMAIL, TEST_NAME, Ran, git
from tests.route.routes import make_route, run_route, write
from tests.route_gate.gate import approve, lines_of, route_set, verify

ROBOT_EMAIL = "robot@example.com"
ROBOT = {
    "GIT_AUTHOR_NAME": "Robot",
    "GIT_AUTHOR_EMAIL": ROBOT_EMAIL,
    "GIT_COMMITTER_NAME": "Robot",
    "GIT_COMMITTER_EMAIL": ROBOT_EMAIL,
}
GATE = "judges:\n  - approved?\n"
MARKER_1 = "route/.route/1.vision.approved"
MARKER_2 = "route/.route/2.plan.approved"


class Clone(NamedTuple):
    repo: Path  # the robot's clone: the route committed, .route-approvers listing the human
    route: Path
    human: dict[str, str]  # the human's environment: their own global git configuration, signing on
    allowed: Path  # allowed signers: the human's key only
    tmp: Path


def human_config(tmp: Path, extra: str = "") -> tuple[dict[str, str], Path]:
    """The human's global git configuration (identity, SSH signing with a key that needs no passphrase)
    and an allowed-signers file trusting that key."""
    key = tmp / "human_key"
    if not key.exists():
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", TEST_EMAIL, "-f", str(key)], check=True
        )
    config = write(
        tmp / "human.gitconfig",
        f"[user]\n\tname = {TEST_NAME}\n\temail = {TEST_EMAIL}\n\tsigningkey = {key}.pub\n"
        "[gpg]\n\tformat = ssh\n[commit]\n\tgpgsign = true\n[init]\n\tdefaultBranch = main\n" + extra,
    )
    public = (tmp / "human_key.pub").read_text().strip()
    allowed = write(tmp / "allowed_signers", f'{TEST_EMAIL} namespaces="git" {public}\n')
    return {"GIT_CONFIG_GLOBAL": str(config)}, allowed


def robot_git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=repo, env={**os.environ, **ROBOT}, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def robot_commit(repo: Path, message: str) -> None:
    robot_git(repo, "add", "-A")
    robot_git(repo, "commit", "-q", "-m", message)


def human_git(clone: Clone, *args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(
        ["git", *args],
        cwd=cwd or clone.repo,
        env={**os.environ, **clone.human},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def clone(git_repo: Path, tmp_path: Path) -> Clone:
    """Two stones a human gates (1.vision, 2.plan) and one that is not (3.ship), committed by the robot."""
    route = make_route(
        git_repo,
        {"1.vision": "Write the vision.\n", "2.plan": "Write the plan.\n", "3.ship": "Ship it.\n"},
        {"1.vision": GATE, "2.plan": GATE},
    )
    write(route / "1.vision.md", "# Vision\n")
    write(route / "2.plan.md", "# Plan\n")
    write(route / "3.ship.md", "# Shipped\n")
    write(git_repo / ".route-approvers", f"{TEST_EMAIL}\n")
    robot_commit(git_repo, "the route")
    human, allowed = human_config(tmp_path)
    return Clone(git_repo, route, human, allowed, tmp_path)


def human_approves(clone: Clone, stone: str, *extra: str, repo: Path | None = None) -> Ran:
    where = repo or clone.repo
    return approve(where, where / "route", stone, *extra, env=clone.human)


def ci(clone: Clone, source: Path | None = None) -> Ran:
    """A fresh clone of the robot's work, verified as the example workflow does (signatures required)."""
    target = clone.tmp / f"ci{len(list(clone.tmp.glob('ci*')))}"
    git(clone.tmp, "clone", "-q", (source or clone.repo).as_uri(), str(target))
    return verify(target, "--all", "--require-signed", "--allowed-signers", str(clone.allowed))


def robot_passes_everything(clone: Clone) -> None:
    for stone in ("1.vision", "2.plan", "3.ship"):
        route_set(clone.repo, clone.route, stone)
    robot_commit(clone.repo, "passes")


def forged_marker(clone: Clone, stone: str) -> bytes:
    """What a robot with the driver's code writes: an approval marker for ``stone``'s current content in the
    human's name (the same bytes the approve command would write), kept aside for its hook to use."""
    from routedriver.route import hashing, inputs, store

    context = inputs.stone_context(clone.route, stone)
    artifacts = inputs.artifacts_or_refuse(context)
    ids = hashing.content_ids(artifacts, context.base, context.repo, from_disk=True).ids
    store.ensure_state_dir(context.route)
    path = store.write_approved(
        context.route, stone, hashing.review_input_hash(ids), ids, (TEST_NAME, TEST_EMAIL)
    )
    data = path.read_bytes()
    path.unlink()
    return data


def robot_hook(clone: Clone, name: str, body: str) -> Path:
    """A hook the robot puts in its clone's ``.git/hooks``; it leaves ``.ctl/<name>.ran`` if it runs."""
    hook = write(
        clone.repo / ".git" / "hooks" / name, f"#!/bin/sh\nmkdir -p .ctl && : > .ctl/{name}.ran\n{body}"
    )
    hook.chmod(0o755)
    return clone.repo / ".ctl" / f"{name}.ran"


def committed_files(repo: Path, rev: str = "HEAD") -> list[str]:
    return git(repo, "show", "--name-only", "--format=", rev).split()


# ---------------------------------------------------------------- hooks


def test_a_pre_commit_hook_cannot_add_the_robots_marker_to_the_humans_signed_approval(clone: Clone) -> None:
    aside = write(clone.tmp / "forged", "")
    aside.write_bytes(forged_marker(clone, "2.plan"))
    write(clone.repo / ".git" / "info" / "exclude", ".ctl/\n")
    ran = robot_hook(clone, "pre-commit", f"cp {aside} {MARKER_2} && git add -- {MARKER_2}\n")
    before = git(clone.repo, "rev-parse", "HEAD").strip()

    done = human_approves(clone, "1.vision")
    assert done.code == 0, done.err
    assert not ran.exists()  # the hook never ran in the human's session
    assert committed_files(clone.repo) == ["route/.route/.gitignore", MARKER_1]
    assert git(clone.repo, "rev-parse", "HEAD~1").strip() == before
    assert "-----BEGIN SSH SIGNATURE-----" in git(clone.repo, "cat-file", "commit", "HEAD")

    robot_passes_everything(clone)
    verdict = lines_of(ci(clone))
    assert verdict["route/1.vision"].startswith("passed: ")
    assert not verdict["route/2.plan"].startswith("passed")


def test_a_post_commit_hook_cannot_make_a_second_signed_approval_with_the_humans_key(clone: Clone) -> None:
    aside = write(clone.tmp / "forged", "")
    aside.write_bytes(forged_marker(clone, "2.plan"))
    write(clone.repo / ".git" / "info" / "exclude", ".ctl/\n")
    body = (
        f"cp {aside} {MARKER_2} && git add -- {MARKER_2} && "
        f"git commit -q -m 'route(route): approve 2.plan' -- {MARKER_2}\n"
    )
    ran = robot_hook(clone, "post-commit", body)
    # A commit-msg hook and a prepare-commit-msg hook, too: --no-verify skips only some hooks.
    also = [
        robot_hook(clone, name, "exit 0\n") for name in ("prepare-commit-msg", "commit-msg", "post-checkout")
    ]

    done = human_approves(clone, "1.vision")
    assert done.code == 0, done.err
    assert not ran.exists() and not any(path.exists() for path in also)
    assert committed_files(clone.repo) == ["route/.route/.gitignore", MARKER_1]
    assert f"committed {git(clone.repo, 'rev-parse', 'HEAD').strip()[:12]}" in done.out
    assert git(clone.repo, "log", "--format=%s").splitlines()[0] == "route(route): approve 1.vision"

    robot_passes_everything(clone)
    verdict = lines_of(ci(clone))
    assert verdict["route/1.vision"].startswith("passed: ")
    assert not verdict["route/2.plan"].startswith("passed")


# The repository's own configuration: every key that runs a program or rewrites bytes in the human's session.
# (how the robot sets it, the key the refusal names, the one command it gives to remove it)
CONFIG_ATTACKS = [
    (["core.hooksPath", "{ctl}/hooks"], "core.hooksPath", "git config --local --unset-all core.hooksPath"),
    (["core.fsmonitor", "{ctl}/prog"], "core.fsmonitor", "git config --local --unset-all core.fsmonitor"),
    (
        ["filter.tidy.clean", "{ctl}/prog"],
        "filter.tidy.clean",
        "git config --local --remove-section filter.tidy",
    ),
    (
        ["filter.tidy.process", "{ctl}/prog"],
        "filter.tidy.process",
        "git config --local --remove-section filter.tidy",
    ),
    (["gpg.program", "{ctl}/prog"], "gpg.program", "git config --local --unset-all gpg.program"),
    (["gpg.ssh.program", "{ctl}/prog"], "gpg.ssh.program", "git config --local --unset-all gpg.ssh.program"),
    (
        ["gpg.ssh.defaultKeyCommand", "{ctl}/prog"],
        "gpg.ssh.defaultKeyCommand",
        "git config --local --unset-all gpg.ssh.defaultKeyCommand",
    ),
    (
        ["gpg.x509.program", "{ctl}/prog"],
        "gpg.x509.program",
        "git config --local --unset-all gpg.x509.program",
    ),
    (["include.path", "{ctl}/more.inc"], "include.path", "git config --local --unset-all include.path"),
    (
        ["includeIf.gitdir:/.path", "{ctl}/more.inc"],
        "includeif.gitdir:/.path",
        "git config --local --unset-all includeif.gitdir:/.path",
    ),
    (["diff.external", "{ctl}/prog"], "diff.external", "git config --local --unset-all diff.external"),
    (["diff.md.textconv", "{ctl}/prog"], "diff.md.textconv", "git config --local --remove-section diff.md"),
    (["core.sshCommand", "{ctl}/prog"], "core.sshCommand", "git config --local --unset-all core.sshCommand"),
]


@pytest.mark.parametrize(
    ("setting", "key", "removal"), CONFIG_ATTACKS, ids=[row[1] for row in CONFIG_ATTACKS]
)
def test_the_repositorys_own_config_that_runs_code_is_refused_before_anything_is_written(
    clone: Clone, setting: list[str], key: str, removal: str
) -> None:
    ctl = clone.tmp / "ctl"
    ran = ctl / "ran"
    write(ctl / "prog", f"#!/bin/sh\n: > {ran}\ncat\n").chmod(0o755)
    write(ctl / "hooks" / "pre-commit", f"#!/bin/sh\n: > {ran}\n").chmod(0o755)
    write(ctl / "more.inc", f"[core]\n\thooksPath = {ctl}/hooks\n")
    write(clone.repo / ".git" / "info" / "attributes", "*.md filter=tidy diff=md\n")
    git(clone.repo, "config", setting[0], setting[1].format(ctl=ctl))
    head = git(clone.repo, "rev-parse", "HEAD")

    refused = human_approves(clone, "1.vision")
    assert (refused.code, refused.out) == (2, ""), refused.out
    assert len(refused.err.splitlines()) == 1
    assert refused.err.startswith(f"error: this repository's own git configuration sets {key} (in ")
    assert f"remove it: {removal}" in refused.err and "; or approve in a clone only you write" in refused.err
    assert not ran.exists()  # refused before git ran anything that could start it
    assert not (clone.route / ".route").exists() and git(clone.repo, "rev-parse", "HEAD") == head

    subprocess.run(["bash", "-c", removal], cwd=clone.repo, check=True)  # the fix it names works
    assert human_approves(clone, "1.vision").code == 0


def test_worktree_config_and_included_files_count_and_a_git_worktree_shares_the_robots_config(
    clone: Clone,
) -> None:
    ctl = write(clone.tmp / "ctl" / "more.inc", '[gpg "ssh"]\n\tprogram = /bin/false\n').parent
    git(clone.repo, "config", "extensions.worktreeConfig", "true")
    git(clone.repo, "config", "--worktree", "core.hooksPath", str(ctl))
    refused = human_approves(clone, "1.vision")
    assert refused.code == 2
    assert "sets core.hooksPath (in .git/config.worktree)" in refused.err
    assert "remove it: git config --worktree --unset-all core.hooksPath" in refused.err
    git(clone.repo, "config", "--worktree", "--unset", "core.hooksPath")

    # A second work tree of the robot's clone reads the same .git/config: no way around it.
    git(clone.repo, "config", "include.path", str(ctl / "more.inc"))
    other = clone.tmp / "other"
    git(clone.repo, "worktree", "add", "-q", "-b", "approving", str(other))
    refused = human_approves(clone, "1.vision", repo=other)
    assert refused.code == 2
    # The included file's setting is named where it is written, with the command that removes it there.
    assert (
        "sets include.path (in " in refused.err
        and "gpg.ssh.program (in " + str(ctl / "more.inc") in refused.err
    )
    assert f"git config --file {ctl / 'more.inc'} --unset-all gpg.ssh.program" in refused.err
    assert not (other / "route" / ".route").exists()


def test_policy_approve_refuses_the_same_configuration(clone: Clone) -> None:
    git(clone.repo, "config", "core.hooksPath", str(clone.tmp))
    write(clone.route / "2.plan.guard", "judges: []\n")  # a policy change for the human to approve
    robot_commit(clone.repo, "weaken")
    refused = run_route(["route.policy.approve", "--route", "route"], clone.repo, human=True, env=clone.human)
    assert refused.code == 2
    assert refused.err.startswith("error: this repository's own git configuration sets core.hooksPath (in ")
    assert not (clone.route / ".route" / "policy.approved").exists()


# ---------------------------------------------------------------- one approval, one marker


def test_two_markers_in_one_commit_are_forged_whoever_signed_it(clone: Clone) -> None:
    for stone in ("1.vision", "2.plan"):
        assert human_approves(clone, stone, "--no-commit").code == 0
    human_git(clone, "add", "--", MARKER_1, MARKER_2)
    human_git(clone, "commit", "-q", "-m", "approve both")  # signed by the human: commit.gpgsign
    robot_passes_everything(clone)
    done = ci(clone)
    assert done.code == 2
    verdict = lines_of(done)
    assert re.fullmatch(
        r"forged: its approval marker arrived in commit [0-9a-f]{12} together with other changes "
        r"\(route/\.route/2\.plan\.approved\); an approval counts only in a commit of its own, .*",
        verdict["route/1.vision"],
    ), verdict
    assert "together with other changes (route/.route/1.vision.approved" in verdict["route/2.plan"]
    # Approving each again makes two approval commits of their own: then both hold.
    for stone in ("1.vision", "2.plan"):
        again = human_approves(clone, stone)
        assert again.code == 0 and "stone approved again" in again.out, again.out
    robot_passes_everything(clone)
    assert ci(clone).code == 0


def test_the_approve_command_checks_its_own_commit(tmp_path: Path) -> None:
    """What an approval commit is checked against after git made it: exactly its paths, on the HEAD it
    was made on. (Nothing in this package can make git do otherwise any more: hooks are off and the
    configuration is checked; so the check is exercised on commits made by hand.)"""
    from routedriver import gitops
    from routedriver.route.approval_commit import check_commit

    repo = tmp_path / "r"
    repo.mkdir()
    git(repo, "init", "-q")
    write(repo / "a" / ".route" / "1.x.approved", "marker\n")
    write(repo / "other.txt", "rides along\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "first")
    found = gitops.find_repo(repo)
    assert found is not None
    head = git(repo, "rev-parse", "HEAD").strip()
    blob = git(repo, "rev-parse", "HEAD:a/.route/1.x.approved").strip()
    with pytest.raises(Refused) as mixed:
        check_commit(found, head, None, ["a/.route/1.x.approved"], {"a/.route/1.x.approved": blob})
    assert mixed.value.what == f"the approval commit {head[:12]} also changes other.txt"
    assert "git reset --soft HEAD~1" in str(mixed.value.fix)
    write(repo / "a" / ".route" / "1.x.approved", "marker, again\n")
    git(repo, "commit", "-q", "-am", "second")
    second = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "switch", "-q", "-c", "side", "HEAD~1")
    write(repo / "side.txt", "side\n")
    git(repo, "add", "side.txt")
    git(repo, "commit", "-q", "-m", "side")
    git(repo, "merge", "-q", "--no-edit", "main")
    merged = git(repo, "rev-parse", "HEAD").strip()
    with pytest.raises(Refused) as merge:  # not what git commit -- <paths> makes
        check_commit(found, merged, second, ["a/.route/1.x.approved"], {})
    assert f"the approval commit {merged[:12]} is not an ordinary commit on {second[:12]}" in merge.value.what
    git(repo, "switch", "-q", "main")
    with pytest.raises(Refused) as other_bytes:
        check_commit(found, second, head, ["a/.route/1.x.approved"], {"a/.route/1.x.approved": blob})
    assert "holds other bytes for a/.route/1.x.approved" in other_bytes.value.what
    check_commit(found, second, head, ["a/.route/1.x.approved"], {})  # what an approval commit is


def test_no_commit_prints_the_exact_command_and_nothing_staged_rides_along(clone: Clone) -> None:
    write(clone.repo / "notes.txt", "the human's own staged work\n")
    human_git(clone, "add", "notes.txt")
    done = human_approves(clone, "1.vision", "--no-commit")
    assert done.code == 0, done.err
    *_, said, command = done.out.splitlines()
    assert said == "  not committed (--no-commit); commit it alone, with hooks off:"
    paths = f"{MARKER_1} route/.route/.gitignore"
    assert command == (
        f"  git add -- {paths} && git -c core.hooksPath=/dev/null commit --no-verify "
        f"-m 'route(route): approve 1.vision' -- {paths}"
    )
    ran = robot_hook(clone, "post-commit", "exit 0\n")
    write(clone.repo / ".git" / "info" / "exclude", ".ctl/\n")
    subprocess.run(["bash", "-c", command], cwd=clone.repo, env={**os.environ, **clone.human}, check=True)
    assert not ran.exists()  # the printed command runs no hook either
    assert committed_files(clone.repo) == ["route/.route/.gitignore", MARKER_1]
    assert "-----BEGIN SSH SIGNATURE-----" in git(clone.repo, "cat-file", "commit", "HEAD")
    assert git(clone.repo, "diff", "--cached", "--name-only").split() == ["notes.txt"]
    robot_passes_everything(clone)
    done = ci(clone)
    assert done.code == 2  # 2.plan still waits for the human; 1.vision is approved and passed
    assert lines_of(done)["route/1.vision"].startswith("passed: ")


def test_an_honest_approval_and_an_approval_of_new_content_verify_in_ci(clone: Clone) -> None:
    for stone in ("1.vision", "2.plan"):
        assert human_approves(clone, stone).code == 0
    robot_passes_everything(clone)
    assert ci(clone).code == 0
    write(clone.route / "2.plan.md", "# Plan, second draft\n")
    robot_commit(clone.repo, "a better plan")
    assert human_approves(clone, "2.plan").code == 0
    robot_passes_everything(clone)
    done = ci(clone)
    assert done.code == 0, done.out


def test_approving_in_a_clean_clone_of_ones_own_then_merging_verifies(clone: Clone) -> None:
    """The safe way: the robot pushes its branch; the human clones it where the robot cannot write,
    approves there, pushes; the robot merges. The robot's clone may hold anything meanwhile."""
    origin = clone.tmp / "origin.git"
    git(clone.tmp, "clone", "-q", "--bare", str(clone.repo), str(origin))
    robot_git(clone.repo, "remote", "add", "origin", str(origin))
    robot_git(clone.repo, "switch", "-q", "-c", "work")
    write(clone.route / "1.vision.md", "# Vision, by the robot\n")
    robot_commit(clone.repo, "vision")
    robot_git(clone.repo, "push", "-q", "origin", "work")
    git(clone.repo, "config", "core.hooksPath", str(clone.tmp / "robot-hooks"))  # the robot's clone: anything

    mine = clone.tmp / "mine"
    human_git(clone, "clone", "-q", "--branch", "work", str(origin), str(mine), cwd=clone.tmp)
    assert human_approves(clone, "1.vision", repo=mine).code == 0
    assert human_approves(clone, "2.plan", repo=mine).code == 0
    human_git(clone, "push", "-q", "origin", "work", cwd=mine)

    write(clone.route / "3.ship.md", "# Shipped, meanwhile\n")
    robot_commit(clone.repo, "meanwhile")
    robot_git(clone.repo, "pull", "-q", "--no-rebase", "--no-edit", "origin", "work")  # a merge commit
    robot_passes_everything(clone)
    done = ci(clone)
    assert done.code == 0, done.out


# ---------------------------------------------------------------- filters and conversions


def test_a_clean_filter_from_the_robots_attributes_cannot_make_the_human_approve_other_bytes(
    clone: Clone,
) -> None:
    """The filter driver is the human's own (their global configuration: say, a formatter they use); the
    robot names it for the artifact in .git/info/attributes. git would store other bytes than the file the
    human read holds, and CI would check those out: the approval is refused, naming the file."""
    human, _ = human_config(clone.tmp, '[filter "shout"]\n\tclean = tr a-z A-Z\n\tsmudge = cat\n')
    clone = clone._replace(human=human)
    write(clone.repo / ".git" / "info" / "attributes", "route/2.plan.md filter=shout\n")
    head = git(clone.repo, "rev-parse", "HEAD")
    refused = human_approves(clone, "2.plan")
    assert (refused.code, refused.out) == (2, "")
    assert refused.err.startswith(
        "error: git would store other bytes for route/2.plan.md than the file holds (a filter, "
    )
    assert "git check-attr -a -- route/2.plan.md shows it" in refused.err
    assert not (clone.route / ".route" / "2.plan.approved").exists()
    assert git(clone.repo, "rev-parse", "HEAD") == head
    # The same filter on a file whose bytes it leaves alone changes nothing: approved.
    write(clone.route / "2.plan.md", "# PLAN\n")
    robot_commit(clone.repo, "plan")
    assert human_approves(clone, "2.plan").code == 0


@pytest.mark.parametrize(
    ("attributes", "data"),
    [
        ("*.md text=auto\n", b"# Vision\r\nline\r\n"),
        ("*.md text eol=lf\n", b"# Vision\r\n"),
        ("*.md ident\n", b"# Vision $Id: made up by the robot $\n"),
        ("route/*.md working-tree-encoding=UTF-16\n", "# Vision\n".encode("utf-16")),
    ],
    ids=["text-auto", "eol-lf", "ident", "encoding"],
)
def test_a_conversion_that_changes_the_bytes_refuses_the_approval(
    clone: Clone, attributes: str, data: bytes
) -> None:
    write(clone.repo / ".gitattributes", attributes)
    robot_git(clone.repo, "add", ".gitattributes")
    robot_git(clone.repo, "commit", "-q", "-m", "attributes")
    (clone.route / "1.vision.md").write_bytes(data)
    refused = human_approves(clone, "1.vision")
    assert refused.code == 2
    assert refused.err.startswith(
        "error: git would store other bytes for route/1.vision.md than the file holds"
    )


def test_an_approval_hashes_the_bytes_on_disk_and_a_faithful_file_approves(clone: Clone) -> None:
    write(clone.repo / ".gitattributes", "*.md text=auto\n")
    robot_commit(clone.repo, "attributes")
    assert human_approves(clone, "1.vision").code == 0  # LF on disk: what git stores
    marker = (clone.route / ".route" / "1.vision.approved").read_text()
    on_disk = git(clone.repo, "hash-object", "--no-filters", "route/1.vision.md").strip()
    assert f"artifact: {on_disk} route/1.vision.md\n" in marker


# ---------------------------------------------------------------- symlinked artifacts

LINKED = (
    "artifact route/2.plan.md is a symlink (to ../docs/plan.md): a pass or an approval binds what a file "
    "holds, and git stores only a link's text, so what it points at could change under them; make it the "
    "file itself, not a link to it"
)


def test_a_symlinked_artifact_of_a_gated_stone_is_refused_and_never_verifies(clone: Clone) -> None:
    write(clone.repo / "docs" / "plan.md", "# The plan the human read\n")
    (clone.route / "2.plan.md").unlink()
    os.symlink("../docs/plan.md", clone.route / "2.plan.md")
    robot_commit(clone.repo, "plan as a link")

    refused = human_approves(clone, "2.plan")
    assert (refused.code, refused.out) == (2, "")
    assert refused.err == f"error: {LINKED}\n"
    assert not (clone.route / ".route" / "2.plan.approved").exists()
    # The robot is told to fix it when it runs the guard: a gate no human could open is not a wait.
    assert route_set(clone.repo, clone.route, "1.vision").code == 2  # waits for the human, as before
    assert human_approves(clone, "1.vision").code == 0
    assert route_set(clone.repo, clone.route, "1.vision").code == 0
    robot = route_set(clone.repo, clone.route, "2.plan")
    assert robot.code == 2
    assert robot.err == f"error: {LINKED}\n"


def test_an_approved_file_swapped_for_a_link_with_the_same_id_is_not_approved_in_ci(clone: Clone) -> None:
    """git names a link by its target's text, so a file holding exactly that text has the link's id: the
    robot has the human approve such a file, passes, then swaps in the link; what it points at is the
    robot's. CI does not take it."""
    (clone.route / "2.plan.md").write_bytes(b"../docs/plan.md")
    write(clone.repo / "docs" / "plan.md", "# Whatever the robot likes, later\n")
    robot_commit(clone.repo, "plan")
    for stone in ("1.vision", "2.plan"):
        assert human_approves(clone, stone).code == 0
    robot_passes_everything(clone)
    assert ci(clone).code == 0
    (clone.route / "2.plan.md").unlink()
    os.symlink("../docs/plan.md", clone.route / "2.plan.md")
    robot_commit(clone.repo, "link")
    done = ci(clone)
    assert done.code == 2
    assert lines_of(done)["route/2.plan"] == f"broken: {LINKED}"
