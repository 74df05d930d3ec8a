"""REF's side of ``route.verify --base REF``: the commit it names and the files of its tree a run needs.

ONE ``git ls-tree -r`` lists them (the routes and the repository's approvers file, or with ``--all`` the
whole tree; ``start_base`` runs it in the background while the claims are checked), plus at most one more
for guard programs outside the routes (``Base.ensure``). ``policy`` compares the routes' definitions with
it; ``recheck`` reads the guards CI runs from it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import NamedTuple

from routedriver import gitops, globs
from routedriver.errors import Refused
from routedriver.later import Later
from routedriver.route import programs
from routedriver.route.load import STONE_SUFFIX
from routedriver.route.provenance import REPO_APPROVERS


class BaseDir(NamedTuple):
    """One directory of REF's tree: its files by name."""

    files: dict[str, gitops.TreeEntry]

    @property
    def stones(self) -> set[str]:
        return {
            name[: -len(STONE_SUFFIX)]
            for name in self.files
            if name.endswith(STONE_SUFFIX) and not name.startswith(".")
        }


class Base:
    """REF as one run compares with it: its commit and the files of its tree that the run needs, listed by
    ONE ``git ls-tree -r`` (of the routes and the top-level approvers file, or with ``--all`` of the whole
    tree), plus at most one more for guard programs outside the routes (``ensure``)."""

    def __init__(self, repo: gitops.Repo, ref: str, commit: str, listed: Sequence[str]) -> None:
        self.repo = repo
        self.ref = ref  # as given
        self.commit = commit
        self.listed = tuple(listed)  # the paths listed; () is the whole tree
        self.files: dict[str, gitops.TreeEntry] = {}
        self.gitlinks: dict[str, gitops.TreeEntry] = {}  # its submodules (no file: the commit each names)
        self.directories: dict[str, BaseDir] = {}
        self._routes: set[str] = set()  # directories holding a *.stone file (not a hidden one)
        self._list(listed)

    @property
    def short(self) -> str:  # REF's commit, as messages show it
        return self.commit[:12]

    def _list(self, paths: Sequence[str]) -> None:
        try:
            tree = gitops.tree_files(self.repo, self.commit, paths, kinds=frozenset({"blob", "commit"}))
        except gitops.GitError as exc:
            raise Refused(f"cannot list {self.ref} ({self.short}): {exc}", "check --base") from None
        for path, entry in list(tree.items()):
            if entry.mode == gitops.GITLINK_MODE:
                self.gitlinks[path] = tree.pop(path)
        self.files.update(tree)
        for path, entry in tree.items():
            parent, _, name = path.rpartition("/")
            self.directories.setdefault(parent or ".", BaseDir({})).files[name] = entry
            if name.endswith(STONE_SUFFIX) and not name.startswith("."):
                self._routes.add(parent or ".")

    def program(self, path: str) -> gitops.TreeEntry | None:
        """REF's entry for a guard program: a file, or a submodule that holds one."""
        return self.files.get(path) or self.gitlinks.get(path)

    def directory(self, path: str) -> BaseDir:
        return self.directories.get(path, BaseDir({}))

    def routes(self) -> list[str]:
        """The directories of REF's tree holding stones (among those listed)."""
        return sorted(self._routes)

    def ensure(self, named: Iterable[programs.Named], also: Iterable[str] = ()) -> None:
        """List REF's files for what guard commands name (and the paths ``also``) outside what is listed
        already (one more ``git ls-tree``; the head directory of a glob): nothing to do when the whole tree
        is listed."""
        if not self.listed:
            return
        wanted: set[str] = set(also)
        for names in named:
            wanted |= names.paths
            wanted |= {globs.parse(pattern).head or "." for pattern in names.globs}
        missing = sorted(path for path in wanted if not self._covered(path))
        if missing:
            self._list(missing)
            self.listed += tuple(missing)

    def _covered(self, path: str) -> bool:
        return any(
            listed == "." or path == listed or path.startswith(listed.rstrip("/") + "/")
            for listed in self.listed
        )


def start_base(repo: gitops.Repo | None, ref: str, routes: Sequence[str], *, all_routes: bool) -> Later[Base]:
    """REF, resolved now (refused at once when git cannot find it), its tree listed in the background for
    ``routes`` (relative to the top-level; with ``all_routes`` the whole tree, so every route REF has is
    known)."""
    if repo is None:
        raise Refused("--base needs a git repository", "run route.verify inside the routes' work tree")
    commit = gitops.resolve_commit(repo, ref)
    if commit is None:
        raise Refused(
            f"--base {ref}: git cannot find that commit here",
            "fetch the base's history (actions/checkout with fetch-depth: 0, or git fetch origin <base>) "
            "or check the name",
        )
    # The routes and the repository's approvers file (who may approve a policy change), or everything.
    listed = () if all_routes or "." in routes else (*sorted(set(routes)), REPO_APPROVERS)
    return Later(lambda: Base(repo, ref, commit, listed))
