"""``route.drive`` as a Claude Code hook: ``Stop`` keeps a robot going while it can act; ``SessionStart``
tells it where it is.

The hook contract (Claude Code's hooks reference): the event arrives as JSON on stdin; exit 0 with JSON on
stdout answers: for ``Stop``, ``{"decision": "block", "reason": …}`` means "do not stop" and the model reads
the reason as what to do next, and a ``systemMessage`` is shown to the user. (Exit 2 with the reason on
stderr also blocks, but the model then reads it as a hook error.) A ``SessionStart`` hook's plain stdout is
added to the session's context. Any other exit code is a non-blocking error. ``stop_hook_active`` is true
when the model is already continuing because of a Stop hook: that is where a hook must avoid keeping a
robot in a loop it cannot leave.

Neither hook trusts its event for what matters: the guidance comes from the route's files. ``SessionStart``
reads only ``session_id`` (to remember, once per session, the commit the session began at); ``Stop`` reads
only ``stop_hook_active`` (see ``stop_hook_active``), so an event that cannot be read never lets a robot off
an unfinished route.

Before ``Stop`` lets a robot stop (the route complete, or waiting for a human, or something a human must
fix), the route's definitions are compared with what git has committed (``drive.to_restore``): a stone, a
guard or an approvers file the robot edited, deleted or broke is the robot's to put back, so it is sent
back with the command that does it. Breaking a guard is not a way to stop.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from pathlib import Path
from typing import Any

from routedriver import hookevent
from routedriver.errors import UserError
from routedriver.hookevent import block_stop
from routedriver.report import Report
from routedriver.route import store
from routedriver.route.bind import NotBound
from routedriver.route.drive import (
    Guidance,
    commands,
    fix_malfunction,
    guidance,
    record_session_start,
    render,
    render_restore,
    to_restore,
)
from routedriver.route.load import resolve_route
from routedriver.route.model import Route
from routedriver.route.words import stones_passed

ON_BOOT = "hook.onBoot"
STATE_FILE = ".drive.state"  # under .route/, ignored by .route/.gitignore (".*.state")
DEFAULT_MAX_BLOCKS = 3


def answer(when: str, route_option: str | None, max_blocks: int = DEFAULT_MAX_BLOCKS) -> Report:
    """``route.drive --when hook.onBoot|hook.onStop``: the event read from stdin, then ``on_boot`` or
    ``on_stop``. An event that cannot be read is a warning, not a failure: the answer comes from the route's
    files (and a Stop hook takes it as a repeat, see ``stop_hook_active``)."""
    payload, unread = read_event()
    said = on_boot(route_option, payload) if when == ON_BOOT else on_stop(route_option, payload, max_blocks)
    if unread:
        return said._replace(
            stderr=(f"warning: {unread}; route.drive answers from the route alone", *said.stderr)
        )
    return said


def read_event() -> tuple[dict[str, Any] | None, str]:
    """The hook event on stdin: (the event, "") or, when there is none (a terminal, empty stdin) or it
    cannot be read, (None, why; "" when there simply is none)."""
    try:
        data = hookevent.read_stdin()
        if data is None or not data.strip():
            return None, ""
        return hookevent.parse_event(data), ""
    except hookevent.UnreadableEvent as exc:
        return None, exc.what


def stop_hook_active(payload: dict[str, Any] | None) -> bool:
    """Whether this stop may repeat one the hook already sent back. Only an event that says
    ``stop_hook_active: false`` (a new prompt from the user) starts counting afresh; an event that cannot be
    read (None) or does not say counts as a repeat, so a malformed event neither releases the robot from
    an unfinished route nor keeps it in a loop the ``--max-blocks`` guard would end."""
    return payload is None or payload.get("stop_hook_active") is not False


def _system_message(text: str) -> str:
    return json.dumps({"systemMessage": text}, ensure_ascii=False) + "\n"


def on_boot(route_option: str | None, payload: dict[str, Any] | None = None) -> Report:
    """SessionStart: the guidance on stdout (added to the robot's context), always exit 0; and the commit
    the session begins at is remembered (``drive.record_session_start``)."""
    try:
        guide = guidance(route_option)
    except NotBound:
        return Report()  # no route on this branch: nothing to say
    except UserError as exc:
        return Report(f"route.drive: cannot read the route ({exc.line()}); a human must fix it.\n")
    session_id = payload.get("session_id") if payload is not None else None
    # A read-only checkout: the session's own commits just cannot be told apart later.
    with contextlib.suppress(OSError):
        record_session_start(guide.route, session_id if isinstance(session_id, str) else None)
    return Report("route.drive: " + render(guide))


def on_stop(
    route_option: str | None, payload: dict[str, Any] | None, max_blocks: int = DEFAULT_MAX_BLOCKS
) -> Report:
    """Stop: ``decision: block`` with guidance while the robot can act; a ``systemMessage`` saying why it may
    stop otherwise; always exit 0. ``payload`` is None when the event could not be read: the answer comes
    from the route alone."""
    try:
        guide = guidance(route_option)
    except NotBound:
        return Report()
    except UserError as exc:
        put_back = _put_back(None, route_option, payload, max_blocks, broken=True)
        if put_back is not None:
            return put_back
        return Report(
            _system_message(
                f"route.drive: cannot drive the route ({exc.line()}); "
                "a human must fix it, so the robot may stop."
            ),
        )
    if guide.complete or not guide.robot_can_act:
        broken = bool(guide.malfunctioning)
        put_back = _put_back(guide.route, route_option, payload, max_blocks, broken=broken)
        if put_back is not None:
            return put_back
    if guide.complete:
        _forget(guide.route)
        # Done; but files the passes stand on that no commit holds are named (CI would not see them).
        passed = f"route {guide.route.display}: {stones_passed(guide.total, guide.total)}."
        return Report(_system_message(render(guide).strip() if guide.uncommitted else passed))
    if not guide.robot_can_act:
        _forget(guide.route)
        return Report(_system_message(_needs_human(guide)))
    what = ", ".join(f"{state.stone.name} ({state.state})" for state in guide.stones)
    text = "The route is not finished; keep going.\n" + render(guide)
    return _send_back(guide.route, guide.fingerprint(), payload, max_blocks, text, what)


def _send_back(
    route: Route, fingerprint: str, payload: dict[str, Any] | None, max_blocks: int, text: str, what: str
) -> Report:
    """Block the stop with ``text``, unless the robot was sent back ``max_blocks`` times with nothing
    changed (same ``fingerprint``): then let it stop, saying ``what`` is next."""
    blocks = _blocks_so_far(route, fingerprint) if stop_hook_active(payload) else 0
    if blocks >= max_blocks:
        return Report(
            _system_message(
                f"route.drive: letting the robot stop: it was sent back {blocks} times and nothing changed "
                f"(same next stone, same artifacts). Next on route {route.display}: {what}"
            ),
        )
    _remember(route, fingerprint, blocks + 1)
    return Report(block_stop(text))


def _put_back(
    route: Route | None,
    route_option: str | None,
    payload: dict[str, Any] | None,
    max_blocks: int,
    *,
    broken: bool,
) -> Report | None:
    """Send the robot back to put the route's definitions back as git has them (``drive.to_restore``),
    or None when there is nothing to put back (or no route to look at)."""
    if route is None:
        try:
            named = resolve_route(route_option)
        except UserError:
            return None
        route = Route.at(Path(os.path.abspath(named)), os.fspath(named), ())
    restores = to_restore(route.path, broken=broken)
    if not restores:
        return None
    fingerprint = hashlib.sha256(json.dumps([list(item) for item in restores]).encode("utf-8")).hexdigest()
    text = "The route is not finished; keep going.\n" + render_restore(route.display, restores)
    what = "put back " + ", ".join(item.path for item in restores)
    return _send_back(route, fingerprint, payload, max_blocks, text, what)


def _needs_human(guide: Guidance) -> str:
    """Why the robot may stop although the route is unfinished, with the exact commands a human runs."""
    route = guide.route
    parts = [
        f"{state.stone.name} cannot be checked, a command of its guard broke: {state.detail}. "
        f"The robot cannot fix that (robots cannot edit guards). "
        f"{fix_malfunction(route, state.stone)} {commands(route, state.stone)[1]}"
        for state in guide.malfunctioning
    ]
    if guide.waiting:
        names = ", ".join(state.stone.name for state in guide.waiting)
        approve = " and ".join(commands(route, state.stone)[2] for state in guide.waiting)
        parts.append(
            f"waiting for human approval of {names}; a human approves, in a terminal, with: {approve}"
        )
    return f"route {route.display}: " + " ".join(parts)


def _state_path(route: Route) -> Path:
    return route.state_dir / STATE_FILE


def _blocks_so_far(route: Route, fingerprint: str) -> int:
    text = store.read_text(_state_path(route))
    try:
        state = json.loads(text) if text is not None else None
    except ValueError:
        return 0
    if not isinstance(state, dict) or state.get("fingerprint") != fingerprint:
        return 0
    blocks = state.get("blocks")
    return blocks if isinstance(blocks, int) and blocks >= 0 else 0


def _remember(route: Route, fingerprint: str, blocks: int) -> None:
    store.ensure_state_dir(route)
    _ignore_state(route)
    payload = {"fingerprint": fingerprint, "blocks": blocks, "at": store.utc_now()}
    store.write_text(_state_path(route), json.dumps(payload) + "\n")


def _forget(route: Route) -> None:
    _state_path(route).unlink(missing_ok=True)


def _ignore_state(route: Route) -> None:
    """Routes made before the hook state existed have a .gitignore without '.*.state': add it once."""
    ignore = route.state_dir / ".gitignore"
    text = store.read_text(ignore)
    if text is None:
        return
    if ".*.state" not in text.splitlines():
        store.write_text(ignore, text + ("" if text.endswith("\n") or not text else "\n") + ".*.state\n")
