"""``route.drive`` as a Claude Code hook: ``Stop`` keeps a robot going while it can act; ``SessionStart``
tells it where it is.

The hook contract (Claude Code's hooks reference): the event arrives as JSON on stdin; exit 0 lets things
proceed and, for ``Stop``, JSON on stdout may carry a ``systemMessage`` shown to the user; exit 2 blocks,
and for ``Stop`` that means "do not stop": stderr is fed to the model as the reason to continue. A
``SessionStart`` hook's plain stdout is added to the session's context. Any other exit code is a
non-blocking error. ``stop_hook_active`` is true when the model is already continuing because of a Stop
hook: that is where a hook must avoid keeping a robot in a loop it cannot leave.

Neither hook trusts its event for what matters: the guidance comes from the route's files. ``SessionStart``
does not look at its event at all; ``Stop`` reads only ``stop_hook_active`` (see ``stop_hook_active``), so an
event that cannot be read never lets a robot off an unfinished route.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from routedriver.errors import UserError
from routedriver.route import store
from routedriver.route.model import Route
from routedriver.route.words import stones_passed

if TYPE_CHECKING:
    from routedriver.route.drive import Guidance

ON_BOOT = "hook.onBoot"
STATE_FILE = ".drive.state"  # under .route/, ignored by .route/.gitignore (".*.state")
DEFAULT_MAX_BLOCKS = 3


@dataclass(frozen=True)
class HookAnswer:
    exit_code: int
    stdout: str = ""
    stderr: str = ""


def stop_hook_active(payload: dict[str, Any] | None) -> bool:
    """Whether this stop may repeat one the hook already sent back. Only an event that says
    ``stop_hook_active: false`` (a new prompt from the user) starts counting afresh; an event that cannot be
    read (None) or does not say counts as a repeat, so a malformed event neither releases the robot from
    an unfinished route nor keeps it in a loop the ``--max-blocks`` guard would end."""
    return payload is None or payload.get("stop_hook_active") is not False


def _system_message(text: str) -> str:
    return json.dumps({"systemMessage": text}, ensure_ascii=False) + "\n"


def on_boot(route_option: str | None) -> HookAnswer:
    """SessionStart: the guidance on stdout (added to the robot's context), always exit 0."""
    from routedriver.route.bind import NotBound
    from routedriver.route.drive import guidance, render

    try:
        guide = guidance(route_option)
    except NotBound:
        return HookAnswer(0)  # no route on this branch: nothing to say
    except UserError as exc:
        return HookAnswer(0, f"route.drive: cannot read the route ({exc.line()}); a human must fix it.\n")
    return HookAnswer(0, "route.drive: " + render(guide))


def on_stop(
    route_option: str | None, payload: dict[str, Any] | None, max_blocks: int = DEFAULT_MAX_BLOCKS
) -> HookAnswer:
    """Stop: exit 2 with guidance while the robot can act; exit 0 (saying why) otherwise. ``payload`` is
    None when the event could not be read: the answer comes from the route alone."""
    from routedriver.route.bind import NotBound
    from routedriver.route.drive import guidance, render

    try:
        guide = guidance(route_option)
    except NotBound:
        return HookAnswer(0)
    except UserError as exc:
        return HookAnswer(
            0,
            _system_message(
                f"route.drive: cannot drive the route ({exc.line()}); "
                "a human must fix it, so the robot may stop."
            ),
        )
    if guide.complete:
        _forget(guide.route)
        # Done; but files the passes stand on that no commit holds are named (CI would not see them).
        passed = f"route {guide.route.display}: {stones_passed(guide.total, guide.total)}."
        return HookAnswer(0, _system_message(render(guide).strip() if guide.uncommitted else passed))
    if not guide.robot_can_act:
        _forget(guide.route)
        return HookAnswer(0, _system_message(_needs_human(guide)))
    fingerprint = guide.fingerprint()
    blocks = _blocks_so_far(guide.route, fingerprint) if stop_hook_active(payload) else 0
    if blocks >= max_blocks:
        return HookAnswer(
            0,
            _system_message(
                f"route.drive: letting the robot stop: it was sent back {blocks} times and nothing changed "
                f"(same next stone, same artifacts). Next on route {guide.route.display}: "
                + ", ".join(f"{state.stone.name} ({state.state})" for state in guide.stones)
            ),
        )
    _remember(guide.route, fingerprint, blocks + 1)
    text = "The route is not finished; keep going.\n" + render(guide)
    return HookAnswer(2, stderr=text)


def _needs_human(guide: Guidance) -> str:
    """Why the robot may stop although the route is unfinished, with the exact commands a human runs."""
    from routedriver.route.drive import commands, fix_malfunction

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
    try:
        state = json.loads(_state_path(route).read_text(encoding="utf-8"))
    except (OSError, ValueError):
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
    try:
        text = ignore.read_text(encoding="utf-8")
    except OSError:
        return
    if ".*.state" not in text.splitlines():
        store.write_text(ignore, text + ("" if text.endswith("\n") or not text else "\n") + ".*.state\n")
