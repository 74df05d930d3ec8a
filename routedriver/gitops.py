"""Everything routedriver asks of git; the only module that runs git or imports GitPython.

Which door for which question:

- Queries run the git binary through ``proc.run`` (one process, output parsed here) and only read:
  ``git ls-files``, ``git diff-files`` and ``git log`` never write the index, and ``GIT_OPTIONAL_LOCKS=0``
  keeps git from refreshing it behind our back (``git status`` would). They are the hot paths (every
  ``route.stone.get``, and ``route.verify`` over thousands of stones), and they must see what git sees.
- Who the caller is (``git var GIT_AUTHOR_IDENT``) and whether git signs (``git config --bool``) are asked
  of git too, not read with GitPython's ``Actor``/config reader: those re-implement git's rules and miss
  some (``author.email``, ``EMAIL``, ``git -c`` and ``GIT_CONFIG_*`` settings), and an approval must carry
  the identity git will put on its commit.
- The one write, a human's approval commit (``commit_paths``), goes through GitPython (lazily imported),
  where its object model is the clearer code and speed does not matter.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Iterable, Mapping, Sequence
from operator import itemgetter
from pathlib import Path
from typing import Literal, NamedTuple

from routedriver import proc, userfile
from routedriver.errors import Refused
from routedriver.later import Later

# Every git command here sees the objects as they are: a ``refs/replace/*`` ref (which anyone who can push a
# ref can publish, and a CI that fetches every ref takes) would otherwise show another commit, tree or blob
# in place of REF's, so policy, recheck and --require-bound would compare with a base the robot wrote.
_NO_REPLACE = {"GIT_NO_REPLACE_OBJECTS": "1"}
_READ_ONLY_ENV = {"GIT_OPTIONAL_LOCKS": "0", "GIT_LITERAL_PATHSPECS": "1"}
_GLOB_ENV = {"GIT_OPTIONAL_LOCKS": "0", "GIT_LITERAL_PATHSPECS": "0"}  # for ':(glob)' pathspecs
_MAGIC_ENV = _GLOB_ENV  # pathspecs that say what they are (':(literal)…', ':(exclude,literal)…')
_REGULAR_FILE_MODES = frozenset(("100644", "100755"))  # symlinks and submodules: ids that are not file bytes
_PLAIN_TAGGED_MODES = frozenset(f"H {mode}" for mode in _REGULAR_FILE_MODES)  # see _LS_STAGE
_REV_PARSE = (
    "rev-parse",
    "--show-toplevel",
    "--show-object-format",
    "--absolute-git-dir",
    "--is-shallow-repository",
)
# -v tags each entry: "H " for a plain cached entry, "S " skip-worktree, "M " unmerged, lower case when
# assume-unchanged is set. git does not look at the work-tree copy of a skip-worktree or assume-unchanged
# entry, so diff-files never reports it changed: only "H " entries are vouched for (_parse_stage).
_LS_STAGE = ("ls-files", "-v", "--stage", "-z")
# A repository (or a robot with a shell in it) can weaken how git tells a changed file from an unchanged one:
# compare less of the file's stat (core.checkStat=minimal, core.trustctime=false), not look at all
# (core.ignoreStat), or ask a program it names (core.fsmonitor, which _git turns off for every call). Every
# question about the work tree undoes that. It narrows, not closes, the gap: git compares ctime to the
# second, so a file rewritten in the second it was staged can still look unchanged. Whatever binds bytes a
# person or a review saw therefore hashes the files themselves (``hash_files``); the index is trusted only
# for files nobody here is vouching for.
_STRICT_STAT = (
    "-c",
    "core.checkStat=default",
    "-c",
    "core.trustctime=true",
    "-c",
    "core.ignoreStat=false",
    "-c",
    "core.untrackedCache=false",
)
_DIFF_FILES = (*_STRICT_STAT, "diff-files", "--name-only", "-z")
ROUTE_STONES = "**/*.stone"  # the glob that finds routes (route.verify --all)


class Repo(NamedTuple):
    toplevel: Path
    object_format: str  # "sha1" or "sha256": the hash of blob ids
    git_dir: Path | None = None  # where HEAD lives (worktrees have their own)
    shallow: bool | None = None  # a shallow clone (None: not asked); see shallow_boundary


class IndexSnapshot(NamedTuple):
    """One read of git's index (``git ls-files -v -s``) and of what differs from it (``git diff-files``)."""

    # path → blob id, stage-0 regular files whose work-tree copy git compares (neither assume-unchanged nor
    # skip-worktree: git would say those are unchanged whatever the file holds, so they are left out here
    # and read from disk like untracked files)
    staged: dict[str, str]
    modified: frozenset[str]  # tracked paths whose work-tree copy differs from the index (or is gone)

    def clean_ids(self, paths: Iterable[str]) -> dict[str, str]:
        """Blob ids of ``paths`` that git knows and that are unmodified in the work tree."""
        staged = self.staged
        clean = staged.keys() & paths  # set operations: route.verify asks about 10,000 paths at once
        clean -= self.modified
        return dict(zip(clean, map(staged.__getitem__, clean), strict=True))

    def merged(self, other: IndexSnapshot | None) -> IndexSnapshot:
        """Both snapshots' knowledge (of disjoint parts of the index)."""
        if other is None:
            return self
        return IndexSnapshot({**self.staged, **other.staged}, self.modified | other.modified)


class CommitInfo(NamedTuple):
    """The latest commit that changed one path, and what it put there."""

    sha: str
    author_email: str
    author_name: str
    blob: str  # the path's blob id in that commit; all zeros when the commit deleted it
    # No parent as this repository sees it: a root commit, or where a shallow clone's history is cut off
    # (git shows such a commit as adding every file it holds).
    parentless: bool = False

    @property
    def deleted(self) -> bool:
        return not self.blob.strip("0")


class Signature(NamedTuple):
    ok: bool  # git verify-commit succeeded
    signer: str  # who signed (SSH principal or GPG user id) when git said; else ""
    detail: str  # git's last line, for messages
    unsigned: bool = False  # the commit carries no signature at all (git said nothing)


class GitError(Exception):
    """A git command failed; ``str()`` is git's own last line."""


class Unhashable(GitError):
    """Paths ``hash_files`` will not hand to git: neither a regular file nor a symlink."""

    def __init__(self, found: Mapping[str, str]) -> None:
        self.found = dict(found)  # path → what it is (``userfile.file_kind``: "a directory", …)
        path, what = next(iter(self.found.items()))
        super().__init__(f"{path} is {what}, not a regular file")


def _git(
    args: Sequence[str],
    cwd: Path,
    env: Mapping[str, str] = _READ_ONLY_ENV,
    timeout: float | None = None,
    stdin: bytes | None = None,
) -> proc.ProcResult:
    # Local reads get no timeout: waiting with one makes Popen.wait poll with sleeps, which costs
    # milliseconds per call; they cannot prompt or block on the network. Signing checks get one.
    # kill_leftovers=False: what git starts and means to keep (fsmonitor--daemon, gc --auto) is git's.
    # core.fsmonitor=false on every call: no repository's configuration (a robot's, or a .git a command made
    # in a directory the gate then asks about) names a program for git to run, or answers what changed.
    return proc.run(
        ["git", "-c", "core.fsmonitor=false", *args],
        cwd=cwd,
        extra_env={**env, **_NO_REPLACE},
        timeout=timeout,
        input=stdin,
        kill_leftovers=False,
    )


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[-1] if lines else ""


def _unwrap(stderr: str) -> str:
    """GitPython hands stderr over as ``\n  stderr: '<text>'``; take the text back out."""
    text = stderr.strip()
    if text.startswith("stderr: '") and text.endswith("'"):
        text = text[len("stderr: '") : -1]
    return text


def _problem_line(text: str) -> str:
    """git's own ``fatal:``/``error:`` line (the cause), else its last line."""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith(("fatal:", "error:")):
            return line
    return _last_line(text)


def find_repo(path: str | os.PathLike[str]) -> Repo | None:
    """The work tree holding ``path`` (a directory), or None outside git.

    Refused when there is no git to ask: "not in a repository" would send the user looking for the wrong
    cause, and a gate must not take a missing git for an answer."""
    done = _git(_REV_PARSE, Path(path))
    if done.start_error:
        # shutil (bz2, lzma, fnmatch: ~3 ms) only once git could not start: route.stone.get asks this often
        import shutil

        if shutil.which("git") is None:
            raise Refused(f"cannot run git ({done.start_error.strip()})", "install git, or put it on PATH")
    return _repo_from(done)


def _repo_from(done: proc.ProcResult) -> Repo | None:
    lines = done.stdout.splitlines()
    if done.returncode != 0 or not lines or not lines[0]:
        return None
    object_format = lines[1] if len(lines) > 1 and lines[1] in ("sha1", "sha256") else "sha1"
    git_dir = Path(lines[2]) if len(lines) > 2 and lines[2] else None
    shallow = {"true": True, "false": False}.get(lines[3]) if len(lines) > 3 else None
    return Repo(toplevel=Path(lines[0]), object_format=object_format, git_dir=git_dir, shallow=shallow)


def current_branch(repo: Repo) -> str | None:
    """The checked-out branch (``feature/x``), or None on a detached HEAD."""
    head = ""
    if repo.git_dir is not None:
        try:
            head = (repo.git_dir / "HEAD").read_text(encoding="utf-8").strip()
        except OSError:
            head = ""
    if head.startswith("ref: refs/heads/") and head != "ref: refs/heads/.invalid":
        return head[len("ref: refs/heads/") :]
    if head and not head.startswith("ref:"):
        return None  # a commit id: detached
    # Unusual layouts (reftable, no readable HEAD file): ask git.
    done = _git(["symbolic-ref", "-q", "--short", "HEAD"], repo.toplevel)
    return done.stdout.strip() or None if done.returncode == 0 else None


# ---------------------------------------------------------------- the index and the work tree


def _pathspecs(paths: Sequence[str]) -> list[str]:
    # Ask about the directories that hold the files rather than each file: a short command line however
    # many artifacts there are, and still far less than the whole index of a big repository.
    return sorted({os.path.dirname(path) or "." for path in paths})


def index_snapshot(
    repo: Repo, pathspecs: Sequence[str] = (), env: Mapping[str, str] = _READ_ONLY_ENV
) -> IndexSnapshot | None:
    """ONE ``git ls-files -v -s`` and ONE ``git diff-files`` (side by side), limited to ``pathspecs`` if
    given (literal paths; with ``env=_MAGIC_ENV``, pathspecs with their own magic); None when git cannot
    answer (the caller then hashes files itself)."""
    specs = ["--", *pathspecs] if pathspecs else []
    modified_run = Later(lambda: _git([*_DIFF_FILES, *specs], repo.toplevel, env))
    staged_run = _git([*_LS_STAGE, *specs], repo.toplevel, env)
    if staged_run.returncode != 0 or modified_run.get().returncode != 0:
        return None
    staged = _parse_stage(staged_run.stdout, repo.object_format)
    modified = frozenset(filter(None, modified_run.get().stdout.split("\0")))
    return IndexSnapshot(staged, modified)


def _parse_stage(output: str, object_format: str) -> dict[str, str]:
    """``git ls-files -v --stage -z`` → ``{path: blob id}`` of its stage-0 regular files tagged ``H`` (see
    ``_LS_STAGE``: git compares their work-tree copies).

    git prints each entry as ``<tag> %06o %s %d\t<path>\0`` (tag, mode, id, stage), so in the usual index,
    where every entry is a plain stage-0 regular file, every field sits at the same offset: the whole listing
    is then cut with C-level slicing (a 10,000-file index in a few milliseconds). Anything else (symlinks,
    submodules, a merge in progress, assume-unchanged or skip-worktree entries) takes the entry-by-entry loop.
    """
    records = output.split("\0")
    records.pop()  # the empty string after the last NUL
    width = 64 if object_format == "sha256" else 40
    stage_and_tab = set(map(itemgetter(slice(width + 10, width + 12)), records))
    if stage_and_tab <= {"0\t"} and _PLAIN_TAGGED_MODES.issuperset(map(itemgetter(slice(0, 8)), records)):
        paths = map(itemgetter(slice(width + 12, None)), records)
        return dict(zip(paths, map(itemgetter(slice(9, 9 + width)), records), strict=True))
    staged: dict[str, str] = {}
    for record in records:
        meta, tab, path = record.partition("\t")
        if not tab:
            continue
        tag, mode, blob_id, stage = meta.split(" ")
        if tag == "H" and stage == "0" and mode in _REGULAR_FILE_MODES:
            staged[path] = blob_id
    return staged


def clean_blob_ids(repo: Repo, paths: Sequence[str]) -> dict[str, str]:
    """Blob ids git already knows for ``paths`` (relative to the top-level, POSIX) that are tracked, regular
    files whose work-tree copy is unmodified; the rest are left out for the caller to hash itself."""
    snapshot = snapshot_of(repo, paths)
    return snapshot.clean_ids(paths) if snapshot is not None else {}


def route_snapshot(repo: Repo, route: str, state_files: Sequence[str] = ()) -> IndexSnapshot | None:
    """``index_snapshot`` of a route directory (``route``, relative to the top-level, POSIX; ``.`` for the
    top-level) without its ``.route/`` records, which may be thousands and are never hashed, but with
    ``state_files`` (names under ``.route/``: the approval markers)."""
    head = "" if route in ("", ".") else route + "/"
    specs = [f":(literal){route or '.'}", f":(exclude,literal){head}.route"]
    specs += [f":(literal){head}.route/{name}" for name in state_files]
    return index_snapshot(repo, specs, _MAGIC_ENV)


def snapshot_of(repo: Repo, paths: Sequence[str]) -> IndexSnapshot | None:
    """``index_snapshot`` limited to the directories holding ``paths`` (relative to the top-level, POSIX):
    one read for many files; None for no paths, or when git cannot answer."""
    return index_snapshot(repo, _pathspecs(paths)) if paths else None


def ignoring_rule(repo: Repo, path: Path) -> str | None:
    """The rule that makes git ignore ``path`` (``<source>:<line>:<pattern>``, as ``git check-ignore -v``
    prints it), or None when git does not ignore it (a matching ``!pattern`` un-ignores)."""
    # The absolute path: check-ignore takes no ':(literal)' magic, and a relative path can start with ':'.
    done = _git(["check-ignore", "-v", "--", os.fspath(path)], repo.toplevel, {"GIT_OPTIONAL_LOCKS": "0"})
    source, tab, _path = done.stdout.partition("\t")
    pattern = source.split(":", 2)[-1] if tab else ""
    if done.returncode != 0 or not pattern or pattern.startswith("!"):
        return None
    return source


def list_files(repo: Repo, globs: Sequence[str], untracked_only: bool = False) -> list[str]:
    """Paths (relative to the top-level) of files git tracks or would track (untracked, not ignored) that
    match the ``:(glob)`` patterns ``globs``. Git walks only what it must; we never walk the tree."""
    done = _git(_list_files_args(globs, untracked_only), repo.toplevel, _GLOB_ENV)
    if done.returncode != 0:
        raise GitError(_last_line(done.stderr) or f"git ls-files exited {done.returncode}")
    return sorted(set(filter(None, done.stdout.split("\0"))))


def _list_files_args(globs: Sequence[str], untracked_only: bool) -> list[str]:
    which = ["--others"] if untracked_only else ["--cached", "--others"]
    patterns = (f":(glob){pattern}" for pattern in globs)
    return [*_STRICT_STAT, "ls-files", "-z", *which, "--exclude-standard", "--", *patterns]


Filters = Literal[
    "git", "none"
]  # hash_files: through git's conversions (what it stores), or the bytes as they are


class FileKinds(NamedTuple):
    """Paths (relative to the top-level, POSIX) told apart by one ``lstat`` each, as ``hash_files`` must."""

    regular: list[str]  # regular files, and paths that could not be looked at (git then says why)
    links: dict[str, str]  # symlink → the blob id of its target's text (what git stores for it)
    irregular: dict[str, str]  # neither: path → what it is (``userfile.file_kind``: "a directory", …)


def file_kinds(repo: Repo, paths: Sequence[str]) -> FileKinds:
    """``paths`` told apart (``FileKinds``) without opening any: a FIFO must never be handed to git. Raises
    ``OSError`` when a symlink cannot be read."""
    kinds = FileKinds([], {}, {})
    top = os.fspath(repo.toplevel)
    head = top if top.endswith(os.sep) else top + os.sep  # os.path.join's result, for relative paths
    for path in paths:
        absolute = head + path
        try:
            mode = os.lstat(absolute).st_mode
        except OSError:
            kinds.regular.append(path)  # gone or out of reach: git says which, in its own words
            continue
        if stat.S_ISLNK(mode):  # a link replaced since the lstat: OSError, for the caller to refuse
            kinds.links[path] = _blob_of(os.fsencode(os.readlink(absolute)), repo.object_format)
        elif stat.S_ISREG(mode):
            kinds.regular.append(path)
        else:
            kinds.irregular[path] = userfile.file_kind(mode)
    return kinds


def hash_files(repo: Repo, paths: Sequence[str], *, filters: Filters) -> dict[str, str]:
    """The blob id of each file (paths relative to the top-level, POSIX, inside the work tree): ONE
    ``git hash-object --stdin-paths`` for all of them, however many.

    - ``filters="git"``: the id of what git would store for the file (``git add``): its bytes through git's
      own conversions (``text``/``eol`` attributes, ``core.autocrlf``, clean filters), so a CRLF file in a
      ``text=auto`` repository has the id a fresh clone's index will give it.
    - ``filters="none"`` (``--no-filters``): the id of the bytes on disk exactly as they are. Where the two
      differ for a file, git would store other bytes than the ones a person or a review read.

    A symlink is stored as its target's text, so it is hashed that way here (either way), never through it.
    Raises ``GitError`` when git cannot hash one (gone, unreadable, beyond a symlinked directory), and
    ``Unhashable``, before git is started, for a path that is neither a regular file nor a symlink (a
    directory, a FIFO git would open and wait on for a writer forever, a device it would read without
    end)."""
    kinds = file_kinds(repo, paths)
    if kinds.irregular:
        raise Unhashable(kinds.irregular)
    return hash_kinds(repo, kinds, filters=filters)


def hash_kinds(repo: Repo, kinds: FileKinds, *, filters: Filters) -> dict[str, str]:
    """``hash_files`` of paths already told apart, leaving out the irregular ones (the caller's to refuse)."""
    found = dict(kinds.links)
    regular = kinds.regular
    if not regular:
        return found
    # One path a line; git reads a line that starts with a quote as a C-quoted string (see _c_quoted).
    listing = b"".join(_c_quoted(os.fsencode(path)) + b"\n" for path in regular)
    flags = ["--no-filters"] if filters == "none" else []
    done = _git(
        ["hash-object", "--stdin-paths", *flags], repo.toplevel, {"GIT_OPTIONAL_LOCKS": "0"}, stdin=listing
    )
    ids = done.stdout.split()
    if done.returncode != 0 or len(ids) != len(regular):
        raise GitError(_problem_line(done.stderr) or f"git hash-object exited {done.returncode}")
    found.update(zip(regular, ids, strict=True))
    return found


# Bytes git would misread in a line of --stdin-paths: its line reader ends a line at LF and drops a CR before
# it, and a leading quote starts a C-quoted string.
_UNSAFE_IN_A_LINE = frozenset(range(0x20)) | {0x7F}


def _c_quoted(raw: bytes) -> bytes:
    """``raw`` as one line of ``--stdin-paths``: itself when git reads it back unchanged, else C-quoted
    (``"…"`` with ``\\``, ``\"`` and control bytes as octal escapes), which git unquotes."""
    if not raw.startswith(b'"') and _UNSAFE_IN_A_LINE.isdisjoint(raw):
        return raw
    out = bytearray(b'"')
    for byte in raw:
        if byte in (0x22, 0x5C):  # " and \
            out += b"\\" + bytes((byte,))
        elif byte in _UNSAFE_IN_A_LINE:
            out += b"\\%03o" % byte
        else:
            out.append(byte)
    return bytes(out + b'"')


def _blob_of(data: bytes, object_format: str) -> str:
    digest = hashlib.new(object_format, b"blob %d\0" % len(data))
    digest.update(data)
    return digest.hexdigest()


# ---------------------------------------------------------------- history


def last_commits(repo: Repo, paths: Sequence[str]) -> dict[str, CommitInfo]:
    """For each path, the commit that last set it, on the history HEAD has: ONE ``git log`` for all.

    Not git's default walk, which follows only the parent a merge took a file from: ``git merge -s ours``
    could then hide the later commit that set the file, and resurrect an older setting as the last one.
    This reads every parent (``--simplify-merges``, children before parents): a merge drops out only when it
    holds what the rest of the history it keeps says; one that kept an older version over a later one, or
    resolved a conflict, is the commit that set the file. Paths no commit touched are absent; so is
    everything when HEAD has no commit yet.
    """
    if not paths:
        return {}
    done = _git(
        [
            "log",
            "-z",
            "--raw",
            "--no-abbrev",
            "--no-renames",
            "--simplify-merges",
            "--topo-order",
            "-m",
            "--format=%x01%H%x00%ae%x00%an%x00%P",
            "--",
            *paths,
        ],
        repo.toplevel,
    )
    if done.returncode != 0:
        return {}
    wanted = set(paths)
    found: dict[str, CommitInfo] = {}
    for (sha, email, name, parents), changes in _raw_log(done.stdout, fields=4):
        for meta, path in changes:
            if path in wanted and path not in found:
                found[path] = CommitInfo(sha, email, name, meta[3], not parents.strip())
    return found


def changed_paths(repo: Repo, shas: Iterable[str]) -> dict[str, frozenset[str]]:
    """Every path each commit changed, against each of its parents (a root commit, or where a shallow
    clone's history is cut off: every file it holds): ONE ``git log --no-walk`` for all. A commit git
    cannot show is absent."""
    wanted = sorted(set(shas))
    if not wanted:
        return {}
    done = _git(
        [
            "log",
            "--no-walk=unsorted",
            "-z",
            "-m",
            "--raw",
            "--no-abbrev",
            "--no-renames",
            "--format=%x01%H",
            *wanted,
            "--",
        ],
        repo.toplevel,
    )
    if done.returncode != 0:
        return {}
    found: dict[str, set[str]] = {}
    for (sha,), changes in _raw_log(done.stdout, fields=1):
        found.setdefault(sha, set()).update(path for _meta, path in changes)
    return {sha: frozenset(paths) for sha, paths in found.items()}


# Patterns, not compiled ones: ``re`` compiles them when the history is first read (re's own cache), not on
# every route.stone.get that imports this module and reads none.
_RAW_META = r"\n?:[0-7]{6} [0-7]{6} [0-9a-f]{40,64} [0-9a-f]{40,64} [A-Z][0-9]*"
_COMMIT_ID = r"[0-9a-f]{40}|[0-9a-f]{64}"


def _raw_log(stdout: str, *, fields: int) -> list[tuple[list[str], list[tuple[list[str], str]]]]:
    """``git log -z --raw --format=%x01%H%x00…`` (``fields`` NUL-separated header fields, the first the
    commit id) as ``(header fields, [(raw entry's parts, path)])`` per commit (per parent of a merge).

    Read by position, never by searching for a separator: a path (or an author's name) may hold any byte
    but NUL, a \x01 or a newline included, and one that looked like the start of the next commit once hid
    what a human's commit changed. A path is whatever follows a raw entry; a header comes only where a raw
    entry could. Output that does not read this way ends the list there (the caller then finds the commits
    it wanted absent: a gate that cannot read its input fails closed)."""
    tokens = stdout.split("\0")
    if tokens and tokens[-1].strip("\n") == "":
        tokens.pop()
    found: list[tuple[list[str], list[tuple[list[str], str]]]] = []
    at = 0
    while at + fields <= len(tokens):
        header = tokens[at : at + fields]
        first = header[0].lstrip("\n")
        if not first.startswith("\x01") or not re.fullmatch(_COMMIT_ID, first[1:]):
            break
        header[0] = first[1:]
        at += fields
        changes: list[tuple[list[str], str]] = []
        while at + 1 < len(tokens) and re.fullmatch(_RAW_META, tokens[at]):
            changes.append((tokens[at].lstrip("\n")[1:].split(" "), tokens[at + 1]))
            at += 2
        found.append((header, changes))
    return found


def shallow_boundary(repo: Repo) -> frozenset[str] | None:
    """The commits where a shallow clone's history is cut off (git's ``shallow`` file; empty if it cannot be
    read), or None when the repository is not shallow. One ``git rev-parse``, which also says where that file
    is (worktrees share it), unless ``find_repo`` already said it is not shallow."""
    if repo.shallow is False:
        return None
    done = _git(["rev-parse", "--is-shallow-repository", "--git-path", "shallow"], repo.toplevel)
    lines = done.stdout.splitlines()
    if done.returncode != 0 or len(lines) < 2 or lines[0].strip() != "true":
        return None
    try:
        text = (repo.toplevel / lines[1]).read_text(encoding="ascii", errors="replace")
    except OSError:
        return frozenset()  # shallow, but the list is unreadable: the caller must assume any cut
    return frozenset(line.strip() for line in text.splitlines() if line.strip())


def verify_commit(repo: Repo, sha: str, allowed_signers: Path | None = None) -> Signature:
    """``git verify-commit`` on ``sha``: GPG, or SSH with ``gpg.ssh.allowedSignersFile`` (or
    ``allowed_signers``)."""
    config = ["-c", f"gpg.ssh.allowedSignersFile={allowed_signers}"] if allowed_signers else []
    # LC_ALL=C: gpg says "Good signature from" in the user's language otherwise, and the signer goes unread.
    done = _git([*config, "verify-commit", "-v", sha], repo.toplevel, {**_READ_ONLY_ENV, "LC_ALL": "C"}, 60)
    text = done.stderr
    signer = ""
    for line in text.splitlines():
        line = line.strip()
        # SSH: Good "git" signature for alice@example.com with ED25519 key SHA256:…
        if line.startswith('Good "git" signature for '):
            signer = line[len('Good "git" signature for ') :].split(" with ", 1)[0]
        # GPG: gpg: Good signature from "Alice <alice@example.com>" [ultimate]
        elif "Good signature from " in line:
            signer = line.split("Good signature from ", 1)[1].split('"')[1] if '"' in line else ""
    detail = _last_line(text) or (f"exit {done.returncode}" if done.returncode else "ok")
    # An unsigned commit fails with nothing on stderr; a signature git cannot check always says why.
    unsigned = done.returncode != 0 and not text.strip()
    return Signature(done.returncode == 0, signer, detail, unsigned)


# ---------------------------------------------------------------- identity and commits


def identity(cwd: Path) -> tuple[str, str]:
    """``(name, email)`` git will put on the caller's commits (``git var GIT_AUTHOR_IDENT``)."""
    done = _git(["var", "GIT_AUTHOR_IDENT"], cwd)
    ident = done.stdout.strip()
    if done.returncode != 0 or "<" not in ident:
        raise GitError(_last_line(done.stderr) or "git does not know who you are")
    name, _, rest = ident.partition("<")
    return name.strip(), rest.split(">", 1)[0].strip()


def signs_commits(repo: Repo) -> bool:
    """Does git sign the caller's commits here (``commit.gpgsign``)?"""
    done = _git(["config", "--bool", "commit.gpgsign"], repo.toplevel, {"GIT_OPTIONAL_LOCKS": "0"})
    return done.returncode == 0 and done.stdout.strip() == "true"


def committed_blob(repo: Repo, path: str) -> str | None:
    """The blob id of ``path`` in HEAD, or None (not committed, or no commit yet)."""
    done = _git(["rev-parse", "-q", "--verify", f"HEAD:{path}"], repo.toplevel, {"GIT_OPTIONAL_LOCKS": "0"})
    return done.stdout.strip() or None if done.returncode == 0 else None


# Settings that make the approval commit run nothing the repository names: no hook (an empty hooks
# directory, and --no-verify), no file-system monitor. The repository's own configuration is checked before
# (``repository_config``): these only make sure that what is left, the approver's own, runs no hook either.
HOOKS_OFF = "core.hooksPath=/dev/null"  # what a person types: no hook can be found under a non-directory


def commit_paths(repo: Repo, paths: Sequence[str], message: str) -> str:
    """Stage ``paths`` and commit exactly them (``git commit -m … -- <paths>``) with every hook off; the
    caller's other staged work stays staged and out of this commit. Returns what HEAD is after it.

    Through GitPython: git runs in the caller's session, so a pinentry or an SSH key's passphrase prompt
    reaches the approver's terminal, and git applies their ``commit.gpgsign``. (GitPython's own
    ``index.commit`` would do neither: it writes the commit object itself, unsigned.) Hooks never run: in a
    clone a robot can write, a ``pre-commit`` hook could stage its own file into the approver's signed
    commit, a ``post-commit`` hook make a second commit with their key."""
    # tempfile (~3 ms, with shutil): only this write; get, set and bounce import gitops
    import tempfile

    import git  # GitPython: only this write pays for importing it

    literal = {"GIT_LITERAL_PATHSPECS": "1"}  # a stone named '1.a*' must not stage 1.ab's marker
    try:
        with tempfile.TemporaryDirectory(prefix="routedriver-no-hooks-") as empty:
            here = git.Repo(str(repo.toplevel))
            here.git.set_persistent_git_options(c=[f"core.hooksPath={empty}", "core.fsmonitor=false"])
            here.git.add("--", *paths, env=literal)
            here.git.commit("-q", "--no-verify", "-m", message, "--", *paths, env=literal)
            return str(here.head.commit.hexsha)
    except git.GitCommandError as exc:
        raise GitError(_problem_line(_unwrap(str(exc.stderr or ""))) or f"git exited {exc.status}") from None
    except git.GitCommandNotFound:
        raise GitError("git is not installed") from None


def head_commit(repo: Repo) -> str | None:
    """The commit HEAD names, or None (no commit yet, or git cannot say)."""
    done = _git(["rev-parse", "-q", "--verify", "HEAD^{commit}"], repo.toplevel, {"GIT_OPTIONAL_LOCKS": "0"})
    return done.stdout.strip() or None if done.returncode == 0 else None


def commit_parents(repo: Repo, sha: str) -> tuple[str, ...] | None:
    """The parents of commit ``sha`` (none for a root commit), or None when git cannot show it."""
    done = _git(["rev-list", "--parents", "-n", "1", sha, "--"], repo.toplevel)
    fields = done.stdout.split()
    if done.returncode != 0 or not fields or fields[0] != sha:
        return None
    return tuple(fields[1:])


class ConfigEntry(NamedTuple):
    """One setting, as ``git config --list --show-scope --show-origin`` reports it."""

    scope: str  # local | worktree (the repository's own), also for the files they include
    origin: str  # where it is written: 'file:.git/config', 'file:/abs/included.inc'
    key: str  # section and name in lower case, a subsection as written: 'filter.Evil.clean'
    value: str


def repository_config(repo: Repo) -> list[ConfigEntry]:
    """Every setting of the repository's own configuration: ``.git/config``, the worktree's
    ``config.worktree`` and every file either includes (git reports an included file's settings with the
    scope of the file that includes it), in git's order: ONE ``git config --list``. Raises ``GitError`` when
    git cannot read the configuration."""
    done = _git(
        ["config", "--list", "--includes", "--show-scope", "--show-origin", "-z"],
        repo.toplevel,
        {"GIT_OPTIONAL_LOCKS": "0"},
    )
    if done.returncode != 0:
        raise GitError(_problem_line(done.stderr) or f"git config exited {done.returncode}")
    fields = done.stdout.split("\0")
    found: list[ConfigEntry] = []
    # Each setting is three fields: scope, origin, "key\nvalue" (just "key" for a bare boolean).
    for scope, origin, item in zip(fields[0::3], fields[1::3], fields[2::3], strict=False):
        if scope in ("local", "worktree"):
            key, _, value = item.partition("\n")
            found.append(ConfigEntry(scope, origin, key, value))
    return found


def own_changes(repo: Repo, since: str, paths: Sequence[str]) -> frozenset[str] | None:
    """Which files under ``paths`` (relative to the top-level) the commits made on this branch since the
    commit ``since`` changed: ONE ``git log`` of ``since..HEAD`` without the commits any other branch,
    remote-tracking branch or tag holds, and without merges (what a merge brings in was made elsewhere).
    None when git cannot say (``since`` unknown here)."""
    branch = current_branch(repo)
    mine = [f"--exclude={branch}"] if branch else []
    done = _git(
        [
            "log",
            "--no-merges",
            "--no-renames",
            "--format=",
            "--name-only",
            "-z",
            f"{since}..HEAD",
            "--not",
            *mine,
            "--branches",
            "--remotes",
            "--tags",
            "--",
            *paths,
        ],
        repo.toplevel,
    )
    if done.returncode != 0:
        return None
    return frozenset(name.strip("\n") for name in done.stdout.split("\0") if name.strip("\n"))


# ---------------------------------------------------------------- a base commit's tree (route.verify --base)


class TreeEntry(NamedTuple):
    """One file of a commit's tree, as ``git ls-tree`` lists it."""

    mode: str  # 100644, 100755 (files), 120000 (a symlink: the blob holds its target)
    blob: str


def resolve_commit(repo: Repo, ref: str) -> str | None:
    """The commit ``ref`` (any commit-ish: a sha, a branch, ``origin/main``, ``HEAD~2``) names, or None when
    git cannot resolve it here (not fetched, misspelled, not a commit)."""
    if not ref or ref.startswith("-"):
        return None  # an option, not a name: no ref starts with a dash
    done = _git(["rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"], repo.toplevel)
    sha = done.stdout.strip()
    return sha if done.returncode == 0 and sha else None


def tree_files(
    repo: Repo, commit: str, paths: Sequence[str] = (), *, kinds: frozenset[str] = frozenset({"blob"})
) -> dict[str, TreeEntry]:
    """Every file (blob) of ``commit`` under ``paths`` (relative to the top-level; none: the whole tree),
    ``{path: TreeEntry}``: ONE ``git ls-tree -r``. Submodules are left out (they are not files), unless
    ``kinds`` holds ``"commit"`` (a gitlink's entry: ``GITLINK_MODE`` and the commit it names)."""
    done = _git(["ls-tree", "-r", "-z", "--full-tree", commit, "--", *paths], repo.toplevel)
    if done.returncode != 0:
        raise GitError(_problem_line(done.stderr) or f"git ls-tree exited {done.returncode}")
    found: dict[str, TreeEntry] = {}
    for record in done.stdout.split("\0"):
        meta, tab, path = record.partition("\t")
        parts = meta.split(" ")
        if tab and len(parts) == 3 and parts[1] in kinds:
            found[path] = TreeEntry(parts[0], parts[2])
    return found


def blob_bytes(repo: Repo, blob: str) -> bytes | None:
    """The bytes of the blob ``blob`` (``git cat-file blob``), or None when git cannot give them."""
    # latin-1 maps every byte to one character, so the text decodes back to exactly git's bytes.
    done = proc.run(
        ["git", "cat-file", "blob", blob],
        cwd=repo.toplevel,
        extra_env={**_READ_ONLY_ENV, **_NO_REPLACE},
        encoding="latin-1",
        kill_leftovers=False,
    )
    return done.stdout.encode("latin-1") if done.returncode == 0 else None


def tree_changes(repo: Repo, commit: str) -> dict[str, str]:
    """Where HEAD's tree differs from ``commit``'s: ``{path: "A" | "M" | "D" | "T"}`` (HEAD adds, modifies,
    deletes it, or changes its type), relative to the top-level, a submodule as one path. ONE ``git
    diff-tree`` of the two trees, no history needed. Raises GitError when git cannot say."""
    done = _git(
        ["diff-tree", "-r", "-z", "--no-renames", "--name-status", commit, "HEAD", "--"], repo.toplevel
    )
    if done.returncode != 0:
        raise GitError(_problem_line(done.stderr) or f"git diff-tree exited {done.returncode}")
    fields = done.stdout.split("\0")
    return {path: status[:1] for status, path in zip(fields[0::2], fields[1::2], strict=False) if path}


def is_ancestor(repo: Repo, commit: str, of: str) -> bool | None:
    """Is ``commit`` in the history of ``of`` (itself included)? ``git merge-base --is-ancestor``; None
    when git cannot say (a commit it does not have)."""
    done = _git(["merge-base", "--is-ancestor", commit, of], repo.toplevel)
    return True if done.returncode == 0 else False if done.returncode == 1 else None


# ---------------------------------------------------------------- which paths the index holds, and as what

GITLINK_MODE = "160000"  # a submodule entry: a commit of another repository, not a file
SYMLINK_MODE = "120000"  # a symlink: its blob holds the link's text


# Attributes that make git write other bytes into the work tree than it stores (``eol=lf`` and ``text``
# alone do not: a checkout on this machine writes LF, as the repository holds it).
_CONVERTING = frozenset({"eol", "working-tree-encoding", "ident", "filter"})


def checkout_conversions(repo: Repo, paths: Sequence[str]) -> dict[str, str]:
    """Those of ``paths`` (relative to the top-level, POSIX) whose attributes make a checkout write other
    bytes than git stores (``eol=crlf``, ``working-tree-encoding``, ``ident``, a ``filter``), each with
    them as ``.gitattributes`` says them: ONE ``git check-attr -a --stdin -z``, which names only the
    attributes set for a path (nothing at all in a repository without any: ~4 ms for 10,000 paths), read by
    position (a path may hold any byte but NUL). Raises ``GitError`` when git cannot answer."""
    if not paths:
        return {}
    listing = b"".join(os.fsencode(path) + b"\0" for path in paths)
    done = _git(
        ["check-attr", "-a", "--stdin", "-z"], repo.toplevel, {"GIT_OPTIONAL_LOCKS": "0"}, stdin=listing
    )
    if done.returncode != 0:
        raise GitError(_problem_line(done.stderr) or f"git check-attr exited {done.returncode}")
    if not done.stdout:
        return {}
    tokens = done.stdout.split("\0")
    found: dict[str, list[str]] = {}
    for path, attribute, value in zip(tokens[0::3], tokens[1::3], tokens[2::3], strict=False):
        if attribute not in _CONVERTING or value == "unset" or (attribute == "eol" and value != "crlf"):
            continue
        found.setdefault(path, []).append(attribute if value == "set" else f"{attribute}={value}")
    return {path: " ".join(attributes) for path, attributes in found.items()}


def index_modes(repo: Repo, paths: Sequence[str] = (), globbed: Sequence[str] = ()) -> dict[str, str]:
    """``{path: mode}`` of the index entries (stage 0 and conflicts alike) that are one of ``paths``
    (relative to the top-level, POSIX, taken literally) or lie below one, or match one of the ``globbed``
    ``:(glob)`` patterns: ONE ``git ls-files -s``. A gitlink (submodule entry) has ``GITLINK_MODE``. Raises
    ``GitError`` when git cannot answer; asks nothing for no paths."""
    return {path: mode for path, (mode, _id) in _index_entries(repo, paths, globbed).items()}


def gitlinks(repo: Repo, paths: Sequence[str]) -> dict[str, str]:
    """``{path: commit}`` of those of ``paths`` (taken literally) that git's index holds as gitlinks
    (submodule entries): ONE ``git ls-files -s``; {} when git cannot answer."""
    try:
        entries = _index_entries(repo, paths)
    except GitError:
        return {}
    return {path: id_ for path, (mode, id_) in entries.items() if path in paths and mode == GITLINK_MODE}


def _index_entries(
    repo: Repo, paths: Sequence[str], globbed: Sequence[str] = ()
) -> dict[str, tuple[str, str]]:
    """``{path: (mode, object id)}`` of the index entries ``index_modes`` describes."""
    if not paths and not globbed:
        return {}
    specs = [f":(literal){path}" for path in paths] + [f":(glob){pattern}" for pattern in globbed]
    done = _git(["ls-files", "-s", "-z", "--", *specs], repo.toplevel, _MAGIC_ENV)
    if done.returncode != 0:
        raise GitError(_last_line(done.stderr) or f"git ls-files exited {done.returncode}")
    found: dict[str, tuple[str, str]] = {}
    for record in done.stdout.split("\0"):
        meta, tab, path = record.partition("\t")
        fields = meta.split(" ")
        if tab and len(fields) > 1:
            found[path] = (fields[0], fields[1])
    return found


# ---------------------------------------------------------------- what HEAD holds (route.verify's advice)


_STAGED_SINCE_HEAD = ("diff-index", "--cached", "--name-only", "--no-renames", "-z", "HEAD", "--")


def staged_since_head(repo: Repo) -> frozenset[str] | None:
    """Paths whose index entry differs from HEAD (staged, not committed: ``git diff-index --cached``, which
    looks at no work-tree file); None when there is no commit yet (nothing is committed)."""
    done = _git(_STAGED_SINCE_HEAD, repo.toplevel)
    if done.returncode != 0:
        return None
    return frozenset(filter(None, done.stdout.split("\0")))


def in_index(repo: Repo, paths: Sequence[str]) -> frozenset[str]:
    """Those of ``paths`` (relative to the top-level) that git's index holds, whatever their flags
    (assume-unchanged and skip-worktree entries included)."""
    found: set[str] = set()
    for chunk in _chunks(paths):
        done = _git(["ls-files", "-z", "--", *chunk], repo.toplevel)
        found.update(filter(None, done.stdout.split("\0")))
    return frozenset(found)


def ignored(repo: Repo, paths: Sequence[str]) -> frozenset[str]:
    """Those of the untracked ``paths`` (relative to the top-level) that git ignores: they never reach a
    commit, so never a clone."""
    found: set[str] = set()
    for chunk in _chunks(paths):
        # Absolute paths: check-ignore takes no ':(literal)' magic, and a relative path can start with ':'.
        # One a line (-z needs --stdin, and commands get none); a name git would quote (a newline in it)
        # is then not recognized, and is reported as untracked instead: the advice differs, not the verdict.
        absolute = [os.fspath(repo.toplevel / path) for path in chunk]
        args = ["-c", "core.quotePath=false", "check-ignore", "--", *absolute]
        done = _git(args, repo.toplevel, {"GIT_OPTIONAL_LOCKS": "0"})
        found.update(
            os.path.relpath(path, repo.toplevel).replace(os.sep, "/")
            for path in done.stdout.splitlines()
            if path
        )
    return frozenset(found)


_ARGS_BYTES = 96 << 10  # paths per command line: well under the kernel's limit for one


def _chunks(paths: Sequence[str]) -> Iterable[list[str]]:
    """``paths`` in runs whose command line stays well under the kernel's limit."""
    chunk: list[str] = []
    size = 0
    for path in paths:
        if chunk and size + len(path) > _ARGS_BYTES:
            yield chunk
            chunk, size = [], 0
        chunk.append(path)
        size += len(path) + 1
    if chunk:
        yield chunk
