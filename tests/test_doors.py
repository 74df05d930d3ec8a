"""The doors of docs/architecture.md, enforced: the package is read with ``ast`` and every way around a door
is a failure naming the file, the line, the door and what to do.

Each door is one module (or package) that alone may do one kind of thing:

========  =================================  ==========================================================
door      only in                            what is looked for elsewhere
========  =================================  ==========================================================
proc      ``proc.py``                        ``subprocess``, ``os.system``/``popen``/``exec*``/``spawn*``/
                                             ``posix_spawn*``/``fork*``, ``pty``, ``asyncio``'s and
                                             ``anyio``'s process functions, ``multiprocessing``
git       ``gitops.py``                      GitPython (``import git``); ``proc.run`` given an argv (or a
                                             shell string) starting with ``git``
threads   ``threads.py``, ``later.py``       ``threading.Thread``/``Timer``, ``_thread``, executors
                                             (``concurrent.futures``, ``run_in_executor``,
                                             ``asyncio.to_thread``), ``anyio``'s worker threads and portals
userfile  ``userfile.py``                    a file opened for reading (``open``, ``io.open``,
                                             ``codecs.open``, ``os.open`` without write-only flags,
                                             ``Path.open``/``read_text``/``read_bytes``, ``json.load``);
                                             YAML parsed (``yaml.*load*``); a JSON duplicate-key check of
                                             its own (``object_pairs_hook=``)
globs     ``globs.py``                       ``fnmatch``, ``glob``, ``pathspec``, ``Path.glob``/``rglob``,
                                             ``PurePath.match`` on a path made in place
shell     ``shellsyntax/``                   ``shlex``; a regular expression or a ``split``/``partition``
                                             run over a value named like shell text (``command``, ``cmd``,
                                             ``script``)
output    ``cli/_exits.py``,                 ``print``, ``sys.exit``, ``exit``/``quit``, ``os._exit``,
          ``cli/_command.py``,               ``raise SystemExit``, ``sys.stdout``/``sys.stderr`` (written
          ``__main__.py``                    to, or handed on; asking ``isatty()`` or ``is None`` is not),
                                             ``click.echo``: every command returns a ``report.Report`` (or
                                             raises ``errors.Refused``/``Malfunction``) that ``_exits``
                                             writes, and turns into the exit code
layers    ``cli/``                           ``click`` or ``routedriver.cli`` imported (library code never
                                             reaches back up into the command line)
========  =================================  ==========================================================

What a door's own module does is not looked at for that door (``proc.py`` starts processes); it is for the
other doors (``proc.py``'s pipe readers are threads, and say why below).

A use is found by its resolved name, through every form of import (``import os as o``, ``from subprocess
import run as r``, imports inside functions), so an alias does not hide it. Two parts are heuristics, and
say so: ``Path`` methods are recognized by their names (``x.read_text()``, whatever ``x`` is), and shell
text by the name of the value a regex or ``split`` is run over. ``test_the_scanner_finds`` holds the
scanner to each form it must see.

``EXCEPTIONS`` is the rest: each place that may do what a door owns, with its reason. An exception that
matches nothing fails too, so the table never outlives the code it excuses.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Literal, NamedTuple

import pytest

import routedriver

Door = Literal["proc", "git", "threads", "userfile", "globs", "shell", "output", "layers"]

PACKAGE = Path(routedriver.__file__).parent

# The modules that are each door (paths relative to the package; a trailing "/" is a whole package).
DOOR_MODULES: dict[Door, tuple[str, ...]] = {
    "proc": ("proc.py",),
    "git": ("gitops.py",),
    "threads": ("threads.py", "later.py"),
    "userfile": ("userfile.py",),
    "globs": ("globs.py",),
    "shell": ("shellsyntax/",),
    "output": ("cli/_exits.py", "cli/_command.py", "__main__.py"),
    "layers": ("cli/",),
}

HOW_TO_FIX: dict[Door, str] = {
    "proc": "start it with routedriver.proc.run",
    "git": "ask git through a function in routedriver/gitops.py",
    "threads": "run it with routedriver.threads.Batch/run_all or later.Later",
    "userfile": (
        "read it with routedriver.userfile (read_text/read_bytes/load_yaml/load_json/parse_json; read_record "
        "for the driver's own files, read tolerantly)"
    ),
    "globs": "match it with routedriver.globs",
    "shell": "read shell text with routedriver.shellsyntax (words.commands, words.read)",
    "output": "return a report.Report (or raise errors.Refused/Malfunction) and let cli/_exits write it",
    "layers": "move what it needs out of routedriver/cli/ into a library module (click stays in cli/)",
}


class Finding(NamedTuple):
    module: str  # relative to the package: "route/judges.py"
    line: int
    door: Door
    what: str  # what was used: "shlex.split", "open()", "Path.read_text", "threading.Thread"
    within: str  # the function (or class) it stands in; "<module>" at the top level

    def __str__(self) -> str:
        owners = " ".join("routedriver/" + owner for owner in DOOR_MODULES[self.door])
        return (
            f"routedriver/{self.module}:{self.line}: {self.door} door: {self.what} in {self.within}, outside "
            f"{owners}; {HOW_TO_FIX[self.door]}, "
            f"or add Allowed({self.module!r}, {self.door!r}, {self.what!r}, why=...) to EXCEPTIONS in "
            "tests/test_doors.py"
        )


class Allowed(NamedTuple):
    """A place that may do what a door owns: ``module`` (relative to the package; ending in "/" for a
    whole package), the ``door``, ``what`` is used (as findings name it), and why it is no way around it."""

    module: str
    door: Door
    what: str
    why: str

    def covers(self, finding: Finding) -> bool:
        if self.door != finding.door or self.what != finding.what:
            return False
        if self.module.endswith("/"):
            return finding.module.startswith(self.module)
        return finding.module == self.module


# -- what is looked for -------------------------------------------------------------------------------------
# Resolved dotted names (a name imported from somewhere, followed by its attributes). A rule ending in "."
# is a prefix: everything in that module.
NAMES: dict[str, Door] = {
    # proc
    "subprocess.": "proc",
    "os.system": "proc",
    "os.popen": "proc",
    "os.fork": "proc",
    "os.forkpty": "proc",
    "os.posix_spawn": "proc",
    "os.posix_spawnp": "proc",
    "pty.": "proc",
    "asyncio.create_subprocess_exec": "proc",
    "asyncio.create_subprocess_shell": "proc",
    "asyncio.subprocess.": "proc",
    "anyio.run_process": "proc",
    "anyio.open_process": "proc",
    "multiprocessing.": "proc",
    # git
    "git.": "git",
    # threads
    "threading.Thread": "threads",
    "threading.Timer": "threads",
    "_thread.": "threads",
    "concurrent.futures.ThreadPoolExecutor": "threads",
    "concurrent.futures.ProcessPoolExecutor": "threads",
    "asyncio.to_thread": "threads",
    "anyio.to_thread.": "threads",
    "anyio.from_thread.start_blocking_portal": "threads",
    # userfile
    "open": "userfile",
    "builtins.open": "userfile",
    "io.open": "userfile",
    "codecs.open": "userfile",
    "os.open": "userfile",
    "json.load": "userfile",
    "tomllib.load": "userfile",
    "yaml.load": "userfile",
    "yaml.safe_load": "userfile",
    "yaml.full_load": "userfile",
    "yaml.unsafe_load": "userfile",
    "yaml.load_all": "userfile",
    "yaml.safe_load_all": "userfile",
    "yaml.compose": "userfile",
    "yaml.SafeLoader": "userfile",
    # Path's methods called on the class (``Path.read_text(p)``); on an instance they are METHODS below
    **{
        f"pathlib.{cls}.{method}": "userfile"
        for cls in ("Path", "PosixPath")
        for method in ("open", "read_text", "read_bytes")
    },
    **{
        f"pathlib.{cls}.{method}": "globs"
        for cls in ("Path", "PurePath")
        for method in ("glob", "rglob", "match")
    },
    # globs
    "fnmatch.": "globs",
    "glob.": "globs",
    "pathspec.": "globs",
    # shell
    "shlex.": "shell",
    # output
    "print": "output",
    "builtins.print": "output",
    "exit": "output",
    "quit": "output",
    "sys.exit": "output",
    "os._exit": "output",
    "sys.stdout.": "output",  # written to, or handed to something that writes (a stream= default)
    "sys.stderr.": "output",
    "sys.__stdout__.": "output",
    "sys.__stderr__.": "output",
    "click.echo": "output",
    "click.secho": "output",
    "click.echo_via_pager": "output",
    "rich.print": "output",
    "click.": "layers",  # click is the command line's: library code never imports it
    # layers
    "routedriver.cli.": "layers",
}
# Asking about a stream is not writing to it.
HARMLESS = frozenset(
    f"sys.{stream}.{question}"
    for stream in ("stdout", "stderr")
    for question in ("isatty", "fileno", "encoding")
)
_EXEC_PREFIXES = ("os.exec", "os.spawn")  # os.execv, os.execvpe, os.spawnl … : every one of them
NAMES_ASKED = frozenset({"sys.stdout", "sys.stderr"})  # compared with None
BUILTIN_NAMES = frozenset({"open", "print", "exit", "quit", "SystemExit"})
_EXITS = frozenset({"SystemExit", "builtins.SystemExit"})  # raised, not merely named (``except SystemExit``)

# Methods found by their names alone (their receivers' types are not known): Path's readers and globbing,
# an event loop's process and thread functions.
METHODS: dict[str, tuple[Door, str]] = {
    "read_text": ("userfile", "Path.read_text"),
    "read_bytes": ("userfile", "Path.read_bytes"),
    "glob": ("globs", "Path.glob"),
    "rglob": ("globs", "Path.rglob"),
    "subprocess_exec": ("proc", "loop.subprocess_exec"),
    "subprocess_shell": ("proc", "loop.subprocess_shell"),
    "run_in_executor": ("threads", "loop.run_in_executor"),
}
_PATH_TYPES = frozenset({"Path", "PurePath", "PurePosixPath", "PosixPath", "PureWindowsPath"})
_WRITE_MODES = frozenset("wax")  # an open() mode with one of these and no "r" or "+" only writes
_WRITE_ONLY_FLAGS = frozenset({"O_WRONLY"})
_READ_FLAGS = frozenset({"O_RDONLY", "O_RDWR"})
# A value named like shell text: a regex or a split over it reads shell.
_SHELL_TEXT = re.compile(r"(^|_)(command|cmd|script|shell_text)s?($|_)", re.I)
_REGEX_METHODS = frozenset({"match", "fullmatch", "search", "findall", "finditer", "sub", "subn", "split"})
_STR_SPLITS = frozenset({"split", "rsplit", "partition", "rpartition"})


def _in_door(module: str, door: Door) -> bool:
    for owner in DOOR_MODULES[door]:
        if owner.endswith("/") and module.startswith(owner):
            return True
        if module == owner or (owner == "__main__.py" and module.endswith("/__main__.py")):
            return True
    return False


def _from(node: ast.ImportFrom, module: str) -> str:
    """The module a ``from … import`` names, relative imports resolved against ``module``'s package."""
    base = node.module or ""
    if not node.level:
        return base
    package = ["routedriver", *module.split("/")[:-1]]
    parent = package[: len(package) - (node.level - 1)]
    return ".".join([*parent, *([base] if base else [])])


def _aliases(tree: ast.Module, module: str) -> dict[str, str]:
    """Every name the module's imports bind (anywhere in it) → the dotted name it stands for."""
    found: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    found[alias.asname] = alias.name
                else:
                    top = alias.name.split(".")[0]
                    found[top] = top
        elif isinstance(node, ast.ImportFrom):
            base = _from(node, module)
            for alias in node.names:
                found[alias.asname or alias.name] = f"{base}.{alias.name}"
    return found


def _defined(tree: ast.Module) -> frozenset[str]:
    """Names the module defines itself (functions, classes, assignments, parameters): ``open`` or ``print``
    defined there is not the builtin."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    return frozenset(names)


def _rule(dotted: str) -> Door | None:
    if dotted in HARMLESS:
        return None
    if dotted in NAMES:
        return NAMES[dotted]
    if dotted.startswith(_EXEC_PREFIXES):
        return "proc"
    for rule, door in NAMES.items():
        if rule.endswith(".") and (dotted.startswith(rule) or dotted == rule[:-1]):
            return door
    return None


def _identifier(node: ast.expr) -> str:
    """The name a value goes by (``command``, ``self.command``, ``hook["command"]``), or ""."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return str(node.slice.value)
    return ""


class _Scanner(ast.NodeVisitor):
    def __init__(self, module: str, tree: ast.Module) -> None:
        self.module = module
        self.aliases = _aliases(tree, module)
        self.defined = _defined(tree)
        self.found: list[Finding] = []
        self.within: list[str] = []

    # -- bookkeeping
    def _add(self, node: ast.AST, door: Door, what: str) -> None:
        if _in_door(self.module, door):
            return
        where = ".".join(self.within) or "<module>"
        self.found.append(Finding(self.module, getattr(node, "lineno", 0), door, what, where))

    def _scoped(self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef) -> None:
        self.within.append(node.name)
        self.generic_visit(node)
        self.within.pop()

    visit_FunctionDef = visit_AsyncFunctionDef = visit_ClassDef = _scoped

    def _dotted(self, node: ast.expr) -> str | None:
        """The resolved dotted name of a name or attribute chain, when its root is imported or a builtin."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        if node.id in self.aliases:
            root = self.aliases[node.id]
        elif node.id in BUILTIN_NAMES and node.id not in self.defined:
            root = node.id
        else:
            return None
        return ".".join([root, *reversed(parts)])

    # -- names
    def visit_Name(self, node: ast.Name) -> None:
        self._name(node)

    def visit_Attribute(self, node: ast.Attribute) -> None:
        if not self._name(node):
            self.generic_visit(node)

    def _name(self, node: ast.Name | ast.Attribute) -> bool:
        dotted = self._dotted(node)
        if dotted is None:
            return False
        if dotted in HARMLESS:
            return True  # its parts too: ``sys.stdout`` in ``sys.stdout.isatty`` is only asked about
        door = _rule(dotted)
        if door is not None and dotted not in ("open", "os.open", "builtins.open", "io.open", "codecs.open"):
            self._add(node, door, dotted)  # the openers are judged where they are called (their mode)
            return True
        return door is not None

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = _from(node, self.module)
        if base == "routedriver.cli" or base.startswith("routedriver.cli."):
            self._add(node, "layers", base)
        elif base == "routedriver" and any(alias.name == "cli" for alias in node.names):
            self._add(node, "layers", "routedriver.cli")

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            if alias.name == "routedriver.cli" or alias.name.startswith("routedriver.cli."):
                self._add(node, "layers", alias.name)
            elif alias.name == "git" or alias.name.startswith("git."):
                self._add(node, "git", f"import {alias.name}")

    def visit_Compare(self, node: ast.Compare) -> None:
        # ``sys.stdout is None`` asks whether there is a stream (started with it closed); it writes nothing.
        with_none = all(isinstance(op, ast.Is | ast.IsNot) for op in node.ops) and all(
            isinstance(other, ast.Constant) and other.value is None for other in node.comparators
        )
        asked = with_none and isinstance(node.left, ast.Name | ast.Attribute)
        if not asked or self._dotted(node.left) not in NAMES_ASKED:
            self.generic_visit(node)

    def visit_Raise(self, node: ast.Raise) -> None:
        raised = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
        if raised is not None and self._dotted(raised) in _EXITS:
            self._add(node, "output", "raise SystemExit")
        self.generic_visit(node)

    # -- calls
    def visit_Call(self, node: ast.Call) -> None:
        self._call(node)
        self.generic_visit(node)

    def _call(self, node: ast.Call) -> None:
        func = node.func
        dotted = self._dotted(func)
        if dotted in ("open", "builtins.open", "io.open", "codecs.open") and not self._writes_only(node):
            self._add(node, "userfile", "open()" if dotted == "open" else dotted)
        elif dotted == "os.open" and not self._os_writes_only(node):
            self._add(node, "userfile", "os.open")
        elif dotted == "routedriver.proc.run" and node.args and self._git_argv(node.args[0]):
            self._add(node, "git", "proc.run(['git', ...])")
        for keyword in node.keywords:
            if keyword.arg == "object_pairs_hook":
                self._add(node, "userfile", "object_pairs_hook=")
        if not isinstance(func, ast.Attribute) or (dotted is not None and _rule(dotted) is not None):
            return
        name = func.attr
        if name in _REGEX_METHODS and self._over_shell_text(func, node):
            self._add(node, "shell", f"regex .{name} over {self._shell_operand(func, node)}")
        elif name in _STR_SPLITS and _SHELL_TEXT.search(_identifier(func.value)) and self._splits_words(node):
            self._add(node, "shell", f"{_identifier(func.value)}.{name}()")
        if dotted is not None:
            return  # a function of an imported module (userfile.read_text), not a method of a path
        if name in METHODS:
            door, what = METHODS[name]
            self._add(node, door, what)
        elif name == "open" and self._pathlike(func.value) is not False and not self._writes_only(node, 0):
            self._add(node, "userfile", "Path.open")
        elif name in ("match", "full_match") and self._pathlike(func.value):
            self._add(node, "globs", f"PurePath.{name}")

    def _pathlike(self, node: ast.expr) -> bool | None:
        """True for a path made in place (``Path(x)``, ``Path(x) / y``), False for what is surely not a path
        (``os``, a module), None when it cannot be told."""
        while isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            node = node.left
        if isinstance(node, ast.Call):
            dotted = self._dotted(node.func) or ""
            return dotted.rsplit(".", 1)[-1] in _PATH_TYPES or None
        if isinstance(node, ast.Name) and node.id in self.aliases:
            return False  # a module or an imported name: os.open, io.open … are judged as names
        return None

    @staticmethod
    def _mode(node: ast.Call, position: int) -> str | None:
        given = node.args[position : position + 1] or [kw.value for kw in node.keywords if kw.arg == "mode"]
        if not given:
            return "r"
        mode = given[0]
        return mode.value if isinstance(mode, ast.Constant) and isinstance(mode.value, str) else None

    def _writes_only(self, node: ast.Call, position: int = 1) -> bool:
        mode = self._mode(node, position)
        return mode is not None and bool(_WRITE_MODES & set(mode)) and not {"r", "+"} & set(mode)

    @staticmethod
    def _os_writes_only(node: ast.Call) -> bool:
        if len(node.args) < 2:
            return False
        flags = {sub.attr for sub in ast.walk(node.args[1]) if isinstance(sub, ast.Attribute)}
        flags |= {sub.id for sub in ast.walk(node.args[1]) if isinstance(sub, ast.Name)}
        return bool(flags & _WRITE_ONLY_FLAGS) and not flags & _READ_FLAGS

    @staticmethod
    def _git_argv(node: ast.expr) -> bool:
        if isinstance(node, ast.List | ast.Tuple) and node.elts:
            first = node.elts[0]
            return isinstance(first, ast.Constant) and first.value == "git"
        text = node.value if isinstance(node, ast.Constant) else None
        return isinstance(text, str) and text.startswith("git ")

    def _shell_operand(self, func: ast.Attribute, node: ast.Call) -> str:
        # re.match(pattern, text): the text is the second argument; compiled.match(text): the first.
        module_level = self._dotted(func.value) == "re" or self._dotted(func.value) == "regex"
        position = 2 if func.attr in ("sub", "subn") else 1
        position = position if module_level else position - 1
        if len(node.args) > position:
            return _identifier(node.args[position])
        return ""

    def _over_shell_text(self, func: ast.Attribute, node: ast.Call) -> bool:
        return bool(_SHELL_TEXT.search(self._shell_operand(func, node)))

    @staticmethod
    def _splits_words(node: ast.Call) -> bool:
        """``text.split()``, ``split(None, n)`` or ``split(" ")``: splitting at blanks, the way words are."""
        if not node.args:
            return True
        first = node.args[0]
        return isinstance(first, ast.Constant) and (first.value is None or str(first.value).isspace())


def scan(source: str, module: str) -> list[Finding]:
    """What the module ``module`` (relative to the package) does outside the doors."""
    tree = ast.parse(source, filename=module)
    scanner = _Scanner(module, tree)
    scanner.visit(tree)
    return scanner.found


def package_findings() -> Iterator[Finding]:
    for path in sorted(PACKAGE.rglob("*.py")):
        module = path.relative_to(PACKAGE).as_posix()
        yield from scan(path.read_text(encoding="utf-8"), module)


# -- the exceptions ------------------------------------------------------------------------------------------
_PACKAGE_DATA = "the package's own data (importlib.resources / a file beside the module), shipped and tested"
_HINT = (
    "quotes a value into a command a person is shown (a hint or a fix in a message): quoting writes shell "
    "words, it reads none"
)
_RULE_OVER_COMMANDS = (
    "a rule's own pattern matched against each simple command brain.permissions.shell.read_command found "
    "(shellsyntax read the text; the rule's syntax is Claude Code's)"
)

EXCEPTIONS: tuple[Allowed, ...] = (
    # proc ---------------------------------------------------------------------------------------------------
    # (none: every process starts in proc.run)
    # threads ------------------------------------------------------------------------------------------------
    Allowed(
        "proc.py",
        "threads",
        "threading.Thread",
        "a child's pipe readers and stdin feeder live and die with that one child; proc.kill_running, not a "
        "Batch, stops them",
    ),
    Allowed(
        "mcp/server.py",
        "threads",
        "anyio.to_thread.run_sync",
        "the MCP SDK's server is async: anyio's worker threads are how it awaits a blocking call (and "
        "abandons one that was cancelled); a threads.Batch cannot be awaited",
    ),
    Allowed(
        "mcp/client.py",
        "threads",
        "anyio.from_thread.start_blocking_portal",
        "the SDK's stdio clients need an event loop; anyio's blocking portal runs it on one thread it owns "
        "and stops it on close",
    ),
    # userfile -----------------------------------------------------------------------------------------------
    Allowed("route/init.py", "userfile", "Path.read_text", _PACKAGE_DATA + " (templates/routes/)"),
    Allowed("behaviorci/scaffold.py", "userfile", "Path.read_text", _PACKAGE_DATA + " (the init bundle)"),
    Allowed("brain/skills.py", "userfile", "Path.read_text", _PACKAGE_DATA + " (the default rubric)"),
    Allowed("brain/prices.py", "userfile", "Path.read_text", _PACKAGE_DATA + " (prices.yaml)"),
    Allowed("brain/behavior/sources.py", "userfile", "Path.read_text", _PACKAGE_DATA + " (built-in rules)"),
    Allowed(
        "leftovers.py", "userfile", "open()", "/proc/<pid>/…: the kernel's view of our children, not a file"
    ),
    Allowed(
        "fsutil.py",
        "userfile",
        "os.open",
        "the driver's own lock files and a directory opened to fsync it: nothing is read from them",
    ),
    Allowed(
        "route/recheck_sandbox.py",
        "userfile",
        "open()",
        "/proc/net/unix: the kernel's list of bound sockets, not a file anybody wrote",
    ),
    Allowed("mcp/handshake.py", "userfile", "os.open", "/dev/null, put on fd 0 once the server owns stdin"),
    Allowed(
        "brain/permissions/guard.py",
        "userfile",
        "os.open",
        "the controlling terminal (/dev/tty), where a person answers a permission question",
    ),
    Allowed(
        "brain/tools/search.py",
        "userfile",
        "os.open",
        "bhrain's read/grep/edit tools: the model's workspace files are what the tools read; open_regular "
        "opens the path the permission check saw, following no symlink (open_directory, one directory at a "
        "time) and without blocking on a FIFO; the callers check the mode and cap the size, answering tool "
        "errors",
    ),
    Allowed(
        "gitops.py",
        "userfile",
        "Path.read_text",
        "git's own files (HEAD, shallow) in the git directory, read by the git door as git reads them",
    ),
    Allowed(
        "route/hashing.py",
        "userfile",
        "open()",
        "artifacts hashed as git hashes them (bytes, never parsed); route.artifacts lists only regular files",
    ),
    Allowed(
        "route/hashing.py",
        "userfile",
        "os.open",
        "the same artifacts, opened with O_NONBLOCK (a file that became a FIFO after its stat is not waited "
        "on) and hashed only when fstat says it is a regular file",
    ),
    Allowed(
        "hookevent.py",
        "userfile",
        "object_pairs_hook=",
        "a Claude Code hook event on stdin, not a file: hookevent is that door (docs/architecture.md), and "
        "its refusals speak of the event, not of a file to fix",
    ),
    # globs --------------------------------------------------------------------------------------------------
    Allowed(
        "brain/permissions/rules.py",
        "globs",
        "pathspec.GitIgnoreSpec.from_lines",
        "permission rules on paths are gitignore patterns on purpose (Claude Code's syntax)",
    ),
    Allowed(
        "brain/permissions/rules.py",
        "globs",
        "fnmatch.fnmatchcase",
        "a rule's specifier for a tool that takes no path (a URL, a query) is a wildcard over text, not "
        "a glob over paths",
    ),
    # shell --------------------------------------------------------------------------------------------------
    *(
        Allowed(module, "shell", "shlex.quote", _HINT)
        for module in (
            "route/api.py",
            "route/approval_commit.py",
            "route/bind.py",
            "route/context.py",
            "route/drive.py",
            "route/init.py",
            "route/inputs.py",
            "route/policy.py",
            "route/protection.py",
            "route/select.py",
        )
    ),
    Allowed("route/stone_report.py", "shell", "shlex.join", _HINT),
    Allowed(
        "brain/permissions/shell.py",
        "shell",
        "shlex.quote",
        "puts env -S's arguments back after its script as words, for shellsyntax to read the whole again",
    ),
    Allowed(
        "route/builtin_judges.py",
        "shell",
        "command.split()",
        "a judge line's first word says whether it is a built-in judge (reviewed?, approved?), whose flags "
        "follow: the driver's own syntax (blank-separated words, no quoting), not shell; a shell judge is "
        "only run, or read with shellsyntax (programs.py, lint.py)",
    ),
    Allowed("brain/permissions/rules.py", "shell", "regex .fullmatch over command", _RULE_OVER_COMMANDS),
    Allowed("brain/behavior/conditions.py", "shell", "regex .search over command", _RULE_OVER_COMMANDS),
    # output -------------------------------------------------------------------------------------------------
    Allowed(
        "behaviorci/status.py",
        "output",
        "sys.stderr",
        "behaviorci run's live progress while cases run (a Report can only come at the end); the CLI decides "
        "whether it is shown",
    ),
    Allowed(
        "cli/bhrain.py",
        "output",
        "sys.stderr.write",
        "bhrain run's log lines (redacted) as the loop makes them, on whatever sys.stderr is then: a run's "
        "Report comes only when it ends",
    ),
    Allowed("cli/bhrain.py", "output", "sys.stderr.flush", "the same log lines, each written at once"),
    Allowed(
        "cli/bhrain_behave.py",
        "output",
        "sys.stderr",
        "bhrain behave --verbose logs the engine's decisions as it makes them (a logging handler on stderr)",
    ),
    Allowed(
        "cli/route_mcp.py",
        "output",
        "click.echo",
        "a server: the notice that it serves is said on stderr before it serves (stdout is the MCP wire); a "
        "Report could only come when it ends",
    ),
    Allowed(
        "cli/_plain.py",
        "output",
        "sys.exit",
        "PlainCommand.main, the click-free console script of route.stone.* and route.verify, exits with the "
        "code _exits.run made, as cli/_command.py's Command.main does for click's commands",
    ),
)


def _uncovered(findings: list[Finding]) -> list[Finding]:
    return [finding for finding in findings if not any(allowed.covers(finding) for allowed in EXCEPTIONS)]


def test_the_doors_are_kept() -> None:
    broken = _uncovered(list(package_findings()))
    assert not broken, f"{len(broken)} way(s) around a door:\n" + "\n".join(map(str, broken))


def test_every_exception_is_needed() -> None:
    findings = list(package_findings())
    stale = [allowed for allowed in EXCEPTIONS if not any(allowed.covers(found) for found in findings)]
    assert not stale, "exceptions that excuse nothing now (remove them from EXCEPTIONS):\n" + "\n".join(
        f"{allowed.module}: {allowed.door}: {allowed.what}" for allowed in stale
    )


def test_every_exception_says_why() -> None:
    for allowed in EXCEPTIONS:
        assert len(allowed.why.split()) >= 6, f"{allowed.module}: {allowed.what}: say why it is no way around"
        assert allowed.door in DOOR_MODULES


# -- the scanner, held to what it must see ----------------------------------------------------------------
FINDS: list[tuple[str, Door, str]] = [
    # (source in route/x.py, door, what is found)
    ("import subprocess\nsubprocess.run(['ls'])", "proc", "subprocess.run"),
    ("from subprocess import Popen as P\nP(['ls'])", "proc", "subprocess.Popen"),
    ("import os as o\no.system('ls')", "proc", "os.system"),
    ("import os\nos.execvp('ls', ['ls'])", "proc", "os.execvp"),
    ("import os\nos.posix_spawnp('ls', ['ls'], {})", "proc", "os.posix_spawnp"),
    ("import os\nos.fork()", "proc", "os.fork"),
    ("import pty\npty.spawn('sh')", "proc", "pty.spawn"),
    ("import asyncio\nasyncio.create_subprocess_exec('ls')", "proc", "asyncio.create_subprocess_exec"),
    ("async def f(loop):\n    await loop.subprocess_exec(P, 'ls')", "proc", "loop.subprocess_exec"),
    ("import multiprocessing\nmultiprocessing.Process()", "proc", "multiprocessing.Process"),
    ("def f():\n    import git\n    git.Repo('.')", "git", "import git"),
    ("def f():\n    import git\n    git.Repo('.')", "git", "git.Repo"),
    ("from routedriver import proc\nproc.run(['git', 'status'])", "git", "proc.run(['git', ...])"),
    ("from routedriver import proc\nproc.run(('git', 'log'))", "git", "proc.run(['git', ...])"),
    ("from routedriver import proc\nproc.run('git log', shell='sh')", "git", "proc.run(['git', ...])"),
    ("import threading\nthreading.Thread(target=f).start()", "threads", "threading.Thread"),
    ("from threading import Timer\nTimer(1, f)", "threads", "threading.Timer"),
    ("import _thread\n_thread.start_new_thread(f, ())", "threads", "_thread.start_new_thread"),
    (
        "from concurrent.futures import ThreadPoolExecutor\nThreadPoolExecutor()",
        "threads",
        "concurrent.futures.ThreadPoolExecutor",
    ),
    ("import asyncio\nasyncio.to_thread(f)", "threads", "asyncio.to_thread"),
    ("def f(loop):\n    loop.run_in_executor(None, g)", "threads", "loop.run_in_executor"),
    ("open('x.stone')", "userfile", "open()"),
    ("open('x.stone', 'rb')", "userfile", "open()"),
    ("open('x.stone', mode='r+')", "userfile", "open()"),
    ("import io\nio.open('x')", "userfile", "io.open"),
    ("import os\nos.open('x', os.O_RDONLY)", "userfile", "os.open"),
    ("from pathlib import Path\nPath('x').read_text()", "userfile", "Path.read_text"),
    ("def f(p):\n    return p.read_bytes()", "userfile", "Path.read_bytes"),
    ("from pathlib import Path\nwith Path('x').open() as h: pass", "userfile", "Path.open"),
    ("def f(p):\n    return p.open('rb')", "userfile", "Path.open"),
    ("import json\njson.load(h)", "userfile", "json.load"),
    ("from pathlib import Path\nPath.read_text(p)", "userfile", "pathlib.Path.read_text"),
    ("import yaml\nyaml.safe_load(t)", "userfile", "yaml.safe_load"),
    ("import json\njson.loads(t, object_pairs_hook=f)", "userfile", "object_pairs_hook="),
    ("import fnmatch\nfnmatch.fnmatch('a', '*')", "globs", "fnmatch.fnmatch"),
    ("from glob import glob\nglob('*.stone')", "globs", "glob.glob"),
    ("def f(route):\n    return route.glob('*.stone')", "globs", "Path.glob"),
    ("def f(route):\n    return route.rglob('*.stone')", "globs", "Path.rglob"),
    ("from pathlib import PurePath\nPurePath(p).match('*.py')", "globs", "PurePath.match"),
    ("import pathspec\npathspec.PathSpec", "globs", "pathspec.PathSpec"),
    ("import shlex\nshlex.split(c)", "shell", "shlex.split"),
    ("from shlex import quote\nquote(c)", "shell", "shlex.quote"),
    ("import re\nre.search(r'rm', command)", "shell", "regex .search over command"),
    ("def f(self):\n    return _R.match(self.cmd)", "shell", "regex .match over cmd"),
    ("def f(command):\n    return command.split()[0]", "shell", "command.split()"),
    ("def f(script):\n    return script.split(None, 1)", "shell", "script.split()"),
    ("print('hi')", "output", "print"),
    ("import sys\nsys.exit(2)", "output", "sys.exit"),
    ("from sys import exit\nexit(2)", "output", "sys.exit"),
    ("exit(1)", "output", "exit"),
    ("raise SystemExit(2)", "output", "raise SystemExit"),
    ("import os\nos._exit(2)", "output", "os._exit"),
    ("import sys\nsys.stdout.write('x')", "output", "sys.stdout.write"),
    ("import sys\ndef f(stream=sys.stderr): pass", "output", "sys.stderr"),
    (
        "import sys\nif sys.stdout is None or sys.stdout.isatty(): sys.stdout.flush()",
        "output",
        "sys.stdout.flush",
    ),
    ("import click\n@click.command()\ndef f(): pass", "layers", "click.command"),
    ("import click\nclick.echo('x')", "output", "click.echo"),
    ("from routedriver.cli._exits import _write_crash_log", "layers", "routedriver.cli._exits"),
    ("from routedriver.cli import _exits", "layers", "routedriver.cli"),
    ("import routedriver.cli._exits", "layers", "routedriver.cli._exits"),
]

FINDS_ELSEWHERE: list[tuple[str, str, Door, str]] = [
    # (module, source, door, what): a relative import; a door's own module is looked at for the others
    ("mcp/x.py", "from ..cli import _exits", "layers", "routedriver.cli"),
    ("proc.py", "import threading\nthreading.Thread(target=f)", "threads", "threading.Thread"),
    ("cli/x.py", "import subprocess\nsubprocess.run(['ls'])", "proc", "subprocess.run"),
]

PASSES: list[tuple[str, str]] = [
    # (module, source): nothing found
    ("proc.py", "import subprocess\nsubprocess.Popen(['ls'])"),
    ("gitops.py", "from routedriver import proc\nproc.run(['git', 'status'])"),
    ("threads.py", "import threading\nthreading.Thread(target=f)"),
    ("userfile.py", "import os\nos.open('x', os.O_RDONLY)"),
    ("globs.py", "import fnmatch\nfnmatch.translate('*')"),
    ("shellsyntax/words.py", "import shlex\nshlex.split('a b')"),
    ("cli/_exits.py", "import sys\nsys.stdout.write('x')\nsys.exit(0)"),
    ("cli/_command.py", "import click\nclick.echo('x')"),
    ("cli/route_x.py", "from routedriver.cli._exits import run"),
    ("__main__.py", "print('x')"),
    ("route/x.py", "open('out.txt', 'w')"),
    ("route/x.py", "open('out.txt', mode='ab')"),
    ("route/x.py", "def f(p):\n    return p.open('w')"),
    ("route/x.py", "import os\nos.open('out', os.O_WRONLY | os.O_CREAT)"),
    ("route/x.py", "def open(p): pass\nopen('x')"),  # not the builtin
    ("route/x.py", "def f(print): print('x')"),
    ("route/x.py", "try:\n    pass\nexcept SystemExit:\n    pass"),  # caught, not raised
    ("route/x.py", "import json\njson.loads(t)"),
    ("route/x.py", "from routedriver import proc\nproc.run(['ls', 'git'])"),
    ("route/x.py", "import re\nre.search(r'x', reason)"),
    ("route/x.py", "def f(command):\n    return command.split(',')"),
    ("route/x.py", "import threading\nthreading.Lock()"),
    ("route/x.py", "import sys\nsys.argv"),
    ("cli/x.py", "import sys\nif sys.stdout is not None and sys.stdout.isatty(): pass"),
    ("cli/x.py", "import click\n@click.command()\ndef f(): pass"),
]


@pytest.mark.parametrize(
    ("module", "source", "door", "what"), [("route/x.py", *f) for f in FINDS] + FINDS_ELSEWHERE
)
def test_the_scanner_finds(module: str, source: str, door: Door, what: str) -> None:
    found = scan(source, module)
    assert (door, what) in [(finding.door, finding.what) for finding in found], found


@pytest.mark.parametrize(("module", "source"), PASSES)
def test_the_scanner_lets_pass(module: str, source: str) -> None:
    assert scan(source, module) == []


def test_a_finding_says_where_which_door_and_what_to_do() -> None:
    (finding,) = scan("import shlex\ndef parse(c):\n    return shlex.split(c)\n", "route/judges.py")
    text = str(finding)
    assert text.startswith("routedriver/route/judges.py:3: shell door: shlex.split in parse, outside ")
    assert "routedriver/shellsyntax/" in text
    assert "Allowed('route/judges.py', 'shell', 'shlex.split', why=...)" in text


# -- no import cycles ---------------------------------------------------------------------------------------
# Data flows one way (docs/architecture.md): a module never imports, directly or through others, a module that
# imports it. An import inside a function counts (it only hides a cycle until the function runs); so, for the
# route driver, does an import only for the type checker (``if TYPE_CHECKING:``): its modules are layered in
# their types too. What a package's ``__init__`` re-exports is not an edge of the modules below it (importing
# ``a.b.c`` runs ``a/b/__init__.py`` first: that is Python's order, not a dependency of ``c``).


class Import(NamedTuple):
    module: str  # the importing module, dotted ("routedriver.route.api")
    line: int
    imported: str  # the package's module it names (the deepest one: a name from it, or it)
    typing_only: bool  # inside ``if TYPE_CHECKING:``: never runs


def _dotted(module: str) -> str:
    """``route/judges.py`` → ``routedriver.route.judges``; ``route/__init__.py`` → ``routedriver.route``."""
    parts = ["routedriver", *module.removesuffix(".py").split("/")]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def imports_of(source: str, module: str, known: frozenset[str]) -> list[Import]:
    """Every import of one of the ``known`` modules in ``source`` (the module ``module``, relative to the
    package), wherever it stands: at the top, in a function, in a class, under ``if TYPE_CHECKING:``."""
    tree = ast.parse(source, filename=module)
    typing_only: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and _type_checking(node.test):
            typing_only.update(id(inner) for statement in node.body for inner in ast.walk(statement))

    def deepest(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    found: list[Import] = []
    me = _dotted(module)
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _from(node, module)
            names = [f"{base}.{alias.name}" if base else alias.name for alias in node.names]
        for name in names:
            target = deepest(name)
            if target is not None and target != me:
                found.append(Import(me, node.lineno, target, id(node) in typing_only))
    return found


def import_graph(under: str = "", *, typing: bool) -> dict[str, list[Import]]:
    """The package's modules (those below the folder ``under``, relative to it) → their imports of each
    other; ``typing``: count imports for the type checker too."""
    sources = {
        path.relative_to(PACKAGE).as_posix(): path
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.relative_to(PACKAGE).as_posix().startswith(under)
    }
    known = frozenset(_dotted(module) for module in sources)
    graph: dict[str, list[Import]] = {}
    for module, path in sources.items():
        found = imports_of(path.read_text(encoding="utf-8"), module, known)
        graph[_dotted(module)] = [edge for edge in found if typing or not edge.typing_only]
    return graph


def cycles(graph: dict[str, list[Import]]) -> list[list[Import]]:
    """One cycle through each group of modules that import each other (Tarjan's strongly connected
    components), as the imports that close it, starting at the group's first module by name."""
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    groups: list[set[str]] = []

    def visit(module: str) -> None:  # the graph is a few hundred modules: recursion is fine
        order[module] = low[module] = len(order)
        stack.append(module)
        for edge in graph.get(module, ()):
            if edge.imported not in order:
                visit(edge.imported)
                low[module] = min(low[module], low[edge.imported])
            elif edge.imported in stack:
                low[module] = min(low[module], order[edge.imported])
        if low[module] == order[module]:
            group = set()
            while True:
                member = stack.pop()
                group.add(member)
                if member == module:
                    break
            if len(group) > 1:
                groups.append(group)

    for module in sorted(graph):
        if module not in order:
            visit(module)
    return [_one_cycle(graph, group) for group in sorted(groups, key=min)]


def _one_cycle(graph: dict[str, list[Import]], group: set[str]) -> list[Import]:
    """The shortest way from the group's first module back to it, through the group (breadth first)."""
    start = min(group)
    paths: dict[str, list[Import]] = {start: []}
    queue = [start]
    for module in queue:
        for edge in sorted(graph.get(module, ()), key=lambda edge: (edge.imported, edge.line)):
            if edge.imported == start:
                return [*paths[module], edge]
            if edge.imported in group and edge.imported not in paths:
                paths[edge.imported] = [*paths[module], edge]
                queue.append(edge.imported)
    raise AssertionError(f"no cycle through {sorted(group)}")


def _shown(cycle: list[Import]) -> str:
    steps = " → ".join(
        f"{edge.module} (line {edge.line}{', for types' if edge.typing_only else ''})" for edge in cycle
    )
    return f"{steps} → {cycle[0].module}"


_CYCLE_FIX = (
    "move what both need down into a module both can import (as route.checks holds StoneCheck for verify, "
    "policy and recheck)"
)


def test_the_route_driver_has_no_import_cycle() -> None:
    found = cycles(import_graph("route/", typing=True))
    assert not found, f"{len(found)} import cycle(s) in routedriver/route/; {_CYCLE_FIX}:\n" + "\n".join(
        map(_shown, found)
    )


def test_the_package_has_no_import_cycle_that_runs() -> None:
    """Everywhere else, the imports that run (a type-only import of each other is how two modules name each
    other's types: ``brain.toolbox`` and ``brain.tools.base``)."""
    found = cycles(import_graph(typing=False))
    assert not found, f"{len(found)} import cycle(s) in routedriver/; {_CYCLE_FIX}:\n" + "\n".join(
        map(_shown, found)
    )


def _graph_of(sources: dict[str, str]) -> dict[str, list[Import]]:
    known = frozenset(_dotted(module) for module in sources)
    return {_dotted(module): imports_of(source, module, known) for module, source in sources.items()}


def test_the_cycle_finder_sees_imports_in_functions_and_for_types() -> None:
    graph = _graph_of(
        {
            "route/a.py": "from routedriver.route import b\n",
            "route/b.py": "def f():\n    from routedriver.route.c import thing\n",
            "route/c.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from . import a\n",
            "route/d.py": "import routedriver.route.a\nfrom routedriver.route import x_function\n",
            "route/__init__.py": "from routedriver.route.d import y\n",
        }
    )
    # A name imported from a package is an edge to the package (its __init__), which here imports d.
    package, cycle = cycles(graph)
    assert [(edge.module, edge.imported) for edge in package] == [
        ("routedriver.route", "routedriver.route.d"),
        ("routedriver.route.d", "routedriver.route"),
    ]
    assert [(edge.module, edge.imported, edge.typing_only) for edge in cycle] == [
        ("routedriver.route.a", "routedriver.route.b", False),
        ("routedriver.route.b", "routedriver.route.c", False),
        ("routedriver.route.c", "routedriver.route.a", True),
    ]
    assert _shown(cycle) == (
        "routedriver.route.a (line 1) → routedriver.route.b (line 2) → routedriver.route.c (line 3, for "
        "types) → routedriver.route.a"
    )
    without_types = {
        module: [edge for edge in edges if not edge.typing_only] for module, edges in graph.items()
    }
    assert cycles(without_types) == [package]


def test_the_cycle_finder_passes_a_layered_graph() -> None:
    graph = _graph_of(
        {
            "route/top.py": "from routedriver.route import low, middle\n",
            "route/middle.py": "def f():\n    from routedriver.route.low import g\n",
            "route/low.py": "import os\nfrom routedriver import errors\n",
        }
    )
    assert cycles(graph) == []
