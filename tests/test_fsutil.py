from __future__ import annotations

import multiprocessing
import time
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
