"""The git queries the route driver needs, through the git binary (``proc.run``), read-only.

Nothing here writes the index or the object store: ``git ls-files`` and ``git diff-files`` only read, and
``GIT_OPTIONAL_LOCKS=0`` keeps git from refreshing the index behind our back. (``git status`` would.)
GitPython is imported lazily, only by the functions that need it (issue 3 adds commits here).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from routedriver import proc

_READ_ONLY_ENV = {"GIT_OPTIONAL_LOCKS": "0", "GIT_LITERAL_PATHSPECS": "1"}
_REGULAR_FILE_MODES = ("100644", "100755")  # symlinks and submodules have ids that are not file bytes


@dataclass(frozen=True)
class Repo:
    toplevel: Path
    object_format: str  # "sha1" or "sha256": the hash of blob ids


def _git(args: Sequence[str], cwd: Path) -> proc.ProcResult:
    return proc.run(["git", *args], cwd=cwd, extra_env=_READ_ONLY_ENV, timeout=60)


def find_repo(path: str | os.PathLike[str]) -> Repo | None:
    """The work tree holding ``path`` (a directory), or None outside git (or without a git binary)."""
    done = _git(["rev-parse", "--show-toplevel", "--show-object-format"], Path(path))
    lines = done.stdout.splitlines()
    if done.returncode != 0 or not lines or not lines[0]:
        return None
    object_format = lines[1] if len(lines) > 1 and lines[1] in ("sha1", "sha256") else "sha1"
    return Repo(toplevel=Path(lines[0]), object_format=object_format)


def _pathspecs(paths: Sequence[str]) -> list[str]:
    # Ask about the directories that hold the files rather than each file: a short command line however
    # many artifacts there are, and still far less than the whole index of a big repository.
    return sorted({os.path.dirname(path) or "." for path in paths})


def clean_blob_ids(repo: Repo, paths: Sequence[str]) -> dict[str, str]:
    """Blob ids git already knows for ``paths`` (relative to the top-level, POSIX) that are tracked, regular
    files whose work-tree copy is unmodified; the rest are left out for the caller to hash itself."""
    if not paths:
        return {}
    specs = _pathspecs(paths)
    # The two queries are independent: run them side by side (each is mostly process start-up).
    import threading

    modified_box: list[proc.ProcResult] = []
    side = threading.Thread(
        target=lambda: modified_box.append(
            _git(["diff-files", "--name-only", "-z", "--", *specs], repo.toplevel)
        ),
        daemon=True,
    )
    side.start()
    staged = _git(["ls-files", "--stage", "-z", "--", *specs], repo.toplevel)
    side.join()
    if staged.returncode != 0 or not modified_box or modified_box[0].returncode != 0:
        return {}
    wanted = set(paths)
    known: dict[str, str] = {}
    for record in staged.stdout.split("\0"):
        meta, tab, path = record.partition("\t")
        if not tab or path not in wanted:
            continue
        mode, blob_id, stage = meta.split(" ")
        if stage == "0" and mode in _REGULAR_FILE_MODES:
            known[path] = blob_id
    for path in modified_box[0].stdout.split("\0"):
        known.pop(path, None)
    return known
