"""``route.init --approver-me`` (issue 21 §3): who may approve, written for the current git identity only when
asked, suggested when missing, and never over someone else's list."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import TEST_EMAIL, git, run_cli

HINT = "route.init --approver-me   # writes .route-approvers listing you, who may approve"


def test_it_writes_the_approvers_file_for_the_git_identity(git_repo: Path) -> None:
    done = run_cli(["route.init", "--approver-me"], git_repo)
    assert (done.code, done.err) == (0, "")
    assert done.out == f".route-approvers: lists {TEST_EMAIL}, who may approve (commit it to main first)\n"
    text = (git_repo / ".route-approvers").read_text(encoding="utf-8")
    assert text.splitlines()[-1] == TEST_EMAIL and text.startswith("# Who may approve")
    # route.verify reads it as the list of approvers.
    from routedriver.route.provenance import parse_approvers

    assert parse_approvers(text) == {TEST_EMAIL}
    again = run_cli(["route.init", "--approver-me"], git_repo)
    assert (again.code, again.out) == (0, f".route-approvers: lists {TEST_EMAIL} already; nothing written\n")
    assert (git_repo / ".route-approvers").read_text(encoding="utf-8") == text


def test_from_a_subdirectory_it_writes_at_the_top_level_with_a_new_route(git_repo: Path) -> None:
    sub = git_repo / "deep"
    sub.mkdir()
    git(git_repo, "switch", "-q", "-c", "feature/x")
    done = run_cli(["route.init", "routes/x", "--approver-me"], sub)
    assert done.code == 0, done.err
    assert (git_repo / ".route-approvers").is_file() and (sub / "routes" / "x" / "1.spec.stone").is_file()
    assert HINT not in done.err  # asked already: nothing to suggest


def test_never_without_being_asked_but_suggested_when_missing(git_repo: Path) -> None:
    done = run_cli(["route.init", "routes/x"], git_repo)
    assert done.code == 0
    assert not (git_repo / ".route-approvers").exists()
    assert HINT in done.err
    assert "before the first pull request: the approvers file (and signers) must be on main" in done.err
    (git_repo / ".route-approvers").write_text("someone@example.com\n", encoding="utf-8")
    other = run_cli(["route.init", "routes/y"], git_repo)
    assert other.code == 0 and HINT not in other.err  # a list exists: nothing to suggest


def test_someone_elses_list_is_refused_before_anything_is_written(git_repo: Path) -> None:
    listed = git_repo / ".route-approvers"
    listed.write_text("# the leads\nlead@example.com\n", encoding="utf-8")
    done = run_cli(["route.init", "routes/x", "--approver-me"], git_repo)
    assert (done.code, done.out) == (2, "")
    assert done.err == (
        f"error: .route-approvers exists and does not list you ({TEST_EMAIL}); add your email to it yourself "
        "(one a line), or leave out --approver-me\n"
    )
    assert listed.read_text(encoding="utf-8") == "# the leads\nlead@example.com\n"
    assert not (git_repo / "routes").exists()  # refused before the route was written too


def test_outside_git_or_without_an_identity_it_refuses_in_one_line(tmp_path: Path, git_repo: Path) -> None:
    outside = run_cli(["route.init", "--approver-me"], tmp_path)
    assert outside.code == 2 and outside.err.startswith("error: --approver-me writes .route-approvers at the")
    nobody = run_cli(
        ["route.init", "--approver-me"],
        git_repo,
        env={
            "GIT_CONFIG_GLOBAL": "/dev/null",
            "HOME": str(tmp_path),
            # No guessing an email from the host name either (git does where it can resolve one).
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": "user.useConfigOnly",
            "GIT_CONFIG_VALUE_0": "true",
        },
    )
    assert nobody.code == 2 and len(nobody.err.splitlines()) == 1, nobody.err
    assert nobody.err.startswith("error: --approver-me lists your git")
    assert not (git_repo / ".route-approvers").exists()
    assert run_cli(["route.init", "--approver-me", "--list"], git_repo).code == 2
