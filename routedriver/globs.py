"""Globs: the one reading of a path pattern, for a guard's ``artifacts:`` and ``protect:`` and bhrain's
``glob`` tool. Every part of routedriver that matches a path against a glob asks this module.

A glob is read component by component (split at ``/``) and compared with a POSIX path the same way:

- ``*`` matches any run of characters within one name, ``?`` one character, ``[…]`` one character of a
  class (``[a-z0-9_]``; ``[!…]`` or ``[^…]`` for its complement; a ``]`` right after the opening ``[`` (or
  ``[!``) is a member; a reversed range such as ``[z-a]`` matches nothing; a ``[`` without its ``]`` is
  itself). None of them ever matches a ``/``. Within one name this is ``fnmatch.fnmatchcase``, except that
  ``[^…]`` is a complement and ``[[:digit:]]`` (and the other POSIX classes, in the C locale) a class, as
  in bash and git.
- ``**`` as a whole component matches any number of directories, none included: ``**/x.py`` is ``x.py``
  at any depth and ``a/**/b`` is ``a/b``, ``a/x/b``, ``a/x/y/b``. Last (``src/**``), it matches every path
  below (not ``src`` itself). ``**`` inside a name (``a**b``) is ``*``.
- **Hidden names** (starting with ``.``) are names like any other: ``*`` matches ``.env``, ``src/**``
  covers ``src/.env`` and ``src/.github/ci.yml``. This is git's rule, not the shell's: a robot's tools
  reach hidden files, so what ``protect:`` names must too; and a guard's artifacts are what its stone
  produced, dot or no dot.
- A **trailing** ``/`` names directories only. Where files are meant (``artifacts:``, ``protect:``) a
  directory stands for everything below it: ``out/`` covers what ``out/**`` matches. bhrain's ``glob`` tool
  lists the directories themselves.
- A **leading** ``/`` makes the glob absolute (a path on this file system); empty and ``.`` components are
  dropped (``./a//b`` is ``a/b``). Nothing else is special: no ``!`` negation, no ``#`` comments, no
  ``{a,b}``, and ``\\`` is an ordinary character. ``escape`` writes ``*``, ``?`` and ``[`` as ``[*]``,
  ``[?]``, ``[[]``.
- Letter case and Unicode are compared exactly, character for character (as git and Linux do; on a
  case-insensitive file system ``SRC/a.py`` is not matched by ``src/**``).

Paths are compared as given: callers pass normalized paths (no ``.``, ``..`` or empty components) relative
to the same base as the glob. Finding files on disk adds two rules of the walk, shared by the walkers
(``route.artifacts`` and ``brain.tools.walk``), never by the matching: a wildcard never enters a symlinked
directory (a link to ``..`` would loop) while a literal component is the path it names, links included; and
a wildcard never enters the directories in ``NEVER_ENTERED`` (a repository's own store: ``.git`` holds no
work-tree file). A stone's artifacts are stricter, since a file that hides from them hides from the gate:
there a wildcard that would walk into a symlinked directory or a submodule is refused, and only ``.git`` (and
a route's own ``.route/``) is never entered (``route.artifacts``).

Compiled globs are cached. A glob with at most one ``**`` is matched by one regular expression; more than
one, by a walk over the components that takes time proportional to path length × glob length (a regular
expression could backtrack for a very long time on ``**/a/**/b/**/c`` against a deep path).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache

GLOBSTAR = "**"
NEVER_ENTERED = frozenset({".git", ".hg", ".svn"})  # version-control stores: entered only when named
_MAGIC = re.compile(r"[*?\[]")
_ANY = "[^/]"  # one character a wildcard may match


def has_magic(text: str) -> bool:
    """Whether ``text`` holds a wildcard (``*``, ``?`` or ``[``)."""
    return _MAGIC.search(text) is not None


def literal_prefix(component: str) -> str:
    """The text before the first wildcard of ``component``: every name it matches starts with it."""
    return _MAGIC.split(component, maxsplit=1)[0]


def escape(text: str) -> str:
    """``text`` as a glob matching only itself: ``*``, ``?`` and ``[`` written ``[*]``, ``[?]``, ``[[]``."""
    return _MAGIC.sub(lambda match: f"[{match[0]}]", text)


def literal(component: str) -> str | None:
    """The one name the glob component ``component`` matches when it has no wildcard other than the escapes
    ``escape`` writes (``a[*]b`` is ``a*b``); None when it matches more than one name."""
    if "[" not in component:
        return None if has_magic(component) else component
    out: list[str] = []
    index = 0
    while index < len(component):
        char = component[index]
        if char == "[" and component[index + 2 : index + 3] == "]" and component[index + 1] in "*?[":
            out.append(component[index + 1])
            index += 3
        elif char in "*?[":
            return None
        else:
            out.append(char)
            index += 1
    return "".join(out)


# ---------------------------------------------------------------- one name


# POSIX character classes inside a class (``[[:digit:]]``), as bash and git match them in the C locale.
_NAMED_CLASSES = {
    "alnum": "a-zA-Z0-9",
    "alpha": "a-zA-Z",
    "blank": " \\t",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": re.escape("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~"),
    "space": " \\t\\n\\r\\f\\v",
    "upper": "A-Z",
    "word": "a-zA-Z0-9_",
    "xdigit": "0-9A-Fa-f",
}


def _named_class(body: str, position: int) -> tuple[str, int] | None:
    """``(name, the index after it)`` of a ``[:name:]`` starting at ``body[position]``, or None."""
    if not body.startswith("[:", position):
        return None
    close = body.find(":]", position + 2)
    name = body[position + 2 : close] if close >= 0 else ""
    return (name, close + 2) if name in _NAMED_CLASSES else None


def _class_end(component: str, index: int) -> int:
    """Where the class whose members start at ``component[index]`` ends (its ``]``), ``[:name:]`` skipped;
    -1 when it does not end."""
    while index < len(component):
        named = _named_class(component, index)
        if named is not None:
            index = named[1]
        elif component[index] == "]":
            return index
        else:
            index += 1
    return -1


def _class(component: str, start: int) -> tuple[str, int] | None:
    """The regular expression of the class opening at ``component[start]`` (a ``[``) and the index after
    its ``]``; None when there is no ``]`` (the ``[`` is then itself)."""
    index = start + 1
    negate = component[index : index + 1] in ("!", "^")
    if negate:
        index += 1
    body_start = index
    if component[index : index + 1] == "]":
        index += 1  # a "]" first is a member
    end = _class_end(component, index)
    if end < 0:
        return None
    body = component[body_start:end]
    members: list[str] = []
    position = 0
    while position < len(body):
        named = _named_class(body, position)
        if named is not None:
            members.append(_NAMED_CLASSES[named[0]])
            position = named[1]
        elif position + 2 < len(body) and body[position + 1] == "-":
            low, high = body[position], body[position + 2]
            if low <= high:  # a reversed range matches nothing (as fnmatch)
                members.append(f"{re.escape(low)}-{re.escape(high)}")
                if low <= "/" <= high:
                    members.append("")  # marker: the range spans "/", excluded below
            position += 3
        else:
            members.append(re.escape(body[position]))
            position += 1
    spans_slash = "" in members
    text = "".join(members)
    if negate:
        return f"[^/{text}]", end + 1
    if not text:
        return "(?!)", end + 1  # an empty class (only reversed ranges) matches nothing
    return ("(?!/)" if spans_slash else "") + f"[{text}]", end + 1


def _name_regex(component: str) -> str:
    """The regular expression of one glob component (never matching a "/"). As ``fnmatch.translate``,
    each ``*`` but the last takes the shortest run up to what follows it, atomically: ``*a*a*a*b`` against a
    long name cannot backtrack for long."""
    pieces: list[str | None] = []  # None stands for a "*"
    index = 0
    while index < len(component):
        char = component[index]
        if char == "*":
            if not pieces or pieces[-1] is not None:
                pieces.append(None)
            index += 1
            continue
        if char == "?":
            pieces.append(_ANY)
        elif char == "[" and (found := _class(component, index)) is not None:
            pieces.append(found[0])
            index = found[1]
            continue
        else:
            pieces.append(re.escape(char))
        index += 1
    out: list[str] = []
    stars = [i for i, piece in enumerate(pieces) if piece is None]
    last_star = stars[-1] if stars else -1
    segment: list[str] = []
    in_star = False
    for i, piece in enumerate(pieces):
        if piece is None:
            if in_star:
                out.append(f"(?>{_ANY}*?{''.join(segment)})")
            else:
                out.extend(segment)
            segment = []
            in_star = True
            if i == last_star:
                out.append(f"{_ANY}*")
                in_star = False
            continue
        segment.append(piece)
    out.extend(segment)
    return "".join(out)


def star_ends(component: str) -> tuple[str, str] | None:
    """``(head, tail)`` when the glob component is the common ``<head>*<tail>`` (one ``*``, no other
    wildcard): it matches the names that start with head, end with tail and are at least as long as both."""
    head, star, tail = component.partition("*")
    return (head, tail) if star and not has_magic(head) and not has_magic(tail) else None


@lru_cache(maxsize=2048)
def name_matcher(component: str) -> Callable[[str], object]:
    """A test of one name (no ``/``) against the glob component ``component``, truthy when it matches; for
    listings that hold the names of one directory. The common ``<head>*<tail>`` (a stone's default
    artifact ``1.vision*.md``) is told by the name's ends and length: compiling a regular expression for each
    of a thousand stones would cost more than the listing."""
    ends = star_ends(component)
    if ends is not None:
        head, tail = ends
        shortest = len(head) + len(tail)
        return lambda name: len(name) >= shortest and name.startswith(head) and name.endswith(tail)
    return re.compile(_name_regex(component) + r"\Z").match


# ---------------------------------------------------------------- whole paths


class Glob:
    """One parsed glob (see the module's docstring). Get one with ``parse``: parsed globs are cached."""

    __slots__ = ("_cover", "_names", "_regex", "directories", "parts", "pattern")

    def __init__(self, pattern: str, parts: tuple[str, ...], directories: bool) -> None:
        self.pattern = pattern  # as written
        self.parts = parts  # its components: "" first when absolute, runs of "**" made one
        self.directories = directories  # written with a trailing "/"
        # Compiled when first needed: a walker that only asks for ``head`` and ``rest`` (a stone's default
        # glob, a thousand times on a long route) compiles nothing here.
        self._regex: Callable[[str], object] | None = None
        self._names: tuple[Callable[[str], object] | None, ...] | None = None
        self._cover: Glob | None = None

    def __repr__(self) -> str:
        return f"Glob({self.pattern!r})"

    def matches(self, path: str) -> bool:
        """Whether the glob names ``path`` itself (a ``/``-separated path; for a glob with a trailing ``/``,
        the caller checks that it is a directory)."""
        if self.parts.count(GLOBSTAR) > 1:
            return len(self.parts) in self._step_all(path.split("/"))
        if self._regex is None:
            self._regex = re.compile(_path_regex(self.parts) + r"\Z").match
        return self._regex(path) is not None

    def covers(self, path: str) -> bool:
        """Whether the glob names ``path`` where files are meant: as ``matches``, and for a glob with a
        trailing ``/`` everything below the directories it names (``out/`` covers ``out/a/b.txt``)."""
        return self.cover.matches(path)

    def may_cover_below(self, directory: str) -> bool:
        """Whether some path below ``directory`` (a path the glob is relative to, "" for its base) could be
        covered: a walk need not enter a directory for which this is False."""
        return self.cover.may_match_below(directory)

    def may_match_below(self, directory: str) -> bool:
        """Whether some path below ``directory`` ("" for the base) could be matched (``matches``)."""
        states = self._step_all(directory.split("/") if directory else [])
        ends = self._ends_in_globstar
        return any(state < len(self.parts) or ends for state in states)

    @property
    def cover(self) -> Glob:
        """The glob that names the files this one covers: itself, or for ``x/`` the glob ``x/**``."""
        if self._cover is None:
            parts = self.parts
            if parts and parts[-1] == GLOBSTAR:
                # "**/" names directories one or more levels down; below them is one level more: "*/**"
                # ("**/**" would be read as one "**").
                parts = (*parts[:-1], "*")
            self._cover = parse("/".join((*parts, GLOBSTAR))) if self.directories else self
        return self._cover

    @property
    def head(self) -> str:
        """The literal directories the glob starts with, where a walk begins ("src/docs" of
        "src/docs/**/*.md", "/" of "/*.txt"), "" for none; the whole glob when it has no wildcard."""
        return self._split()[0]

    @property
    def rest(self) -> Glob | None:
        """The glob below ``head`` (``**/*.md`` of "src/docs/**/*.md"); None when the glob is literal."""
        return self._split()[1]

    def _split(self) -> tuple[str, Glob | None]:
        return _split(self.parts, self.directories)

    @property
    def _ends_in_globstar(self) -> bool:
        return bool(self.parts) and self.parts[-1] == GLOBSTAR

    def _step_all(self, names: Sequence[str]) -> set[int]:
        """The glob positions reachable after matching ``names`` (position ``len(parts)`` is the end).
        A walk over the components, for globs with several ``**``: steps proportional to names × parts."""
        parts = self.parts
        if self._names is None:
            self._names = tuple(None if part == GLOBSTAR else name_matcher(part) for part in parts)
        tests, count = self._names, len(parts)
        states = _closure({0}, parts)
        for name in names:
            reached: set[int] = set()
            for state in states:
                if state == count:
                    if self._ends_in_globstar:
                        reached.add(count)  # a last "**" goes on matching deeper paths
                elif parts[state] == GLOBSTAR:
                    reached.add(count if state == count - 1 else state)
                else:
                    test = tests[state]
                    if test is not None and test(name):
                        reached.add(state + 1)
            states = _closure(reached, parts)
            if not states:
                break
        return states


def _closure(states: set[int], parts: tuple[str, ...]) -> set[int]:
    """``states`` with every position a non-last ``**`` can skip to by matching no directory."""
    out = set(states)
    for state in states:
        while state < len(parts) - 1 and parts[state] == GLOBSTAR:
            state += 1
            out.add(state)
    return out


def _path_regex(parts: tuple[str, ...]) -> str:
    """One regular expression for globs with at most one ``**``."""
    out: list[str] = []
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        if part == GLOBSTAR:
            out.append(f"{_ANY}+(?:/{_ANY}+)*" if last else f"(?:{_ANY}+/)*")
        else:
            out.append(_name_regex(part) + ("" if last else "/"))
    return "".join(out) if parts else "(?!)"


def _normalize(pattern: str) -> tuple[tuple[str, ...], bool]:
    directories = len(pattern) > 1 and pattern.endswith("/")
    absolute = pattern.startswith("/")
    parts: list[str] = [""] if absolute else []
    for part in pattern.split("/"):
        if part in ("", "."):
            continue
        if part == GLOBSTAR and parts and parts[-1] == GLOBSTAR:
            continue  # "**/**" is "**"
        parts.append(part)
    return tuple(parts), directories


@lru_cache(maxsize=1024)
def parse(pattern: str) -> Glob:
    """The glob ``pattern``, parsed and compiled once (cached)."""
    parts, directories = _normalize(pattern)
    return Glob(pattern, parts, directories)


@lru_cache(maxsize=1024)
def _split(parts: tuple[str, ...], directories: bool) -> tuple[str, Glob | None]:
    names: list[str] = []
    for index, part in enumerate(parts):
        name = literal(part)
        if name is None:
            rest = "/".join(parts[index:]) + ("/" if directories else "")
            return _join(names), parse(rest)
        names.append(name)
    return _join(names), None


def _join(names: list[str]) -> str:
    if names == [""]:
        return "/"
    return "/".join(names)


def matches(pattern: str, path: str) -> bool:
    """Whether the glob ``pattern`` names ``path`` (see ``Glob.matches``)."""
    return parse(pattern).matches(path)


def covers(pattern: str, path: str) -> bool:
    """Whether the glob ``pattern`` names the file ``path`` (see ``Glob.covers``)."""
    return parse(pattern).covers(path)
