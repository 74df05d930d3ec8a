"""Content ids and the two input hashes.

- A file's content id is its git blob id (``sha1("blob <size>\\0" + bytes)``, or sha256 in a sha256 repo),
  so a file git already knows is not read at all: its id comes from the index.
- review-input hash = sha256 of canonical JSON of the sorted ``[path, content id]`` pairs of the artifacts.
- judge-input hash = sha256 of canonical JSON of the review-input hash, the reviews used (position, command,
  sha256 of stdout) and the approval marker's content id (or null).
- pass key = sha256 of canonical JSON of the review-input hash and the content ids of the stone file, its
  guard and its approval marker: the name of the record of a pass (what a pass covers).

Paths are relative to the git top-level (the cwd outside git) with ``/`` separators, so a clone elsewhere
computes the same hashes.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from routedriver import userfile
from routedriver.errors import Refused
from routedriver.fsutil import realpath

CHUNK = 1 << 20  # large reads: hashlib releases the GIL on big buffers, so threads hash files in parallel
# A file of at least this size is hashed on a thread when there are two or more: its chunks keep a thread
# busy in C (read, then hash without the GIL) for about a millisecond each. Smaller files are hashed on the
# calling thread: for them the per-file open/fstat/read in Python, which holds the GIL, is most of the work,
# so threads only add hand-offs (10,000 × 2 KB took 3-4 times as long on threads as on one).
THREADED_MIN_SIZE = CHUNK
_RETRIES = 3


class ContentIds(NamedTuple):
    ids: dict[str, str]  # relative POSIX path → content id
    read_from_disk: frozenset[str]  # the paths we had to read (the rest came from git's index)
    # Of those in the work tree, the symlinks (their ids are of the link's text), as the one lstat before
    # hashing saw them; a file outside it is read through its links.
    links: frozenset[str] = frozenset()


def canonical_json(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha256_hex(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def blob_id(
    path: str | os.PathLike[str], object_format: str = "sha1", buffer: bytearray | None = None
) -> str:
    """The git blob id of the file's bytes, read in large chunks into a reusable buffer."""
    found = _blob_id_below(path, object_format, buffer, limit=None)
    assert found is not None  # no limit: every file is hashed
    return found


def _blob_id_below(
    path: str | os.PathLike[str], object_format: str, buffer: bytearray | None, *, limit: int | None
) -> str | None:
    """``blob_id``, or None for a file of ``limit`` bytes or more (found by the fstat of the open file, so
    deciding costs no extra system call)."""
    buffer = buffer if buffer is not None else bytearray(CHUNK)
    view = memoryview(buffer)
    for _ in range(_RETRIES):
        _refuse_irregular(path, os.stat(path).st_mode)  # never open a device: opening one may act
        # Opened without blocking: should it have become a FIFO since, it must not wait for a writer.
        with open(path, "rb", buffering=0, opener=_open_nonblocking) as handle:
            status = os.fstat(handle.fileno())
            _refuse_irregular(path, status.st_mode)
            size = status.st_size
            if limit is not None and size >= limit:
                return None
            digest = hashlib.new(object_format, b"blob %d\0" % size)
            total = 0
            while count := handle.readinto(view):
                digest.update(view[:count])
                total += count
        if total == size:
            return digest.hexdigest()
    raise Refused(
        f"artifact keeps changing while it is hashed: {os.fspath(path)}",
        "wait until whatever writes it has finished, then run the command again",
    )


def _open_nonblocking(path: str, flags: int) -> int:
    return os.open(path, flags | os.O_NONBLOCK)


def _refuse_irregular(path: str | os.PathLike[str], mode: int) -> None:
    if not stat.S_ISREG(mode):
        raise _unhashable(os.fspath(path), userfile.file_kind(mode))


def blob_id_of(data: bytes, object_format: str = "sha1") -> str:
    """The git blob id of ``data`` (bytes already read)."""
    digest = hashlib.new(object_format, b"blob %d\0" % len(data))
    digest.update(data)
    return digest.hexdigest()


def _hash_many(paths: Sequence[str | Path], object_format: str) -> list[str]:
    """Blob ids of ``paths``, in order. Small files are hashed here, one after the other; files of at least
    ``THREADED_MIN_SIZE`` bytes, when there are two or more, on threads (one per core, at most 8), where
    reading and hashing big buffers runs without the GIL."""
    buffer = bytearray(CHUNK)
    found = [_blob_id_below(path, object_format, buffer, limit=THREADED_MIN_SIZE) for path in paths]
    large = [index for index, blob in enumerate(found) if blob is None]
    if len(large) < 2:
        hashed = {index: blob_id(paths[index], object_format, buffer) for index in large}
    else:
        # threads: only for two files of at least THREADED_MIN_SIZE
        import threading

        from routedriver.threads import run_all

        local = threading.local()  # one buffer per thread, reused from file to file

        def one(index: int) -> str:
            if not hasattr(local, "buffer"):
                local.buffer = bytearray(CHUNK)
            return blob_id(paths[index], object_format, local.buffer)

        workers = min(len(large), os.cpu_count() or 2, 8)
        hashed = dict(zip(large, run_all(one, large, workers=workers, name="hash"), strict=True))
    return [hashed[index] if blob is None else blob for index, blob in enumerate(found)]


def _cuttable(tail: str) -> bool:
    """``tail`` (``/a/b``, what follows the base) has no empty, ``.`` or ``..`` component and no trailing
    slash: cutting it off as a string gives what ``os.path.relpath`` would."""
    probe = tail + "/"
    return "//" not in probe and "/./" not in probe and "/../" not in probe


def relative_posix(path: str | Path, base: str | Path) -> str:
    text, head = os.fspath(path), os.fspath(base)
    size = len(head)
    # The usual case, a normalized absolute path under base: string slicing (thousands per route.verify).
    if (
        os.sep == "/"
        and len(text) > size + 1
        and text[size] == "/"
        and text.startswith(head)
        and not head.endswith("/")
        and _cuttable(text[size:])
    ):
        return text[size + 1 :]
    return Path(os.path.relpath(path, base)).as_posix()


def _by_relative(paths: Iterable[str | Path], base: Path) -> dict[str, str | Path]:
    """``{relative POSIX path: path}``; normalized paths under ``base`` are cut as strings (route.verify
    turns 10,000 of them per run), anything else goes through ``relative_posix``."""
    prefix = os.fspath(base).rstrip("/") + "/"
    cut = len(prefix)
    found: dict[str, str | Path] = {}
    for path in paths:
        text = path if isinstance(path, str) else os.fspath(path)
        if os.sep == "/" and text.startswith(prefix) and len(text) > cut and _cuttable(text[cut - 1 :]):
            found[text[cut:]] = path
        else:
            found[relative_posix(path, base)] = path
    return found


def content_ids(
    paths: Iterable[str | Path],
    base: Path,
    repo: object | None = None,
    snapshot: object | None = None,
    *,
    from_disk: bool = False,
    exact: bool = False,
    keep_links: bool = False,
) -> ContentIds:
    """Content ids of ``paths`` (absolute), keyed by path relative to ``base``.

    With ``repo`` (a ``routedriver.gitops.Repo`` whose top-level is ``base``), an id is what git would store
    for the file: tracked files unmodified in the work tree take their id from git's index without being
    opened, and the rest are hashed from disk through git's own conversions (line endings, filters), so a
    CRLF file in a ``text=auto`` repository has the id a fresh clone's index will give it. ``from_disk``
    hashes every file from disk (what a review read, what a human approves: never the index, which a robot
    can make disagree with the files). ``snapshot`` (a ``gitops.IndexSnapshot`` of the whole repo) saves
    asking git again: route.verify reads the index once for every stone. ``exact`` (with ``from_disk``): the
    bytes on disk exactly as they are, through no filter or line-ending conversion (what a program that runs
    them reads, see ``route.programs.identities``). A symlink in the work tree is refused
    (``symlink_problem``: the files a pass binds are files), unless ``keep_links``: then its id is its
    text's, and it is named in ``links`` (how a guard program compares with REF's).
    """
    return content_ids_of(
        _by_relative(paths, base), repo, snapshot, from_disk=from_disk, exact=exact, keep_links=keep_links
    )


def content_ids_of(
    by_relative: Mapping[str, str | Path],
    repo: object | None = None,
    snapshot: object | None = None,
    *,
    from_disk: bool = False,
    skip_unhashable: bool = False,
    exact: bool = False,
    keep_links: bool = False,
) -> ContentIds:
    """``content_ids`` of files already keyed by their relative path: ``{relative POSIX path: path}``.

    A file that is neither a regular file nor a symlink (a FIFO, a device, a directory) is refused before
    anything reads it; with ``skip_unhashable`` it is left out of the ids instead (the caller hashes many
    stones' files together, and refuses such a file with the one stone it belongs to)."""
    known: dict[str, str] = {}
    if repo is not None and not from_disk:
        # git (~13 ms with proc and threads), here and below: only for a route in a repository with files
        # to hash; route.stone.get on a route with no pass never loads it (tests/acceptance/test_route_get.py)
        from routedriver import gitops

        assert isinstance(repo, gitops.Repo)
        if snapshot is not None:
            assert isinstance(snapshot, gitops.IndexSnapshot)
            known = snapshot.clean_ids(by_relative)
        else:
            known = gitops.clean_blob_ids(repo, sorted(by_relative))
    to_read = sorted(by_relative.keys() - known.keys() if known else by_relative)
    if not to_read:
        return ContentIds(ids=known, read_from_disk=frozenset())
    hashed, links = _hash_from_disk(
        to_read, by_relative, repo, skip_unhashable=skip_unhashable, exact=exact, keep_links=keep_links
    )
    return ContentIds(ids={**known, **hashed}, read_from_disk=frozenset(to_read), links=links)


def rewritten_on_checkout(
    repo: object, paths: Collection[str], ids: Callable[[list[str]], Mapping[str, str]]
) -> dict[str, str]:
    """Of ``paths`` (relative to the top-level: files a pass binds), those a checkout writes as other bytes
    than the content ids ``ids`` gives for them (asked only for such files) say: ``{path: the attributes
    that do it}`` (``eol=crlf``, ``working-tree-encoding``, ``ident``, a ``filter``; a pull request can add
    any of them, and CI's checkout obeys). Reviews, judges and people read the work tree, so such a file
    would have them read other text than the pass binds. ONE ``git check-attr``; only the files it names are
    hashed again, exactly as they are on disk (an attribute that changes nothing for a file's bytes is no
    problem). Refuses when git cannot answer: a gate that cannot read its input fails closed."""
    # git: see hash_all
    from routedriver import gitops

    assert isinstance(repo, gitops.Repo)
    inside = sorted(path for path in paths if not path.startswith("../"))
    try:
        converted = gitops.checkout_conversions(repo, inside)
        exact = gitops.hash_files(repo, sorted(converted), filters="none") if converted else {}
    except (gitops.GitError, gitops.Unhashable) as exc:
        raise Refused(
            f"cannot ask git whether it checks out {len(inside)} files as it stores them: {exc}",
            "check that git works in this repository",
        ) from None
    bound = ids(sorted(converted)) if converted else {}
    return {path: how for path, how in converted.items() if exact.get(path) != bound.get(path)}


def rewritten_line(path: str, how: str) -> tuple[str, str]:
    """What is wrong with a file ``rewritten_on_checkout`` names, and its fix."""
    return (
        f"git checks {path} out as other bytes than it stores ({how}): reviews and judges read the work "
        "tree, a pass binds the stored bytes",
        f"remove that attribute for the file (git check-attr -a -- {path} shows where it is set)",
    )


def _hash_from_disk(
    relative: Sequence[str],
    by_relative: Mapping[str, str | Path],
    repo: object | None,
    *,
    skip_unhashable: bool,
    exact: bool = False,
    keep_links: bool = False,
) -> tuple[dict[str, str], frozenset[str]]:
    """Ids of files read from disk: through git inside a repository's work tree, by our own hashing of the
    bytes outside it (or outside git); and which of those in the work tree are symlinks."""
    inside: list[str] = []
    outside = list(relative)
    found: dict[str, str] = {}
    links: set[str] = set()
    if repo is not None:
        # git: only when the files lie in a repository (get on a passed stone without inputs needs none)
        from routedriver import gitops

        assert isinstance(repo, gitops.Repo)
        inside = [path for path in relative if not path.startswith("../")]
        outside = [path for path in relative if path.startswith("../")]
        try:
            kinds = gitops.file_kinds(repo, inside)  # one lstat a file, for both questions below
        except OSError as exc:
            raise _unreadable(exc) from None
        if kinds.links and not keep_links:
            path = min(kinds.links)
            raise Refused(symlink_problem(path, link_text(repo.toplevel / path)), SYMLINK_FIX)
        refuse_escaping_links(repo.toplevel, inside, links=kinds.links)
        links.update(kinds.links)
        if kinds.irregular and not skip_unhashable:
            path, what = next(iter(kinds.irregular.items()))
            raise _unhashable(path, what)
        # With skip_unhashable an irregular file is left out and the others are hashed: its stone hashes
        # its own files again, and only that stone is refused.
        found.update(_git_hash(repo, kinds, exact=exact))
    if outside:
        object_format = getattr(repo, "object_format", "sha1")
        try:
            hashed = _hash_many([by_relative[path] for path in outside], object_format)
        except OSError as exc:
            raise _unreadable(exc) from None
        found.update(zip(outside, hashed, strict=True))
    return found, frozenset(links)


def _git_hash(repo: object, kinds: object, *, exact: bool = False) -> dict[str, str]:
    """``gitops.hash_kinds`` as git would store the files (``exact``: as they are on disk), its failures as
    refusals."""
    # git: see hash_all
    from routedriver import gitops

    assert isinstance(repo, gitops.Repo) and isinstance(kinds, gitops.FileKinds)
    try:
        return gitops.hash_kinds(repo, kinds, filters="none" if exact else "git")
    except OSError as exc:
        raise _unreadable(exc) from None
    except gitops.GitError as exc:
        raise Refused(f"cannot hash an artifact: {exc}", "check that it is a readable file") from None


def _unreadable(exc: OSError) -> Refused:
    return Refused(f"cannot read artifact {exc.filename}: {exc.strerror}", "check that it is a readable file")


def _unhashable(path: str, what: str) -> Refused:
    return Refused(
        f"cannot hash {path}: it is {what}, not a regular file or a symlink",
        "replace it with a regular file (or remove it)",
    )


SYMLINK_FIX = "make it the file itself, not a link to it"


def symlink_problem(path: str, target: str) -> str:
    """Why a pass (or an approval) takes no file ``path`` that is a symlink to ``target``."""
    return (
        f"artifact {path} is a symlink (to {target}): a pass or an approval binds what a file holds, and git "
        "stores only a link's text, so what it points at could change under them"
    )


def link_text(path: Path) -> str:
    """What the symlink ``path`` says, for a message (it may be gone by now)."""
    try:
        return os.readlink(path)
    except OSError as exc:
        return f"a target that cannot be read: {exc.strerror}"


def refuse_escaping_links(toplevel: Path, relative: Iterable[str], *, links: Collection[str]) -> None:
    """Refuse a file (relative to ``toplevel``) that is a symlink, or sits under one, leading outside the
    work tree: git stores only the link, so what a review read and a human approved would not be in the
    repository CI checks out. ``links``: which of them are symlinks (``gitops.file_kinds`` looked)."""
    top = os.fspath(toplevel)
    head = top if top.endswith(os.sep) else top + os.sep  # os.path.join's result, for relative paths
    real_top = realpath(top)
    real_dirs: dict[str, str] = {}  # directory → its real path: resolved once, not once per file in it
    for path in relative:
        absolute = head + path
        if path in links:
            real = realpath(absolute)
        else:  # only the directories on the way can lead elsewhere
            directory, _, name = absolute.rpartition(os.sep)
            real_dir = real_dirs.get(directory)
            if real_dir is None:
                real_dir = real_dirs[directory] = realpath(directory)
            real = real_dir + os.sep + name if real_dir != os.sep else os.sep + name
        if real == absolute or real.startswith(top + os.sep):
            continue
        if real_top != top and real.startswith(real_top + os.sep):
            continue  # the top-level itself is reached through a link; the file stays inside
        raise Refused(
            f"artifact {path} is a symlink to {real}, outside the repository (git would store only the link)",
            "put the file itself in the repository instead of a link to it",
        )


def review_input_hash(ids: Mapping[str, str], inputs: Mapping[str, str] | None = None) -> str:
    """sha256 of canonical JSON of the sorted ``[relative_path, content_id]`` pairs of the artifacts; with
    ``inputs`` (the files a guard's ``inputs:`` names, when it matches any), of ``{"artifacts": <those
    pairs>, "inputs": <the inputs' pairs>}``, so a stone without inputs keeps the hash it had."""
    if inputs:
        return hashlib.sha256(
            b'{"artifacts":' + _sorted_pairs(ids) + b',"inputs":' + _sorted_pairs(inputs) + b"}"
        ).hexdigest()
    return hashlib.sha256(_sorted_pairs(ids)).hexdigest()


def _sorted_pairs(ids: Mapping[str, str]) -> bytes:
    paths = sorted(ids)  # sorting the strings, then pairing, is faster than sorting the pairs
    return pairs_json(list(zip(paths, map(ids.__getitem__, paths), strict=True)))


_JSON_CONTROL = bytes(range(0x20))  # with '"' and '\\': all json.dumps(ensure_ascii=False) escapes


def pairs_json(pairs: Sequence[tuple[str, str]]) -> bytes:
    """``canonical_json`` of a list of string pairs, UTF-8 encoded. Joined directly when no string holds a
    character JSON escapes (every quote in the text is then one of the four around each pair's strings):
    three times faster than the encoder for the thousands of artifacts route.verify hashes. Anything
    else is written by the encoder. A path that is not valid UTF-8 is refused (``refuse_undecodable``).
    """
    try:
        if pairs:
            data = ('[["' + '"],["'.join(map('","'.join, pairs)) + '"]]').encode("utf-8")
            if (
                b"\\" not in data
                and data.count(b'"') == 4 * len(pairs)
                and len(data.translate(None, _JSON_CONTROL)) == len(data)
            ):
                return data
        return canonical_json(pairs).encode("utf-8")
    except UnicodeEncodeError:
        refuse_undecodable("artifact", sorted(path for path, _content_id in pairs))
        raise


def printable_path(path: str) -> str:
    """``path`` with any byte that is not UTF-8 (held as a surrogate escape) shown as ``\\xNN``."""
    try:
        raw = path.encode("utf-8", errors="surrogateescape")  # the bytes the name had on disk
    except UnicodeEncodeError:  # a surrogate that is no escaped byte: show it as a code point
        return path.encode("utf-8", errors="backslashreplace").decode("utf-8")
    return raw.decode("utf-8", errors="backslashreplace")


def refuse_undecodable(what: str, paths: Iterable[str]) -> None:
    """Refuse the first of ``paths`` whose name holds bytes that are not UTF-8 (``what``: "artifact",
    "route"). Git keeps paths as bytes, but the hashes, manifests, records and bindings are UTF-8 text: such
    a name has no stable text to hash, so it is refused rather than hashed under a made-up spelling."""
    for path in paths:
        try:
            path.encode("utf-8")
        except UnicodeEncodeError:
            raise Refused(
                f"{what} path is not valid UTF-8: {printable_path(path)}",
                "rename it (and any directory in it) to a UTF-8 name",
            ) from None


def judge_input_hash(
    review_input: str, reviews: Iterable[tuple[int, str, str]], approval_id: str | None
) -> str:
    """sha256 of canonical JSON of the review-input hash, the ``(position, command, stdout sha256)`` of each
    review used, and the approval marker's content id (null without one)."""
    payload = {
        "review_input_hash": review_input,
        "reviews": [
            {"position": position, "command": command, "stdout_sha256": stdout_sha256}
            for position, command, stdout_sha256 in sorted(reviews)
        ],
        "approval_id": approval_id,
    }
    return sha256_hex(canonical_json(payload))


def pass_key(review_input: str, *, stone_id: str, guard_id: str | None, approval_id: str | None) -> str:
    """What a pass covers, as one hash (a pass record's name): the review-input hash and the content ids of
    the stone's instructions, its guard and its approval marker (null when it has none)."""
    # What canonical_json writes for these keys (sorted) when every value is null or letters and digits
    # (content ids and hashes are hex), which JSON writes as they are, without the encoder: route.stone.get
    # computes a key for each of thousands of passed stones.
    plain = f"{review_input}{stone_id}{guard_id or ''}{approval_id or ''}"
    if plain.isascii() and plain.isalnum():
        approval = "null" if approval_id is None else f'"{approval_id}"'
        guard = "null" if guard_id is None else f'"{guard_id}"'
        text = (
            f'{{"approval_id":{approval},"guard_id":{guard},"review_input_hash":"{review_input}",'
            f'"stone_id":"{stone_id}"}}'
        )
        return hashlib.sha256(text.encode("ascii")).hexdigest()
    payload = {
        "review_input_hash": review_input,
        "stone_id": stone_id,
        "guard_id": guard_id,
        "approval_id": approval_id,
    }
    return sha256_hex(canonical_json(payload))
