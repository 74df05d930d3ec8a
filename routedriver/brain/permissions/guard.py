"""The permission guard: a ``LoopHook`` that asks its policies before every tool call.

A policy is anything with ``decide(event) -> Decision`` (or a plain callable); it may also answer ``"allow"``,
``"deny"``, ``"prompt"``/``"ask"`` or a bool. With several policies the strictest answer wins. ``prompt``
asks the person at the controlling terminal (one question at a time, even when calls run concurrently);
without a terminal the call is denied, never left hanging. A policy that raises denies the call (fail
closed) and the error is logged. No policy at all means every call is allowed.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Protocol

from routedriver.brain.hooks import ALLOW, HookVerdict, LoopHook, ToolEvent
from routedriver.brain.permissions.rules import Decision, combine

log = logging.getLogger("bhrain")


class Prompter(Protocol):
    def ask(self, question: str) -> bool | None:
        """True = approved, False = refused, None = there is nobody to ask."""


class TerminalPrompter:
    """Asks on ``/dev/tty`` (not stdin/stdout, which may be pipes carrying the task and the result)."""

    _lock = threading.Lock()  # process-wide: concurrent calls never interleave their questions

    def __init__(self, device: str = "/dev/tty") -> None:
        self.device = device

    def ask(self, question: str) -> bool | None:
        with self._lock:
            try:
                fd = os.open(self.device, os.O_RDWR | os.O_NOCTTY)
            except OSError:
                return None  # no controlling terminal (CI, a robot, a daemon)
            try:
                os.write(fd, f"{question} [y/N] ".encode())
                answer = b""
                while not answer.endswith(b"\n"):
                    chunk = os.read(fd, 1024)  # a terminal in line mode hands over one whole line
                    if not chunk:
                        break
                    answer += chunk
            except OSError:
                return None
            finally:
                os.close(fd)
            return answer.decode(errors="replace").strip().lower() in ("y", "yes")


class NoPrompter:
    def ask(self, question: str) -> bool | None:
        return None


def normalize(answer: Any) -> Decision:
    if isinstance(answer, Decision):
        return answer
    if isinstance(answer, bool):
        return Decision("allow" if answer else "deny")
    if isinstance(answer, str) and answer.lower() in ("allow", "deny", "prompt", "ask"):
        return Decision("prompt" if answer.lower() == "ask" else answer.lower())  # type: ignore[arg-type]
    action = getattr(answer, "action", None)
    if isinstance(action, str):
        return (
            normalize(action)
            if not getattr(answer, "reason", "")
            else Decision(normalize(action).action, str(answer.reason))
        )
    raise TypeError(f"a guard answered {answer!r}; expected allow, deny or prompt")


def describe(event: ToolEvent, limit: int = 160) -> str:
    if event.tool == "bash" and "command" in event.params:
        detail = str(event.params["command"])
    else:
        detail = json.dumps(dict(event.params), ensure_ascii=False, default=str)
    detail = " ".join(detail.split())
    return f"{event.tool}({detail[:limit]}{'…' if len(detail) > limit else ''})"


class PermissionHook(LoopHook):
    def __init__(self, policies: Sequence[Any], prompter: Prompter | None = None) -> None:
        self.policies = list(policies)
        self.prompter: Prompter = prompter or TerminalPrompter()

    def read_filter(self) -> Callable[[Path, bool], bool] | None:
        """What grep and glob may show while they walk (see ``RulesPolicy.read_filter``): the guard checks a
        search by its root, and this keeps files the rules protect out of a search below that root. A
        custom policy joins in by having ``read_filter()`` too."""
        filters = []
        for policy in self.policies:
            make = getattr(policy, "read_filter", None)
            try:
                found = make() if callable(make) else None
            except Exception as exc:  # noqa: BLE001 - fail closed: a search then shows nothing
                log.error(
                    "%s.read_filter failed: %s: %s; searches show no files",
                    type(policy).__name__,
                    type(exc).__name__,
                    exc,
                )
                return lambda path, is_dir: False
            if found is not None:
                filters.append(found)
        if not filters:
            return None
        return lambda path, is_dir: all(f(path, is_dir) for f in filters)

    def _decide(self, event: ToolEvent) -> Decision:
        decisions = []
        for policy in self.policies:
            decide: Callable[[ToolEvent], Any] = getattr(policy, "decide", policy)
            decisions.append(normalize(decide(event)))
        return combine(decisions)

    def pre_tool(self, event: ToolEvent) -> HookVerdict:
        if not self.policies:
            return ALLOW
        what = describe(event)
        try:
            decision = self._decide(event)
        except Exception as exc:  # noqa: BLE001 - fail closed
            log.error("the permission guard failed on %s: %s: %s; denied", what, type(exc).__name__, exc)
            return HookVerdict(
                True,
                f"permission denied: the permission guard failed while checking {what} "
                f"({type(exc).__name__}), so it was not run; try another approach",
            )
        why = f" ({decision.reason})" if decision.reason else ""
        if decision.action == "allow":
            return ALLOW
        if decision.action == "deny":
            log.warning("denied %s%s", what, why)
            return HookVerdict(
                True,
                f"permission denied: {what} is not allowed{why}. It was not run; do not "
                "retry it, choose another approach or explain what you need.",
            )
        answer = self.prompter.ask(f"bhrain wants to run {what}{why}. Allow?")
        if answer is None:
            log.warning("denied %s: it needs approval and there is no terminal to ask", what)
            return HookVerdict(
                True,
                f"permission denied: {what} needs the user's approval{why}, but there is "
                "no terminal to ask, so it was not run; continue without it or explain "
                "what you need.",
            )
        if not answer:
            log.warning("the user denied %s", what)
            return HookVerdict(True, f"the user denied {what}; it was not run. Try another approach.")
        log.info("the user approved %s", what)
        return ALLOW
