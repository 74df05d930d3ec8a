"""Run settings: the flags of ``bhrain run`` and the keys of ``--config FILE``, merged (flags win).

The config file is YAML (JSON works too) whose keys mirror the flags, plus ``security:`` with
``permissions:`` (Claude Code's permissions shape) and ``behavior:`` (the behavior engine's block), and a
few settings that have no flag (``retry``, ``websearch``, ``max_output_chars``, ``bash_timeout_s``,
``workdir``, ``context_window``, ``timeout_s``, ``prices``), ``sandbox`` (``on|off|auto``, or
``{mode: …, network: true}``), and ``mcpServers`` (Claude Code's ``.mcp.json`` block, also
``--mcp-config FILE``). Unknown keys are refused with the file and key path. Relative paths in
the file are relative to the file's directory.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any, TypeVar

from routedriver import userfile
from routedriver.brain.prices import Price, parse_price
from routedriver.brain.sandbox import MODES, Mode
from routedriver.errors import Refused
from routedriver.fsutil import real_path
from routedriver.mcp.servers_config import ServerSpec, parse_servers

ARCH = "bhrain.struct.v1"
_Number = TypeVar("_Number", int, float)


@dataclass
class RunSettings:
    arch: str | None = None
    skill: str | None = None
    atom: str | None = None
    model: str | None = None
    base_url: str | None = None
    input: str | None = None
    input_files: list[str] = field(default_factory=list)
    rubric: Path | None = None
    script: Path | None = None
    tools: list[str] | None = None
    toolboxes: list[str] = field(default_factory=list)
    permissions: Path | Mapping[str, Any] | None = None
    guards: list[str] = field(default_factory=list)
    memory: str | Mapping[str, Any] | None = None
    max_iterations: int | None = None
    max_tokens: int | None = None
    max_tokens_total: int | None = None  # budget: input + output tokens of the whole run
    max_cost: float | None = None  # budget: US dollars of the whole run, priced by ``prices``
    prices: Mapping[str, Price] | None = None  # the config's model prices, over the built-in table
    temperature: float | None = None
    context_window: int | None = None
    timeout_s: float | None = None
    retry: Mapping[str, Any] | None = None
    websearch: str | None = None
    max_output_chars: int | None = None
    bash_timeout_s: float | None = None
    workdir: Path | None = None
    trace: Path | None = None
    behavior: Mapping[str, Any] | None = None
    mcp_servers: tuple[ServerSpec, ...] | None = None  # None: not given; () from a file: none
    sandbox: Mode | None = None  # the bash tool's sandbox; None: the skill's default (review: on, else auto)
    sandbox_network: bool | None = None  # the sandbox lets commands use the network (default: no)
    config_path: Path | None = None
    # The files above as named (absolute, symlinks not resolved): the sandbox keeps these names in place.
    config_name: Path | None = None
    mcp_config: Path | None = None  # the --mcp-config file (its servers are mcp_servers)
    base_dir: Path = field(default_factory=Path.cwd)  # where relative paths of the permissions block point

    def merged_over(self, base: RunSettings) -> RunSettings:
        """These settings (flags) on top of ``base`` (a file): set values and non-empty lists win."""
        updates = {}
        for f in fields(self):
            mine = getattr(self, f.name)
            if f.name == "base_dir":
                continue
            if mine is None or (isinstance(mine, list) and not mine):
                continue
            updates[f.name] = mine
        return replace(base, **updates)


_STR = {"arch", "skill", "atom", "model", "base_url", "input", "websearch"}
_INT = {"max_iterations", "max_tokens", "max_tokens_total", "context_window", "max_output_chars"}
_FLOAT = {"temperature", "timeout_s", "bash_timeout_s", "max_cost"}
_PATH = {"rubric", "script", "trace", "workdir"}
_LIST = {
    "input_file": "input_files",
    "input_files": "input_files",
    "toolbox": "toolboxes",
    "toolboxes": "toolboxes",
    "guard": "guards",
    "guards": "guards",
}
_OTHER = {"tools", "permissions", "memory", "retry", "security", "mcpServers", "prices", "sandbox"}
_IGNORED = {"name", "description", "repo", "role"}  # accepted and ignored (labels; rhachet's repo/role)
KNOWN_KEYS = _STR | _INT | _FLOAT | _PATH | set(_LIST) | _OTHER | _IGNORED
RETRY_KEYS = {"max_retries", "base_delay_s", "max_delay_s", "max_retry_after_s"}


def load_config(path: Path) -> RunSettings:
    if not os.path.exists(path):  # what is there but is no file (a FIFO, a device), userfile names
        raise Refused(f"config file {path} not found", "check the path given to --config")
    data = userfile.load_yaml(path, what="config file")
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise Refused(f"config file {path} must be a mapping of settings", "see docs/bhrain.md")
    real = real_path(path)
    settings = RunSettings(config_path=real, config_name=Path(os.path.abspath(path)), base_dir=real.parent)
    for key, value in data.items():
        _apply(settings, str(key), value, path, real.parent)
    return settings


def _where(path: Path, key: str) -> str:
    return f"config file {path}: {key}"


def _apply(settings: RunSettings, key: str, value: Any, path: Path, base: Path) -> None:
    where = _where(path, key)
    if key not in KNOWN_KEYS:
        raise Refused(f"{where} is not a known key", f"known keys: {', '.join(sorted(KNOWN_KEYS))}")
    if value is None or key in _IGNORED:
        return
    if key in _STR:
        setattr(settings, key, _typed(value, str, where))
    elif key in _INT:
        # All of them are sizes or counts: 0 would not mean "none" (the --max-iterations flag refuses it too),
        # and silently falling back to the default would hide the mistake.
        setattr(settings, key, _positive(_typed(value, int, where), where))
    elif key in _FLOAT:
        number = _finite(float(_typed(value, (int, float), where)), where)
        setattr(settings, key, number if key == "temperature" else _positive(number, where))
    elif key in _PATH:
        setattr(settings, key, _path(value, where, base))
    elif key in _LIST:
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
            raise Refused(f"{where} must be a string or a list of strings", "fix the value")
        if key.startswith("input_file"):
            items = [i if i == "-" else str(_path(i, where, base)) for i in items]
        getattr(settings, _LIST[key]).extend(items)
    elif key == "tools":
        items = value.split(",") if isinstance(value, str) else value
        if not isinstance(items, list):
            raise Refused(f"{where} must be a list like [files, bash] or a string like files,bash", "fix it")
        settings.tools = [str(i).strip() for i in items if str(i).strip()]
    elif key == "permissions":
        settings.permissions = _permissions(value, where, base)
    elif key == "memory":
        if not isinstance(value, (str, Mapping)):
            raise Refused(f"{where} must be a name, MODULE:OBJ, or a mapping with strategy:", "fix the value")
        settings.memory = value
    elif key == "retry":
        if not isinstance(value, Mapping) or set(value) - RETRY_KEYS:
            unknown = sorted(set(value) - RETRY_KEYS) if isinstance(value, Mapping) else []
            raise Refused(
                f"{where}{'.' + unknown[0] if unknown else ''} is not valid",
                f"retry takes {', '.join(sorted(RETRY_KEYS))}",
            )
        settings.retry = {name: _retry_value(name, item, f"{where}.{name}") for name, item in value.items()}
    elif key == "security":
        _security(settings, value, path, base)
    elif key == "mcpServers":
        settings.mcp_servers = parse_servers(value, where, base)
    elif key == "prices":
        if not isinstance(value, Mapping):
            raise Refused(
                f"{where} must map model ids to prices", "write prices: {my-model: {input: 1, output: 2}}"
            )
        settings.prices = {
            str(model): parse_price(entry, f"{where}.{model}") for model, entry in value.items()
        }
    elif key == "sandbox":
        _sandbox(settings, value, where)


SANDBOX_KEYS = ("mode", "network")


def _sandbox(settings: RunSettings, value: Any, where: str) -> None:
    """``sandbox: on|off|auto`` or ``sandbox: {mode: on|off|auto, network: true|false}``."""
    block = value if isinstance(value, Mapping) else {"mode": value}
    for key, item in block.items():
        if key == "mode":
            settings.sandbox = _sandbox_mode(item, f"{where}.mode" if isinstance(value, Mapping) else where)
        elif key == "network":
            if not isinstance(item, bool):
                raise Refused(f"{where}.network must be true or false, not {item!r}", "fix the value")
            settings.sandbox_network = item
        else:
            raise Refused(f"{where}.{key} is not a known key", f"sandbox takes {' and '.join(SANDBOX_KEYS)}")


def _sandbox_mode(value: Any, where: str) -> Mode:
    # YAML 1.1 reads a bare on / off as true / false: take them as meant.
    if isinstance(value, bool):
        return "on" if value else "off"
    if value in MODES:
        return value  # type: ignore[no-any-return]
    raise Refused(f"{where} must be on, off or auto, not {value!r}", "fix the value")


def _security(settings: RunSettings, value: Any, path: Path, base: Path) -> None:
    where = _where(path, "security")
    if not isinstance(value, Mapping):
        raise Refused(f"{where} must be a mapping with permissions: and/or behavior:", "fix the value")
    for key, item in value.items():
        if key == "permissions":
            if item is not None:
                settings.permissions = _permissions(item, f"{where}.permissions", base)
        elif key == "behavior":
            if item is not None and not isinstance(item, Mapping):
                raise Refused(f"{where}.behavior must be a mapping", "see docs/behavior.md")
            settings.behavior = item
        else:
            raise Refused(f"{where}.{key} is not a known key", "security takes permissions and behavior")


def _permissions(value: Any, where: str, base: Path) -> Path | Mapping[str, Any]:
    if isinstance(value, str):
        return _path(value, where, base)
    if isinstance(value, Mapping):
        return value
    raise Refused(f"{where} must be a file path or a mapping with allow/deny/ask", "fix the value")


def _path(value: Any, where: str, base: Path) -> Path:
    """A path from the file, relative to its directory. YAML and JSON can spell a NUL ("a\\0b"), which no
    path can hold: refused here, where every path of the file is read, not deep in whatever opens it."""
    text = _typed(value, str, where)
    if "\0" in text:
        raise Refused(f"{where} holds a NUL character, which no path can hold", "remove it")
    return base / Path(text).expanduser()


def _retry_value(name: str, value: Any, where: str) -> int | float:
    """``max_retries`` a whole number, the delays seconds; 0 or more, and finite (a NaN limit is no limit)."""
    number: int | float = _finite(_typed(value, int if name == "max_retries" else (int, float), where), where)
    if number < 0:
        raise Refused(f"{where} must be 0 or more, not {number:g}", "fix the value")
    return number


def _finite(number: _Number, where: str) -> _Number:
    # YAML reads .nan and .inf, JSON files (read by Python's parser) NaN and Infinity. Every comparison with
    # NaN is false, so a NaN limit passes every check and then never stops anything; infinity means "no
    # limit", which none of these settings is for.
    if isinstance(number, float) and not math.isfinite(number):  # an int is finite (and may not fit a float)
        raise Refused(f"{where} must be a finite number, not {number}", "fix the value")
    return number


def _positive(number: _Number, where: str) -> _Number:
    if _finite(number, where) <= 0:
        kind = "integer" if isinstance(number, int) else "number"
        raise Refused(f"{where} must be a positive {kind}, not {number:g}", "fix the value")
    return number


def _typed(value: Any, kinds: type | tuple[type, ...], where: str) -> Any:
    if isinstance(value, bool) or not isinstance(value, kinds):
        names = kinds.__name__ if isinstance(kinds, type) else " or ".join(k.__name__ for k in kinds)
        raise Refused(
            f"{where} must be {names.replace('str', 'a string').replace('int', 'an integer')}, "
            f"not {type(value).__name__}",
            "fix the value",
        )
    return value
