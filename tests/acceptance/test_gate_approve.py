"""Human approvals (issue 3): only at a terminal, recorded with who and what, committed alone."""

from __future__ import annotations

import fcntl
import json
import os
import select
import subprocess
import termios
import time
from pathlib import Path

from tests.conftest import TEST_EMAIL, TEST_NAME, git, run_cli
from tests.route.routes import state_files, write
from tests.route_gate.gate import approve, commit_all, gated_route, route_set


def test_a_robot_cannot_approve_and_nothing_is_written(git_repo: Path) -> None:
    route = gated_route(git_repo)
    argv = ["route.stone.set", "--route", str(route), "--stone", "1.vision", "--as", "approved"]
    for stdin in (None, "yes\n"):  # /dev/null, then a pipe a robot could type into
        refused = run_cli(argv, git_repo, input=stdin)
        assert refused.code == 2 and refused.out == ""
        assert refused.err.startswith("error: only humans can approve; a person runs route.stone.set")
        assert len(refused.err.splitlines()) == 1
    assert not (route / ".route").exists()
    assert git(git_repo, "log", "--oneline").count("\n") == 1  # only the initial commit


def test_a_human_approval_records_who_and_what_and_commits_only_the_marker(git_repo: Path) -> None:
    route = gated_route(git_repo)
    commit_all(git_repo, "route")
    write(git_repo / "staged.txt", "the human's own work\n")
    git(git_repo, "add", "staged.txt")
    write(git_repo / "unstaged.txt", "more work\n")

    done = approve(git_repo, route, "1.vision")
    assert done.code == 0, done.err
    assert done.out.startswith(f"stone approved: 1.vision by {TEST_NAME} <{TEST_EMAIL}>\n")
    assert "committed " in done.out

    marker = (route / ".route" / "1.vision.approved").read_text()
    blob = git(git_repo, "hash-object", "route/1.vision.md").strip()
    assert f"approver_name: {TEST_NAME}\n" in marker and f"approver_email: {TEST_EMAIL}\n" in marker
    assert f"artifact: {blob} route/1.vision.md\n" in marker
    assert "review_input_hash: " in marker and "approved_at: " in marker

    subject, author = git(git_repo, "log", "-1", "--format=%s%n%an <%ae>").splitlines()
    assert subject == "route(route): approve 1.vision"
    assert author == f"{TEST_NAME} <{TEST_EMAIL}>"
    # Only the marker (and, the first time, the driver's .route/.gitignore, so a branch switch does not
    # trip over it: an approval commit may hold that file).
    assert git(git_repo, "show", "--name-only", "--format=", "HEAD").split() == [
        "route/.route/.gitignore",
        "route/.route/1.vision.approved",
    ]
    # The human's other work is exactly as it was: staged stays staged, unstaged stays unstaged.
    assert git(git_repo, "diff", "--cached", "--name-only").split() == ["staged.txt"]
    assert "?? unstaged.txt" in git(git_repo, "status", "--porcelain")


def test_approving_twice_is_a_no_op_and_new_content_is_a_new_approval(git_repo: Path) -> None:
    route = gated_route(git_repo)
    commit_all(git_repo, "route")
    assert approve(git_repo, route, "1.vision").code == 0
    first = (route / ".route" / "1.vision.approved").read_bytes()
    head = git(git_repo, "rev-parse", "HEAD")

    again = approve(git_repo, route, "1.vision", "--json")
    assert again.code == 0
    payload = json.loads(again.out)
    assert payload["outcome"] == "already-approved" and payload["commit"] is None and payload["committed"]
    assert (route / ".route" / "1.vision.approved").read_bytes() == first
    assert git(git_repo, "rev-parse", "HEAD") == head

    write(route / "1.vision.md", "# Vision, second draft\n")
    second = approve(git_repo, route, "1.vision", "--json")
    assert second.code == 0 and json.loads(second.out)["outcome"] == "approved"
    assert git(git_repo, "rev-parse", "HEAD") != head
    assert git(git_repo, "log", "--format=%s").splitlines()[:2] == ["route(route): approve 1.vision"] * 2


def test_the_approved_judge_needs_an_approval_of_the_current_content(git_repo: Path) -> None:
    route = gated_route(git_repo)
    assert approve(git_repo, route, "1.vision").code == 0
    assert route_set(git_repo, route, "1.vision").code == 0
    write(route / "1.vision.md", "# Vision, edited after the approval\n")
    waiting = route_set(git_repo, route, "1.vision")
    assert waiting.code == 2
    assert "wait for human approval (an approval exists, but for older content" in waiting.out
    assert "since then: changed route/1.vision.md" in waiting.out
    assert "1.vision.passed" not in state_files(route)  # rejected content is never "passed"


def test_no_commit_and_a_rerun_commits_the_recorded_approval(git_repo: Path) -> None:
    route = gated_route(git_repo)
    commit_all(git_repo, "route")
    head = git(git_repo, "rev-parse", "HEAD")
    # --no-commit leaves exactly the state of a run killed between writing the marker and committing it.
    written = approve(git_repo, route, "1.vision", "--no-commit")
    assert written.code == 0 and "not committed (--no-commit)" in written.out
    assert git(git_repo, "rev-parse", "HEAD") == head
    marker = (route / ".route" / "1.vision.approved").read_bytes()
    rerun = approve(git_repo, route, "1.vision", "--json")
    payload = json.loads(rerun.out)
    assert payload["outcome"] == "already-approved" and payload["commit"]  # the recorded approval, committed
    assert (route / ".route" / "1.vision.approved").read_bytes() == marker
    # Only the marker (and, the first time, the driver's .route/.gitignore, so a branch switch does not
    # trip over it: an approval commit may hold that file).
    assert git(git_repo, "show", "--name-only", "--format=", "HEAD").split() == [
        "route/.route/.gitignore",
        "route/.route/1.vision.approved",
    ]


def test_a_failing_commit_keeps_the_marker_and_says_how_to_finish(git_repo: Path) -> None:
    route = gated_route(git_repo)
    lock = write(git_repo / ".git" / "index.lock", "")  # another git (or a killed one) holds the index
    failed = approve(git_repo, route, "1.vision")
    assert failed.code == 2
    assert failed.err.startswith("error: approval recorded in ")
    assert "but not committed" in failed.err and "index.lock" in failed.err
    assert "run the same command again" in failed.err
    assert (route / ".route" / "1.vision.approved").is_file()
    lock.unlink()
    assert "committed " in approve(git_repo, route, "1.vision").out


def test_outside_git_the_marker_is_written_and_not_committed(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    route = gated_route(plain)
    done = approve(plain, route, "1.vision")
    assert done.code == 0 and "not committed (not a git repository)" in done.out
    assert f"approver_email: {TEST_EMAIL}" in (route / ".route" / "1.vision.approved").read_text()


def test_commit_gpgsign_is_honoured(git_repo: Path, tmp_path: Path) -> None:
    from tests.route_gate.gate import ssh_signing

    route = gated_route(git_repo)
    ssh_signing(git_repo, tmp_path)
    assert approve(git_repo, route, "1.vision").code == 0
    signature = git(git_repo, "cat-file", "commit", "HEAD")
    assert "-----BEGIN SSH SIGNATURE-----" in signature


def test_the_signing_passphrase_is_asked_at_the_approvers_terminal(git_repo: Path, tmp_path: Path) -> None:
    """No agent holds the key: ssh-keygen asks for its passphrase on /dev/tty. The approval commit runs git
    in the approver's session, so the prompt reaches them, what they type signs the commit, and it
    verifies. A robot has no such terminal (the approval refuses without one, tested above)."""
    from tests.route_gate.gate import ssh_signing

    route = gated_route(git_repo)
    allowed = ssh_signing(git_repo, tmp_path, passphrase="correct horse")
    git(git_repo, "config", "gpg.ssh.allowedSignersFile", str(allowed))
    master, slave = os.openpty()

    def take_terminal() -> None:
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)  # the pty becomes this session's controlling terminal

    env = {k: v for k, v in os.environ.items() if k not in ("SSH_AUTH_SOCK", "SSH_ASKPASS", "DISPLAY")}
    argv = ["route.stone.set", "--route", str(route), "--stone", "1.vision", "--as", "approved"]
    started = subprocess.Popen(
        argv,
        cwd=git_repo,
        env=env,
        stdin=slave,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        preexec_fn=take_terminal,
    )
    os.close(slave)
    seen = b""
    try:
        deadline = time.monotonic() + 60
        while b"passphrase" not in seen.lower() and time.monotonic() < deadline:
            if select.select([master], [], [], 1)[0]:
                try:
                    seen += os.read(master, 1024)
                except OSError:  # EIO: nothing holds the terminal any more (the command ended unasked)
                    break
        assert b"passphrase" in seen.lower(), (seen, started.communicate(timeout=60))
        os.write(master, b"correct horse\n")
        out, err = started.communicate(timeout=60)
    finally:
        started.kill()
        os.close(master)
    assert started.returncode == 0, (out, err)
    git(git_repo, "verify-commit", "HEAD")  # raises unless the signature checks against the allowed key
    committed = git(git_repo, "show", "--name-only", "--format=", "HEAD").split()
    assert "route/.route/1.vision.approved" in committed
