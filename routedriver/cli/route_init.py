"""``route.init``: a starter route from a shipped template, optionally bound and wired to Claude Code. The
command reads its flags and returns the Report ``route.init.report`` makes.

stdout: the files written, the binding, the hooks added (or with ``--list``, one line per template).
stderr: what to run next. Every refusal comes before the first write.
"""

from __future__ import annotations

import click

from routedriver.cli._command import Command
from routedriver.report import Report
from routedriver.route import init


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
) -> Report:
    """Write a starter route into DIR from a template (each stone a guide: what, why, how, watch out).

    \b
    route.init routes/search --bind --claude-code   # the feature template, bound to this branch
    route.init --approver-me                        # .route-approvers listing you (commit it to main)
    route.init --list                               # the templates
    """
    return init.report(
        directory,
        template=template,
        force=force,
        list_templates=list_templates,
        bind=bind,
        claude_code=claude_code,
        approver_me=approver_me,
    )
