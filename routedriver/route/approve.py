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

The approver may be standing in a clone a robot can write: how the marker is committed there, and what is
refused first, is ``route.approval_commit``'s (shared with ``route.policy.approve``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal, NamedTuple

from routedriver import gitops
from routedriver.errors import Refused
from routedriver.route import approval_commit, hashing, inputs, store
from routedriver.route.approval_commit import HUMANS_ONLY
from routedriver.route.context import StoneContext
from routedriver.route.load import open_route
from routedriver.route.model import Route
from routedriver.route.provenance import find_approvers, mixed_changes


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
    route = open_route(route_option)
    context = inputs.stone_context(route, stone)
    name = context.stone.name
    if not human:
        raise Refused(
            HUMANS_ONLY,
            f"a person runs {context.command_hint('set')} --as approved in a terminal",
        )
    repo = context.repo
    if repo is not None:  # before git is asked anything that could run a program
        approval_commit.refuse_repository_config(repo)
    artifacts = inputs.artifacts_or_refuse(context)
    # The hash the stone's pass is keyed by (artifacts, and the files its guard's inputs: name).
    review_input_hash, content = inputs.review_input(context, artifacts, from_disk=True)
    ids = content.ids
    files = {context.show(path): path for path in artifacts}
    approval_commit.refuse_unfaithful(files, ids, repo.object_format if repo is not None else "sha1")
    approver = approval_commit.identity(repo.toplevel if repo is not None else Path.cwd())
    warnings = _unlisted(context, approver[1])
    path = store.approved_path(route, name)
    with store.writing(route):
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
                held = (
                    outcome == "already-approved"
                    and repo is not None
                    and approval_commit.committed(repo, path)
                )
                if held:
                    return result
                how = approval_commit.commit_command(repo, route, name, path) if repo is not None else ""
                return result._replace(not_committed="--no-commit", commit_with=how)
            if repo is None:
                return result._replace(not_committed="not a git repository")
            sha = approval_commit.commit(repo, route, name, path)
    return result._replace(commit=sha)


def _unlisted(context: StoneContext, email: str) -> tuple[str, ...]:
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
