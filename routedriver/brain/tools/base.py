"""What a tool is: a spec the model sees plus a function that runs it, and the helpers every tool shares.

A tool's function takes ``(arguments, context)`` and returns a ``ToolOutcome`` (or a plain string, read as a
success). It may raise: the loop turns any exception into an error result, so a broken tool never ends the
run. Arguments are checked against the tool's JSON schema (required keys, basic types, no unknown keys)
before the function is called; a mismatch is fed back to the model as a malformed call.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from routedriver.brain.hooks import ToolOutcome
from routedriver.llm.types import ToolSpec

if TYPE_CHECKING:
    from routedriver.brain.sandbox import Sandbox
    from routedriver.brain.toolbox import ToolRegistry

DEFAULT_MAX_OUTPUT_CHARS = 30_000

# ``readable(path, is_dir)``: False hides the path from the tools that walk directories (glob, grep). The
# permission guard provides it, so a search cannot show what a ``Read(...)`` deny or ask rule protects.
ReadFilter = Callable[[Path, bool], bool]
# The arguments that name a file or a directory: what ``call_groups`` orders by, and what the loop resolves
# when it checks a call (``ToolContext.resolved``).
PATH_ARGUMENTS = ("file_path", "path")


@dataclass(frozen=True)
class ToolContext:
    """What a running tool may know about the session it runs in."""

    workdir: Path
    call_id: str = ""
    iteration: int = 0
    registry: ToolRegistry | None = None  # lets a tool add or remove toolboxes at runtime
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS
    readable: ReadFilter | None = None  # None: every path may be shown
    # The real path (symlinks resolved) each path argument had when the call was checked, by argument name.
    # The file tools open that path and no other, so what they touch is what the permission rules saw.
    resolved: Mapping[str, str] = field(default_factory=dict)


def tool_path(workdir: Path, raw: str) -> Path:
    """A tool's path argument: relative to the working directory, or absolute, or under ``~``."""
    path = Path(os.path.expanduser(raw))
    return path if path.is_absolute() else workdir / path


def read_filter_of(hooks: Iterable[object]) -> ReadFilter | None:
    """The paths the loop's hooks let a search show: every hook with ``read_filter()`` must agree."""
    filters: list[ReadFilter] = []
    for hook in hooks:
        make = getattr(hook, "read_filter", None)
        found = make() if callable(make) else None
        if found is not None:
            filters.append(found)
    if not filters:
        return None
    if len(filters) == 1:
        return filters[0]
    return lambda path, is_dir: all(f(path, is_dir) for f in filters)


ToolFunction = Callable[[Mapping[str, Any], ToolContext], "ToolOutcome | str"]


@dataclass(frozen=True)
class Tool:
    name: str
    description: str
    input_schema: Mapping[str, Any]
    run: ToolFunction
    read_only: bool = False  # informational: shown in the system prompt, used by skill defaults
    # The arguments into which a secret's placeholder the model was shown (``[REDACTED:NAME]``) is put back
    # as the real value before the rules see the call: ``write``'s content, so a file read and written back
    # keeps its secret. ``("*",)``: every argument (an MCP server configured with ``restoreSecrets``).
    # Nothing by default: a tool gets the placeholder itself, exactly as the permission rules saw it.
    restores_secrets: tuple[str, ...] = ()

    def spec(self, wire_name: str | None = None) -> ToolSpec:
        return ToolSpec(
            name=wire_name or self.name, description=self.description, input_schema=self.input_schema
        )


def schema(properties: Mapping[str, Mapping[str, Any]], required: tuple[str, ...] = ()) -> dict[str, Any]:
    """A JSON schema object for tool arguments (unknown keys are refused)."""
    return {
        "type": "object",
        "properties": dict(properties),
        "required": list(required),
        "additionalProperties": False,
    }


_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "object": (dict, Mapping),
    "array": (list, tuple),
    "null": (type(None),),
}


def argument_problem(input_schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> str | None:
    """Why ``arguments`` do not fit the top level of ``input_schema`` (None when they do).

    Deliberately small (required keys, unknown keys, primitive types): enough to catch what models get wrong
    without importing jsonschema on every run.
    """
    properties: Mapping[str, Any] = input_schema.get("properties") or {}
    missing = [name for name in input_schema.get("required") or () if name not in arguments]
    if missing:
        return f"missing required argument{'s' if len(missing) > 1 else ''}: {', '.join(missing)}"
    if input_schema.get("additionalProperties") is False:
        unknown = sorted(set(arguments) - set(properties))
        if unknown:
            return f"unknown argument{'s' if len(unknown) > 1 else ''}: {', '.join(unknown)}"
    for name, value in arguments.items():
        expected = (properties.get(name) or {}).get("type")
        if expected is None:
            continue
        names = [expected] if isinstance(expected, str) else list(expected)
        types = tuple(t for n in names for t in _JSON_TYPES.get(n, (object,)))
        # bool is an int in Python but not in JSON schema.
        if isinstance(value, bool) and "boolean" not in names:
            return f"argument {name!r} must be {' or '.join(names)}, not boolean"
        if not isinstance(value, types):
            return f"argument {name!r} must be {' or '.join(names)}, not {type(value).__name__}"
        # JSON has no NaN or infinity, but Python's parser reads NaN, Infinity and 1e999 from a provider: a
        # NaN limit passes every check (each comparison with it is false) and then limits nothing.
        if isinstance(value, float) and not math.isfinite(value):
            return f"argument {name!r} must be a finite number, not {value}"
    return None


def truncate(text: str, limit: int, *, hint: str) -> tuple[str, int]:
    """Cut ``text`` to ``limit`` characters with a notice saying how much was cut; (text, chars cut)."""
    if limit <= 0 or len(text) <= limit:
        return text, 0
    cut = len(text) - limit
    notice = f"\n[output truncated: {cut:,} more characters not shown (limit {limit:,}); {hint}]"
    return text[:limit] + notice, cut


def ok(output: str, **data: Any) -> ToolOutcome:
    return ToolOutcome(ok=True, output=output, data=data)


def fail(output: str, **data: Any) -> ToolOutcome:
    return ToolOutcome(ok=False, output=output, data=data)


@dataclass
class ToolSettings:
    """How the built-in tools behave; the CLI fills it from flags and the config file."""

    workdir: Path = field(default_factory=Path.cwd)
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS
    bash_timeout_s: float = 120.0
    bash_max_timeout_s: float = 600.0
    websearch: Any = None  # a SearchBackend, or None: resolved from the environment on first use
    websearch_count: int = 5
    sandbox: Sandbox | None = None  # the bash tool's bubblewrap sandbox; None runs its commands unsandboxed
