"""The ``bash`` tool: run a shell command, return stdout, stderr and the exit code.

It runs through ``routedriver.proc.run``: stdin closed, the command in its own process group (a timeout
kills everything it started and keeps the output so far), output capped at the configured limit with a
notice that says how much was cut and how to ask for less. With a sandbox (``ToolSettings.sandbox``), the
command starts under bubblewrap, its deny rules resolved against the file system as it is at that moment
(``routedriver.brain.sandbox``); the permission rules are still asked first, by the loop.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from routedriver import proc
from routedriver.brain.hooks import ToolOutcome
from routedriver.brain.sandbox import Unprotectable
from routedriver.brain.tools.base import Tool, ToolContext, ToolSettings, fail, ok, schema

NARROWER = "narrow the command, e.g. pipe it through head, tail or grep, or redirect to a file and grep that"


def _cap(text: str, keep: int, dropped_bytes: int, stream: str) -> str:
    cut = max(len(text) - keep, 0)
    if cut:
        text = text[:keep]
    if cut or dropped_bytes:
        more = (
            f"{cut:,} characters" + (f" and {dropped_bytes:,} bytes" if dropped_bytes else "")
            if cut
            else f"{dropped_bytes:,} bytes"
        )
        text += f"\n[{stream} truncated: {more} more not shown; {NARROWER}]"
    return text


def format_result(result: proc.ProcResult, limit: int, timeout_s: float) -> ToolOutcome:
    stdout, stderr = result.stdout, result.stderr
    # Share the budget: stderr keeps at least a quarter (errors matter), stdout gets the rest.
    stderr_keep = min(len(stderr), max(limit // 4, limit - len(stdout)))
    stdout_keep = max(limit - stderr_keep, 0)
    parts = []
    if result.timed_out:
        parts.append(
            f"timed out after {timeout_s:g} s: the command and everything it started were killed; "
            "the output so far is below. Use a larger timeout, or a faster or narrower command."
        )
    if result.interrupted:
        parts.append("interrupted: bhrain is stopping (Ctrl-C or SIGTERM), so the command was killed")
    parts.append(f"exit code: {result.returncode}")
    parts.append("stdout:\n" + (_cap(stdout, stdout_keep, result.stdout_dropped, "stdout") or "(empty)"))
    parts.append("stderr:\n" + (_cap(stderr, stderr_keep, result.stderr_dropped, "stderr") or "(empty)"))
    data = {"exit_code": result.returncode, "timed_out": result.timed_out, "interrupted": result.interrupted}
    return (ok if result.ok else fail)("\n".join(parts), **data)


def bash_tool(settings: ToolSettings) -> Tool:
    def run(args: Mapping[str, Any], ctx: ToolContext) -> ToolOutcome:
        command: str = args["command"]
        if not command.strip():
            return fail("the command is empty; pass a shell command, e.g. 'ls -la'")
        timeout = args.get("timeout")
        if timeout is None:
            timeout_s = settings.bash_timeout_s
        elif not timeout > 0:  # not "<= 0": NaN (the registry refuses it first) would pass that
            return fail(f"timeout must be a positive number of seconds, not {timeout}")
        else:
            timeout_s = min(float(timeout), settings.bash_max_timeout_s)
        env = {"PAGER": "cat", "GIT_PAGER": "cat"}
        sandbox = settings.sandbox
        if sandbox is None:
            result = proc.run(  # noqa: S604 - running the model's command is this tool's job; permissions decide
                command,
                shell="bash",
                cwd=ctx.workdir,
                timeout=timeout_s,
                max_output=ctx.max_output_chars,
                extra_env=env,
            )
            return format_result(result, ctx.max_output_chars, timeout_s)

        try:
            argv = sandbox.argv(command, cwd=ctx.workdir)
        except Unprotectable as exc:
            return fail(f"not run: {exc}")
        result = proc.run(
            argv, cwd=ctx.workdir, timeout=timeout_s, max_output=ctx.max_output_chars, extra_env=env
        )
        return format_result(result, ctx.max_output_chars, timeout_s)

    sandboxed = ""
    if settings.sandbox is not None:
        sandboxed = (
            " It runs in a sandbox: only the working directory and a private /tmp are writable, paths the "
            "permission rules deny stay unreadable or read-only, "
            + ("and the network is open." if settings.sandbox.network else "and there is no network.")
        )
    return Tool(
        "bash",
        "Run a bash command in the working directory; returns stdout, stderr and the exit code. "
        f"Default timeout {settings.bash_timeout_s:g} s (max {settings.bash_max_timeout_s:g} s); "
        "stdin is closed." + sandboxed,
        schema(
            {
                "command": {"type": "string", "description": "The command line to run with bash -c."},
                "timeout": {"type": "number", "description": "Seconds before the command is killed."},
            },
            ("command",),
        ),
        run,
    )
