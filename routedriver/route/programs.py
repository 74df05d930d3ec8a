"""Guard programs: the repository files a stone's guard runs. ``guard_programs`` is the one answer.

A guard that runs ``python3 tools/review.py`` trusts whatever ``tools/review.py`` says, so that file is as
much the gate as the guard's text: a pull request that edits it to print ``blockers: 0`` changes the gate
without touching a guard. So a route's guard programs are part of its definitions (``route.policy``):
``route.verify --base`` compares them with the base like the guards, ``route.policy.approve`` approves them
with them, ``route.lint`` lists them.

A **guard program** of a stone is a file git tracks that a word of one of its review or shell-judge commands
names (built-in judges run nothing), the command read as bash reads it (``shellsyntax.words``):

- ``$route`` and ``$stone`` are put in as ``route.subst`` puts them for a run (references to ``ROUTE`` and
  ``STONE``), then given the values the run gives them; a word that still holds another expansion
  (``$hash``, ``$REVIEWER``, ``$( … )``) is known only at run time and names nothing here;
- every word of every simple command counts, the program and its arguments alike: ``./tools/x.sh``,
  ``python3 tools/x.py``, ``pytest tests/test_x.py``, ``--rules=tools/rules.md`` (the text after ``=``),
  ``-ftools/x.awk`` (after a short option), ``tests/test_x.py::test_y`` (before ``::``), ``node tools/check``
  (with ``.js`` or ``/index.js`` where a JavaScript runtime runs), ``~+/tools/x`` (from where it runs);
  so do the commands inside ``$( … )``, backticks and ``<( … )``, a file given on stdin with ``<``, a
  here-document's text, and a word that is itself a script (any word holding a blank or a command
  separator is read again as one: ``bash -c '…'``, ``sh -c``, ``eval``), to a depth of ``_DEPTH``;
- ``python -m pkg.mod`` (any ``python*``/``pypy*`` word before the ``-m``, which may end a cluster: ``-Bm``)
  names ``pkg/mod.py``, ``pkg/mod/__init__.py``, ``pkg/mod/__main__.py``, ``pkg/__init__.py`` and
  ``pkg.py`` (a module of the package's name, which import takes first), from the top-level and from
  each ``PYTHONPATH=`` entry of the command (a ``pytest.py`` the pull request adds is what ``python -m
  pytest`` runs); a directory given to python names its ``__main__.py``; each in every form Python's
  import runs instead of the source: ``__pycache__/mod.*.pyc``, a sourceless ``mod.pyc``, ``mod*.so``;
- a relative path is taken from the top-level (where guard commands run) and from every directory a
  ``cd``/``pushd`` in the command names (past its options; after ``{``, ``if``, ``builtin`` …) or ``env -C``
  / ``sudo -D`` starts a command in, normalized (``$route/../tools/x`` is ``tools/x``); an absolute one
  counts when it is inside the work tree; an unquoted glob (``tools/*.py``) names every tracked file it
  matches (by ``routedriver.globs``' rule);
- a program that is a symlink counts with the file it leads to (inside the work tree); one inside a
  checked-out submodule counts as the submodule, whose identity is the commit its gitlink names;
- never the stone's own artifacts (files its ``artifacts:`` globs cover: what the guard judges, not what
  judges) nor the driver's files (``*.stone``, ``*.guard``, anything under a ``.route/``).

What it cannot see (docs/route-gate.md says so too): files a program opens on its own (a ``Makefile``
behind ``make``, ``conftest.py`` behind ``pytest``, modules a script imports), a directory named as a whole
(``pytest tests/``), code given as text to an interpreter (``python3 -c '…'``), and names computed at run
time. Name such files in the command, or protect them like code (CODEOWNERS, branch protection).

Git is asked once per route (``gitops.index_modes`` over every path the route's commands name that is a
file on disk, and over their globs). ``route.verify --recheck`` uses ``guard_programs`` to know which
repository files the commands it re-runs depend on.
"""

from __future__ import annotations

import dataclasses
import itertools
import os
import posixpath
import re
from collections.abc import Callable, Collection, Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from routedriver import gitops, globs
from routedriver.errors import Refused
from routedriver.fsutil import realpath
from routedriver.route import builtin_judges, hashing
from routedriver.route.artifacts import artifact_patterns
from routedriver.route.hashing import relative_posix
from routedriver.route.model import STATE_DIR, Guard, Route, Stone
from routedriver.route.subst import ENV, substitute
from routedriver.shellsyntax.lexer import COMMANDS, lex
from routedriver.shellsyntax.words import SimpleCommand, Word, is_assignment, read

_DEPTH = 4  # scripts inside scripts (bash -c "sh -c '…'") read again at most this deep
_REFERENCES = {"${" + ENV["route"] + "}": "route", "${" + ENV["stone"] + "}": "stone"}
_AGAIN = re.compile(r"[\s;&|]")  # a word holding one of these may be a script (bash -c, eval)
_PYTHON = re.compile(r"(?:python|pypy)[0-9.]*\Z")
_MODULE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*\Z")
_CHANGES_DIRECTORY = frozenset({"cd", "pushd"})
_DRIVER_SUFFIXES = (".stone", ".guard")


class Named(NamedTuple):
    """What one stone's commands name: paths relative to the top-level (POSIX, normalized), and globs."""

    paths: frozenset[str]
    globs: frozenset[str]
    # Whether a path is not a program of the stone: one of its own artifacts, or a driver file. Asked only of
    # the few paths that exist (a stone's commands name many words that are no file at all).
    excluded: Callable[[str], bool] | None = None

    def resolve(self, files: Collection[str], links: Mapping[str, str] | None = None) -> set[str]:
        """Those of ``files`` (paths that exist, e.g. what git tracks, as a set or dict) that these names
        name, and the files ``links`` says those of them that are symlinks lead to, without what is
        ``excluded``."""
        found = {path for path in self.paths if path in files}
        for pattern in self.globs:
            found.update(path for path in files if globs.matches(pattern, path))
        if links:
            found.update(links[path] for path in list(found) if path in links)
        if found and self.excluded is not None:
            found = set(itertools.filterfalse(self.excluded, found))
        return found


class Tracked(NamedTuple):
    """Which of the paths guard commands name git tracks now (``tracked``)."""

    files: frozenset[str]
    links: dict[str, str]  # a tracked symlink → the tracked file it leads to (a program run through a link)
    # a path inside a checked-out submodule → the submodule (its gitlink): what runs is the commit it names
    inside: dict[str, str] = {}

    def resolve(self, named: Named) -> set[str]:
        found = named.resolve(self.files, self.links)
        return found | {self.inside[path] for path in named.paths if path in self.inside}


# ---------------------------------------------------------------- reading one command


class _Reader:
    """Collects, over a command and every script inside it, the words and what changes their meaning."""

    def __init__(self) -> None:
        self.words: list[Word] = []
        self.modules: list[str] = []
        self.directories: list[Word] = []  # cd/pushd targets: where later relative paths start
        self.python_paths: list[str] = []  # PYTHONPATH= entries (raw text, references unresolved)
        self.search_paths: list[str] = []  # PATH= and CDPATH= entries: where a bare name may be found
        self.javascript = False  # a JavaScript runtime runs: it adds .js to a path, or finds index.js
        self.python_args: list[Word] = []  # what python is given to run: a directory runs its __main__.py
        self.scripts: list[str] = []  # read next, one level deeper

    # the shellsyntax.words.Sink protocol
    def nested(self, script: str) -> None:
        self.scripts.append(script)

    def unsure(self, reason: str) -> None:
        pass  # what cannot be read names nothing; the guard's own text is policy either way

    def line(self, commands: list[SimpleCommand]) -> None:
        for command in commands:
            self.scripts.extend(command.feed)
            words = command.words
            self.words.extend(words)
            for word in words:
                if _AGAIN.search(word.text):
                    self.scripts.append(word.text)
                if is_assignment(word) and word.text.startswith("PYTHONPATH="):
                    self.python_paths.extend(word.text.partition("=")[2].split(":"))
                if is_assignment(word) and word.text.startswith(("PATH=", "CDPATH=")):
                    self.search_paths.extend(word.text.partition("=")[2].split(":"))
                if posixpath.basename(word.text) in _JAVASCRIPT:
                    self.javascript = True
            programs = [index for index, word in enumerate(words) if not is_assignment(word)]
            if not programs:
                continue
            first = programs[0]
            directory = _changed_directory(words[first:])
            if directory is not None:
                self.directories.append(directory)
            python = any(_PYTHON.match(posixpath.basename(word.text)) for word in words[first:])
            if python:
                self._modules(words[first:])

    def _modules(self, words: list[Word]) -> None:
        """What python is told to run: ``-m MOD`` (also inside a cluster of short options, ``-Bm MOD``,
        ``-uBmMOD``), and the words that are no option (a script, or a directory that runs its
        ``__main__``); the value of an option that takes one (``-W x``, ``-X opt``) is neither."""
        seen_python = False
        index = 0
        while index < len(words):
            text = words[index].text
            if not seen_python:
                seen_python = bool(_PYTHON.match(posixpath.basename(text)))
            elif text in _PYTHON_LONG_VALUED:
                index += 1  # its value
            elif text.startswith("-") and not text.startswith("--") and len(text) > 1:
                for at, flag in enumerate(text[1:], start=1):
                    if flag not in _PYTHON_VALUED:
                        continue
                    value = text[at + 1 :]
                    if not value and index + 1 < len(words):
                        index += 1
                        value = words[index].text
                    if flag == "m":
                        self.modules.append(value)
                    elif flag == "c":
                        return  # code given as text: what follows are its arguments
                    break
            elif not text.startswith("-"):
                self.python_args.append(words[index])
                if "." in text and _MODULE.match(text):  # python -m unittest tests.test_x
                    self.modules.append(text)
            index += 1


# python's short options that take a value (the rest of the cluster, or the next word), and its long ones
_PYTHON_VALUED = frozenset("cmWX")
_PYTHON_LONG_VALUED = frozenset({"--check-hash-based-pycs"})
# Words that may stand before a command without being it: reserved words, and the builtins that run one.
_LEADS = frozenset({"{", "(", "!", "if", "then", "else", "elif", "do", "while", "until", "time", "-p"})
_RUNNERS = frozenset({"builtin", "command", "eval"})
_BEFORE_A_COMMAND = _LEADS | _RUNNERS
_JAVASCRIPT = frozenset({"node", "nodejs", "bun", "deno", "tsx", "ts-node"})
_JAVASCRIPT_SUFFIXES = (".js", ".mjs", ".cjs", "/index.js", "/index.mjs", "/index.cjs")


class _Chdir(NamedTuple):
    """How a program is told, by an option, to run in another directory."""

    letter: str  # its short option (-C DIR, -CDIR, in a cluster: -iC DIR)
    long: str  # its long option (--chdir DIR, --chdir=DIR); "" for none
    valued: str  # its other short options that take a value (env -u NAME): skipped with it
    anywhere: bool  # its options may follow other words (make's targets); else the first ends them


_DIRECTORY_OPTIONS = {
    "env": _Chdir("C", "--chdir", "uS", anywhere=False),
    "sudo": _Chdir("D", "--chdir", "ugUhpCrtT", anywhere=False),
    "make": _Chdir("C", "--directory", "fIoW", anywhere=True),
    "git": _Chdir("C", "", "c", anywhere=False),
}


def _tail(word: Word, start: int) -> Word:
    """The word from character ``start`` on (the value of ``--chdir=DIR``, ``-CDIR``)."""
    return dataclasses.replace(word, text=word.text[start:], chars=word.chars[start:])


def _changed_directory(words: list[Word]) -> Word | None:
    """The directory a simple command's words make the current one for what follows: ``cd DIR`` and
    ``pushd DIR`` (their options skipped, also after a reserved word, ``builtin``, ``command`` or ``eval``),
    ``env -C DIR``, ``sudo -D DIR``, ``make -C DIR``, ``git -C DIR`` (also ``-iC DIR``, ``--chdir=DIR``);
    None for any other command."""
    index = 0
    while index < len(words) and (words[index].text in _BEFORE_A_COMMAND or is_assignment(words[index])):
        index += 1
    if index >= len(words):
        return None
    program, rest = posixpath.basename(words[index].text), words[index + 1 :]
    if program in _CHANGES_DIRECTORY:
        return next((word for word in rest if not (word.text.startswith("-") and word.text != "-")), None)
    if program not in _DIRECTORY_OPTIONS:
        return None
    letter, long, valued, anywhere = _DIRECTORY_OPTIONS[program]
    at = 0
    while at < len(rest):
        text = rest[at].text
        following = rest[at + 1] if at + 1 < len(rest) else None
        if text == "--":
            return None
        if long and text == long:
            return following
        if long and text.startswith(long + "="):
            return _tail(rest[at], len(long) + 1)
        if text.startswith("-") and not text.startswith("--") and len(text) > 1:
            for place, flag in enumerate(text[1:], start=1):
                if flag == letter:
                    return _tail(rest[at], place + 1) if place + 1 < len(text) else following
                if flag in valued:
                    at += place + 1 == len(text)  # its value is the next word
                    break
        elif not text.startswith("-") and not anywhere:
            return None  # the command env or sudo runs (git's subcommand): its options are not theirs
        at += 1
    return None


@lru_cache(maxsize=512)
def _read(command: str) -> _Reader:
    """The command read once (a pure function of its text: a route's guards mostly share their commands;
    callers only read what it collected)."""
    reader = _Reader()
    pending, depth = [substitute(command, ("route", "stone", "hash"))], 0
    while pending and depth <= _DEPTH:
        reader.scripts = []
        for script in pending:
            read(_stdin_files_as_words(script), reader)
        pending, depth = reader.scripts, depth + 1
    return reader


def _stdin_files_as_words(script: str) -> str:
    """``script`` with each ``<`` (and ``<>``) redirection operator blanked, so the file it feeds on stdin
    (``bash < tools/x.sh``) is read as a word like any other; offsets and everything else stay as they are."""
    if "<" not in script:
        return script

    chars = list(script)
    for token in lex(script):
        if token.kind == "operator" and token.value in ("<", "<>") and token.context in COMMANDS:
            chars[token.start : token.end] = " " * (token.end - token.start)
    return "".join(chars)


def _value(word: Word, values: Mapping[str, str]) -> tuple[str, bool] | None:
    """The word's text with ``$route``/``$stone`` given their values, and whether it is a glob; None when
    its value is known only at run time."""
    text = word.text
    for reference, name in _REFERENCES.items():
        if reference in text:
            text = text.replace(reference, values[name])
    if "$" in text or "`" in text:
        return None
    glob = any(bare and char in "*?[" for char, bare in word.chars)
    return text, glob


def _known(text: str, values: Mapping[str, str]) -> str | None:
    """An assignment's value (a PATH= entry) with ``$route``/``$stone`` put in; None when another expansion
    leaves it known only at run time (``$PATH``)."""
    for reference, name in _REFERENCES.items():
        text = text.replace(reference, values[name])
    return None if "$" in text or "`" in text else text


def _paths(text: str, starts: Iterable[str], top: str) -> list[str]:
    """The repository paths (relative to the top-level) the word text may name, from each start directory."""
    if text in ("~+", "~-") or text.startswith(("~+/", "~-/")):
        text = text[3:] or "."  # $PWD and $OLDPWD: directories the command was in, so from the starts
    if not text or text.startswith("~"):
        return []
    if os.path.isabs(text):
        normalized = posixpath.normpath(text)
        return [normalized[len(top) + 1 :]] if normalized.startswith(top + "/") else []
    found = []
    for start in starts:
        path = posixpath.normpath(posixpath.join(start, text)) if start else posixpath.normpath(text)
        if path != "." and path != ".." and not path.startswith("../"):
            found.append(path)
    return found


def _module_files(module: str, roots: Iterable[str]) -> tuple[list[str], list[str]]:
    """What ``python -m module`` may load from each root: the module, its package's ``__init__``s and
    ``__main__``, each in every form Python loads (``_python_files``). Paths and globs."""
    parts = module.split(".")
    stems = []
    for root in roots:
        base = posixpath.join(root, *parts) if root else posixpath.join(*parts)
        stems += [base, posixpath.join(base, "__init__"), posixpath.join(base, "__main__")]
        for depth in range(1, len(parts)):
            head = posixpath.join(root, *parts[:depth]) if root else posixpath.join(*parts[:depth])
            # the package's __init__, or a module of its name, which import takes first (json.py for json)
            stems += [posixpath.join(head, "__init__"), head]
    paths: list[str] = []
    patterns: list[str] = []
    for stem in stems:
        more_paths, more_patterns = _python_files(stem)
        paths += more_paths
        patterns += more_patterns
    return paths, patterns


def _python_files(stem: str) -> tuple[list[str], list[str]]:
    """The files Python's import may run for the module at ``stem`` (a path without suffix), paths and
    globs: an extension module (``stem.so``, ``stem.cpython-311-….so``, taken before the source), the
    source, its bytecode in ``__pycache__`` (an unchecked-hash ``.pyc`` there is run without a look at the
    source) and a sourceless ``stem.pyc``. Each must be the base's as the source must."""
    head, name = posixpath.split(stem)
    cache = posixpath.join(globs.escape(head), "__pycache__") if head else "__pycache__"
    return (
        [stem + ".py", stem + ".pyc", stem + ".so"],
        [f"{cache}/{globs.escape(name)}.*.pyc", f"{globs.escape(stem)}.*.so"],
    )


def command_names(command: str, *, route: str, stone: str, top: str) -> Named:
    """The repository paths and globs (relative to the top-level ``top``, an absolute POSIX path) the words
    of one guard command name, as the module's docstring reads them; ``route`` is ``$route``'s value
    (relative to the top-level), ``stone`` the stone's name."""
    # A command that cannot mention $stone names the same for every stone: read once for all of them.
    return _command_names(command, route, stone if "stone" in command else "", top)


@lru_cache(maxsize=1024)
def _command_names(command: str, route: str, stone: str, top: str) -> Named:
    reader = _read(command)
    values = {"route": route, "stone": stone}
    starts = [""]
    for entry in reader.search_paths:
        known_text = _known(entry, values)
        if known_text is not None:
            starts += _paths(known_text, [""], top)
    glob_starts: list[str] = []
    for word in reader.directories:  # in order: each from where the ones before it may have led
        known = _value(word, values)
        if known is not None:
            (glob_starts if known[1] else starts).extend(_paths(known[0], starts, top))
    paths: set[str] = set()
    patterns: set[str] = set()
    for word in reader.words:
        known = _value(word, values)
        if known is None:
            continue
        text, glob = known
        texts = [text]
        if "=" in text[1:]:
            texts.append(text.partition("=")[2])  # --rules=tools/rules.md, VAR=tools/x
        if len(text) > 2 and text[0] == "-" and text[1] != "-":
            texts.append(text[2:])  # a value given with its short option: awk -ftools/x.awk
        if "::" in text:
            texts.append(text.partition("::")[0])  # pytest's node ids: tests/test_x.py::test_y
        if reader.javascript:
            texts += [each + suffix for each in list(texts) for suffix in _JAVASCRIPT_SUFFIXES]
        for each in texts:
            (patterns if glob else paths).update(_paths(each, starts, top))
            if glob_starts and not os.path.isabs(each):  # cd tools/checker-* && ./check.sh
                patterns.update(_paths(each if glob else globs.escape(each), glob_starts, top))
    for word in reader.python_args:
        known = _value(word, values)
        if known is not None and not known[1]:
            for main in _paths(posixpath.join(known[0], "__main__"), starts, top):
                main_paths, main_patterns = _python_files(main)
                paths.update(main_paths)
                patterns.update(main_patterns)
    roots = list(starts)
    for entry in reader.python_paths:
        known_text = _known(entry, values)
        if known_text is not None:
            roots += _paths(known_text, starts, top)
    for module in reader.modules:
        for reference, name in _REFERENCES.items():
            module = module.replace(reference, values[name])
        if _MODULE.match(module):
            module_paths, module_patterns = _module_files(module, roots)
            paths.update(module_paths)
            patterns.update(module_patterns)
    return Named(frozenset(paths), frozenset(patterns))


# ---------------------------------------------------------------- a stone's and a route's programs


def _runs_something(command: str) -> bool:
    return not builtin_judges.is_builtin(command)  # the built-in judges (reviewed?, approved?) run nothing


def stone_names(route: Route, stone: Stone, guard: Guard, top: Path) -> Named:
    """What the stone's review and shell-judge commands name (relative to the top-level ``top``), without
    its own artifacts and the driver's files: its guard programs once git says which are tracked."""
    top_text = os.fspath(top)
    route_arg = relative_posix(route.path, top)
    route_arg = f"./{route_arg}" if route_arg.startswith("-") else route_arg
    paths: set[str] = set()
    patterns: set[str] = set()
    for command in (*guard.reviews, *guard.judges):
        if _runs_something(command):
            named = command_names(command, route=route_arg, stone=stone.name, top=top_text)
            paths |= named.paths
            patterns |= named.globs
    own: list[str] = []

    def excluded(path: str) -> bool:
        if path.endswith(_DRIVER_SUFFIXES) or STATE_DIR in path.split("/"):
            return True
        if not own:
            own.extend(artifact_patterns(route, stone, guard, top))
        absolute = posixpath.join(top_text, path)
        return any(globs.covers(pattern, absolute) for pattern in own)

    return Named(frozenset(paths), frozenset(patterns), excluded)


def route_names(route: Route, guards: Mapping[str, Guard | None], top: Path) -> dict[str, Named]:
    """``stone_names`` of every stone in ``guards`` that has a guard (by stone name)."""
    found = {}
    for stone in route.stones:
        guard = guards.get(stone.name)
        if guard is not None:
            found[stone.name] = stone_names(route, stone, guard, top)
    return found


def tracked(repo: gitops.Repo, named: Iterable[Named]) -> Tracked:
    """Which of the paths ``named`` names git tracks (its index; matches of the globs included), and where
    those that are symlinks lead inside the work tree: ONE git call. Only paths that are files (or links)
    on disk are asked about: a directory would list all below."""
    top = os.fspath(repo.toplevel)
    candidates: set[str] = set()
    patterns: set[str] = set()
    for names in named:
        candidates |= names.paths
        patterns |= names.globs
    paths = set()
    links: dict[str, str] = {}
    for path in candidates:
        absolute = os.path.join(top, path)
        if os.path.islink(absolute):
            target = _link_target(absolute, top)
            if target is not None:
                links[path] = target
                paths.add(target)
            paths.add(path)
        elif os.path.lexists(absolute) and not os.path.isdir(absolute):
            paths.add(path)
    try:
        modes = gitops.index_modes(repo, sorted(paths), sorted(patterns))
    except gitops.GitError:
        raise Refused(
            "cannot ask git which files the guards run", "run it inside the routes' git work tree"
        ) from None
    listed = {path for path, mode in modes.items() if mode != gitops.GITLINK_MODE}
    files = frozenset(
        path for path in listed if path in paths or any(globs.matches(g, path) for g in patterns)
    )
    return Tracked(
        files,
        {link: target for link, target in links.items() if target in files},
        _in_submodules(repo, [path for path in paths if path not in modes]),
    )


def _in_submodules(repo: gitops.Repo, untracked: list[str]) -> dict[str, str]:
    """Of the named files git does not track, those inside a checked-out submodule, each with the
    submodule's path: git tracks the submodule as one gitlink, and the program that runs is whatever the
    commit it names holds, so that gitlink is the program (a pull request that moves it changes the gate)."""
    top = os.fspath(repo.toplevel)
    roots: dict[str, str] = {}
    for path in untracked:
        parts = path.split("/")
        for depth in range(len(parts) - 1, 0, -1):
            folder = "/".join(parts[:depth])
            if os.path.lexists(os.path.join(top, folder, ".git")):
                roots[path] = folder
                break
    known = gitops.gitlinks(repo, sorted(set(roots.values())))
    return {path: root for path, root in roots.items() if root in known}


def _link_target(absolute: str, top: str) -> str | None:
    """Where the symlink ``absolute`` finally leads, relative to ``top``; None outside the work tree."""
    real = realpath(absolute)
    for root in (top, realpath(top)):
        if real.startswith(root + os.sep):
            return real[len(root) + 1 :].replace(os.sep, "/")
    return None


def guard_programs(
    route: Route, guards: Mapping[str, Guard | None], repo: gitops.Repo
) -> dict[str, tuple[str, ...]]:
    """The guard programs of the route's stones: ``{stone name: tracked files its guard runs, sorted}`` for
    every stone in ``guards`` that has a guard (``guardfile.load_guard`` gives them). One git call.

    The public answer to "which repository files decide this stone's verdict besides its artifacts"
    (``route.policy`` compares them with the base; ``route.lint`` lists them; ``route.verify --recheck``
    re-runs commands that depend on them)."""
    named = route_names(route, guards, repo.toplevel)
    known = tracked(repo, named.values())
    return {stone: tuple(sorted(known.resolve(names))) for stone, names in named.items()}


def stone_programs(route: Route, stone: Stone, guard: Guard | None, repo: gitops.Repo) -> tuple[str, ...]:
    """``guard_programs`` of one stone (none without a guard)."""
    return guard_programs(route, {stone.name: guard}, repo).get(stone.name, ())


# ---------------------------------------------------------------- comparing with REF

LINK = "link:"  # marks the id of a symlink: a link whose text is a program's bytes is not that program
GITLINK = "gitlink:"  # marks a submodule's commit: the program inside it is what that commit holds


def identities(repo: gitops.Repo, paths: Collection[str | Path]) -> dict[str, str]:
    """How definitions (stones, guards, approvers files, guard programs; relative to the top-level) compare
    with REF's and with an approval: the id of their bytes on disk exactly as they are, through no filter or
    line-ending conversion (git's ``text`` attribute would hash a script with a CR in it as the one without:
    what runs is what is on disk), a symlink's marked (``LINK``). ``base_identity`` is REF's side."""
    top = repo.toplevel
    # A submodule (a directory with its own .git) is the commit git's index holds for it, not bytes.
    folders = [
        os.fspath(path) for path in paths if os.path.isdir(top / path) and not os.path.islink(top / path)
    ]
    submodules = {path: GITLINK + commit for path, commit in gitops.gitlinks(repo, folders).items()}
    files = [top / path for path in paths if os.fspath(path) not in submodules]
    found = hashing.content_ids(files, top, repo, from_disk=True, exact=True, keep_links=True)
    # Hashing saw the work tree's links; a path outside it (read through its links) is asked apart.
    outside = {path for path in found.ids if path.startswith("../") and os.path.islink(top / path)}
    links = found.links | outside
    return {path: LINK + blob if path in links else blob for path, blob in found.ids.items()} | submodules


def base_identity(entry: gitops.TreeEntry | None) -> str | None:
    """REF's file as ``identities`` says one on disk: its blob id, marked when it is a symlink (a
    submodule's commit, marked)."""
    if entry is None:
        return None
    marks = {gitops.SYMLINK_MODE: LINK, gitops.GITLINK_MODE: GITLINK}
    return marks.get(entry.mode, "") + entry.blob
