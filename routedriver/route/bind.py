"""Bind a route to the current git branch, so robots on that branch can leave out ``--route``.

The binding is a file, ``$route/.route/.bind.<branch, / → .>.flag``, that can be committed with the branch.
Finding the route bound to a branch asks git for that one file name (``git ls-files`` with a ``:(glob)``
pathspec over tracked and untracked, not ignored, files) instead of walking the tree. So a flag must never
be ignored: ``--set`` un-ignores flags in the route's own ``.route/.gitignore`` and refuses, naming the
rule, when git would still ignore it (a whole directory excluded).

On a detached HEAD in a GitHub Actions pull-request run (``actions/checkout`` checks out the merge commit),
the binding looked up is the one of the pull request's source branch, ``$GITHUB_HEAD_REF``.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import NamedTuple

from routedriver import gitops
from routedriver.errors import Refused
from routedriver.route import frontmatter as fm
from routedriver.route import store
from routedriver.route.model import STATE_DIR, Route

NOT_BOUND = "no route bound to this branch"
NOT_BOUND_FIX = "use --route or route.bind --set"


class NotBound(Refused):
    """No route is bound to the branch (or there is no branch): the hooks stay quiet on it, unlike on a
    binding that is there but wrong."""


PROTECTED_BRANCHES = ("main", "master")
UNIGNORE_FLAGS = "!.bind.*.flag"  # in .route/.gitignore: a user's '*.flag' rule must not hide bindings
PR_BRANCH_VARIABLE = "GITHUB_HEAD_REF"  # a pull request's source branch, set by GitHub Actions


class Binding(NamedTuple):
    route_dir: Path  # absolute
    flag: Path
    branch: str


class BindResult(NamedTuple):
    action: str  # bound | unbound | shown | already-bound | nothing-bound
    branch: str
    routes: tuple[Path, ...]  # the route(s) concerned, absolute
    replaced: tuple[Path, ...] = ()  # routes that were bound to the branch before --set


def flag_name(branch: str) -> str:
    return f".bind.{branch.replace('/', '.')}.flag"


def pull_request_branch() -> str | None:
    """The pull request's source branch when this is a GitHub Actions pull-request run, else None.

    ``actions/checkout`` checks a pull request out as a detached merge commit: no branch in HEAD, but the
    branch the work (and its committed binding) came from is in ``$GITHUB_HEAD_REF``."""
    if os.environ.get("GITHUB_ACTIONS", "").strip().lower() != "true":
        return None
    return os.environ.get(PR_BRANCH_VARIABLE, "").strip() or None


def lookup_branch(repo: gitops.Repo) -> tuple[str | None, bool]:
    """The branch whose binding applies: HEAD's, else (detached, in a pull-request run) the pull request's
    source branch; and whether it came from ``$GITHUB_HEAD_REF``."""
    branch = gitops.current_branch(repo)
    if branch is not None:
        return branch, False
    head_ref = pull_request_branch()
    return (head_ref, True) if head_ref is not None else (None, False)


def _where(cwd: Path, action: str, read_only: bool = False) -> tuple[gitops.Repo, str]:
    repo = gitops.find_repo(cwd)
    if repo is None:
        raise Refused(f"cannot {action}: not in a git repository", "routes bind to git branches; use --route")
    branch = lookup_branch(repo)[0] if read_only else gitops.current_branch(repo)
    if branch is None:
        raise Refused(f"cannot {action}: HEAD is detached (no branch)", "git switch to a branch first")
    return repo, branch


def _flags(repo: gitops.Repo, branch: str) -> list[Binding]:
    """The bindings of ``branch`` that exist in the work tree."""
    try:
        paths = gitops.list_files(repo, [f"**/{STATE_DIR}/{flag_name(branch)}"])
    except gitops.GitError as exc:
        raise Refused(f"cannot look up route bindings: {exc}", "use --route") from None
    found = []
    for relative in paths:
        flag = repo.toplevel / relative
        if not os.path.isfile(flag):
            continue  # deleted in the work tree but still in the index
        recorded = _recorded_branch(flag)
        if recorded is not None and recorded != branch:
            continue  # 'feature/x' and 'feature.x' share a file name; the file says which it is
        found.append(Binding(flag.parent.parent, flag, branch))
    return found


def _recorded_branch(flag: Path) -> str | None:
    text = store.read_text(flag)
    parsed = fm.parse_document(text) if text is not None else None
    return fm.one(parsed[0], "branch") if parsed is not None else None


def _display(path: Path, cwd: Path) -> str:
    return os.path.relpath(path, cwd)


def bound_route(cwd: Path | None = None) -> str:
    """The route bound to the current branch, as a path relative to ``cwd`` (what ``--route`` would be).
    Refuses, naming the fix, when there is none or more than one."""
    here = Path.cwd() if cwd is None else cwd
    repo = gitops.find_repo(here)
    branch, from_pr = lookup_branch(repo) if repo is not None else (None, False)
    if repo is None or branch is None:
        why = " (not in a git repository)" if repo is None else " (HEAD is detached)"
        raise NotBound(NOT_BOUND + why, NOT_BOUND_FIX)
    bindings = _flags(repo, branch)
    if not bindings:
        if from_pr:  # say which branch was looked for: it is not the one HEAD names
            why = f" (HEAD is detached; looked for the pull request's branch {branch}, ${PR_BRANCH_VARIABLE})"
            raise NotBound(NOT_BOUND + why, NOT_BOUND_FIX)
        raise NotBound(NOT_BOUND, NOT_BOUND_FIX)
    if len(bindings) > 1:
        names = " and ".join(_display(binding.route_dir, here) for binding in bindings)
        raise Refused(
            f"{len(bindings)} routes are bound to branch {branch}: {names}",
            "keep one: route.bind --set R (it replaces the others), or pass --route",
        )
    return _display(bindings[0].route_dir, here)


def check_bindable(where: Path, display: str) -> tuple[gitops.Repo, str]:
    """The repository and branch a route at ``where`` (an existing directory: the route, or for a route
    about to be written, the nearest directory above it) would be bound to; refuses, as ``bind_set`` does,
    outside git, on a detached HEAD, on a protected branch, or from another repository's directory."""
    repo, branch = _where(where, "bind a route")
    if branch in PROTECTED_BRANCHES:
        name = os.path.basename(os.path.abspath(display))
        raise Refused(
            f"refusing to bind a route to {branch}",
            f"bind on a work branch: git switch -c route/{name}, then route.bind --set "
            + shlex.quote(display),
        )
    cwd_repo = gitops.find_repo(Path.cwd())
    if cwd_repo is None or cwd_repo.toplevel != repo.toplevel:
        raise Refused(f"route {display} is not in this git repository", "cd into its repository first")
    return repo, branch


def bind_set(route: Route) -> BindResult:
    """Bind ``route`` to the current branch (replacing any other route bound to it)."""
    if not route.stones:  # a directory without stones is not a route: write nothing anywhere
        raise Refused(
            f"route not found: {route.display} (no <name>.stone files in it)",
            "check the path (a directory holding <name>.stone files)",
        )
    repo, branch = check_bindable(route.path, route.display)
    store.ensure_state_dir(route)
    _unignore_flags(route)
    found = _flags(repo, branch)
    others = [binding for binding in found if binding.route_dir != route.path]
    flag = route.state_dir / flag_name(branch)
    relative = Path(os.path.relpath(route.path, repo.toplevel)).as_posix()
    already = any(binding.route_dir == route.path for binding in found)
    if not already:
        _refuse_if_ignored(repo, flag)
        fields: list[tuple[str, fm.Value]] = [
            ("branch", branch),
            ("route", relative),
            ("bound_at", store.utc_now()),
        ]
        store.write_text(flag, fm.render_document(fields))
    # The new flag first: killed in between, two bindings are refused with both names (never none).
    for binding in others:
        binding.flag.unlink(missing_ok=True)
    action = "already-bound" if already and not others else "bound"
    return BindResult(action, branch, (route.path,), tuple(binding.route_dir for binding in others))


def _unignore_flags(route: Route) -> None:
    """Bindings are found through git, which skips ignored files: the route's own ``.gitignore`` (the
    driver's file, and the closest to the flag, so it wins over a user's ``*.flag``) un-ignores them."""
    ignore = route.state_dir / ".gitignore"
    text = store.read_text(ignore)
    if text is None:
        return  # not ours to repair; _refuse_if_ignored says so if it matters
    if UNIGNORE_FLAGS not in text.splitlines():
        separator = "" if text.endswith("\n") or not text else "\n"
        store.write_text(ignore, f"{text}{separator}{UNIGNORE_FLAGS}\n")


def _refuse_if_ignored(repo: gitops.Repo, flag: Path) -> None:
    """Refuse, naming git's rule, when git would ignore the flag (so no route.* command could find it):
    only a whole excluded directory can still do that after ``_unignore_flags``."""
    rule = gitops.ignoring_rule(repo, flag)
    if rule is None:
        return
    relative = Path(os.path.relpath(flag, repo.toplevel)).as_posix()
    raise Refused(
        f"cannot bind: git ignores {relative} ({rule}), so no route.* command could find the binding",
        f"remove or narrow that rule (see git check-ignore -v {shlex.quote(relative)}), then bind again",
    )


def bind_get(cwd: Path | None = None) -> BindResult:
    here = Path.cwd() if cwd is None else cwd
    repo, branch = _where(here, "look up the route binding", read_only=True)
    bindings = _flags(repo, branch)
    return BindResult("shown", branch, tuple(binding.route_dir for binding in bindings))


def bind_del(cwd: Path | None = None) -> BindResult:
    here = Path.cwd() if cwd is None else cwd
    repo, branch = _where(here, "unbind")
    bindings = _flags(repo, branch)
    for binding in bindings:
        binding.flag.unlink(missing_ok=True)
    action = "unbound" if bindings else "nothing-bound"
    return BindResult(action, branch, tuple(binding.route_dir for binding in bindings))
