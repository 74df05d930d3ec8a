"""``route.init``: a starter route from a shipped template, optionally bound and wired to Claude Code.

stdout: the files written, the binding, the hooks added (or with ``--list``, one line per template).
stderr: what to run next. Every refusal comes before the first write. No logic here.
"""

from __future__ import annotations

import os
import shlex
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

import click

from routedriver.cli._command import Command
from routedriver.errors import Refused
from routedriver.gitops import find_repo
from routedriver.route import init
from routedriver.route.bind import bind_set
from routedriver.route.claude_hooks import plan_settings, write_settings
from routedriver.route.load import load_route

if TYPE_CHECKING:
    from routedriver.route.claude_hooks import SettingsPlan


@click.command("route.init", cls=Command)
@click.argument("directory", metavar="[DIR]", required=False)
@click.option(
    "--template",
    "-t",
    "template",
    default=None,
    metavar="NAME",
    help="The template to start from (default: feature; see --list).",
)
@click.option("--force", is_flag=True, help="Overwrite the template's files where they exist.")
@click.option("--list", "list_templates", is_flag=True, help="List the templates, one line each.")
@click.option("--bind", is_flag=True, help="Bind the new route to the current git branch.")
@click.option(
    "--claude-code",
    is_flag=True,
    help="Add the route hooks (route.drive, route.bounce) to the repository's .claude/settings.json.",
)
@click.option(
    "--approver-me",
    is_flag=True,
    help="Write .route-approvers at the repository's top level listing your git email (who may approve); "
    "refused if the file exists without you.",
)
def init_command(
    directory: str | None,
    template: str | None,
    force: bool,
    list_templates: bool,
    bind: bool,
    claude_code: bool,
    approver_me: bool,
) -> int:
    """Write a starter route into DIR from a template (each stone a guide: what, why, how, watch out).

    \b
    route.init routes/search --bind --claude-code   # the feature template, bound to this branch
    route.init --approver-me                        # .route-approvers listing you (commit it to main)
    route.init --list                               # the templates
    """
    if list_templates:
        if directory is not None or template or force or bind or claude_code or approver_me:
            raise Refused("--list takes nothing else", "run route.init --list alone")
        for found in init.templates():
            default = " (default)" if found.name == init.DEFAULT_TEMPLATE else ""
            click.echo(f"{found.name + default:<19} {found.summary}")
        return 0
    if directory is None and (not (claude_code or approver_me) or template or force or bind):
        # Without DIR only --claude-code and --approver-me make sense: they serve routes that exist already.
        raise Refused("missing DIR", "name the route's directory: route.init routes/my-feature")
    plan = (
        init.plan_route(directory, template or init.DEFAULT_TEMPLATE, force=force)
        if directory is not None
        else None
    )
    branch = init.check_bind(plan) if bind and plan is not None else None
    settings = _settings_plan() if claude_code else None
    approvers = init.plan_approvers(Path.cwd()) if approver_me else None
    # Every refusal is behind us: from here on, write.
    if plan is not None:
        for path in init.write_route(plan):
            click.echo(os.path.relpath(path))
    if branch is not None and plan is not None:
        bind_set(load_route(os.path.relpath(plan.directory)))
        click.echo(f"bound {os.path.relpath(plan.directory)} to branch {branch}")
    if settings is not None:
        write_settings(settings)
        shown = os.path.relpath(settings.path)
        for hook in settings.widened:
            click.echo(f"{shown}: {hook.program} now also runs for {hook.event} matcher {hook.matcher}")
        if settings.added:
            click.echo(f"{shown}: added hooks {', '.join(hook.event for hook in settings.added)}")
        elif not settings.widened:
            click.echo(f"{shown}: the route hooks are there already; nothing added")
        _warn_if_not_on_path()
    if approvers is not None:
        init.write_approvers(approvers)
        shown = os.path.relpath(approvers.path)
        if approvers.text is None:
            click.echo(f"{shown}: lists {approvers.email} already; nothing written")
        else:
            click.echo(f"{shown}: lists {approvers.email}, who may approve (commit it to main first)")
    if plan is not None:
        _next_steps(Path(os.path.relpath(plan.directory)), bound=branch is not None)
    return 0


def _settings_plan() -> SettingsPlan:
    repo = find_repo(Path.cwd())
    if repo is None:
        raise Refused(
            "--claude-code writes the repository's .claude/settings.json, but this is not a git repository",
            "run it inside your repository, or leave out --claude-code",
        )
    return plan_settings(repo.toplevel)


def _warn_if_not_on_path() -> None:
    missing = [program for program in ("route.drive", "route.bounce") if shutil.which(program) is None]
    if missing:
        click.echo(
            f"warning: {' and '.join(missing)} not on PATH here; Claude Code finds hook commands on its "
            "PATH, so install routedriver there (pipx install …) or the hooks do nothing",
            err=True,
        )


def _next_steps(route: Path, *, bound: bool) -> None:
    shown = shlex.quote(str(route))
    flag = "" if bound else f" --route {shown}"
    lines = [
        f"next: read the stones in {route}, adjust them and their guards to your project, commit them;",
        f"      route.lint{flag}",
        f"      route.stone.get{flag} --stone @next-one --say   # what the robot does first",
    ]
    if not bound:
        lines.append(f"      route.bind --set {shown}   # on a work branch: later commands may drop --route")
    from routedriver.route.init import approvers_hint

    hint = approvers_hint(Path.cwd())
    if hint is not None:
        lines.append(f"      {hint}")
    lines.append(
        "before the first pull request: the approvers file (and signers) must be on main; see the README's "
        "'Your first pull request'"
    )
    click.echo("\n".join(lines), err=True)
