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


# Paths (and an author) that look like the parts of git's log output: each must be read as what it is.
HOSTILE_PATHS = [
    ".gitignore",
    ".gitignore\x01" + "a" * 40,  # the start of a commit record, after a real path's prefix
    "\x01" + "b" * 40,  # a whole commit record
    ":000000 100644 " + "0" * 40 + " " + "c" * 40 + " A",  # a raw entry
    "\nlater.txt",  # a newline first
    "z.txt",
]


def test_history_is_read_by_position_whatever_the_paths_and_names_hold(git_repo: Path) -> None:
    for name in HOSTILE_PATHS:
        (git_repo / name).write_text("x\n", encoding="utf-8")  # (the .gitignore ignores nothing)
    git(git_repo, "add", "-A")
    author = "Robot\x01" + "d" * 40
    git(git_repo, "-c", f"user.name={author}", "commit", "-q", "-m", "hostile names")
    head = git(git_repo, "rev-parse", "HEAD").strip()
    repo = gitops.find_repo(git_repo)
    assert repo is not None
    changed = gitops.changed_paths(repo, [head])
    assert changed == {head: frozenset(HOSTILE_PATHS)}
    last = gitops.last_commits(repo, HOSTILE_PATHS)
    assert set(last) == set(HOSTILE_PATHS)
    assert {info.sha for info in last.values()} == {head}
    assert {info.author_name for info in last.values()} == {author}
    blob = git(git_repo, "rev-parse", "HEAD:z.txt").strip()
    assert last["z.txt"].blob == blob


def test_attributes_that_change_the_bytes_a_checkout_writes_are_found_in_one_call(git_repo: Path) -> None:
    (git_repo / ".gitattributes").write_text(
        "*.txt text eol=lf\nwide.md working-tree-encoding=UTF-16LE\ncrlf.md eol=crlf\nid.md ident\n"
        "lfs.bin filter=lfs\n",
        encoding="utf-8",
    )
    repo = gitops.find_repo(git_repo)
    assert repo is not None
    paths = ["a.txt", "wide.md", "crlf.md", "id.md", "lfs.bin", "plain.md", "new\nline.md"]
    assert gitops.checkout_conversions(repo, paths) == {
        "wide.md": "working-tree-encoding=UTF-16LE",
        "crlf.md": "eol=crlf",
        "id.md": "ident",
        "lfs.bin": "filter=lfs",
    }


def test_find_repo_says_whether_the_clone_is_shallow_and_a_full_one_asks_git_nothing_more(
    git_repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for message in ("one", "two"):
        git(git_repo, "commit", "-q", "--allow-empty", "-m", message)
    clone = tmp_path / "shallow"
    git(tmp_path, "clone", "-q", "--depth", "1", f"file://{git_repo}", str(clone))
    full, cut = gitops.find_repo(git_repo), gitops.find_repo(clone)
    assert full is not None and cut is not None
    assert (full.shallow, cut.shallow) == (False, True)
    trace = tmp_path / "trace"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    assert gitops.shallow_boundary(full) is None
    assert not trace.exists()  # find_repo's rev-parse already said so
    assert gitops.shallow_boundary(cut) == {git(clone, "rev-parse", "HEAD").strip()}
    # A Repo made without asking (None) is asked.
    assert gitops.shallow_boundary(full._replace(shallow=None)) is None
    assert "rev-parse" in trace.read_text()
