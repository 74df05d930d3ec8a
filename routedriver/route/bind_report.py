"""What ``route.bind --set DIR | --get | --del`` says, as a ``report.Report``.

The binding itself is ``route.bind``'s, and loading the route to bind is ``route.load``'s, which asks
``route.bind`` for the bound route: this module sits above both."""

from __future__ import annotations

import os
from pathlib import Path

from routedriver.errors import Refused
from routedriver.report import Report
from routedriver.route.bind import NOT_BOUND, bind_del, bind_get, bind_set
from routedriver.route.load import load_route


def answer(*, set_route: str | None, get: bool, delete: bool) -> Report:
    """What ``route.bind --set DIR | --get | --del`` says (paths relative to where you are)."""
    if sum((set_route is not None, get, delete)) != 1:
        raise Refused("give exactly one of --set DIR, --get, --del", "see route.bind --help")
    cwd = Path.cwd()
    if set_route is not None:
        result = bind_set(load_route(set_route))
        shown = os.path.relpath(result.routes[0], cwd)
        said = f"{shown} is already bound to" if result.action == "already-bound" else f"bound {shown} to"
        notices = tuple(
            f"notice: unbound {os.path.relpath(replaced, cwd)} from {result.branch}"
            for replaced in result.replaced
        )
        return Report(f"{said} branch {result.branch}\n", notices)
    if get:
        result = bind_get(cwd)
        if not result.routes:
            raise Refused(f"{NOT_BOUND} ({result.branch})", "bind one with route.bind --set DIR")
        if len(result.routes) > 1:
            names = " and ".join(os.path.relpath(path, cwd) for path in result.routes)
            raise Refused(
                f"{len(result.routes)} routes are bound to branch {result.branch}: {names}",
                "keep one: route.bind --set DIR replaces the others",
            )
        return Report(os.path.relpath(result.routes[0], cwd) + "\n")
    result = bind_del(cwd)
    unbound = "".join(
        f"unbound {os.path.relpath(path, cwd)} from branch {result.branch}\n" for path in result.routes
    )
    if not result.routes:
        return Report(unbound, (f"notice: no route was bound to branch {result.branch}",))
    return Report(unbound)
