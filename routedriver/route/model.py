"""The route driver's data: what a route, a stone and a guard are, and what an evaluation produced.

Everything here is an immutable NamedTuple built by the loaders and the store; nothing here reads files.
NamedTuple rather than a frozen dataclass: every ``route.*`` command imports this module at start-up, and the
``dataclasses`` import plus one generated class per record cost ~15 ms there, against ~1.5 ms here.
"""

from __future__ import annotations

import os
import re
from collections.abc import Collection
from pathlib import Path
from typing import NamedTuple

from routedriver.route.manifest import manifest_in

# Guard defaults (decisions in docs/route.md).
DEFAULT_TIMEOUT_S = 1200.0
# The one tuple every guard without an ``artifacts:`` key gets: ``artifacts.py`` tells the default from the
# same glob written out in a guard by identity (a written glob is the user's choice and is taken as written).
DEFAULT_ARTIFACTS = ("$route/${stone}*.md",)
# ``$route``/``${route}``, ``$stone``, ``$hash``: what guard commands and globs may name (``subst``,
# ``artifacts``). Here, beside the defaults, so finding a stone's artifacts needs no shell reader.
VARIABLE = re.compile(r"\$(?:\{(route|stone|hash)\}|(route|stone|hash)(?![A-Za-z0-9_]))")
STATE_DIR = ".route"  # the driver's own files live in $route/.route/, never next to the stones


def default_artifacts(stone_name: str) -> tuple[str, ...]:
    """``$route/<name>*.md``: matches ``1.vision.md`` and versioned ``1.vision.v1.i1.md`` alike (a file
    that the default of a stone with a longer name also matches is that stone's: ``default_owner``)."""
    return DEFAULT_ARTIFACTS


DEFAULT_SUFFIX = DEFAULT_ARTIFACTS[0].rpartition("*")[2]  # what the default glob matches after the name


def default_owner(filename: str, names: Collection[str]) -> str | None:
    """The stone among ``names`` (a set) whose default glob owns ``filename``, a name in the route's
    directory: the longest name it starts with that leaves room for the suffix. A file the defaults of
    several stones match is the most specific one's (``3.plan-details.md`` is ``3.plan-details``'s, not
    ``3.plan``'s), the one rule every reader of default artifacts follows. None: no default matches it."""
    if filename.endswith(DEFAULT_SUFFIX):
        for end in range(len(filename) - len(DEFAULT_SUFFIX), 0, -1):
            if filename[:end] in names:
                return filename[:end]
    return None


def writes_globs(guard: Guard | None) -> bool:
    """Does the guard name its stone's artifacts itself (``artifacts:``, even the default glob written out)?
    Else they are the default glob's, whose files a stone with a longer name can own (``default_owner``)."""
    return guard is not None and guard.artifacts is not DEFAULT_ARTIFACTS


class Stone(NamedTuple):
    """One ``<name>.stone`` file; ``prefix`` is its dotted numeric prefix (``3.1.a`` → ``(3, 1)``)."""

    name: str
    directory: Path  # the route directory (absolute)
    prefix: tuple[int, ...]
    has_guard: bool

    # Paths are derived on demand: building thousands of Path objects up front is what made listing slow.
    @property
    def path(self) -> Path:
        return self.directory / f"{self.name}.stone"

    @property
    def guard_path(self) -> Path | None:
        return self.directory / f"{self.name}.guard" if self.has_guard else None

    @property
    def sort_key(self) -> tuple[tuple[int, ...], str]:
        return (self.prefix, self.name)


class Route(NamedTuple):
    """A route directory and its stones in driving order."""

    path: Path  # absolute and resolved; used for every file operation
    display: str  # the route as the user named it; used in every path we print
    stones: tuple[Stone, ...]
    state_dir: Path  # path / STATE_DIR: the driver's files (built once: every record's path starts here)
    names: frozenset[str]  # its stones' names (built once: ``default_owner`` asks for thousands of files)

    @classmethod
    def at(cls, path: Path, display: str, stones: tuple[Stone, ...]) -> Route:
        return cls(path, display, stones, path / STATE_DIR, frozenset(stone.name for stone in stones))

    def stone(self, name: str) -> Stone | None:
        for stone in self.stones:
            if stone.name == name:
                return stone
        return None

    def show(self, path: Path) -> str:
        """``path`` (inside the route) as the user would write it: under the route as they named it."""
        text, root = os.fspath(path), os.fspath(self.path)
        if os.sep == "/" and root != "/" and text.startswith(root + "/"):
            shown = text[len(root) + 1 :]  # what relative_to gives, for a path under the route, as a string
        else:
            try:
                shown = path.relative_to(self.path).as_posix()
            except ValueError:
                return str(path)
        if self.display in ("", "."):
            return shown
        return f"{self.display.rstrip('/')}/{shown}"


class Guard(NamedTuple):
    """A parsed ``<name>.guard``: commands are kept exactly as written (substitution happens at run time)."""

    path: Path
    artifacts: tuple[str, ...]  # globs; the default ``$route/<name>*.md`` is filled in by the loader
    reviews: tuple[str, ...]
    judges: tuple[str, ...]
    timeout_s: float = DEFAULT_TIMEOUT_S
    protect: tuple[str, ...] = ()
    inputs: tuple[str, ...] = ()  # globs of files the stone depends on (a plan): in its review-input hash


class ReviewRecord(NamedTuple):
    """A review file under ``.route/``: one review command's stdout for one review-input hash."""

    path: Path
    stone: str
    iteration: int
    position: int  # 1-based place in the guard's ``reviews:`` list
    command: str  # as written in the guard, before substitution
    review_input_hash: str
    status: str  # ok | failed | timeout
    exit_code: int
    duration_s: float
    stdout: str
    stdout_sha256: str
    stderr_tail: str = ""

    @property
    def ok(self) -> bool:
        return self.status == "ok" and self.exit_code == 0


class JudgeRecord(NamedTuple):
    """A judge file under ``.route/``: one judge's verdict for one (review-input, judge-input) hash pair."""

    path: Path
    stone: str
    iteration: int
    pass_number: int
    position: int
    command: str
    review_input_hash: str
    judge_input_hash: str
    status: str  # passed | failed | malfunction
    exit_code: int
    reason: str
    duration_s: float
    stdout: str
    stderr_tail: str = ""

    @property
    def passed(self) -> bool:
        return self.status == "passed"


class Verdict(NamedTuple):
    """What a judge decided: ``passed``, ``failed`` (the caller can fix it) or ``malfunction``."""

    status: str
    reason: str
    output: str = ""  # the judge's full stdout (for built-ins: exactly what route.stone.judge prints)

    @property
    def passed(self) -> bool:
        return self.status == "passed"


class Marker(NamedTuple):
    """``$stone.approved``: who approved which content, and when (only humans write it)."""

    path: Path
    stone: str
    review_input_hash: str
    at: str  # UTC, ISO 8601
    raw: str = ""  # the exact text (its content id is part of the pass key; the manifest is read from it)
    approver_name: str = ""  # who approved (git's author identity)
    approver_email: str = ""

    @property
    def artifacts(self) -> tuple[tuple[str, str], ...]:
        """The artifacts approved, sorted: (path relative to the top-level, content id). Read from ``raw``
        when asked: a marker lists every artifact (hundreds of lines), and most readers need only its hash."""
        return manifest_in(self.raw)

    @property
    def manifest(self) -> dict[str, str]:
        return dict(self.artifacts)


class PassRecord(NamedTuple):
    """``$stone.passed.<key>``: one pass of a stone, named by the hash of everything it covers (the pass key:
    its artifacts, its instructions, its guard and its approval). Never rewritten: a pass for other content
    is another file, so branches that pass stones merge without touching each other's records, and two runs
    that pass the same content write the same bytes."""

    path: Path
    stone: str
    key: str  # 64 hex: ``hashing.pass_key`` of the four inputs below; the name holds its first 16
    review_input_hash: str
    stone_id: str  # content id of ``$stone.stone``
    guard_id: str | None  # content id of ``$stone.guard``; None: no guard
    approval_id: str | None  # content id of ``$stone.approved``; None: no approval marker
    judge_input_hash: str
    files: tuple[str, ...]  # the review and judge files the pass relied on (names under .route/)
    raw: str

    @property
    def artifacts(self) -> tuple[tuple[str, str], ...]:
        """The artifacts passed, sorted: (path relative to the top-level, content id)."""
        return manifest_in(self.raw)

    @property
    def manifest(self) -> dict[str, str]:
        return dict(self.artifacts)

    @property
    def inputs(self) -> dict[str, str]:
        """The guard's ``inputs:`` files the pass covered: path relative to the top-level → content id."""
        return dict(manifest_in(self.raw, "input"))
