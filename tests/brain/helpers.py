"""Shared helpers for bhrain tests: build a real loop around the scripted atom, run the installed script."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from routedriver.brain.atoms.scripted import ScriptedModel, parse_script
from routedriver.brain.loop import Limits, Loop
from routedriver.brain.memory.base import BackgroundMemory
from routedriver.brain.toolbox import Toolbox, ToolRegistry
from routedriver.brain.tools import builtin_tools
from routedriver.brain.tools.base import Tool, ToolContext, ToolSettings, schema
from tests.conftest import Ran

BHRAIN = str(Path(sys.executable).parent / "bhrain")


def call(name: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def model(turns: Sequence[Any], *, context_window: int = 200_000) -> ScriptedModel:
    return parse_script({"turns": list(turns), "context_window": context_window}, source="test")


def default_registry(
    workdir: Path, sets: Sequence[str] = ("files", "bash", "websearch"), **settings: Any
) -> ToolRegistry:
    tool_settings = ToolSettings(workdir=workdir, **settings)
    return ToolRegistry([Toolbox("default", builtin_tools(sets, tool_settings))])


def make_loop(
    workdir: Path,
    turns: Sequence[Any],
    *,
    registry: ToolRegistry | None = None,
    context_window: int = 200_000,
    **kwargs: Any,
) -> tuple[Loop, ScriptedModel]:
    scripted = model(turns, context_window=context_window)
    kwargs.setdefault("limits", Limits())
    loop = Loop(scripted, registry or default_registry(workdir), workdir=workdir, **kwargs)
    return loop, scripted


def proposal_gate(memory: BackgroundMemory) -> Toolbox:
    """A ``sync`` toolbox whose ``wait`` tool returns once ``memory``'s background proposal is ready.

    A script calls ``wait`` so that the proposal lands at a known iteration, without sleeping.
    """

    def wait(args: Mapping[str, Any], ctx: ToolContext) -> str:
        assert memory.ready.wait(10), "the background proposal never arrived"
        return "proposal is ready"

    return Toolbox("sync", [Tool("wait", "wait", schema({}), wait)])


def tool_results(scripted: ScriptedModel, request: int) -> list[str]:
    """Texts of the tool results the model saw in its ``request``-th call (1-based), latest batch only."""
    messages = scripted.requests[request - 1].messages
    batch: list[str] = []
    for message in reversed(messages):
        if message.role != "tool":
            break
        batch.insert(0, message.text)
    return batch


def bhrain(
    args: Sequence[str],
    cwd: Path,
    *,
    env: Mapping[str, str] | None = None,
    input: str | None = None,
    timeout: float = 60,
    wrapper: Sequence[str] = (),
) -> Ran:
    """Run the installed ``bhrain`` in its own session: no controlling terminal, as in CI or under a robot.
    ``wrapper`` runs it through another command (``setpriv …``)."""
    full_env = dict(os.environ)
    full_env.update(env or {})
    done = subprocess.run(
        [*wrapper, BHRAIN, *args],
        cwd=cwd,
        input=input,
        capture_output=True,
        text=True,
        env=full_env,
        timeout=timeout,
        check=False,
        start_new_session=True,
        stdin=None if input is not None else subprocess.DEVNULL,
    )
    return Ran(done.returncode, done.stdout, done.stderr)


def scripted_run(script: Path, *, skill: str = "act") -> list[str]:
    """The start of a ``bhrain run`` command line that plays ``script`` with the scripted atom."""
    return ["run", "--skill", skill, "--atom", "scripted", "--script", str(script)]


def write_script(path: Path, turns: Sequence[Any], **options: Any) -> Path:
    path.write_text(json.dumps({"turns": list(turns), **options}), encoding="utf-8")
    return path
