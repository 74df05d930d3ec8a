from __future__ import annotations

import contextlib
import multiprocessing
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from routedriver.fsutil import FileLock, LockTimeout, atomic_write, is_temp


def test_atomic_write_creates_parents_and_replaces(tmp_path: Path) -> None:
    target = tmp_path / "a" / "b" / "file.md"
    atomic_write(target, "one")
    atomic_write(target, b"two")
    assert target.read_text() == "two"
    assert [p.name for p in target.parent.iterdir()] == ["file.md"]


def test_a_failed_write_leaves_the_old_file_and_no_temp(tmp_path: Path) -> None:
    target = tmp_path / "file.md"
    atomic_write(target, "old")

    with pytest.raises(TypeError):
        atomic_write(target, 42)  # type: ignore[arg-type]
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["file.md"]


@contextlib.contextmanager
def umask(mask: int) -> Iterator[None]:
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def test_an_existing_file_keeps_its_mode_whatever_the_umask(tmp_path: Path) -> None:
    shared, private = tmp_path / "shared.txt", tmp_path / "private.txt"
    shared.write_text("old")
    shared.chmod(0o664)
    private.write_text("old")
    private.chmod(0o644)
    with umask(0o022):
        atomic_write(shared, "new")
    with umask(0o077):
        atomic_write(private, "new")
    assert shared.read_text() == private.read_text() == "new"
    assert (os.stat(shared).st_mode & 0o7777, os.stat(private).st_mode & 0o7777) == (0o664, 0o644)


def test_a_new_file_gets_the_mode_less_the_umask_as_before(tmp_path: Path) -> None:
    with umask(0o077):
        atomic_write(tmp_path / "new.txt", "x")
    with umask(0o022):
        atomic_write(tmp_path / "script.sh", "x", mode=0o755)
    assert os.stat(tmp_path / "new.txt").st_mode & 0o777 == 0o600
    assert os.stat(tmp_path / "script.sh").st_mode & 0o777 == 0o755


def test_a_read_only_record_is_still_replaced(tmp_path: Path) -> None:
    # The route driver's own records: atomic_write replaces them whatever their mode (the tools refuse).
    target = tmp_path / "record.md"
    target.write_text("old")
    target.chmod(0o444)
    atomic_write(target, "new")
    assert target.read_text() == "new" and os.stat(target).st_mode & 0o777 == 0o444


def test_a_symlink_is_written_through_and_stays_a_link(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    real = tmp_path / "real" / "file.txt"
    real.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    atomic_write(link, "new")
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert real.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir() if is_temp(p)] == []
    assert sorted(p.name for p in (tmp_path / "real").iterdir()) == ["file.txt"]
    dangling = tmp_path / "dangling.txt"
    dangling.symlink_to(tmp_path / "real" / "later.txt")
    atomic_write(dangling, "made")
    assert dangling.is_symlink() and (tmp_path / "real" / "later.txt").read_text() == "made"


def test_what_is_no_regular_file_is_never_replaced(tmp_path: Path) -> None:
    # As root, replacing put a regular file where /dev/full was (route.verify --junit /dev/full): a named
    # pipe, a directory, and a link to a pipe stand in for the devices here.
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    (tmp_path / "dir").mkdir()
    (tmp_path / "to-pipe").symlink_to("pipe")
    for name, what in (
        ("pipe", "a named pipe (FIFO)"),
        ("dir", "a directory"),
        ("to-pipe", "a named pipe (FIFO)"),
    ):
        with pytest.raises(OSError) as raised:
            atomic_write(tmp_path / name, "x")
        assert raised.value.strerror == f"it is {what}, not a regular file", name
        assert raised.value.filename == str(tmp_path / name)
    assert pipe.is_fifo() and (tmp_path / "dir").is_dir() and (tmp_path / "to-pipe").is_symlink()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["dir", "pipe", "to-pipe"]  # no temp left


def test_a_file_where_a_directory_of_the_path_must_be_is_said_as_such(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x\n")
    with pytest.raises(NotADirectoryError) as raised:
        atomic_write(tmp_path / "file" / "deeper" / "out.txt", "y")
    assert raised.value.strerror == "Not a directory"
    assert (tmp_path / "file").read_text() == "x\n"


def test_is_temp_recognizes_leftovers() -> None:
    assert is_temp(".x.md.tmp-abc123")
    assert not is_temp("x.md")
    assert not is_temp(".bind.main.flag")


def _hold(path: str, seconds: float, held: Any) -> None:
    with FileLock(path):
        held.set()
        time.sleep(seconds)


def test_lock_excludes_other_processes(tmp_path: Path) -> None:
    lock = tmp_path / ".lock"
    context = multiprocessing.get_context("fork")
    held = context.Event()
    holder = context.Process(target=_hold, args=(str(lock), 1.0, held))
    holder.start()
    assert held.wait(10)
    with pytest.raises(LockTimeout):
        FileLock(lock, timeout=0.1).acquire()
    holder.join()
    with FileLock(lock, timeout=1):
        pass
