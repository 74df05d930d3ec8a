"""Content ids are git blob ids; files git already knows are not read; hashes are portable across clones."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from routedriver import gitops
from routedriver.errors import Refused
from routedriver.route import compute_stone_judge_input_hash, compute_stone_review_input_hash, hashing
from tests.conftest import git
from tests.route.routes import make_route, write


def hash_object(repo: Path, path: Path) -> str:
    return git(repo, "hash-object", "--no-filters", str(path)).strip()


@pytest.mark.parametrize("size", [0, 1, 4095, hashing.CHUNK, hashing.CHUNK * 2 + 17])
def test_blob_id_equals_git_hash_object(git_repo: Path, size: int) -> None:
    path = git_repo / "blob.bin"
    path.write_bytes(os.urandom(size))
    assert hashing.blob_id(path) == hash_object(git_repo, path)


def test_sha256_repositories_use_sha256_blob_ids(tmp_path: Path) -> None:
    repo = tmp_path / "repo256"
    repo.mkdir()
    git(repo, "init", "-q", "--object-format=sha256")
    path = write(repo / "a.md", "hello\n")
    found = gitops.find_repo(repo)
    assert found is not None and found.object_format == "sha256"
    ids = hashing.content_ids([path], repo, found)
    assert ids.ids["a.md"] == hash_object(repo, path)
    assert len(ids.ids["a.md"]) == 64


def test_committed_unmodified_files_come_from_the_index_without_reading(git_repo: Path) -> None:
    paths = [write(git_repo / "docs" / f"{index}.md", f"doc {index}\n" * index) for index in range(5)]
    untracked = write(git_repo / "docs" / "new.md", "new\n")
    git(git_repo, "add", "docs/0.md", "docs/1.md", "docs/2.md", "docs/3.md", "docs/4.md")
    git(git_repo, "commit", "-q", "-m", "docs")
    repo = gitops.find_repo(git_repo)
    assert repo is not None and repo.toplevel == git_repo
    fast = hashing.content_ids([*paths, untracked], git_repo, repo)
    slow = hashing.content_ids([*paths, untracked], git_repo, None)
    assert fast.ids == slow.ids
    assert fast.read_from_disk == {"docs/new.md"}
    assert slow.read_from_disk == set(slow.ids)
    assert fast.ids["docs/3.md"] == hash_object(git_repo, paths[3])


def test_a_modified_tracked_file_is_read_even_when_its_size_and_second_are_unchanged(git_repo: Path) -> None:
    path = write(git_repo / "a.md", "aaaa\n")
    git(git_repo, "add", "a.md")
    git(git_repo, "commit", "-q", "-m", "a")
    stat = path.stat()
    path.write_text("bbbb\n")  # same size, and restore the old mtime: only the content tells them apart
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    repo = gitops.find_repo(git_repo)
    ids = hashing.content_ids([path], git_repo, repo)
    assert ids.ids["a.md"] == hash_object(git_repo, path)
    assert ids.read_from_disk == {"a.md"}


@pytest.mark.parametrize("bit", ["--assume-unchanged", "--skip-worktree"])
def test_a_file_git_is_told_not_to_look_at_is_read_from_disk(git_repo: Path, bit: str) -> None:
    route = make_route(git_repo, {"1.a": "a\n"})
    artifact = write(route / "1.a.md", "one\n")
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "route")
    committed = compute_stone_review_input_hash(route, "1.a")
    git(git_repo, "update-index", bit, "route/1.a.md")
    write(artifact, "two\n")  # git now says the file is unchanged: it does not look
    assert git(git_repo, "diff-files", "--name-only") == ""
    changed = compute_stone_review_input_hash(route, "1.a")
    assert changed != committed  # the old reviews must not be reused for the new content
    repo = gitops.find_repo(git_repo)
    ids = hashing.content_ids([artifact], git_repo, repo)
    assert ids.ids["route/1.a.md"] == hash_object(git_repo, artifact)
    assert ids.read_from_disk == {"route/1.a.md"}
    git(git_repo, "update-index", bit.replace("--", "--no-", 1), "route/1.a.md")
    assert compute_stone_review_input_hash(route, "1.a") == changed  # the same content, the same hash


def test_git_index_is_never_written(git_repo: Path) -> None:
    path = write(git_repo / "a.md", "a\n")
    git(git_repo, "add", "a.md")
    git(git_repo, "commit", "-q", "-m", "a")
    path.touch()  # stale stat info: `git status` would refresh (rewrite) the index now
    index = git_repo / ".git" / "index"
    before = (index.read_bytes(), index.stat().st_mtime_ns)
    hashing.content_ids([path], git_repo, gitops.find_repo(git_repo))
    assert (index.read_bytes(), index.stat().st_mtime_ns) == before


def test_outside_git_everything_is_hashed_relative_to_the_cwd(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    path = write(plain / "x" / "a.md", "a\n")
    assert gitops.find_repo(plain) is None
    ids = hashing.content_ids([path], plain, None)
    assert list(ids.ids) == ["x/a.md"]
    expected = subprocess.run(
        ["git", "hash-object", "--no-filters", str(path)], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert ids.ids["x/a.md"] == expected


def _thread_names_started_while(work: Callable[[], object]) -> list[str]:
    """The names of the threads that ``work`` started (seen by a profile hook each new thread runs)."""
    names: list[str] = []

    def seen(*_args: object) -> None:
        names.append(threading.current_thread().name)
        sys.setprofile(None)  # one record per thread is enough

    threading.setprofile(seen)
    try:
        work()
    finally:
        threading.setprofile(None)
    return names


def test_large_files_hash_on_threads_and_small_ones_in_order_between_them(git_repo: Path) -> None:
    sizes = [hashing.THREADED_MIN_SIZE + 3, 2048, hashing.THREADED_MIN_SIZE * 2, 0, 2048, hashing.CHUNK]
    paths = [git_repo / f"file{index}.bin" for index in range(len(sizes))]
    for path, size in zip(paths, sizes, strict=True):
        path.write_bytes(os.urandom(size))
    found: list[hashing.ContentIds] = []
    names = _thread_names_started_while(lambda: found.append(hashing.content_ids(paths, git_repo, None)))
    assert [found[0].ids[path.name] for path in paths] == [hash_object(git_repo, path) for path in paths]
    assert any(name.startswith("hash-") for name in names), names


def test_small_files_hash_on_the_calling_thread(git_repo: Path) -> None:
    # 10,000 × 2 KB took 3-4 times as long on threads as on one: small files never start a thread, however
    # many bytes they add up to (here 9.6 MB), nor does one large file among them.
    paths = [git_repo / f"small{index}.txt" for index in range(300)] + [git_repo / "one-large.bin"]
    for path in paths[:-1]:
        path.write_bytes(os.urandom(32 << 10))
    paths[-1].write_bytes(os.urandom(hashing.THREADED_MIN_SIZE * 3))
    found: list[hashing.ContentIds] = []
    names = _thread_names_started_while(lambda: found.append(hashing.content_ids(paths, git_repo, None)))
    assert names == []  # no thread at all
    for path in paths[::50] + paths[-1:]:
        assert found[0].ids[path.name] == hash_object(git_repo, path)


def test_an_unreadable_artifact_among_many_is_refused_by_name(tmp_path: Path) -> None:
    paths = [write(tmp_path / f"a{index}.md", "a\n") for index in range(5)]
    (tmp_path / "a9.md").mkdir()
    with pytest.raises(Refused, match=r"cannot hash .*a9\.md: it is a directory, not a regular file"):
        hashing.content_ids([*paths, tmp_path / "a9.md"], tmp_path, None)


class _Unblocking:
    """A FIFO whose reader, should one open it, gets an end of file after ``seconds``: a regression that
    reads it makes the test fail rather than hang the suite."""

    def __init__(self, path: Path, seconds: float = 5.0) -> None:
        os.mkfifo(path)
        self.path = path
        self.timer = threading.Timer(seconds, self._release)

    def _release(self) -> None:
        with contextlib.suppress(OSError):
            os.close(os.open(self.path, os.O_WRONLY | os.O_NONBLOCK))  # ENXIO when nobody reads: fine

    def __enter__(self) -> Path:
        self.timer.start()
        return self.path

    def __exit__(self, *_exc: object) -> None:
        self.timer.cancel()


def test_a_fifo_is_refused_before_git_is_asked_to_hash_it(git_repo: Path) -> None:
    plain = write(git_repo / "a.md", "a\n")
    repo = gitops.find_repo(git_repo)
    assert repo is not None
    with _Unblocking(git_repo / "b.approved") as fifo:
        started = time.monotonic()
        with pytest.raises(gitops.Unhashable) as caught:
            gitops.hash_files(repo, ["a.md", "b.approved"], filters="git")
        assert caught.value.found == {"b.approved": "a named pipe (FIFO)"}
        with pytest.raises(Refused, match=r"cannot hash b\.approved: it is a named pipe \(FIFO\), not a"):
            hashing.content_ids([plain, fifo], git_repo, repo, from_disk=True)
        # Hashing many stones' files together: the FIFO is left out (its stone refuses it), the rest hashed.
        found = hashing.content_ids_of(
            {"a.md": plain, "b.approved": fifo}, repo, from_disk=True, skip_unhashable=True
        )
        assert found.ids == {"a.md": hash_object(git_repo, plain)}
        assert time.monotonic() - started < 4, "something waited on the FIFO"


def test_a_fifo_or_a_device_outside_git_is_refused_without_waiting(tmp_path: Path) -> None:
    plain = write(tmp_path / "a.md", "a\n")
    with _Unblocking(tmp_path / "b.md") as fifo:
        started = time.monotonic()
        with pytest.raises(Refused, match=r"b\.md: it is a named pipe \(FIFO\), not a regular file"):
            hashing.content_ids([plain, fifo], tmp_path, None)
        assert time.monotonic() - started < 4, "something waited on the FIFO"
    (tmp_path / "zero.md").symlink_to("/dev/zero")  # outside git a link is followed: never read forever
    with pytest.raises(Refused, match=r"zero\.md: it is a character device, not a regular file"):
        hashing.content_ids([plain, tmp_path / "zero.md"], tmp_path, None)


def test_review_input_hash_is_canonical_json_of_sorted_pairs() -> None:
    import hashlib
    import json

    ids = {"b.md": "2" * 40, "a.md": "1" * 40}
    expected = hashlib.sha256(
        json.dumps([["a.md", "1" * 40], ["b.md", "2" * 40]], sort_keys=True, separators=(",", ":")).encode()
    ).hexdigest()
    assert hashing.review_input_hash(ids) == expected
    assert hashing.review_input_hash(dict(reversed(list(ids.items())))) == expected
    assert hashing.review_input_hash({"a.md": "1" * 40, "b.md": "3" * 40}) != expected
    assert hashing.review_input_hash({"c.md": "1" * 40, "b.md": "2" * 40}) != expected


def test_judge_input_hash_moves_with_each_input() -> None:
    base = hashing.judge_input_hash("r" * 64, [(1, "cmd", "s" * 64)], None)
    assert hashing.judge_input_hash("r" * 64, [(1, "cmd", "s" * 64)], None) == base
    assert hashing.judge_input_hash("x" * 64, [(1, "cmd", "s" * 64)], None) != base
    assert hashing.judge_input_hash("r" * 64, [(2, "cmd", "s" * 64)], None) != base
    assert hashing.judge_input_hash("r" * 64, [(1, "cmd2", "s" * 64)], None) != base
    assert hashing.judge_input_hash("r" * 64, [(1, "cmd", "t" * 64)], None) != base
    assert hashing.judge_input_hash("r" * 64, [(1, "cmd", "s" * 64)], "a" * 64) != base


def test_public_hashes_are_the_same_in_a_clone_elsewhere(git_repo: Path, tmp_path: Path) -> None:
    route = make_route(git_repo, {"1.vision": "write it\n"}, {"1.vision": "reviews: []\n"})
    write(route / "1.vision.md", "# vision\n")
    write(route / "1.vision.v2.md", "# vision 2\n")
    git(git_repo, "add", ".")
    git(git_repo, "commit", "-q", "-m", "route")
    clone = tmp_path / "elsewhere" / "clone"
    git(tmp_path, "clone", "-q", str(git_repo), str(clone))
    here = compute_stone_review_input_hash(route, "1.vision")
    there = compute_stone_review_input_hash(clone / "route", "1.vision")
    assert here == there and len(here) == 64
    assert compute_stone_judge_input_hash(route, "1.vision", here) == compute_stone_judge_input_hash(
        clone / "route", "1.vision"
    )
    (route / "1.vision.v2.md").write_text("# changed\n")
    assert compute_stone_review_input_hash(route, "1.vision") != here
    shutil.rmtree(clone)


def test_a_file_reached_through_a_link_leading_out_of_the_work_tree_is_refused(
    git_repo: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    write(outside / "doc.md", "outside\n")
    write(git_repo / "docs" / "real.md", "inside\n")
    os.symlink(outside, git_repo / "away")  # a directory link leading out
    os.symlink(git_repo / "docs", git_repo / "here")  # one that stays in
    os.symlink(outside / "doc.md", git_repo / "docs" / "out.md")

    def refuse(top: Path, paths: list[str]) -> None:  # told which paths are links, as file_kinds tells it
        hashing.refuse_escaping_links(top, paths, links={p for p in paths if os.path.islink(top / p)})

    refuse(git_repo, ["docs/real.md", "here/real.md", "README.md"])
    for path in ("away/doc.md", "docs/out.md"):
        with pytest.raises(Refused, match=f"artifact {path} is a symlink to {outside}/doc.md, outside"):
            refuse(git_repo, ["docs/real.md", path])
    # The work tree itself reached through a link: its files are still inside.
    os.symlink(git_repo, tmp_path / "checkout")
    refuse(tmp_path / "checkout", ["docs/real.md", "here/real.md"])
    with pytest.raises(Refused, match="artifact away/doc.md is a symlink"):
        refuse(tmp_path / "checkout", ["away/doc.md"])


@pytest.mark.parametrize(
    "values",
    [
        ("a" * 64, "b" * 40, "c" * 40, "d" * 40),
        ("a" * 64, "b" * 40, None, None),
        ("a" * 64, "b" * 64, "c" * 64, None),
        ("", "b" * 40, None, None),
        ('a"b', "b" * 40, None, None),
        ("a\\b", "b" * 40, "c\n", None),
        ("é" * 3, "b" * 40, None, "ß"),
        ("a-b", "b c", None, None),
    ],
)
def test_pass_key_is_sha256_of_canonical_json_whatever_the_values(
    values: tuple[str, str, str | None, str | None],
) -> None:
    import hashlib
    import json

    review, stone, guard, approval = values
    payload = {"review_input_hash": review, "stone_id": stone, "guard_id": guard, "approval_id": approval}
    text = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    expected = hashlib.sha256(text.encode("utf-8")).hexdigest()
    assert hashing.pass_key(review, stone_id=stone, guard_id=guard, approval_id=approval) == expected
