"""An approval's commit: a human's marker (a stone's ``.approved``, a route's ``policy.approved``) committed
alone, with the human's git identity and no hook, in a clone whose own configuration runs nothing.

Shared by ``route.approve`` (``route.stone.set --as approved``) and ``route.policy``
(``route.policy.approve``). The approver may be standing in a clone a robot can write, whose ``.git/`` is the
robot's: before anything is read or written, an approval refuses when the repository's own git configuration
names something that would run in the approver's session or rewrite what git stores
(``refuse_repository_config``); the commit runs no hook (``gitops.commit_paths``) and is checked afterwards to
hold only its own files (``check_commit``). What is approved is the bytes on disk as they are, with no
filter; a file git would store as other bytes (a clean filter, a line-ending conversion) or a symlink, whose
target could change under an unchanged link, is refused (``refuse_unfaithful``).
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path

from routedriver import gitops
from routedriver.errors import Refused
from routedriver.route import hashing, store
from routedriver.route.model import Route

HUMANS_ONLY = "only humans can approve"
SAFE_CLONE = "or approve in a clone only you write (docs/route-gate.md, Approving safely)"

# Settings of the repository's own configuration that make git run a program, or store other bytes than the
# files hold, while the approver's git adds and commits the marker (``git add``, ``git commit``, signing).
# Keys in lower case, as ``git config --list`` prints them; '*' stands for a subsection (a driver's name).
# Not here, because the approval's git never reaches them: core.editor and sequence.editor (the message is
# given with -m, no editor opens), core.pager and pager.* (git's output is not a terminal), credential.*,
# remote.*, url.*, core.gitProxy (nothing goes over the network), alias.* (git's own commands cannot be
# aliased), merge.*.driver, trailer.* (no merge, no trailers). A line-ending conversion (core.autocrlf,
# core.eol) or a filter the approver's own configuration defines changes no code that runs, but may change
# the bytes: the files themselves are compared (``refuse_unfaithful``).
RUNS_CODE = (
    "core.hookspath",  # hooks: a pre-commit hook stages its own files, a post-commit hook signs more
    "core.fsmonitor",  # a program git asks which files changed, on every add and commit
    "core.sshcommand",
    "filter.*.clean",  # filters run on git add and rewrite what git stores
    "filter.*.smudge",
    "filter.*.process",
    "filter.*.required",
    "gpg.program",  # the signing program: it could sign anything with the approver's key
    "gpg.*.program",
    "gpg.ssh.defaultkeycommand",
    "include.path",  # another file's settings, which could be any of these
    "includeif.*.path",
    "diff.external",
    "diff.*.command",
    "diff.*.textconv",
)
_SHOWN_KEYS = {  # how the documentation spells them
    "core.hookspath": "core.hooksPath",
    "core.fsmonitor": "core.fsmonitor",
    "core.sshcommand": "core.sshCommand",
    "gpg.ssh.defaultkeycommand": "gpg.ssh.defaultKeyCommand",
}
_OFF = ("", "false", "no", "off", "0")


def identity(cwd: Path) -> tuple[str, str]:
    try:
        return gitops.identity(cwd)
    except gitops.GitError as exc:
        raise Refused(
            f"git does not know who you are ({exc})",
            'run git config --global user.name "Your Name"; git config --global user.email you@example.com',
        ) from None


def committed(repo: gitops.Repo, path: Path) -> bool:
    """HEAD holds exactly this marker."""
    relative = hashing.relative_posix(path, repo.toplevel)
    return gitops.committed_blob(repo, relative) == hashing.blob_id(path, repo.object_format)


def _uncommitted_gitignore(repo: gitops.Repo, route: Route) -> list[str]:
    """``.route/.gitignore`` when HEAD does not hold it yet and it is the driver's own: committed with the
    first approval, so a branch switch does not trip over it (an approval commit may hold it)."""
    ignore = route.state_dir / ".gitignore"
    relative = hashing.relative_posix(ignore, repo.toplevel)
    if store.read_text(ignore) != store.GITIGNORE or gitops.committed_blob(repo, relative) is not None:
        return []
    return [relative]


def _message(repo: gitops.Repo, route: Route, stone: str) -> str:
    return f"route({hashing.relative_posix(route.path, repo.toplevel)}): approve {stone}"


def commit_command(repo: gitops.Repo, route: Route, stone: str, path: Path) -> str:
    """What a person runs to commit the approval recorded at ``path`` themselves, exactly as the approve
    command would: its files named (``git commit -- <paths>`` commits only them, whatever else is
    staged) and no hook run (``core.hooksPath`` pointed where no hook can be)."""
    paths = " ".join(shlex.quote(item) for item in _approval_paths(repo, route, path))
    message = shlex.quote(_message(repo, route, stone))
    return f"git add -- {paths} && git -c {gitops.HOOKS_OFF} commit --no-verify -m {message} -- {paths}"


def _approval_paths(repo: gitops.Repo, route: Route, path: Path) -> list[str]:
    return [hashing.relative_posix(path, repo.toplevel), *_uncommitted_gitignore(repo, route)]


def commit(repo: gitops.Repo, route: Route, stone: str, path: Path) -> str | None:
    """Commit the marker unless HEAD already holds exactly it; the new commit's id, or None. Refuses when
    the commit made holds anything but its own files (``check_commit``)."""
    relative = hashing.relative_posix(path, repo.toplevel)
    current = hashing.blob_id(path, repo.object_format)
    if gitops.committed_blob(repo, relative) == current:
        return None
    paths = _approval_paths(repo, route, path)
    before = gitops.head_commit(repo)
    try:
        sha = gitops.commit_paths(repo, paths, _message(repo, route, stone))
    except gitops.GitError as exc:
        if gitops.committed_blob(repo, relative) == current:
            return None  # a concurrent approval of the same content committed it first
        raise Refused(
            f"approval recorded in {route.show(path)} but not committed: {exc}",
            "fix that, then run the same command again (it commits the recorded approval)",
        ) from None
    check_commit(repo, sha, before, paths, {relative: current})
    return sha


def check_commit(
    repo: gitops.Repo, sha: str, before: str | None, paths: Sequence[str], blobs: Mapping[str, str]
) -> None:
    """Refuse, naming what is wrong, unless the commit ``sha`` (what HEAD is after the approval committed)
    is exactly an approval: an ordinary commit (a root commit only when there was no ``before``, the HEAD
    it was made on), changing only ``paths`` (relative to the top-level), with the bytes ``blobs`` says for
    those it names. Hooks are off and the repository's configuration was checked, so this should never
    fire; if it does, something else wrote to the clone at the same time (a commit made after the approval
    is HEAD now, and changes other files), and the approver must know before they push."""
    undo = (
        "route.verify will not accept it; look at it with git show --stat HEAD, undo it with "
        "git reset --soft HEAD~1 (your files stay as they are), and approve again in a clone only you write"
    )
    parents = gitops.commit_parents(repo, sha)
    if parents is None or len(parents) > 1 or (before is not None and not parents):
        raise Refused(
            f"the approval commit {sha[:12]} is not an ordinary commit on {str(before)[:12]}: something "
            "else committed in this clone at the same time",
            undo,
        )
    changed = gitops.changed_paths(repo, [sha]).get(sha)
    others = sorted(set(changed or ()) - set(paths)) if changed is not None else ["(git cannot say)"]
    if others:
        shown = ", ".join(others[:3]) + (f" and {len(others) - 3} more" if len(others) > 3 else "")
        raise Refused(f"the approval commit {sha[:12]} also changes {shown}", undo)
    for relative, blob in blobs.items():
        if gitops.committed_blob(repo, relative) != blob:
            raise Refused(
                f"the approval commit {sha[:12]} holds other bytes for {relative} than the file", undo
            )


def refuse_repository_config(repo: gitops.Repo) -> None:
    """Refuse, before anything is written, when the repository's own git configuration (``.git/config``,
    the worktree's ``config.worktree`` and whatever they include: all of it writable by whoever can write
    the clone) sets something that runs a program or rewrites bytes while the approver's git works
    (``RUNS_CODE``); the line says which key, where, and how to remove it."""
    try:
        entries = gitops.repository_config(repo)
    except gitops.GitError as exc:
        raise Refused(
            f"git cannot read this repository's configuration ({exc})",
            "fix .git/config, " + SAFE_CLONE,
        ) from None
    found: dict[str, gitops.ConfigEntry] = {}
    for entry in entries:
        key = entry.key.lower()
        if key == "core.fsmonitor" and entry.value.strip().lower() in _OFF:
            continue  # switched off: runs nothing
        if any(_key_matches(key, pattern) for pattern in RUNS_CODE):
            found.setdefault(entry.key, entry)
    if not found:
        return
    shown = [f"{_shown_key(key)} (in {_origin(entry)})" for key, entry in found.items()]
    fixes = [_removal(entry) for entry in found.values()]
    listed = ", ".join(shown[:3]) + (f" and {len(shown) - 3} more" if len(shown) > 3 else "")
    raise Refused(
        f"this repository's own git configuration sets {listed}, which would run a program or rewrite "
        "files in your session while you approve (whoever can write this clone can set it)",
        "remove it: " + "; ".join(dict.fromkeys(fixes)) + "; " + SAFE_CLONE,
    )


def _key_matches(key: str, pattern: str) -> bool:
    """``filter.*.clean`` matches ``filter.evil.clean`` and ``filter.a.b.clean`` (a subsection may hold
    dots); a pattern without ``*`` matches itself."""
    if "*" not in pattern:
        return key == pattern
    head, _, tail = pattern.partition("*")
    return key.startswith(head) and key.endswith(tail) and len(key) > len(head) + len(tail)


def _shown_key(key: str) -> str:
    return _SHOWN_KEYS.get(key.lower(), key)


def _origin(entry: gitops.ConfigEntry) -> str:
    return entry.origin.removeprefix("file:")


def _removal(entry: gitops.ConfigEntry) -> str:
    """The one command that removes ``entry`` from the file it is written in."""
    key = _shown_key(entry.key)
    origin = _origin(entry)
    if entry.scope == "worktree":
        where = "--worktree"
    elif origin == ".git/config" or origin.endswith("/.git/config"):
        where = "--local"
    else:  # a file .git/config includes
        where = f"--file {shlex.quote(origin)}"
    section, _, name = key.rpartition(".")
    if section.lower().startswith(("filter.", "diff.")) and section.count(".") >= 1:
        return f"git config {where} --remove-section {shlex.quote(section)}"
    return f"git config {where} --unset-all {shlex.quote(key)}"


def refuse_unfaithful(files: Mapping[str, Path], stored: Mapping[str, str], object_format: str) -> None:
    """Refuse approving files whose bytes on disk are not what git stores: ``stored`` holds their ids as git
    would store them (through every filter and line-ending conversion), ``files`` the files by the same
    relative names. (A symlink never gets here: hashing the stone's files refused it, see
    ``hashing.symlink_problem``.)"""
    for relative, path in sorted(files.items()):
        on_disk = hashing.blob_id(path, object_format)  # the bytes as they are: no filter, no conversion
        if on_disk != stored[relative]:
            raise Refused(
                f"git would store other bytes for {relative} than the file holds (a filter, a "
                ".gitattributes line-ending or encoding setting, or core.autocrlf rewrites it), so what "
                "you approve is not what CI checks out",
                "make the file hold what git stores (for line endings: LF), or remove the conversion "
                "(git check-attr -a -- " + shlex.quote(relative) + " shows it), then approve",
            )
