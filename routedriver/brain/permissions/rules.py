"""Declarative permission rules in Claude Code's settings shape.

```json
{"permissions": {"allow": ["Read", "Bash(git status)"], "deny": ["Bash(rm:*)", "Write(secrets/**)"],
                 "ask": ["Bash(git push:*)"], "default": "allow"}}
```

A rule is ``Tool`` (every call of that tool) or ``Tool(specifier)``. Tool names match case-insensitively and
across forms (``database.execute`` = ``database__execute``), and whole, as Claude Code matches them: ``Bash``
is the built-in tool, never ``mcp__fs__bash``; a name that is neither bhrain's, Claude Code's nor namespaced
(``box.tool``, ``mcp__server__tool``) is refused at load, as it would never match. Specifiers:

- ``Bash(cmd)`` the exact command; ``*`` is a wildcard (``Bash(git * main)``) and a lone trailing `` *`` is
  optional (``Bash(git push *)`` matches ``git push``; ``Bash(ls *)`` not ``lsof``), as in Claude Code;
  ``Bash(prefix:*)`` a command starting with the prefix (in an allow rule the prefix must end at a word:
  ``npm test:*`` allows ``npm test -k x``, not ``npm testx``; in deny/ask rules any start counts, erring
  towards refusing). A compound command
  is split into every simple command it runs (see ``shell``): a deny or ask rule applies if ANY part matches,
  an allow rule only if EVERY part matches. A command that cannot be read with confidence is asked about
  whenever deny or ask rules for Bash exist.
- ``Read(glob)`` / ``Edit(glob)`` / ``Write(glob)``: gitignore-style path patterns. ``Read`` rules cover read,
  glob and grep: a search by its root here, and below an allowed root through ``read_filter`` (the walk skips
  what a deny or ask rule names, and what no allow rule names when the default is not allow); ``Edit`` and
  ``Write`` rules cover edit and write, and ``Read`` deny and ask rules cover edit too (an edit shows lines of
  the file, and its errors tell what the file holds). ``//abs/path`` is absolute, ``~/x`` is under the home
  directory, ``/x`` is relative to the permissions file's directory and ``x`` or ``./x`` to the working
  directory. A path is checked as written and as resolved (symlinks followed): a deny or ask rule applies if
  either names it, an allow rule only if both are allowed, so a symlink walks neither around a deny rule nor
  out of an allowed place.
- Any other tool: a glob matched against each string argument (deny/ask: any argument; allow: all of them).
- MCP tools (``mcp__<server>__<tool>``): ``mcp__<server>`` and ``mcp__<server>__*`` name every tool of that
  server, as in Claude Code; no other wildcard is allowed in a tool name.

Deny beats ask beats allow. Calls no rule matches get ``default`` (``allow`` unless the file says otherwise).
"""

from __future__ import annotations

import difflib
import fnmatch
import functools
import logging
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from routedriver import userfile
from routedriver.brain.hooks import ToolEvent
from routedriver.brain.permissions.shell import split_command
from routedriver.errors import Refused
from routedriver.fsutil import realpath

log = logging.getLogger("bhrain")

Action = Literal["allow", "deny", "prompt"]
RULE_KINDS = ("deny", "ask", "allow")
# Keys of Claude Code's permissions block that mean nothing to bhrain; accepted so one file serves both.
CLAUDE_CODE_KEYS = frozenset({"defaultMode", "additionalDirectories", "disableBypassPermissionsMode"})
READ_TOOLS = frozenset({"read", "glob", "grep"})
EDIT_TOOLS = frozenset({"edit", "write"})
FILE_RULE_TOOLS = {"read": READ_TOOLS, "edit": EDIT_TOOLS, "write": EDIT_TOOLS, "multiedit": EDIT_TOOLS}
# Tools that show what a file holds without being Read tools: Read deny and ask rules cover them too (edit
# quotes the lines it changed, and "not found"/"occurs N times" answer questions about the content), while a
# Read allow rule never allows them: that takes an Edit or Write rule.
REVEALING_TOOLS = frozenset({"edit"})
KNOWN_TOOLS = frozenset({"bash", "read", "write", "edit", "glob", "grep", "websearch", "multiedit", "recall"})
# Claude Code's own tools: accepted so one settings file serves both (bhrain has no tool of these names).
CLAUDE_CODE_TOOLS = frozenset(
    {
        "agent",
        "task",
        "bashoutput",
        "killshell",
        "ls",
        "notebookedit",
        "notebookread",
        "todowrite",
        "webfetch",
        "exitplanmode",
        "slashcommand",
        "skill",
        "askuserquestion",
        "listmcpresourcestool",
        "readmcpresourcetool",
    }
)
_RULE = re.compile(r"^\s*([A-Za-z0-9_.\-]+(?:__\*)?)\s*(?:\((.*)\))?\s*$", re.DOTALL)
_MCP_SERVER = re.compile(r"^mcp\.[a-z0-9_\-]+$")  # a canonical rule name that means a whole MCP server


@dataclass(frozen=True)
class Decision:
    action: Action
    reason: str = ""


def canonical_tool(name: str) -> str:
    return name.strip().lower().replace("__", ".")


def mcp_server_of(name: str, toolbox: str) -> str | None:
    """The server of an MCP tool as a canonical rule name (``mcp.<server>``), or None for any other tool.

    From its toolbox when known (``mcp__<server>``); otherwise from its name, where the server is what stands
    between ``mcp__`` and the next ``__`` (server names never end in ``_``, so that reading is the only one).
    """
    box = canonical_tool(toolbox)
    if box:
        return box if _MCP_SERVER.match(box) else None
    if not name.startswith("mcp."):
        return None
    server = name[4:].split(".", 1)[0]
    return f"mcp.{server}" if server else None


@dataclass(frozen=True)
class Rule:
    kind: str  # deny | ask | allow
    tool: str  # canonical tool name
    specifier: str | None
    text: str  # as written, for messages
    base_dir: Path  # for "/x" path patterns: the permissions file's directory

    def covers(self, tool: str, toolbox: str = "") -> bool:
        """Does this rule name the tool ``tool`` of the toolbox ``toolbox`` ("" when not known)?

        As Claude Code reads names, never by a suffix: a built-in name (``Bash``) is that tool, not
        ``mcp__fs__bash``; ``mcp__<server>`` and ``mcp__<server>__*`` are the tools of that server, and
        ``mcp__<server>__<tool>`` is that one tool (not ``mcp__evil__mcp__<server>__<tool>``). ``Read``,
        ``Edit`` and ``Write`` name the file tools they guard (a ``Read`` deny or ask rule also edit); a
        toolbox tool may be named with its toolbox (``extra.lookup`` for the tool ``lookup`` of the toolbox
        ``extra``).
        """
        name = canonical_tool(tool)
        if self.tool == "read" and self.kind != "allow" and name in REVEALING_TOOLS:
            return True
        if self.tool in FILE_RULE_TOOLS:
            return name in FILE_RULE_TOOLS[self.tool]
        if _MCP_SERVER.match(self.tool):  # mcp__<server>: every tool of that server
            return mcp_server_of(name, toolbox) == self.tool
        if name == self.tool:
            return True
        box = canonical_tool(toolbox)
        return bool(box) and not box.startswith("mcp.") and self.tool == f"{box}.{name}"


def parse_rule(text: Any, kind: str, base_dir: Path, where: str) -> Rule:
    if not isinstance(text, str):
        raise Refused(
            f'{where} must be a string like "Bash(rm:*)", not {type(text).__name__}', "fix the rule"
        )
    match = _RULE.match(text)
    if not match:
        raise Refused(f"{where} {text!r} is not a rule", 'write Tool or Tool(specifier), e.g. "Bash(rm:*)"')
    tool, spec = canonical_tool(match.group(1)), match.group(2)
    if tool.endswith(".*"):
        tool = tool[:-2]  # mcp__<server>__* is mcp__<server>
        if not _MCP_SERVER.match(tool):
            raise Refused(
                f"{where} {text!r}: a tool name takes a wildcard only as mcp__<server>__*",
                "name the server (mcp__github__*) or the tool",
            )
    spec = spec.strip() if spec is not None else None
    if spec in ("", "*"):
        spec = None
    if tool not in KNOWN_TOOLS | CLAUDE_CODE_TOOLS and "." not in tool:
        # A misspelt tool (`Bsh(rm:*)`) would never match anything: a deny rule that silently does nothing.
        close = difflib.get_close_matches(tool, sorted(KNOWN_TOOLS | CLAUDE_CODE_TOOLS), n=1, cutoff=0.6)
        hint = f"did you mean {close[0].capitalize()}? " if close else ""
        raise Refused(
            f"{where} {text!r} names no tool bhrain or Claude Code knows ({match.group(1)})",
            f"{hint}write Bash, Read, Edit, Write, Glob, Grep, WebSearch, … or a toolbox tool with its "
            "toolbox (box.tool) or MCP server (mcp__server__tool)",
        )
    return Rule(kind, tool, spec, text, base_dir)


@dataclass
class RulesPolicy:
    """Decides a tool call from declarative rules."""

    rules: list[Rule] = field(default_factory=list)
    default: Action = "allow"
    workdir: Path = field(default_factory=Path.cwd)
    source: str = "permissions"

    def decide(self, event: ToolEvent) -> Decision:
        relevant = [r for r in self.rules if r.covers(event.tool, event.toolbox)]
        if not relevant:
            return Decision(self.default, f"no rule for {event.tool}; default {self.default}")
        if canonical_tool(event.tool) == "bash":
            return self._bash(event, relevant)
        for kind, action in (("deny", "deny"), ("ask", "prompt")):
            for rule in (r for r in relevant if r.kind == kind):
                if self._matches(rule, event, any_arg=True):
                    return Decision(action, f"rule {rule.text} in {self.source}")  # type: ignore[arg-type]
        allowing = self._allowing([r for r in relevant if r.kind == "allow"], event)
        if allowing is not None:
            return Decision("allow", f"rule {allowing.text} in {self.source}")
        return Decision(self.default, f"no rule matched; default {self.default}")

    def read_filter(self) -> Callable[[Path, bool], bool] | None:
        """What a search may show: False for a path a ``Read`` deny or ask rule names (None: no such rule).

        The guard checks grep and glob by their search root only; this filter goes with the call, so the
        walk skips protected files below an allowed root. Ask rules hide too: nobody can be asked about
        each file of a search, and the model can still ``read`` the file, which asks.
        """
        protecting = [r for r in self.rules if r.kind in ("deny", "ask") and r.specifier and r.covers("read")]
        allows = [r for r in self.rules if r.kind == "allow" and r.specifier and r.covers("read")]
        # Unless the default or a bare Read, Grep or Glob rule allows every search, a file must be allowed
        # as written and as resolved, as read is: a symlink below an allowed root may lead where no allow
        # rule reaches.
        bare = any(
            r.kind == "allow" and not r.specifier and r.tool in ("read", "grep", "glob") for r in self.rules
        )
        gated = self.default != "allow" and not bare
        if not protecting and not gated:
            return None
        workdir = self.workdir

        def readable(path: Path, is_dir: bool) -> bool:
            if any(
                _path_matches(rule, str(path), workdir, directory=is_dir, contents=False)
                for rule in protecting
            ):
                return False
            # A directory counts as allowed when a rule could name something inside it (src/**/*.py).
            return not gated or _path_allowed(allows, str(path), workdir, directory=is_dir, contents=is_dir)

        return readable

    def _bash(self, event: ToolEvent, relevant: list[Rule]) -> Decision:
        command = str(event.params.get("command", ""))
        parsed = split_command(command)
        parts = [" ".join(argv) for argv in parsed.commands] or [command.strip()]
        for kind, action in (("deny", "deny"), ("ask", "prompt")):
            for rule in (r for r in relevant if r.kind == kind):
                hit = next((p for p in parts if _command_matches(rule.specifier, p)), None)
                if hit is not None:
                    shown = f" (in: {hit})" if hit != command.strip() else ""
                    return Decision(action, f"rule {rule.text} in {self.source}{shown}")  # type: ignore[arg-type]
        if not parsed.confident and any(r.kind in ("deny", "ask") for r in relevant):
            return Decision(
                "prompt",
                f"the command could not be read with confidence ({parsed.reasons[0]}) "
                f"and {self.source} has deny/ask rules for Bash",
            )
        allows = [r for r in relevant if r.kind == "allow"]
        if (
            allows
            and parsed.confident
            and all(any(_command_matches(r.specifier, p, strict_prefix=True) for r in allows) for p in parts)
        ):
            return Decision("allow", f"allowed by {self.source}")
        return Decision(self.default, f"no rule matched; default {self.default}")

    def _allowing(self, allows: list[Rule], event: ToolEvent) -> Rule | None:
        """The allow rule that allows ``event``, or None. A file tool's path must be allowed both as written
        and as resolved (by one rule or two), so a symlink in an allowed place cannot lead out of it."""
        target = _file_target(event)
        if target is None:
            return next((r for r in allows if self._matches(r, event, any_arg=False)), None)
        if not _path_allowed(allows, target.raw, self.workdir, directory=target.directory, real=target.real):
            return None
        return next(r for r in allows if self._matches(r, event, any_arg=False))

    def _matches(self, rule: Rule, event: ToolEvent, *, any_arg: bool) -> bool:
        if rule.specifier is None:
            return True
        target = _file_target(event)
        if target is not None:
            return _path_matches(rule, target.raw, self.workdir, directory=target.directory, real=target.real)
        values = [v for v in event.params.values() if isinstance(v, str)]
        if not values:
            return False
        test = any if any_arg else all
        return test(fnmatch.fnmatchcase(v, rule.specifier) for v in values)


def _command_matches(spec: str | None, command: str, *, strict_prefix: bool = False) -> bool:
    """Does a Bash specifier match one simple command (its words joined by single spaces)?

    As Claude Code reads them: ``npm run build`` is that command exactly; ``*`` matches any text
    (``git * main``; ``\\*`` is a literal star), and a lone trailing `` *`` is optional, so ``ls *`` matches
    ``ls`` and ``ls -la`` but not ``lsof``; the legacy ``prefix:*`` matches the prefix and what follows it.
    ``prefix:*`` is a plain prefix in deny and ask rules (``rm:*`` also catches ``rmdir``: erring towards
    refusing) and ends at a word in allow rules (``npm test:*`` does not allow ``npm testx``).
    """
    if spec is None:
        return True
    spec = " ".join(spec.split())
    if spec.endswith(":*") and not spec.endswith("\\:*"):
        prefix = spec[:-2].strip()
        return command.startswith(prefix) and (
            not strict_prefix or command == prefix or command.startswith(prefix + " ")
        )
    return _wildcard(spec).fullmatch(command) is not None


@functools.lru_cache(maxsize=256)
def _wildcard(spec: str) -> re.Pattern[str]:
    """A Bash specifier as a regex: ``*`` any text, ``\\*`` a star, ``\\\\`` a backslash; a trailing `` *``
    that is the only wildcard may match nothing (``git push *`` matches ``git push``)."""
    parts: list[str] = []  # literal text and "*" wildcards, in order
    literal = ""
    index = 0
    while index < len(spec):
        if spec[index] == "\\" and spec[index + 1 : index + 2] in ("*", "\\"):
            literal += spec[index + 1]
            index += 2
            continue
        if spec[index] == "*":
            parts.extend([literal, "*"])
            literal = ""
        else:
            literal += spec[index]
        index += 1
    parts.append(literal)
    wildcards = parts.count("*")
    if wildcards == 1 and parts[-1] == "" and parts[-3].endswith(" "):
        return re.compile(re.escape(parts[-3][:-1]) + r"(?: .*)?", re.DOTALL)
    return re.compile("".join(".*" if part == "*" else re.escape(part) for part in parts), re.DOTALL)


def rule_base(rule: Rule, workdir: Path) -> tuple[Path, str]:
    """Where ``rule``'s path pattern starts, and the pattern below it, as Claude Code reads a specifier:
    ``//abs`` from the root, ``~/x`` from the home directory, ``/x`` from the permissions file's directory,
    anything else (``./x`` or ``x``) from the working directory."""
    spec = rule.specifier or ""
    if spec.startswith("//"):
        return Path("/"), spec[2:]
    if spec.startswith("~/"):
        return Path.home(), spec[2:]
    if spec.startswith("/"):
        return rule.base_dir, spec[1:]
    return workdir, spec[2:] if spec.startswith("./") else spec


@dataclass(frozen=True)
class _Target:
    """The path a file tool's call names: as written, as resolved (None: resolve it now), and whether it is a
    search root (a directory)."""

    raw: str
    real: str | None
    directory: bool


def _file_target(event: ToolEvent) -> _Target | None:
    """What a file tool's call names, or None for a tool that takes no path. The real path is the one the
    loop resolved (``ToolEvent.resolved``): the tool opens that path, so that is the one to check."""
    tool = canonical_tool(event.tool)
    if tool not in READ_TOOLS | EDIT_TOOLS:
        return None
    key = "file_path" if tool in ("read", "write", "edit") else "path"
    raw = event.params.get(key)
    return _Target(str(raw or "."), event.resolved.get(key) or None, tool in ("glob", "grep"))


def _path_forms(raw: str, workdir: Path, real: str | None = None) -> list[str]:
    """``raw`` as written (made absolute) and as resolved, symlinks followed (``real`` when given); one
    entry when they agree."""
    target = Path(os.path.expanduser(raw))
    target = target if target.is_absolute() else workdir / target
    return list(dict.fromkeys((os.path.normpath(target), real or _real_or_written(target))))


def _real_or_written(path: str | Path) -> str:
    """``path`` resolved, or as written where a chain of links is too long to follow (``fsutil.realpath``):
    no tool opens such a path (``dispatch.resolved_paths``)."""
    try:
        return realpath(path, strict=True)
    except OSError:
        return os.path.normpath(path)


def _path_matches(
    rule: Rule,
    raw: str,
    workdir: Path,
    *,
    directory: bool,
    contents: bool = True,
    real: str | None = None,
) -> bool:
    """Does ``rule``'s path pattern name ``raw`` as written or as resolved (``real`` when given)? So a
    symlink cannot walk around a deny rule. A directory also matches as ``dir/``, and with ``contents`` (a
    search root) when the pattern could name something inside it."""
    return any(
        _form_matches(rule, form, workdir, directory=directory, contents=contents)
        for form in _path_forms(raw, workdir, real)
    )


def _path_allowed(
    allows: Sequence[Rule],
    raw: str,
    workdir: Path,
    *,
    directory: bool,
    contents: bool = True,
    real: str | None = None,
) -> bool:
    """Do the allow rules ``allows`` name ``raw`` both as written and as resolved (each form by any of
    them)? An allow rule that names only the written form would let a symlink lead anywhere."""
    return bool(allows) and all(
        any(
            r.specifier is None or _form_matches(r, form, workdir, directory=directory, contents=contents)
            for r in allows
        )
        for form in _path_forms(raw, workdir, real)
    )


def _form_matches(rule: Rule, path: str, workdir: Path, *, directory: bool, contents: bool) -> bool:
    """Does ``rule``'s path pattern name the absolute ``path`` (see ``_path_matches``)?"""
    base, pattern = rule_base(rule, workdir)
    matcher = gitignore(pattern)
    for root in {os.path.normpath(base), _real_or_written(base)}:
        rel = os.path.relpath(path, root)
        if rel == ".." or rel.startswith("../"):
            continue
        probes = [rel] if rel != "." else []
        if directory:
            probes.append(f"{rel}/")
        if directory and contents:
            probes.append(f"{rel}/x" if rel != "." else "x")
        if any(matcher.match_file(p) for p in probes):
            return True
    return False


@functools.lru_cache(maxsize=256)
def gitignore(pattern: str) -> Any:
    """The compiled pattern (cached: a search asks about every file it walks, the sandbox every entry of a
    walk)."""
    # pathspec (~12 ms): only when a rule has a path pattern
    import pathspec

    return pathspec.GitIgnoreSpec.from_lines([pattern])


# -- loading -------------------------------------------------------------------------------------------------
def load_permissions_file(path: Path, workdir: Path) -> RulesPolicy:
    if not os.path.exists(path):  # what is there but is no file (a FIFO, a device), userfile names
        raise Refused(f"permissions file {path} not found", "check the path given to --permissions")
    load = userfile.load_json if path.suffix.lower() == ".json" else userfile.load_yaml
    data = load(path, what="permissions file")
    if not isinstance(data, Mapping):
        raise Refused(f"permissions file {path} must be a mapping", 'write {"permissions": {"deny": [...]}}')
    block = data.get("permissions")
    if block is None and any(k in data for k in RULE_KINDS):
        block, where = data, str(path)
    else:
        where = f"{path}: permissions"
    if block is None:
        raise Refused(
            f"permissions file {path} has no permissions block", 'write {"permissions": {"deny": [...]}}'
        )
    return policy_from_block(block, base_dir=path.parent, workdir=workdir, where=where)


def policy_from_block(block: Any, *, base_dir: Path, workdir: Path, where: str) -> RulesPolicy:
    if not isinstance(block, Mapping):
        raise Refused(f"{where} must be a mapping with allow/deny/ask lists", "see docs/bhrain.md")
    rules: list[Rule] = []
    for key, value in block.items():
        if key in CLAUDE_CODE_KEYS:
            continue
        if key == "default":
            continue
        if key not in RULE_KINDS:
            raise Refused(
                f"{where}.{key} is not a permissions key",
                "use allow, deny, ask and default (Claude Code's defaultMode is accepted and ignored)",
            )
        if not isinstance(value, Sequence) or isinstance(value, str):
            raise Refused(f"{where}.{key} must be a list of rules", f'write {key}: ["Bash(rm:*)"]')
        rules.extend(parse_rule(item, key, base_dir, f"{where}.{key}[{i}]") for i, item in enumerate(value))
    default = block.get("default", "allow")
    actions = {"allow": "allow", "deny": "deny", "ask": "prompt", "prompt": "prompt"}
    if default not in actions:
        raise Refused(f"{where}.default must be allow, ask or deny, not {default!r}", "fix the value")
    return RulesPolicy(rules, actions[default], workdir, source=str(where).split(":")[0])  # type: ignore[arg-type]


def combine(decisions: Sequence[Decision]) -> Decision:
    """Several policies: the strictest decision wins (deny > prompt > allow)."""
    for action in ("deny", "prompt"):
        for decision in decisions:
            if decision.action == action:
                return decision
    return decisions[0] if decisions else Decision("allow")
