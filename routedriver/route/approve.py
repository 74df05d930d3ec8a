"""A human's approval of a stone: ``$route/.route/$stone.approved``, committed with the human's identity.

Approving is a human act. The caller says whether a human is at the controls (the CLI: stdin is a
terminal); a robot's call is refused before anything is written. The marker records who (git's author
identity), which content (the review-input hash and the artifact manifest, hashed from the files on disk:
the bytes the human saw, never git's index, which a robot can make disagree with them) and when; then ONLY
that file is committed (``git commit -m … -- <marker>``), so other staged work stays staged and out of the
commit. Approving the same content again is a no-op, except that an approval recorded but never committed
(a run killed between the write and the commit, or ``--no-commit``) is committed now, and an approval whose
commit route.verify would not accept (made by someone else, together with other changes, edited since, or
unsigned while the approver now signs commits) is made again, in a fresh commit.

The approver may be standing in a clone a robot can write, whose ``.git/`` is the robot's: before anything
is read or written, an approval refuses when the repository's own git configuration names something that
would run in the approver's session or rewrite what git stores (``refuse_repository_config``); the commit
runs no hook (``gitops.commit_paths``) and is checked afterwards to hold only its own files
(``check_commit``). What is approved is the bytes on disk as they are, with no filter; a file git would
store as other bytes (a clean filter, a line-ending conversion) or a symlink, whose target could change
under an unchanged link, is refused (``refuse_unfaithful``).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal, NamedTuple

from routedriver import gitops
from routedriver.errors import Refused
from routedriver.route import hashing, inputs, store
from routedriver.route.model import Route
from routedriver.route.provenance import find_approvers, mixed_changes

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


class ApproveResult(NamedTuple):
    route: Route
    stone: str
    marker: Path
    review_input_hash: str
    approver: tuple[str, str]  # (name, email)
    outcome: Literal["approved", "already-approved"]
    commit: str | None  # the approval commit made now, if any
    not_committed: str = ""  # why the marker was not committed ("" when it was, or already was)
    warnings: tuple[str, ...] = ()  # e.g. the approver is not in the approvers file
    renewed: str = ""  # the same content was approved again: why the old approval's commit would not do
    commit_with: str = ""  # --no-commit: the exact command that commits the approval alone, hooks off


def approve(route_option: str | None, stone: str, *, human: bool, commit: bool = True) -> ApproveResult:
    """Record (and commit) a human's approval of ``stone``'s current artifacts."""
    from routedriver.route.api import _writing, open_route

    route = open_route(route_option)
    context = inputs.stone_context(route, stone)
    name = context.stone.name
    if not human:
        raise Refused(
            HUMANS_ONLY,
            f"a person runs {context.command_hint('set')} --as approved in a terminal",
        )
    repo = context.repo
    if repo is not None:
        refuse_repository_config(repo)  # before git is asked anything that could run a program
    artifacts = inputs.artifacts_or_refuse(context)
    # The hash the stone's pass is keyed by (artifacts, and the files its guard's inputs: name).
    review_input_hash, content = inputs.review_input(context, artifacts, from_disk=True)
    ids = content.ids
    files = {context.show(path): path for path in artifacts}
    refuse_unfaithful(files, ids, repo.object_format if repo is not None else "sha1")
    approver = _identity(repo.toplevel if repo is not None else Path.cwd())
    warnings = _unlisted(context, approver[1])
    path = store.approved_path(route, name)
    with _writing(route):
        store.ensure_state_dir(route)
        with store.stone_lock(route, f"{name}.approve"):
            existing = store.read_marker(path, name)
            same = (
                existing is not None
                and existing.review_input_hash == review_input_hash
                and existing.approver_email.lower() == approver[1].lower()
            )
            renewed = ""
            if same and repo is not None and not warnings:
                renewed = _commit_would_not_do(repo, path, approver[1])
            if not same or renewed:
                store.write_approved(route, name, review_input_hash, ids, approver)
            outcome: Literal["approved", "already-approved"] = (
                "already-approved" if same and not renewed else "approved"
            )
            result = ApproveResult(
                route, name, path, review_input_hash, approver, outcome, None, "", warnings, renewed
            )
            if not commit:
                committed = outcome == "already-approved" and repo is not None and _committed(repo, path)
                if committed:
                    return result
                how = commit_command(repo, route, name, path) if repo is not None else ""
                return result._replace(not_committed="--no-commit", commit_with=how)
            if repo is None:
                return result._replace(not_committed="not a git repository")
            sha = _commit(repo, route, name, path)
    return result._replace(commit=sha)


def _unlisted(context: inputs.StoneContext, email: str) -> tuple[str, ...]:
    """A warning when an approvers file exists and does not list ``email``: route.verify will not accept
    the approval (said now, while the approver is at the terminal)."""
    found = find_approvers(context.route, context.repo)
    if found.path is None or found.problem or email.lower() in found.emails:
        return ()
    shown = hashing.relative_posix(found.path, context.base)
    return (
        f"{email} is not in {shown}: route.verify will not accept this approval until a listed approver "
        "approves (or the approvers file, on the base branch, lists you)",
    )


def _commit_would_not_do(repo: gitops.Repo, path: Path, email: str) -> str:
    """Why the commit that holds the current approval (same content, same approver) would not satisfy
    route.verify, so approving again must make a fresh commit; "" when it would, or when it is not
    committed yet (the usual commit below takes care of that)."""
    relative = hashing.relative_posix(path, repo.toplevel)
    info = gitops.last_commits(repo, [relative]).get(relative)
    if info is None or info.deleted:
        return ""
    if hashing.blob_id(path, repo.object_format) != info.blob:
        return f"the marker differs from what commit {info.sha[:12]} committed"
    if info.author_email.lower() != email.lower():
        return f"commit {info.sha[:12]} that holds it was made by {info.author_email}"
    others = mixed_changes(gitops.changed_paths(repo, [info.sha]).get(info.sha), relative)
    if others:
        return f"commit {info.sha[:12]} that holds it also changes {others}"
    if gitops.signs_commits(repo) and gitops.verify_commit(repo, info.sha).unsigned:
        return f"commit {info.sha[:12]} that holds it is not signed, and you now sign commits"
    return ""


def _identity(cwd: Path) -> tuple[str, str]:
    try:
        return gitops.identity(cwd)
    except gitops.GitError as exc:
        raise Refused(
            f"git does not know who you are ({exc})",
            'run git config --global user.name "Your Name"; git config --global user.email you@example.com',
        ) from None


def _committed(repo: gitops.Repo, path: Path) -> bool:
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


def _commit(repo: gitops.Repo, route: Route, stone: str, path: Path) -> str | None:
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
    relative names. A symlink is refused too: git stores only the link, so an approval of it would not
    cover its target, which can change while the link stays as it is."""
    for relative, path in sorted(files.items()):
        if os.path.islink(path):
            raise Refused(
                f"{relative} is a symlink (to {os.readlink(path)}): an approval would cover the link, "
                "not what it points at",
                f"{inputs.SYMLINK_FIX}, then approve",
            )
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
