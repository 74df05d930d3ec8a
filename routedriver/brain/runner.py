"""Assemble one bhrain session from ``RunSettings`` and run it: the library behind ``bhrain run``.

Order matters for the user: everything that can be refused without a model call (arguments, files, atom,
key, tools, permissions, input size) is checked before the first request, so a mistake costs nothing.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from routedriver import userfile
from routedriver.brain.atoms import AtomOptions, atom_names, create_atom
from routedriver.brain.behavior import load_behavior_hook
from routedriver.brain.config import ARCH, RunSettings
from routedriver.brain.loop import Limits, Loop, LoopResult
from routedriver.brain.memory import create_memory
from routedriver.brain.permissions.guard import PermissionHook
from routedriver.brain.permissions.rules import load_permissions_file, policy_from_block
from routedriver.brain.plugins import load_object
from routedriver.brain.prices import price_for
from routedriver.brain.redact import Redactor
from routedriver.brain.sandbox import prepare
from routedriver.brain.skills import (
    CORRECTION,
    Artifact,
    Skill,
    get_skill,
    read_counts,
    render_rubric,
    with_counts,
)
from routedriver.brain.toolbox import Toolbox, ToolRegistry
from routedriver.brain.tools import builtin_tools, parse_tool_sets
from routedriver.brain.tools.base import ToolSettings
from routedriver.brain.trace import TraceWriter, call_json, usage_json
from routedriver.errors import ExitCode, Interrupted, Malfunction, Refused, Stopped, Terminated, UserError
from routedriver.fsutil import real_path
from routedriver.llm.errors import retry_note
from routedriver.llm.retry import RetryPolicy
from routedriver.llm.types import Usage
from routedriver.mcp.client import McpServers
from routedriver.report import Report

log = logging.getLogger("bhrain")

CLARIFICATION = (
    "The input is empty, so there is nothing to work on yet. What should I do? "
    'Give the task or question with --input "..." or --input-file FILE.'
)
CORRECTION_ITERATIONS = 2
# The keyless reviewer (package data of routedriver.brain): --skill review --atom scripted without --script.
OFFLINE_REVIEWER = "offline_review.yaml"
# Runs a signal stopped: their partial text goes to --json only, never to stdout as if it were the answer.
SIGNAL_STOPS = frozenset({Interrupted.word, Terminated.word})
# Graceful stops at a limit: the partial answer is printed with a note on why the run stopped there.
EARLY_STOPS = frozenset({"max_iterations", "max_tokens_total", "max_cost"})


@dataclass
class RunOutcome:
    text: str
    exit_code: int
    stop_reason: str
    explanation: str = ""
    skill: str = ""
    atom: str = ""
    model: str = ""
    result: LoopResult | None = None
    counts: tuple[int, int] | None = None
    error: UserError | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        result = self.result
        out: dict[str, Any] = {
            "result": self.text,
            "stop_reason": self.stop_reason,
            "exit_code": self.exit_code,
            "iterations": result.iterations if result else 0,
            "usage": usage_json(result.usage if result else Usage()),
            "elapsed_s": round(result.elapsed_s, 3) if result else 0.0,
            "tool_calls": [call_json(c, output=False) for c in result.tool_calls] if result else [],
            "context_tokens": result.context_tokens if result else 0,
            "skill": self.skill,
            "atom": self.atom,
            "model": self.model,
        }
        if result is not None and result.cost_usd is not None:
            out["cost_usd"] = round(result.cost_usd, 6)
        if self.explanation:
            out["explanation"] = self.explanation
        if self.counts is not None:
            out["blockers"], out["nitpicks"] = self.counts
        if self.error is not None:
            out["error"] = self.error.line()
        return out


def run_session(settings: RunSettings, *, environ: Mapping[str, str] | None = None) -> RunOutcome:
    env = dict(os.environ if environ is None else environ)
    if settings.arch not in (None, ARCH):
        raise Refused(f"unknown arch {settings.arch!r}", f"bhrain implements {ARCH}")
    if not settings.skill:
        raise Refused(
            "missing --skill",
            'choose act, ask or review, e.g. bhrain run --skill ask --atom claude --input "..."',
        )
    skill = get_skill(settings.skill)
    if not settings.atom:
        raise Refused("missing --atom", f"choose one of {', '.join(atom_names())} (or MODULE:OBJ)")
    if settings.input is None and not settings.input_files:
        raise Refused("missing --input or --input-file", 'give the task, e.g. --input "summarize README.md"')
    task = _task(skill, settings)
    if not task.strip():
        return RunOutcome(
            CLARIFICATION, int(ExitCode.REFUSED), "clarification_needed", skill=skill.name, atom=settings.atom
        )

    workdir = real_path(settings.workdir or Path.cwd())
    if not os.path.isdir(workdir):
        raise Refused(f"working directory {workdir} does not exist", "fix workdir in the config file")
    redactor = Redactor(env)
    model = _atom(settings, env, skill)
    policies = _policies(settings, workdir)
    behavior = _behavior(settings, workdir, model)  # before the sandbox, which keeps its files read-only
    registry = _registry(skill, settings, workdir, policies, env, behavior)
    hooks: list[Any] = [PermissionHook(policies)]  # always first: it sees every call before anyone else
    if behavior is not None:
        behavior.set_tool_inventory(
            registry.names()
        )  # the classifier's snapshot lists what the agent can use
        hooks.append(behavior)
    servers = _mcp_servers(settings, workdir, env)  # nothing starts yet; a bad ${VAR} is refused now
    if servers is not None:
        hooks.append(servers)  # its close() stops the servers when the loop closes

    memory = create_memory(settings.memory)
    limits = Limits(
        max_iterations=Limits.max_iterations if settings.max_iterations is None else settings.max_iterations,
        max_tokens_total=settings.max_tokens_total,
        max_cost=settings.max_cost,
        max_tokens=settings.max_tokens,
        temperature=settings.temperature,
        max_output_chars=settings.max_output_chars or Limits.max_output_chars,
    )
    if limits.max_iterations < 1:
        raise Refused("--max-iterations must be at least 1", "give a positive number")

    price = price_for(str(model.model), settings.prices)
    if price is None and limits.max_cost is not None:
        raise Refused(
            f"--max-cost needs the price of the model {model.model!r}, and it has none",
            f"add it to the config file: prices: {{{model.model}: {{input: …, output: …}}}} "
            "(US dollars per million tokens)",
        )
    trace = None
    loop = Loop(
        model,
        registry,
        workdir=workdir,
        skill_prompt=skill.prompt,
        hooks=hooks,
        memory=memory,
        limits=limits,
        redactor=redactor,
        price=price,
    )
    if settings.trace is not None:
        trace = TraceWriter(
            settings.trace,
            {
                "arch": ARCH,
                "skill": skill.name,
                "atom": settings.atom,
                "model": model.model,
                "workdir": str(workdir),
            },
            redactor,
            workdir=workdir,
        )
        loop.on_iteration = trace.iteration
    try:
        if servers is not None:
            servers.connect(registry)
            for hook in hooks:  # the behavior classifier's snapshot lists the servers' tools too
                if hasattr(hook, "set_tool_inventory"):
                    hook.set_tool_inventory(registry.names())
        return _drive(loop, skill, task, settings, trace)
    finally:
        loop.close()


def _drive(loop: Loop, skill: Skill, task: str, settings: RunSettings, trace: Any) -> RunOutcome:
    model = loop.model
    needed = loop.request_tokens(task)
    if needed > model.context_window:
        raise Refused(
            f"the input is too large for the {settings.atom} atom: about {needed:,} tokens "
            f"(system prompt, tools and input) but its context window is {model.context_window:,} tokens",
            "shorten the input or split it into smaller tasks",
        )
    if trace is not None:
        trace.start(loop)  # refuses a path it cannot write before the model is asked anything
    outcome = RunOutcome("", 0, "done", skill=skill.name, atom=str(settings.atom), model=model.model)
    try:
        result = loop.run(task)
        if skill.name == "review" and result.stop_reason == "done" and read_counts(result.text) is None:
            log.warning("the review has no readable counts; asking once for a corrected review")
            loop.limits = replace(loop.limits, max_iterations=loop.iteration + CORRECTION_ITERATIONS)
            result = loop.follow_up(CORRECTION, from_user=False)
        outcome.result = result
        _conclude(outcome, result, skill)
    except UserError as exc:  # an API that failed after retries, a script that ran out…
        outcome.error, outcome.exit_code, outcome.stop_reason = exc, int(exc.exit_code), "error"
        outcome.text = loop.last_text
        outcome.result = loop.partial_result()
    except (Stopped, KeyboardInterrupt) as exc:  # Ctrl-C or SIGTERM: no further tool or model call was made
        stop = exc if isinstance(exc, Stopped) else Interrupted()
        outcome.error = UserError(stop.word)  # the line "error: interrupted"; the exit code is the signal's
        outcome.exit_code, outcome.stop_reason, outcome.text = stop.exit_code, stop.word, loop.last_text
        outcome.explanation = (
            f"{stop.signal_name} arrived during iteration {loop.iteration}: the running tools were stopped "
            "and no further tool call or model call was made"
        )
        outcome.result = loop.partial_result(stop.word, stop.exit_code)
    if trace is not None:
        trace.finish(
            loop,
            outcome.stop_reason,
            {
                "result": outcome.text,
                "exit_code": outcome.exit_code,
                "explanation": outcome.explanation or (outcome.error.line() if outcome.error else ""),
            },
        )
        if trace.failure:
            _trace_failed(outcome, trace)
    result_now = outcome.result
    if result_now is not None:
        failed = sum(1 for c in result_now.tool_calls if not c.ok)
        usage = result_now.usage
        log.info(
            "finished (%s): %d iterations, %s input + %s output tokens (cache: %s read, %s written), "
            "%d tool calls (%d not ok), %.2f s",
            outcome.stop_reason,
            result_now.iterations,
            f"{usage.input_tokens:,}",
            f"{usage.output_tokens:,}",
            f"{usage.cache_read_tokens:,}",
            f"{usage.cache_write_tokens:,}",
            len(result_now.tool_calls),
            failed,
            result_now.elapsed_s,
        )
    return outcome


def _conclude(outcome: RunOutcome, result: LoopResult, skill: Skill) -> None:
    outcome.stop_reason, outcome.exit_code = result.stop_reason, result.exit_code
    outcome.explanation = result.explanation
    text = result.text
    if result.stop_reason in EARLY_STOPS:
        partial = text.strip() or "(no answer yet)"
        text = f"{partial}\n\n[bhrain stopped early] {result.explanation}"
    if skill.name == "review" and result.stop_reason in ("done", "denied"):
        counts = read_counts(text)
        if counts is not None:
            # A review that ends with its counts has given its verdict, even if a call was denied on the way
            # (the denial is logged and traced): it is done, not a task that ended refused.
            outcome.counts = counts
            text = with_counts(text, *counts)
            outcome.stop_reason, outcome.exit_code, outcome.explanation = "done", int(ExitCode.OK), ""
        elif result.stop_reason == "done":
            outcome.error = Malfunction(
                "the review has no readable counts (blockers: N, nitpicks: M), even after one correction",
                "check the model and the rubric",
            )
            outcome.exit_code, outcome.stop_reason = int(ExitCode.MALFUNCTION), "review_without_counts"
    elif result.stop_reason == "done" and not text.strip():
        if skill.needs_answer:
            outcome.error = Malfunction(
                f"the model ended with an empty answer (skill {skill.name} needs one)",
                "run it again, or try another model",
            )
            outcome.exit_code, outcome.stop_reason = int(ExitCode.MALFUNCTION), "empty_answer"
        else:
            log.warning("the model ended with an empty answer; check what it did (e.g. with --trace)")
    if result.stop_reason in ("malformed_tool_calls", "truncated"):
        outcome.error = Malfunction(result.explanation)
    elif result.stop_reason == "refused":
        outcome.error = Malfunction(result.explanation, "rephrase the task, or use another model")
    outcome.text = text


def _trace_failed(outcome: RunOutcome, trace: Any) -> None:
    """The trace's last write failed: one line, and exit 1 if the run had nothing worse to report."""
    problem = f"cannot write the trace to {trace.path}: {trace.failure}"
    if outcome.error is None and outcome.exit_code == int(ExitCode.OK):
        outcome.error = Malfunction(problem, "check the disk and the path; the run itself finished")
        outcome.exit_code = int(ExitCode.MALFUNCTION)
    else:
        log.warning("%s", problem)


def report(outcome: RunOutcome, redactor: Redactor, *, as_json: bool) -> Report:
    """What ``bhrain run`` says, every text redacted: the answer (or the whole run as JSON) on stdout, its
    error or why it stopped on stderr, and its exit code (130/143 when a signal stopped it)."""
    stdout = ""
    if as_json:
        stdout = json.dumps(redactor.value(outcome.to_json()), ensure_ascii=False) + "\n"
    elif outcome.text and outcome.stop_reason not in SIGNAL_STOPS:  # a stopped run has no answer to print
        stdout = redactor.text(outcome.text) + "\n"
    stderr: tuple[str, ...] = ()
    if outcome.error is not None:
        stderr = (redactor.text(outcome.error.line()),)
    elif outcome.exit_code and outcome.explanation and outcome.stop_reason not in EARLY_STOPS:
        stderr = (f"bhrain: stopped: {redactor.text(outcome.explanation)}",)
    return Report(stdout, stderr, outcome.exit_code)


# -- assembling ----------------------------------------------------------------------------------------------
def _read_input_file(name: str) -> tuple[str, str]:
    """The text of one ``--input-file`` (``-``: stdin), at most ``userfile.MAX_BYTES`` of it, read through
    ``userfile`` (a FIFO or a device is refused, never waited on); bytes that are not UTF-8 show as U+FFFD
    (an artifact under review may hold some)."""
    limit = userfile.MAX_BYTES
    if name == "-":
        binary = getattr(sys.stdin, "buffer", None)  # a text stream without one: an embedding caller's
        data = binary.read(limit + 1) if binary is not None else sys.stdin.read(limit + 1).encode("utf-8")
        if len(data) > limit:
            raise Refused(
                f"--input-file -: stdin holds more than {limit:,} bytes", "give bhrain a smaller input"
            )
        return "stdin", data.decode("utf-8", errors="replace")
    path = Path(name).expanduser()
    if not os.path.lexists(path):
        raise Refused(f"input file {name} not found", "check the path given to --input-file")
    data = userfile.read_bytes(path, what="input file", shown=f"input file {name}", limit=limit)
    return name, data.decode("utf-8", errors="replace")


def _task(skill: Skill, settings: RunSettings) -> str:
    files = [_read_input_file(name) for name in settings.input_files]
    text = settings.input or ""
    if skill.name == "review":
        if not text.strip() and not any(content.strip() for _, content in files):
            return ""
        artifacts = [Artifact(path, content) for path, content in files]
        return render_rubric(settings.rubric, artifacts, text)
    if not files:
        return text
    if not text.strip() and len(files) == 1:
        return files[0][1]
    parts = [text] if text.strip() else []
    parts.extend(f"=== {path} ===\n{content}" for path, content in files if content.strip())
    return "\n\n".join(parts) if parts else ""


def _atom(settings: RunSettings, env: Mapping[str, str], skill: Skill) -> Any:
    retry = None
    if settings.retry:
        try:
            retry = RetryPolicy(**settings.retry)
        except (TypeError, ValueError) as exc:
            raise Refused(f"retry settings are not valid: {exc}", "see docs/bhrain.md") from None

    def on_retry(attempt: int, delay_s: float, exc: BaseException) -> None:
        log.warning("%s", retry_note(attempt, delay_s, exc))

    options = AtomOptions(
        model=settings.model,
        base_url=settings.base_url,
        script=settings.script or _offline_reviewer(settings, skill),
        context_window=settings.context_window,
        timeout_s=settings.timeout_s,
        environ=env,
        on_retry=on_retry,
        retry=retry,
    )
    return create_atom(str(settings.atom), options)


def _offline_reviewer(settings: RunSettings, skill: Skill) -> Path | None:
    """``--skill review --atom scripted`` without ``--script``: the keyless reviewer shipped with bhrain
    (``offline_review.yaml``, which says in every answer that no model read the work)."""
    if skill.name != "review" or settings.atom != "scripted":
        return None
    # importlib.resources (~5 ms): only the offline reviewer
    from importlib import resources

    return Path(str(resources.files("routedriver.brain") / OFFLINE_REVIEWER))


def _registry(
    skill: Skill,
    settings: RunSettings,
    workdir: Path,
    policies: list[Any],
    env: Mapping[str, str],
    behavior: Any,
) -> Any:
    tool_settings = ToolSettings(workdir=workdir)
    if settings.max_output_chars:
        tool_settings.max_output_chars = settings.max_output_chars
    if settings.bash_timeout_s:
        tool_settings.bash_timeout_s = settings.bash_timeout_s
    if settings.websearch:
        # websearch loads urllib.request (~18 ms): only a run that searches pays for it
        from routedriver.brain.tools.websearch import backend_from_env

        tool_settings.websearch = backend_from_env(settings.websearch)
    explicit = settings.tools is not None
    sets = parse_tool_sets(settings.tools) if settings.tools is not None else list(skill.tool_sets)
    read_only = skill.read_only and not explicit
    # A toolbox given on its own replaces the default one; --tools (or --toolbox default) brings it back.
    builtins = not settings.toolboxes or explicit or "default" in settings.toolboxes
    if builtins and "bash" in sets:  # found and probed once, before the tool tells the model about it
        tool_settings.sandbox = _sandbox(skill, settings, workdir, policies, env, behavior)
    default_box = Toolbox(
        "default", builtin_tools(sets, tool_settings, read_only=read_only), description="built-in tools"
    )
    boxes = []
    if builtins:
        boxes.append(default_box)
    boxes.extend(_load_toolbox(spec) for spec in settings.toolboxes if spec != "default")
    return ToolRegistry(boxes)


def _sandbox(
    skill: Skill,
    settings: RunSettings,
    workdir: Path,
    policies: list[Any],
    env: Mapping[str, str],
    behavior: Any,
) -> Any:
    """The bash tool's sandbox (None: unsandboxed), from --sandbox, the config, or the skill's default."""
    mode = settings.sandbox or skill.sandbox
    source = "--sandbox on" if settings.sandbox else f"--skill {skill.name} (whose default is --sandbox on)"
    return prepare(
        mode,
        source=source,
        network=bool(settings.sandbox_network),
        policies=policies,
        workdir=workdir,
        path_env=env.get("PATH"),
        own_files=_settings_files(settings, behavior),
    )


def _settings_files(settings: RunSettings, behavior: Any) -> list[Path]:
    """Every file that decides what the next run may do, as named (the sandbox keeps them read-only and
    their names in place): the config, the permissions file, the MCP config (whose servers start on the
    host), the review rubric, and the folders of the behavior profile and prompt files the config loads
    (a whole folder: a new behavior/NAME.yaml would stand before the NAME.yml loaded)."""
    files = [settings.config_name or settings.config_path, settings.permissions, settings.mcp_config]
    files.append(settings.rubric)
    if behavior is not None:
        folders = {os.path.dirname(source) for source in behavior.sources}
        folders.discard(str(real_path(_behavior_config(settings)).parent))  # the config's own: a file above
        files.extend(Path(folder) for folder in sorted(folders))
    return [path for path in files if isinstance(path, Path)]


def _load_toolbox(spec: str) -> Any:
    obj = load_object(spec, what="toolbox")
    if not isinstance(obj, Toolbox) and callable(obj):
        try:
            obj = obj()
        except Exception as exc:  # noqa: BLE001
            raise Refused(
                f"toolbox {spec} failed to build: {type(exc).__name__}: {exc}", "fix the toolbox"
            ) from None
    if not isinstance(obj, Toolbox):
        raise Refused(
            f"toolbox {spec} is a {type(obj).__name__}, not a Toolbox",
            "export a routedriver.brain.toolbox.Toolbox or a function returning one",
        )
    return obj


def _mcp_servers(settings: RunSettings, workdir: Path, env: Mapping[str, str]) -> Any:
    """The configured MCP servers as a hook (started by ``connect``), or None without any."""
    if not settings.mcp_servers:
        return None
    return McpServers(settings.mcp_servers, workdir=workdir, environ=env)


def _policies(settings: RunSettings, workdir: Path) -> list[Any]:
    """The permission policies: the rules file or block, then the custom guards."""
    policies: list[Any] = []
    if isinstance(settings.permissions, Path):
        policies.append(load_permissions_file(settings.permissions, workdir))
    elif settings.permissions is not None:
        block = settings.permissions.get("permissions", settings.permissions)
        where = f"config file {settings.config_path}: security.permissions"
        policies.append(policy_from_block(block, base_dir=settings.base_dir, workdir=workdir, where=where))
    for spec in settings.guards:
        guard = load_object(spec, what="permission guard")
        if isinstance(guard, type):
            guard = guard()
        if not (hasattr(guard, "decide") or callable(guard)):
            raise Refused(f"permission guard {spec} has no decide(event) method", "see docs/bhrain.md")
        policies.append(guard)
    return policies


def _behavior_config(settings: RunSettings) -> Path:
    """The file the behavior block's relative names (behavior/, prompts/) are read from."""
    return settings.config_path or real_path("bhrain.yaml")


def _behavior(settings: RunSettings, workdir: Path, model: Any) -> Any:
    """The behavior engine's hook for the config's ``security.behavior`` block, or None without one."""
    if settings.behavior is None:
        return None
    return load_behavior_hook(
        settings.behavior, config_path=_behavior_config(settings), agent_model=model, workdir=workdir
    )
