"""The behavior engine as a Claude Code command hook (``bhrain behave``).

Claude Code runs the hook once per event with one JSON object on stdin (``session_id``, ``transcript_path``,
``cwd``, ``hook_event_name``, and per event ``tool_name``/``tool_input``/``tool_use_id`` (PreToolUse),
``tool_response`` as well (PostToolUse), ``prompt`` (UserPromptSubmit), ``reason`` (SessionEnd)). The
session's state lives in ``<state dir>/<session id>.json``; each call takes ``<session id>.lock``
(``fsutil.FileLock``), loads, evaluates, writes atomically and releases, so concurrent hooks of one session
never lose an update.

Answers follow Claude Code's hook contract:
- block (PreToolUse)         → exit 0, ``{"hookSpecificOutput": {"hookEventName": "PreToolUse",
                               "permissionDecision": "deny", "permissionDecisionReason": …}}`` on stdout
                               (the tool does not run; the model reads the reason, not a hook error)
- warn (PreToolUse)          → exit 0, ``{"hookSpecificOutput": {"hookEventName": "PreToolUse",
                               "additionalContext": …}}`` on stdout (the tool runs; the model reads it)
- remind/warn (PostToolUse)  → exit 0, the same shape with ``"hookEventName": "PostToolUse"``
- directive (UserPromptSubmit) → exit 0, ``hookSpecificOutput.additionalContext`` for UserPromptSubmit
- nothing to say             → exit 0, no output
- an event behave has no rules for (SessionStart, Stop, Notification …) → exit 0, no output
- a PreToolUse event it cannot read (not one JSON object, no ``tool_name``, a ``tool_input`` that is not an
  object, a path that is not one string …), or one whose judging crashed → exit 2 (a gate fails closed)
A broken config, and bad input that is NOT a tool call about to run (``--hook post_tool`` …), are reported
by the caller with exit 1: a NON-blocking error in Claude Code, so a mistake in the behavior config never
stops every tool call of the user's session.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from routedriver import userfile
from routedriver.brain.behavior import make_classifier
from routedriver.brain.behavior.cache import load_resolved
from routedriver.brain.behavior.engine import BehaviorEngine, Decision
from routedriver.brain.behavior.state import SessionState
from routedriver.errors import ExitCode, Malfunction
from routedriver.fsutil import FileLock, LockTimeout, atomic_write, entry_is_file, is_temp
from routedriver.hookevent import (
    FIX,
    MISSING,
    UnreadableEvent,
    deny_tool,
    parse_event,
    path_problem,
    text_problem,
    wrong,
)
from routedriver.report import Report

log = logging.getLogger("routedriver.brain.behavior")
EVENTS = {
    "PreToolUse": "pre_tool",
    "PostToolUse": "post_tool",
    "PostToolUseFailure": "post_tool",
    "UserPromptSubmit": "user_prompt",
    "SessionEnd": "session_end",
}
HOOKS = ("pre_tool", "post_tool", "user_prompt", "session_end")
NO_RULES = "none"  # an event behave has no rules for (SessionStart, Stop, Notification …): exit 0, silent
# The parameter each Claude Code tool cannot do without, as the built-in rules and path conditions read it.
TOOL_PARAMS = {
    "Bash": "command",
    "Read": "file_path",
    "Write": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "NotebookEdit": "notebook_path",
}
LOCK_TIMEOUT_S = 10.0
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


class HookInputError(Malfunction):
    """The hook's stdin is not a Claude Code hook payload, and it is not a tool call to gate (exit 1)."""


class JudgingFailed(Exception):
    """Judging a PreToolUse event raised (``__cause__``): the CLI blocks the call and writes a crash log."""


def blocked_unread(why: str) -> Report:
    """A PreToolUse event behave cannot read is blocked: a gate that cannot read its input fails closed."""
    line = (
        f"[BEHAVIOR BLOCKED] unreadable event: {why}; bhrain behave blocks a tool call it cannot read (if "
        "this repeats, a human checks the bhrain behave hook)"
    )
    return Report("", (line,), ExitCode.REFUSED)


def judging_failed(why: str) -> Report:
    """A PreToolUse event whose judging raised (``JudgingFailed``; ``why`` says what, in one line) is
    blocked: a gate that cannot judge a call fails closed."""
    return Report("", (f"[BEHAVIOR BLOCKED] checking this call failed ({why})",), ExitCode.REFUSED)


def default_state_dir(environ: Mapping[str, str] | None = None) -> Path:
    env = os.environ if environ is None else environ
    base = env.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    return Path(base) / "routedriver" / "behavior"


def session_file_stem(session_id: str) -> str:
    """A file-name-safe, collision-free stem for a session id (path separators and dots can't escape)."""
    safe = _UNSAFE.sub("_", session_id)[:100].strip(".") or "default"
    if safe != session_id:
        safe += "-" + hashlib.sha256(session_id.encode("utf-8")).hexdigest()[:10]
    return safe


def answer_event(
    read: Callable[[], bytes | None],
    *,
    config_path: Path,
    hook: str | None,
    state_dir: Path,
    ttl_s: float = 7 * 86400,
) -> Report:
    """The hook's answer to the one event ``read`` returns (``hookevent.read_stdin``: its bytes, or None
    when stdin is a terminal and there is none)."""
    try:
        data = read()
        if data is None:
            raise UnreadableEvent("there is no hook event (stdin is a terminal)", FIX)
        payload = parse_event(data)
    except UnreadableEvent as exc:
        if hook not in (None, "pre_tool"):
            # --hook says it is not a tool call about to run: nothing to gate, a non-blocking error.
            raise HookInputError(exc.what, exc.fix) from None
        return blocked_unread(exc.what)  # it may be a PreToolUse (nothing says otherwise)
    return run_hook(payload, config_path=config_path, hook=hook, state_dir=state_dir, ttl_s=ttl_s)


def hook_kind(payload: Mapping[str, Any], hook: str | None) -> str:
    """Which hook to run. An event that names itself is what it says (Claude Code cannot be wrong about
    that; ``--hook`` pre_tool wired to a Stop hook must not trap the robot); a name behave has no rules for
    is ``NO_RULES``. ``--hook`` decides only for an event without a name (typed by hand), and without either
    it is judged as a tool call: it may be one."""
    event = payload.get("hook_event_name", MISSING)
    if isinstance(event, str):
        return EVENTS.get(event, NO_RULES)
    return hook or "pre_tool"


def unreadable_call(payload: Mapping[str, Any]) -> str:
    """Why a PreToolUse event does not say which call is about to run ('' when it does)."""
    event = payload.get("hook_event_name", MISSING)
    if event is not MISSING and not isinstance(event, str):
        return wrong("hook_event_name", event, "an event's name")
    tool = payload.get("tool_name", MISSING)
    if problem := text_problem("tool_name", tool, "a tool's name"):
        return problem
    tool_input = payload.get("tool_input", MISSING)
    if not isinstance(tool_input, dict):
        return f"{wrong('tool_input', tool_input, 'an object')} (a {tool} call)"
    cwd = payload.get("cwd", MISSING)
    if cwd is not MISSING and (problem := path_problem("cwd", cwd)):
        return problem
    key = TOOL_PARAMS.get(tool)
    if key is None:
        return ""
    value = tool_input.get(key, MISSING)
    if key == "command":
        return "" if isinstance(value, str) else wrong(f"tool_input.{key}", value, "a command line")
    return path_problem(f"tool_input.{key}", value)


def run_hook(
    payload: Mapping[str, Any],
    *,
    config_path: Path,
    hook: str | None,
    state_dir: Path,
    ttl_s: float = 7 * 86400,
) -> Report:
    kind = hook_kind(payload, hook)
    if kind == NO_RULES:
        return Report()
    if kind == "pre_tool" and (problem := unreadable_call(payload)):
        return blocked_unread(problem)
    session_id = str(payload.get("session_id") or "default")
    stem = session_file_stem(session_id)
    state_path, lock_path = state_dir / f"{stem}.json", state_dir / f"{stem}.lock"
    if kind == "session_end":
        for path in (state_path, lock_path):
            path.unlink(missing_ok=True)
        sweep(state_dir, ttl_s)
        return Report()
    resolved = load_resolved(config_path, state_dir / "compiled")
    cwd = str(payload.get("cwd") or os.getcwd())
    engine = BehaviorEngine(resolved, cwd=cwd)
    tool = str(payload.get("tool_name") or "")
    tool_input = payload.get("tool_input")
    params: dict[str, Any] = tool_input if isinstance(tool_input, dict) else {}
    call_id = str(payload.get("tool_use_id") or "")
    if kind == "post_tool" and not tool:  # after the tool ran: nothing to gate, a non-blocking error
        raise HookInputError("PostToolUse input has no tool_name", "pass Claude Code's hook event JSON")
    classify: tuple[Any, str, str, list[list[str]]] | None = None
    denied = False  # the call is refused: a state that cannot be saved must not turn that into an allow
    try:
        with FileLock(lock_path, timeout=LOCK_TIMEOUT_S):
            state = _load_state(state_path, engine, session_id)
            if kind == "pre_tool":
                state, decision = _pre_tool(
                    engine, state, state_path, session_id, call_id=call_id, tool=tool, params=params, cwd=cwd
                )
                denied = decision.block
                answer = (
                    Report(deny_tool(decision.reason)) if denied else _context("PreToolUse", decision.notes)
                )
            elif kind == "post_tool":
                answer = _post_tool(
                    engine, state, payload, tool=tool, params=params, call_id=call_id, cwd=cwd
                )
            else:
                prompt = str(payload.get("prompt") or "")
                engine.start_turn(state, prompt)
                answer = Report()
                classify = _plan_classification(resolved, engine, state, prompt, cwd)
            state.updated_at = time.time()
            try:
                atomic_write(state_path, json.dumps(state.to_json(), separators=(",", ":")), fsync=False)
            except OSError as exc:
                if not denied:
                    raise
                # The decision was made: a state that cannot be saved must not turn a block into an allow.
                log.warning("behavior: cannot save the session's state (%s); the block stands", exc)
    except LockTimeout:
        raise Malfunction(
            f"behavior state of session {session_id} stayed locked for {LOCK_TIMEOUT_S:g} s",
            f"remove {lock_path} if no hook is running",
        ) from None
    except OSError as exc:
        raise Malfunction(
            f"cannot keep behavior state in {state_dir}: {exc.strerror or exc}",
            "point --state-dir (or XDG_STATE_HOME) at a writable directory",
        ) from None
    if kind == "user_prompt":
        sweep(state_dir, ttl_s)
        if classify is not None:
            classifier, prompt, picture, history = classify
            directive = classifier.classify(
                prompt, picture, tools=sorted({item[0] for item in history}), cwd=cwd, history=history
            )
            if directive:
                answer = _context("UserPromptSubmit", (directive,))
    return answer


def _pre_tool(
    engine: BehaviorEngine, state: SessionState, state_path: Path, session_id: str, **call: Any
) -> tuple[SessionState, Decision]:
    """Judge one call. A saved state that makes the engine fail (a wrongly typed value in a state file that
    parsed) is a corrupt state: judged again with a fresh one, as an unreadable state file is. If that
    fails too, ``JudgingFailed``: the caller blocks the call, since a gate that cannot judge fails closed."""
    try:
        return state, engine.pre_tool(state, **call)
    except Exception as exc:  # noqa: BLE001 - any failure here is a corrupt state or a bug; both are handled
        log.warning(
            "behavior: state file %s is unusable (%s: %s); starting the session's state afresh",
            state_path,
            type(exc).__name__,
            exc,
        )
    fresh = engine.new_state(session_id)
    try:
        return fresh, engine.pre_tool(fresh, **call)
    except Exception as exc:  # a gate that cannot judge a call blocks it
        raise JudgingFailed() from exc


def _post_tool(
    engine: BehaviorEngine,
    state: SessionState,
    payload: Mapping[str, Any],
    *,
    tool: str,
    params: Mapping[str, Any],
    call_id: str,
    cwd: str,
) -> Report:
    event = "PostToolUseFailure" if payload.get("hook_event_name") == "PostToolUseFailure" else "PostToolUse"
    response = payload.get("tool_response")
    data = response if isinstance(response, dict) else {}
    failed = event == "PostToolUseFailure" or bool(data.get("is_error") or data.get("error"))
    notes = engine.post_tool(
        state,
        call_id=call_id,
        tool=tool,
        params=params,
        ok=not failed,
        output=response if isinstance(response, str) else "",
        data=data,
        cwd=cwd,
    )
    return _context(event, notes)


def _context(event: str, notes: tuple[str, ...]) -> Report:
    if not notes:
        return Report()
    body = {"hookSpecificOutput": {"hookEventName": event, "additionalContext": "\n".join(notes)}}
    return Report(json.dumps(body) + "\n")


def _load_state(path: Path, engine: BehaviorEngine, session_id: str) -> SessionState:
    try:
        data = json.loads(userfile.read_record(path))  # a FIFO put there: unreadable, never waited on
        state = SessionState.from_json(data)
    except FileNotFoundError:
        return engine.new_state(session_id)
    except (OSError, ValueError, TypeError, AttributeError) as exc:
        log.warning(
            "behavior: state file %s is unreadable (%s); starting the session's state afresh", path, exc
        )
        return engine.new_state(session_id)
    engine.tracker.initialize(state)  # the config may have gained counters/flags since the state was saved
    return state


def _plan_classification(
    resolved: Mapping[str, Any], engine: BehaviorEngine, state: SessionState, prompt: str, cwd: str
) -> tuple[Any, str, str, list[list[str]]] | None:
    """Decide under the lock whether to classify; the model call itself happens after the lock is released."""
    if not resolved.get("classify_turns"):
        return None
    if not resolved.get("brain"):
        log.info("behavior: classify_turns needs a brain block in hook mode (there is no agent model here)")
        return None
    # the model adapters (~12 ms): only when a turn is classified, not before every tool call
    from routedriver.brain.behavior.brains import build_brain

    brain = resolved["brain"]
    timeout_s = float(resolved["classifier"]["timeout"])
    classifier = make_classifier(resolved, lambda: build_brain(brain, timeout_s=timeout_s))
    planned = classifier.plan(state, prompt, engine.tracker, cwd)
    return None if planned is None else (classifier, prompt, *planned)


def sweep(state_dir: Path, ttl_s: float) -> int:
    """Remove session state (and compiled configs) untouched for ``ttl_s``; returns how many files went."""
    removed = 0
    cutoff = time.time() - ttl_s
    for folder in (state_dir, state_dir / "compiled"):
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            ours = entry.name.endswith((".json", ".lock")) or is_temp(entry.name)
            if not ours or not entry_is_file(entry):
                continue
            try:
                if entry.stat().st_mtime >= cutoff:
                    continue
                if entry.name.endswith(".lock"):
                    # A lock file's mtime never moves; the session is alive while its state file is fresh.
                    sibling = entry.path[: -len(".lock")] + ".json"
                    if os.path.exists(sibling) and os.stat(sibling).st_mtime >= cutoff:
                        continue
                os.unlink(entry.path)
                removed += 1
            except OSError:
                continue
    return removed
