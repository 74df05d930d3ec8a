"""``route.init``: a starter route written from a template shipped with routedriver.

A template is a directory ``templates/routes/<name>/`` (the package ``routedriver.templates``): its
``.stone`` and ``.guard`` files are the route, and ``template.txt`` holds the one line ``route.init --list``
shows. In a stone, ``{{route}}`` becomes the new route's path (shell-quoted, relative to the repository's top
level, where guard commands and robots run), so every stone names the exact commands to run: a stone is a
self-contained guide (what, why, how, watch out).

Nothing is written unless everything can be: a file the template would replace, a directory that already
holds another route, a ``--bind`` that would be refused and a ``.claude/settings.json`` that cannot be merged
are all refused (exit 2) before the first write. ``--force`` replaces the template's own files (regular files
only: a directory, symlink or FIFO in the way is always refused) and leaves every other file alone.

``report`` is the command: its Report's stdout lists the files written, the binding and the hooks added (or,
with ``--list``, one line per template); its stderr says what to run next.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path
from typing import NamedTuple

from routedriver import gitops, userfile
from routedriver.errors import Refused, UserError
from routedriver.fsutil import atomic_write, existing_directory
from routedriver.report import Report
from routedriver.route.bind import bind_set, check_bindable
from routedriver.route.claude_hooks import SettingsPlan, plan_settings
from routedriver.route.hashing import refuse_undecodable
from routedriver.route.load import GUARD_SUFFIX, STONE_SUFFIX, load_route
from routedriver.route.provenance import REPO_APPROVERS, parse_approvers

DEFAULT_TEMPLATE = "feature"
SUMMARY_FILE = "template.txt"
ROUTE_PLACEHOLDER = "{{route}}"
_ROUTE_FILES = (STONE_SUFFIX, GUARD_SUFFIX)


class Template(NamedTuple):
    name: str
    summary: str  # the first line of template.txt


class RouteFile(NamedTuple):
    target: Path  # absolute
    text: str
    replaces: bool  # the file exists (only with --force)


class RoutePlan(NamedTuple):
    """What ``write_route`` will write, every refusal already made."""

    directory: Path  # absolute
    template: str
    files: tuple[RouteFile, ...]


def _templates_root() -> Traversable:
    return resources.files("routedriver.templates") / "routes"


def templates() -> tuple[Template, ...]:
    """Every shipped template, by name."""
    found = []
    for entry in _templates_root().iterdir():
        summary_file = entry / SUMMARY_FILE
        if entry.is_dir() and summary_file.is_file():  # the package's own files, not a user's path
            summary = summary_file.read_text(encoding="utf-8").strip().splitlines()
            found.append(Template(entry.name, summary[0] if summary else ""))
    return tuple(sorted(found))


def _template_dir(name: str) -> Traversable:
    known = [template.name for template in templates()]
    if name not in known:  # only listed names: "../x" or "feature/" never reach the file system
        raise Refused(f"unknown template {name!r}; templates: {', '.join(known)}", "see route.init --list")
    return _templates_root() / name


def plan_route(directory: str, template: str, *, force: bool) -> RoutePlan:
    """Everything ``route.init DIR`` will write; refuses (nothing written) when it would replace a file
    without ``force``, or write into a directory that already holds another route."""
    refuse_undecodable("route", [directory])
    source = _template_dir(template)
    root = Path(os.path.abspath(directory))
    if os.path.lexists(root) and not os.path.isdir(root):
        raise Refused(f"{directory} exists and is not a directory", "choose another path for the route")
    route_arg = shlex.quote(_route_argument(root))
    names = sorted(entry.name for entry in source.iterdir() if entry.name.endswith(_ROUTE_FILES))
    files = []
    for name in names:
        target = root / name
        exists = os.path.lexists(target)
        if exists and (os.path.islink(target) or not os.path.isfile(target)):
            raise Refused(
                f"{_shown(target)} exists and is not a regular file",
                "remove it or choose another directory",
            )
        text = (source / name).read_text(encoding="utf-8")
        if name.endswith(STONE_SUFFIX):
            text = text.replace(ROUTE_PLACEHOLDER, route_arg)
        files.append(RouteFile(target, text, exists))
    if not force:
        _refuse_replacing([file.target for file in files if file.replaces])
        _refuse_other_route(root, set(names), directory)
    return RoutePlan(root, template, tuple(files))


def _route_argument(root: Path) -> str:
    """The route as commands name it: relative to the git top level (where guards and robots run), or to
    the current directory outside git."""
    repo = gitops.find_repo(existing_directory(root))
    base = repo.toplevel if repo is not None else Path.cwd()
    return Path(os.path.relpath(root, base)).as_posix()


def _shown(path: Path) -> str:
    return os.path.relpath(path)


def _refuse_replacing(existing: list[Path]) -> None:
    if not existing:
        return
    more = f" (and {len(existing) - 1} more of the template's files)" if len(existing) > 1 else ""
    raise Refused(
        f"{_shown(existing[0])} exists{more}",
        "choose another directory, or pass --force to overwrite the template's files",
    )


def _refuse_other_route(root: Path, template_names: set[str], directory: str) -> None:
    """A directory that already holds other stones is another route: mixing a template into it would give
    two first stones."""
    try:
        present = sorted(
            entry.name
            for entry in os.scandir(root)
            if entry.name.endswith(_ROUTE_FILES)
            and not entry.name.startswith(".")
            and entry.name not in template_names
        )
    except FileNotFoundError:
        return
    except OSError as exc:
        raise Refused(f"cannot read {directory}: {exc.strerror}", "check its permissions") from None
    if present:
        listed = ", ".join(present[:3]) + (" …" if len(present) > 3 else "")
        raise Refused(
            f"{directory} already holds a route ({listed})",
            "choose a new directory, or pass --force to add the template's files to it",
        )


def check_bind(plan: RoutePlan) -> str:
    """The branch ``--bind`` will bind the new route to; refuses, before anything is written, as
    ``route.bind --set`` would (outside git, detached HEAD, main/master)."""
    return check_bindable(existing_directory(plan.directory), _shown(plan.directory))[1]


def write_route(plan: RoutePlan) -> tuple[Path, ...]:
    """Write the planned files (each atomically). If one cannot be written, the files this call created are
    removed again, so a failed run leaves the directory as it found it (files it replaced stay replaced)."""
    created: list[Path] = []
    made_directory = not os.path.exists(plan.directory)
    try:
        for file in plan.files:
            atomic_write(file.target, file.text)
            if not file.replaces:
                created.append(file.target)
    except OSError as exc:
        for path in created:
            path.unlink(missing_ok=True)
        if made_directory:
            with contextlib.suppress(OSError):  # only if empty: nothing of anyone else's is removed
                plan.directory.rmdir()
        raise Refused(
            f"cannot write the route in {_shown(plan.directory)}: {exc.strerror or exc}",
            "check the directory's permissions and free space, then run route.init again",
        ) from None
    return tuple(file.target for file in plan.files)


# ---------------------------------------------------------------- --approver-me

APPROVERS_HEADER = (
    "# Who may approve stones (route.stone.set --as approved) and route changes (route.policy.approve),\n"
    "# one email a line. CI reads this file from the pull request's base branch: commit it to main first.\n"
)


class ApproversPlan(NamedTuple):
    """What ``--approver-me`` will do: write ``path`` listing ``email``, or nothing (``text`` None) when the
    file lists it already."""

    path: Path  # <top-level>/.route-approvers
    email: str
    text: str | None


def plan_approvers(cwd: Path) -> ApproversPlan:
    """``.route-approvers`` at the repository's top level listing the current git identity; refuses (before
    anything is written) outside git, without an identity, and when a file is there that does not list it:
    someone else's list is theirs to change."""
    repo = gitops.find_repo(cwd)
    if repo is None:
        raise Refused(
            "--approver-me writes .route-approvers at the repository's top level, but this is not a git "
            "repository",
            "run it inside your repository",
        )
    try:
        email = gitops.identity(repo.toplevel)[1]
    except gitops.GitError as exc:
        raise Refused(
            f"--approver-me lists your git identity, and git has none ({exc})",
            'set it: git config user.name "Your Name"; git config user.email you@example.com',
        ) from None
    if not email:
        raise Refused(
            "--approver-me lists your git email, and git has none",
            "set it: git config user.email you@example.com",
        )
    path = repo.toplevel / REPO_APPROVERS
    shown = _shown(path)
    if not os.path.lexists(path):
        return ApproversPlan(path, email, f"{APPROVERS_HEADER}{email}\n")
    text = userfile.read_text(path, what="approvers file", shown=shown)
    if email.lower() in parse_approvers(text):
        return ApproversPlan(path, email, None)
    raise Refused(
        f"{shown} exists and does not list you ({email})",
        "add your email to it yourself (one a line), or leave out --approver-me",
    )


def _write_planned(path: Path, text: str | None, fix: str) -> None:
    """Write a planned file (``--claude-code``'s settings, ``--approver-me``'s approvers) atomically;
    nothing when ``text`` is None (the file holds it already). A write that fails is refused in one line."""
    if text is None:
        return
    try:
        atomic_write(path, text)
    except OSError as exc:
        raise Refused(f"cannot write {_shown(path)}: {exc.strerror or exc}", fix) from None


def approvers_hint(cwd: Path) -> str | None:
    """The next step to suggest when nobody may approve yet: no approvers file where route.verify looks
    (None inside a repository that has one, and outside git)."""
    repo = gitops.find_repo(cwd)
    if repo is None or os.path.lexists(repo.toplevel / REPO_APPROVERS):
        return None
    return f"route.init --approver-me   # writes {REPO_APPROVERS} listing you, who may approve"


# ---------------------------------------------------------------- the command


def report(
    directory: str | None,
    *,
    template: str | None,
    force: bool,
    list_templates: bool,
    bind: bool,
    claude_code: bool,
    approver_me: bool,
) -> Report:
    """``route.init``: plan everything asked for (every refusal comes here, before the first write), then
    write it. A write that fails after others still reports what was written before it."""
    if list_templates:
        if directory is not None or template or force or bind or claude_code or approver_me:
            raise Refused("--list takes nothing else", "run route.init --list alone")
        lines = [
            f"{found.name + (' (default)' if found.name == DEFAULT_TEMPLATE else ''):<19} {found.summary}"
            for found in templates()
        ]
        return Report(_lines(lines))
    if directory is None and (not (claude_code or approver_me) or template or force or bind):
        # Without DIR only --claude-code and --approver-me make sense: they serve routes that exist already.
        raise Refused("missing DIR", "name the route's directory: route.init routes/my-feature")
    plan = plan_route(directory, template or DEFAULT_TEMPLATE, force=force) if directory is not None else None
    branch = check_bind(plan) if bind and plan is not None else None
    settings = _settings_plan() if claude_code else None
    approvers = plan_approvers(Path.cwd()) if approver_me else None
    # Every refusal is behind us: from here on, write.
    written: list[str] = []
    warnings: list[str] = []
    try:
        if plan is not None:
            written += [os.path.relpath(path) for path in write_route(plan)]
        if branch is not None and plan is not None:
            bind_set(load_route(os.path.relpath(plan.directory)))
            written.append(f"bound {os.path.relpath(plan.directory)} to branch {branch}")
        if settings is not None:
            _write_planned(settings.path, settings.text, "check its permissions")
            written += _settings_written(settings)
            warnings += _not_on_path()
        if approvers is not None:
            _write_planned(approvers.path, approvers.text, "check the directory's permissions")
            written.append(_approvers_written(approvers))
    except UserError as exc:
        return Report(_lines(written), (*warnings, exc.line()), exc.exit_code)
    after = (
        ()
        if plan is None
        else (_next_steps(Path(os.path.relpath(plan.directory)), bound=branch is not None),)
    )
    return Report(_lines(written), (*warnings, *after))


def _lines(lines: list[str]) -> str:
    return "".join(f"{line}\n" for line in lines)


def _settings_plan() -> SettingsPlan:
    repo = gitops.find_repo(Path.cwd())
    if repo is None:
        raise Refused(
            "--claude-code writes the repository's .claude/settings.json, but this is not a git repository",
            "run it inside your repository, or leave out --claude-code",
        )
    return plan_settings(repo.toplevel)


def _settings_written(settings: SettingsPlan) -> list[str]:
    shown = os.path.relpath(settings.path)
    lines = [
        f"{shown}: {hook.program} now also runs for {hook.event} matcher {hook.matcher}"
        for hook in settings.widened
    ]
    if settings.added:
        lines.append(f"{shown}: added hooks {', '.join(hook.event for hook in settings.added)}")
    elif not settings.widened:
        lines.append(f"{shown}: the route hooks are there already; nothing added")
    return lines


def _not_on_path() -> list[str]:
    missing = [program for program in ("route.drive", "route.bounce") if shutil.which(program) is None]
    if not missing:
        return []
    return [
        f"warning: {' and '.join(missing)} not on PATH here; Claude Code finds hook commands on its "
        "PATH, so install routedriver there (pipx install …) or the hooks do nothing"
    ]


def _approvers_written(approvers: ApproversPlan) -> str:
    shown = os.path.relpath(approvers.path)
    if approvers.text is None:
        return f"{shown}: lists {approvers.email} already; nothing written"
    return f"{shown}: lists {approvers.email}, who may approve (commit it to main first)"


def _next_steps(route: Path, *, bound: bool) -> str:
    shown = shlex.quote(str(route))
    flag = "" if bound else f" --route {shown}"
    lines = [
        f"next: read the stones in {route}, adjust them and their guards to your project, commit them;",
        f"      route.lint{flag}",
        f"      route.stone.get{flag} --stone @next-one --say   # what the robot does first",
    ]
    if not bound:
        lines.append(f"      route.bind --set {shown}   # on a work branch: later commands may drop --route")
    hint = approvers_hint(Path.cwd())
    if hint is not None:
        lines.append(f"      {hint}")
    lines.append(
        "before the first pull request: the approvers file (and signers) must be on main; see the README's "
        "'Your first pull request'"
    )
    return "\n".join(lines)
