"""gitops.hash_files: one git process for many files, with git's conversions or without, ids exactly as
``git hash-object`` gives them file by file."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from routedriver import gitops
from tests.conftest import git


def git_hash(repo: Path, path: str, *flags: str) -> str:
    """``git hash-object`` on one file, the way a person would check an id."""
    return git(repo, "hash-object", *flags, "--", path).strip()


def hash_object_runs(trace: Path) -> int:
    """How many ``git hash-object`` processes wrote to the GIT_TRACE file ``trace``."""
    if not trace.exists():
        return 0
    return sum("built-in: git hash-object" in line for line in trace.read_text().splitlines())


@pytest.fixture
def repo(git_repo: Path) -> gitops.Repo:
    found = gitops.find_repo(git_repo)
    assert found is not None
    return found


def test_many_files_are_hashed_by_one_git_process_in_both_modes(
    repo: gitops.Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    top = repo.toplevel
    paths = []
    for index in range(300):
        (top / "docs").mkdir(exist_ok=True)
        (top / "docs" / f"{index:03}.md").write_bytes(os.urandom(index))
        paths.append(f"docs/{index:03}.md")
    trace = tmp_path / "trace"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    stored = gitops.hash_files(repo, paths, filters="git")
    assert hash_object_runs(trace) == 1
    raw = gitops.hash_files(repo, paths, filters="none")
    assert hash_object_runs(trace) == 2
    monkeypatch.delenv("GIT_TRACE")
    for path in paths[::37]:
        assert stored[path] == raw[path] == git_hash(top, path)
    assert list(stored) == paths


def test_git_conversions_apply_only_when_asked(repo: gitops.Repo) -> None:
    top = repo.toplevel
    (top / ".gitattributes").write_text("*.txt text=auto\n*.up filter=upper\n")
    git(top, "config", "filter.upper.clean", "tr a-z A-Z")
    (top / "crlf.txt").write_bytes(b"one\r\ntwo\r\n")
    (top / "shout.up").write_bytes(b"quiet words\n")
    (top / "plain.md").write_bytes(b"no attribute\r\n")
    paths = ["crlf.txt", "shout.up", "plain.md"]
    stored = gitops.hash_files(repo, paths, filters="git")
    raw = gitops.hash_files(repo, paths, filters="none")
    for path in paths:
        assert stored[path] == git_hash(top, path)
        assert raw[path] == git_hash(top, path, "--no-filters")
    # What git would store differs from the bytes on disk where a conversion applies, and only there.
    assert stored["crlf.txt"] != raw["crlf.txt"]
    assert stored["shout.up"] != raw["shout.up"]
    assert stored["plain.md"] == raw["plain.md"]
    git(top, "add", "crlf.txt", "shout.up")
    staged = git(top, "ls-files", "-s", "crlf.txt", "shout.up").split()
    assert {staged[1], staged[5]} == {stored["crlf.txt"], stored["shout.up"]}


@pytest.mark.parametrize(
    "name",
    [
        '"quoted".md',  # a leading quote: git would unquote the line
        "line\nbreak.md",
        "ends-in-cr\r",
        "back\\slash.md",
        "tab\there.md",
        "-dash.md",
        "  spaces  .md",
        "caf\udce9.md",  # a byte that is not UTF-8, as os.listdir gives it
        "日本語.md",
    ],
)
def test_any_file_name_is_hashed_as_git_hashes_it(repo: gitops.Repo, name: str) -> None:
    top = repo.toplevel
    (top / name).write_bytes(b"content of " + os.fsencode(name) + b"\n")
    (top / "next.md").write_bytes(b"the file after it\n")
    found = gitops.hash_files(repo, [name, "next.md"], filters="git")
    assert found == {name: git_hash(top, name), "next.md": git_hash(top, "next.md")}


def test_a_symlink_is_hashed_as_the_link_git_stores_not_through_it(repo: gitops.Repo) -> None:
    top = repo.toplevel
    (top / "docs").mkdir()
    (top / "docs" / "real.md").write_text("the target's text\n")
    os.symlink("docs/real.md", top / "link.md")
    os.symlink("docs", top / "dirlink")
    git(top, "add", "link.md", "dirlink")
    staged = {line.split("\t")[1]: line.split()[1] for line in git(top, "ls-files", "-s").splitlines()}
    for filters in ("git", "none"):
        found = gitops.hash_files(repo, ["link.md", "dirlink"], filters=filters)
        assert found == {"link.md": staged["link.md"], "dirlink": staged["dirlink"]}
    assert staged["link.md"] != git_hash(top, "docs/real.md")


def test_a_file_git_cannot_hash_is_an_error_naming_it(repo: gitops.Repo) -> None:
    (repo.toplevel / "here.md").write_text("here\n")
    with pytest.raises(gitops.GitError, match="gone.md"):
        gitops.hash_files(repo, ["here.md", "gone.md"], filters="git")
    assert gitops.hash_files(repo, [], filters="none") == {}
