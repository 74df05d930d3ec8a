"""One response's tool calls: check them, ask the hooks, run the allowed ones, build results in call order.

In call order: a malformed call gets an error result that quotes what was sent; an unknown tool gets
``tool not found: X; available: …``; arguments that do not fit the schema are fed back as malformed. The
valid calls run concurrently (threads.Batch), except where two of them name the same file and one changes
it (any tool not declared ``read_only``): the later one waits, so two edits of one file both land, in call
order (``call_groups``). Calls naming no file, bash among them, never wait: like the API's parallel tool
use, calls of one response are independent; a model that needs an order sends them in turns. Each group is
checked when its turn comes, after the groups before it have run: the ``pre_tool`` hooks decide (the
permission guard first; the first block wins; a hook that raises blocks) on the file system as the calls
find it. A call's path arguments are resolved once for that check (``ToolEvent.resolved``) and the file
tools open exactly those paths following no symlink (``ToolContext.resolved``), so what a tool touches is
what the rules saw, even when a concurrent call swaps a name for a link.
A tool that raises (even ``SystemExit``) becomes an error result. A stop signal (``errors.Stopped`` from the
CLI's SIGINT/SIGTERM handler, or a ``KeyboardInterrupt``) is not a tool's failure: it goes through, calls of
the response that have not started are cancelled, and the calls it caught pending or running are left
``interrupted`` in ``batch`` for the trace. ``post_tool`` hooks then run in call order
and the results come back in call order, warnings before and reminders after each output, secrets redacted.
Placeholders the redactor put into earlier results (``[REDACTED:NAME]``) are mapped back to the real values
before the hooks are asked, and only in the arguments the tool takes secrets in (``Tool.restores_secrets``:
write's and edit's text, so a file read and written back keeps its secrets): the permission rules check
exactly the arguments the tool gets, and a path, a command or an MCP call keeps the placeholder. Records,
traces and logs see the placeholders. Hooks are only ever called from the loop's thread, so they need no
locks.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from routedriver import proc
from routedriver.brain.hooks import ALLOW, HookVerdict, LoopHook, ToolEvent, ToolOutcome
from routedriver.brain.records import CallRecord, CallStatus, Limits
from routedriver.brain.redact import Redactor
from routedriver.brain.toolbox import ToolRegistry
from routedriver.brain.tools.base import (
    PATH_ARGUMENTS,
    ReadFilter,
    Tool,
    ToolContext,
    argument_problem,
    fail,
    read_filter_of,
    tool_path,
    truncate,
)
from routedriver.errors import Stopped
from routedriver.fsutil import realpath
from routedriver.llm.types import Message, ToolCall
from routedriver.threads import Batch

log = logging.getLogger("bhrain")

# Room above ``max_output_chars`` for what a tool that bounds its own output adds around the bounded part
# (bash's exit code, stream headers and truncation notices, a read's notice, an edit's header with the path).
# Output within it is passed on whole: clipping it again would cut the tool's notice of how much it left out
# and bash's stderr section, the parts the model needs most. Larger output comes from a tool that does not
# bound itself and is cut at the limit.
NOTICE_SLACK = 2_000


def call_hook(hook: object, method: str, default: Any, *args: Any) -> Any:
    """``hook.method(*args)``, or ``default`` (logged) when it raises: hooks never raise into the loop."""
    try:
        return getattr(hook, method)(*args)
    except Exception as exc:  # noqa: BLE001
        log.warning("%s.%s failed: %s: %s", type(hook).__name__, method, type(exc).__name__, exc)
        return default


class Dispatcher:
    def __init__(
        self,
        registry: ToolRegistry,
        hooks: Sequence[LoopHook],
        workdir: Path,
        limits: Limits,
        redactor: Redactor,
    ) -> None:
        self.registry, self.hooks, self.workdir = registry, hooks, workdir
        self.limits, self.redactor = limits, redactor
        self.batch: list[CallRecord] = []  # the records of the response being run (or last run)

    def run(
        self, calls: Sequence[ToolCall], text: str, iteration: int
    ) -> tuple[list[Message], list[CallRecord]]:
        records = [CallRecord(iteration, i, c.id, c.name, dict(c.arguments)) for i, c in enumerate(calls)]
        self.batch = records
        outcomes: dict[int, ToolOutcome] = {}
        warnings: dict[int, tuple[str, ...]] = {}
        events: dict[int, ToolEvent] = {}
        valid: list[
            tuple[int, Tool, ToolCall]
        ] = []  # well-formed calls of known tools, checked in their group
        toolboxes: dict[int, str] = {}
        for index, call in enumerate(calls):
            record = records[index]
            found = None if call.malformed else self.registry.find(call.name)
            tool, toolboxes[index] = found if found is not None else (None, "")
            if call.malformed:
                outcomes[index] = self._reject(record, "malformed", malformed_message(call))
            elif tool is None:
                available = ", ".join(self.registry.names()) or "none"
                outcomes[index] = self._reject(
                    record, "not_found", f"tool not found: {call.name}; available: {available}"
                )
            elif problem := argument_problem(tool.input_schema, call.arguments):
                outcomes[index] = self._reject(
                    record,
                    "malformed",
                    (
                        f"malformed tool call to {call.name}: {problem}; call it again with arguments "
                        f"matching this schema: {json.dumps(tool.input_schema, sort_keys=True)}"
                    ),
                )
            else:
                record.name = tool.name
                record.status = "pending"  # until it has run; "interrupted" if a stop comes first
                # Secrets go back only where this tool takes them, and before the hooks look: the rules check
                # exactly the arguments the tool will get (a restored path would walk around a Read rule).
                arguments = self.redactor.restore_arguments(call.arguments, tool.restores_secrets)
                valid.append((index, tool, ToolCall(call.id, call.name, arguments)))
        try:
            # Each group is checked when its turn comes, after the groups before it have run: a call is
            # decided on the file system as it finds it (a bash call of group 1 may have made a checked name
            # a symlink to a protected file that a read of group 2 names).
            readable: ReadFilter | None = None
            # Resolved now for grouping (two names of one file, a link and what it leads to, are one file),
            # and used as they are for the first group's check: nothing has run since.
            first = {index: resolved_paths(self.workdir, call) for index, _, call in valid}
            for number, group in enumerate(call_groups(valid, first)):
                runnable: list[tuple[int, Tool, ToolCall, dict[str, str]]] = []
                for index, tool, call in group:
                    log.info(
                        "→ %s %s",
                        tool.name,
                        self.preview(json.dumps(dict(calls[index].arguments), ensure_ascii=False)),
                    )
                    # Resolved once: the rules check this path (and the one as written) and the tool opens
                    # this path following no symlink, so a name swapped meanwhile (by a concurrent call of the
                    # group, or anything else) makes the tool refuse, never touch what was not checked.
                    resolved = first[index] if number == 0 else resolved_paths(self.workdir, call)
                    event = ToolEvent(
                        call.id, tool.name, call.arguments, iteration, index, text, toolboxes[index], resolved
                    )
                    verdict, warnings[index] = self._pre_tool(event)
                    if verdict.block:
                        outcomes[index] = self._reject(
                            records[index], "denied", verdict.reason or f"{tool.name} was blocked"
                        )
                    else:
                        events[index] = event
                        runnable.append((index, tool, call, resolved))
                if number == 0:
                    # Asked once, here on the loop's thread (hooks need no locks): the permission guard
                    # checked a search by its root; its filter keeps protected files out of the walk below it.
                    readable = read_filter_of(self.hooks)
                outcomes.update(self._execute_group(runnable, records, iteration, readable))
        except BaseException as exc:  # a stop signal: nothing of this response starts any more
            self.close()
            if isinstance(exc, KeyboardInterrupt):
                # Python's own Ctrl-C (no CLI handler stopped the commands first, e.g. an embedding caller):
                # stop the commands the tools run, or the tool threads would wait for them to finish.
                proc.kill_running()
            for record in records:
                if record.status == "pending":
                    record.status = "interrupted"
            raise
        messages = []
        for index, call in enumerate(calls):
            outcome = outcomes[index]
            parts = [*warnings.get(index, ()), self._clip(outcome.output) or "(no output)"]
            if index in events:
                self.redactor.note_raw(outcome.output)
                parts.extend(
                    n for h in self.hooks for n in call_hook(h, "post_tool", (), events[index], outcome)
                )
            records[index].output = self.redactor.shown("\n\n".join(parts))
            messages.append(Message("tool", records[index].output, (), call.id, not outcome.ok))
        return messages, records

    def close(self) -> None:
        """Nothing to release: tool calls run in ``threads.Batch`` daemon threads that end with them."""

    def preview(self, text: str, limit: int = 200) -> str:
        flat = " ".join(self.redactor.text(text).split())
        return flat if len(flat) <= limit else flat[:limit] + "…"

    def _execute_group(
        self,
        runnable: list[tuple[int, Tool, ToolCall, dict[str, str]]],
        records: list[CallRecord],
        iteration: int,
        readable: ReadFilter | None,
    ) -> dict[int, ToolOutcome]:
        """Run one group of ``call_groups`` (its allowed calls) concurrently."""
        outcomes: dict[int, ToolOutcome] = {}
        if not runnable:
            return outcomes
        # Even a lone call runs on a worker thread: the loop's thread, where Python delivers signals, only
        # waits, so Ctrl-C never lands inside a tool half-way (a process started but not yet registered
        # to be killed would outlive us); the tool's thread finishes its step and proc stops what it
        # started. Only a stop gets out of _execute: raised as soon as any call raises it.
        with Batch(
            lambda item: self._execute(item[1], item[2], records[item[0]], iteration, readable, item[3]),
            runnable,
            workers=self.limits.max_parallel,
            name="bhrain-tool",
        ) as batch:
            for done in batch:
                if done.error is not None:
                    raise done.error
                outcomes[done.job[0]] = cast(ToolOutcome, done.value)
        return outcomes

    def _execute(
        self,
        tool: Tool,
        call: ToolCall,
        record: CallRecord,
        iteration: int,
        readable: ReadFilter | None,
        resolved: dict[str, str],
    ) -> ToolOutcome:
        started = time.monotonic()
        ctx = ToolContext(
            self.workdir, call.id, iteration, self.registry, self.limits.max_output_chars, readable, resolved
        )
        try:
            result = tool.run(call.arguments, ctx)  # as the hooks saw them (secrets restored where taken)
            outcome = result if isinstance(result, ToolOutcome) else ToolOutcome(True, str(result))
        except (Stopped, KeyboardInterrupt):  # Ctrl-C or SIGTERM stops the run, whatever tool is running
            raise
        except BaseException as exc:  # noqa: BLE001 - a broken tool (even one calling sys.exit) is an error result
            log.warning("tool %s raised %s: %s", tool.name, type(exc).__name__, exc)
            outcome = fail(f"tool {tool.name} failed: {describe_failure(exc)}")
        record.elapsed_s = time.monotonic() - started
        if outcome.data.get("interrupted"):  # its process was killed by the stop (bash on a pool thread)
            record.status = "interrupted"
        elif record.status == "pending":  # not after a stop marked it interrupted
            record.status = "ok" if outcome.ok else "error"
        log.info(
            "← %s %s (%.0f ms): %s",
            tool.name,
            "ok" if outcome.ok else "failed",
            record.elapsed_s * 1000,
            self.preview(outcome.output),
        )
        log.debug("%s output:\n%s", tool.name, self.redactor.text(outcome.output))
        return outcome

    def _reject(self, record: CallRecord, status: CallStatus, message: str) -> ToolOutcome:
        record.status = status
        log.log(
            logging.WARNING if status == "denied" else logging.INFO,
            "✗ %s %s: %s",
            record.name or "(unnamed call)",
            status.replace("_", " "),
            self.preview(message),
        )
        return fail(message)

    def _pre_tool(self, event: ToolEvent) -> tuple[HookVerdict, tuple[str, ...]]:
        notes: list[str] = []
        for hook in self.hooks:
            try:
                verdict = hook.pre_tool(event)
            except Exception as exc:  # noqa: BLE001 - fail closed: a check that breaks blocks the call
                name, kind = type(hook).__name__, type(exc).__name__
                log.error(
                    "%s failed while checking %s (%s: %s); the call is denied", name, event.tool, kind, exc
                )
                return HookVerdict(
                    True,
                    f"permission denied: the check {name} failed ({kind}), so {event.tool} "
                    "was not run; try another approach or ask the user",
                ), ()
            if verdict.block:
                return verdict, ()
            notes.extend(verdict.notes)
        return ALLOW, tuple(notes)

    def _clip(self, output: str) -> str:
        """Bound the output of a tool that does not bound its own; leave a self-bounded tool's alone."""
        limit = self.limits.max_output_chars
        if limit <= 0 or len(output) <= limit + NOTICE_SLACK:
            return output
        return truncate(output, limit, hint="ask for less, e.g. a narrower query or path")[0]


def describe_failure(exc: BaseException) -> str:
    if isinstance(exc, SystemExit):  # its message is only the exit code
        return f"SystemExit: the tool tried to end the process (exit code {exc.code!r})"
    return f"{type(exc).__name__}: {exc}"


def call_groups(
    runnable: Sequence[tuple[int, Tool, ToolCall]],
    resolved: Mapping[int, Mapping[str, str]] | None = None,
) -> list[list[tuple[int, Tool, ToolCall]]]:
    """Split calls into groups run one after another. All calls of a response run concurrently, except that
    a call naming a file (``file_path``/``path``) that an earlier call of its group names too, one of them
    changing it (not ``Tool.read_only``), starts a new group: two edits of one file, or a write and a read of
    it, happen in call order and none is lost. A file is named by its name as written and by its real path
    (``resolved``: each call's ``resolved_paths``, by its index), so ``z.txt`` and a link ``l.txt -> z.txt``
    are one file. Calls naming no file (bash, most toolbox tools) never wait.
    """
    groups: list[list[tuple[int, Tool, ToolCall]]] = []
    named: dict[str, bool] = {}  # path → whether a call of the current group changes it
    for item in runnable:
        changes = not item[1].read_only
        real = (resolved or {}).get(item[0], {}).values()
        paths = [*_named_paths(item[2]), *(path for path in real if path)]
        if not groups or any(path in named and (changes or named[path]) for path in paths):
            groups.append([])
            named = {}
        groups[-1].append(item)
        for path in paths:
            named[path] = named.get(path, False) or changes
    return groups


def _path_arguments(call: ToolCall) -> dict[str, str]:
    """The arguments of a call that name a file or directory (``PATH_ARGUMENTS``), by name."""
    arguments = call.arguments if isinstance(call.arguments, Mapping) else {}
    return {
        key: arguments[key]
        for key in PATH_ARGUMENTS
        if isinstance(arguments.get(key), str) and arguments[key]
    }


def _named_paths(call: ToolCall) -> list[str]:
    """The files a call names, normalized so ``./app.py`` and ``app.py`` are one."""
    return [os.path.normpath(value) for value in _path_arguments(call).values()]


def resolved_paths(workdir: Path, call: ToolCall) -> dict[str, str]:
    """The real path (``os.path.realpath``, as the permission rules resolve it) of each path argument; ""
    where it cannot be resolved (a link replaced while it was read, a NUL byte, a chain of links too long to
    follow: see ``fsutil.realpath``), which no file tool opens."""
    resolved = {}
    for key, value in _path_arguments(call).items():
        try:
            resolved[key] = realpath(tool_path(workdir, value), strict=True)
        except (OSError, ValueError):
            resolved[key] = ""
    return resolved


def malformed_message(call: ToolCall) -> str:
    raw = call.raw_arguments if call.raw_arguments is not None else ""
    quoted = f"; arguments received: {raw[:300]!r}" if raw else ""
    return (
        f"malformed tool call{f' to {call.name}' if call.name else ''}: {call.error}{quoted}; "
        "send the call again with a JSON object of arguments matching the tool's schema"
    )
