"""The ``mcpServers`` block bhrain reads: Claude Code's ``.mcp.json`` shape, stdio servers only.

```json
{"mcpServers": {"route": {"command": "route.mcp", "args": ["--route", "routes/demo"],
                          "env": {"ANTHROPIC_API_KEY": "${ANTHROPIC_API_KEY}"}}}}
```

Each server: ``command`` (required), ``args`` (strings), ``env`` (string values), ``cwd`` (relative to the
file; default: bhrain's working directory), ``type`` (only ``stdio``), and bhrain's own ``restoreSecrets``
(default false: see ``redact``). Names are letters, digits, ``-`` and single ``_`` (not last): they become
part of tool names (``mcp__<server>__<tool>``). ``${VAR}`` and
``${VAR:-default}`` in ``command``, ``args`` and ``env`` are replaced from bhrain's environment when the
session starts; an unset ``${VAR}`` without a default is refused. The block is validated whole when it is
read; nothing starts then.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from routedriver import userfile
from routedriver.errors import Refused
from routedriver.fsutil import real_path

SERVER_KEYS = ("type", "command", "args", "env", "cwd", "restoreSecrets")
# Not ending in "_": the server of mcp__<server>__<tool> is what stands before the first "__" after "mcp__",
# and a name ending in "_" (mcp__a___x) would read as another server's (a, tool _x) in a permission rule.
_NAME = re.compile(r"^[A-Za-z0-9_-]{0,47}[A-Za-z0-9-]$")
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class ServerSpec(NamedTuple):
    name: str
    command: str
    args: tuple[str, ...] = ()
    env: tuple[tuple[str, str], ...] = ()  # in file order; values may hold ${VAR} until expanded
    cwd: Path | None = None
    where: str = ""  # "config file F: mcpServers.route", for messages
    # Whether the secrets' placeholders the model was shown ([REDACTED:NAME]) go to this server as the real
    # values; off by default: a server gets what the model wrote, and only this user's setting trusts one.
    restore_secrets: bool = False

    def expanded(self, environ: Mapping[str, str]) -> ServerSpec:
        """``${VAR}`` / ``${VAR:-default}`` replaced from ``environ``; refuses an unset variable."""

        def expand(text: str, key: str) -> str:
            def value(match: re.Match[str]) -> str:
                name, default = match.group(1), match.group(2)
                if name in environ:
                    return environ[name]
                if default is not None:
                    return default
                raise Refused(
                    f"{self.where}.{key} uses ${{{name}}}, which is not set",
                    f"set {name} in the environment, or write ${{{name}:-default}}",
                )

            return _VARIABLE.sub(value, text)

        return self._replace(
            command=expand(self.command, "command"),
            args=tuple(expand(arg, f"args[{i}]") for i, arg in enumerate(self.args)),
            env=tuple((key, expand(value, f"env.{key}")) for key, value in self.env),
        )


def parse_servers(block: Any, where: str, base_dir: Path) -> tuple[ServerSpec, ...]:
    """The servers of an ``mcpServers`` block; refuses, naming the key, anything it cannot run."""
    if not isinstance(block, Mapping):
        raise Refused(f"{where} must be a mapping of server names to servers", "see docs/mcp.md")
    return tuple(_server(str(name), spec, f"{where}.{name}", base_dir) for name, spec in block.items())


def _server(name: str, spec: Any, where: str, base_dir: Path) -> ServerSpec:
    if not _NAME.match(name) or "__" in name:  # "__" separates server and tool in mcp__<server>__<tool>
        raise Refused(
            f"{where}: the server name {name!r} is not valid",
            "use letters, digits, - and single _, not at the end (at most 48): tool names are "
            "mcp__<server>__<tool>",
        )
    if not isinstance(spec, Mapping):
        raise Refused(f"{where} must be a mapping with command, args, env", "see docs/mcp.md")
    for key in spec:
        if key not in SERVER_KEYS:
            raise Refused(f"{where}.{key} is not a known key", f"known keys: {', '.join(SERVER_KEYS)}")
    kind = spec.get("type", "stdio")
    if kind != "stdio":
        raise Refused(
            f"{where}.type is {kind!r}; bhrain starts stdio servers only",
            "remove this server from the file bhrain reads, or run it through a stdio bridge",
        )
    command = spec.get("command")
    if not isinstance(command, str) or not command.strip():
        raise Refused(f"{where}.command must be a non-empty string", 'write "command": "route.mcp"')
    args = spec.get("args", [])
    if not isinstance(args, list) or not all(isinstance(arg, str) for arg in args):
        raise Refused(f"{where}.args must be a list of strings", 'write "args": ["--route", "routes/demo"]')
    env = spec.get("env", {})
    if not isinstance(env, Mapping):
        raise Refused(f"{where}.env must be a mapping of names to strings", 'write "env": {"NAME": "value"}')
    for key, value in env.items():
        if not isinstance(value, str):
            raise Refused(
                f"{where}.env.{key} must be a string, not {type(value).__name__}", "quote the value"
            )
    cwd = spec.get("cwd")
    if cwd is not None and not isinstance(cwd, str):
        raise Refused(f"{where}.cwd must be a string (a directory)", "fix the value")
    restore = spec.get("restoreSecrets", False)
    if not isinstance(restore, bool):
        raise Refused(
            f"{where}.restoreSecrets must be true or false, not {restore!r}",
            "write restoreSecrets: true only for a server you trust with the secrets the model sees",
        )
    return ServerSpec(
        name,
        command,
        tuple(args),
        tuple((str(key), value) for key, value in env.items()),
        None if cwd is None else base_dir / Path(cwd).expanduser(),
        where,
        restore,
    )


def load_mcp_config(path: Path) -> tuple[ServerSpec, ...]:
    """``--mcp-config FILE``: a ``.mcp.json`` (JSON, or YAML) whose ``mcpServers`` block is read."""
    if not os.path.lexists(path):
        raise Refused(f"MCP config file {path} not found", "check the path given to --mcp-config")
    # Through the one door for user files: no FIFO or /dev/zero, no duplicate keys, no alias bombs.
    shown = f"MCP config file {path}"
    if path.suffix.lower() == ".json":
        data = userfile.load_json(path, what="MCP config file", shown=shown)
    else:
        data = userfile.load_yaml(path, what="MCP config file", shown=shown)
    if not isinstance(data, Mapping) or "mcpServers" not in data:
        raise Refused(f"MCP config file {path} has no mcpServers block", 'write {"mcpServers": {...}}')
    return parse_servers(data["mcpServers"], f"MCP config file {path}: mcpServers", real_path(path).parent)
