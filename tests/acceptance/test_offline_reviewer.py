"""The keyless reviewer (issue 21 §3): without an API key, a newcomer's first review says so in one short
line that names the variable and the offline reviewer, and the offline reviewer passes the route's stones."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import git, run_cli


def _feature_route(repo: Path) -> Path:
    ran = run_cli(["route.init", "routes/search"], repo)
    assert ran.code == 0, ran.err
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "route")
    spec = repo / "routes" / "search" / "1.spec.md"
    spec.write_text("# Spec\n## Acceptance criteria\n1. `search x` prints x\n", encoding="utf-8")
    return repo / "routes" / "search"


def _set(repo: Path, stone: str) -> tuple[int, str, str]:
    ran = run_cli(["route.stone.set", "--route", "routes/search", "--stone", stone, "--as", "passed"], repo)
    return ran.code, ran.out, ran.err


def test_without_a_key_the_review_fails_in_one_short_line_said_once(git_repo: Path) -> None:
    _feature_route(git_repo)
    code, out, err = _set(git_repo, "1.spec")
    assert code == 1
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: 1.spec: review r1 failed with exit 2: ")
    line = lines[0]
    assert "ANTHROPIC_API_KEY is not set" in line and "use the offline reviewer" in line
    assert "--atom scripted" in line
    assert len(line) < 280, line  # it was 600 characters, printed twice
    # Said once: stdout names the command that broke and its file, not the error again.
    assert (out + err).count("ANTHROPIC_API_KEY") == 1
    assert "review r1 failed with exit 2: bhrain run --skill review --atom claude" in out
    assert "review r1 fresh failed: routes/search/.route/1.spec.guard.review." in out


def test_the_offline_reviewer_passes_a_route_without_a_key_and_says_what_it_is(git_repo: Path) -> None:
    route = _feature_route(git_repo)
    guard = route / "1.spec.guard"
    guard.write_text(guard.read_text().replace("--atom claude", "--atom scripted"), encoding="utf-8")
    code, out, err = _set(git_repo, "1.spec")
    assert code == 0, out + err
    review = next((route / ".route").glob("1.spec.guard.review.*.r1.md")).read_text(encoding="utf-8")
    assert "Offline review (bhrain's keyless reviewer: no model read this" in review
    assert "blockers: 0\nnitpicks: 0" in review
    # It still blocks what it can see: a TODO left in the artifact.
    spec = route / "1.spec.md"
    spec.write_text(spec.read_text() + "TODO: the error case\n", encoding="utf-8")
    code, out, err = _set(git_repo, "1.spec")
    assert code == 2 and "blockers exceed threshold (1 > 0)" in out


def test_other_skills_still_need_a_script(tmp_path: Path) -> None:
    ran = run_cli(["bhrain", "run", "--skill", "act", "--atom", "scripted", "--input", "hi"], tmp_path)
    assert ran.code == 2
    assert ran.err == (
        "error: the scripted atom needs a script; pass --script FILE (JSON or YAML turns); only --skill "
        "review has a built-in one, the offline reviewer\n"
    )
