"""A human's approval of a stone: ``$route/.route/$stone.approved``, committed with the human's identity.

Approving is a human act. The caller says whether a human is at the controls (the CLI: stdin is a
terminal); a robot's call is refused before anything is written. The marker records who (git's author
identity), which content (the review-input hash and the artifact manifest) and when; then ONLY that file is
committed (``git commit -m … -- <marker>``), so other staged work stays staged and out of the commit.
Approving the same content again is a no-op, except that an approval recorded but never committed (a run
killed between the write and the commit, or ``--no-commit``) is committed now.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from routedriver import gitops
from routedriver.errors import Refused
from routedriver.route import hashing, inputs, store
from routedriver.route.model import Route

HUMANS_ONLY = "only humans can approve"


@dataclass(frozen=True)
class ApproveResult:
    route: Route
    stone: str
    marker: Path
    review_input_hash: str
    approver: tuple[str, str]  # (name, email)
    outcome: str  # approved | already-approved
    commit: str | None  # the approval commit made now, if any
    not_committed: str = ""  # why the marker was not committed ("" when it was, or already was)


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
    review_input_hash, ids = inputs.review_input(context)
    repo = context.repo
    approver = _identity(repo.toplevel if repo is not None else Path.cwd())
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
            if not same:
                store.write_approved(route, name, review_input_hash, ids.ids, approver)
            outcome = "already-approved" if same else "approved"
            if not commit:
                why = "" if same and repo is not None and _committed(repo, path) else "--no-commit"
                return ApproveResult(route, name, path, review_input_hash, approver, outcome, None, why)
            if repo is None:
                return ApproveResult(
                    route, name, path, review_input_hash, approver, outcome, None, "not a git repository"
                )
            sha = _commit(repo, route, name, path)
    return ApproveResult(route, name, path, review_input_hash, approver, outcome, sha)


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


def _commit(repo: gitops.Repo, route: Route, stone: str, path: Path) -> str | None:
    """Commit the marker unless HEAD already holds exactly it; the new commit's id, or None."""
    relative = hashing.relative_posix(path, repo.toplevel)
    current = hashing.blob_id(path, repo.object_format)
    if gitops.committed_blob(repo, relative) == current:
        return None
    route_name = hashing.relative_posix(route.path, repo.toplevel)
    message = f"route({route_name}): approve {stone}"
    try:
        return gitops.commit_paths(repo, [relative], message)
    except gitops.GitError as exc:
        if gitops.committed_blob(repo, relative) == current:
            return None  # a concurrent approval of the same content committed it first
        raise Refused(
            f"approval recorded in {route.show(path)} but not committed: {exc}",
            "fix that, then run the same command again (it commits the recorded approval)",
        ) from None
