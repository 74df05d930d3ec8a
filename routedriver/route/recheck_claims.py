"""``route.verify --recheck``'s first question: which passes are **new claims**, and which REF held.

A stone's pass (the record that holds now) is held by REF only when REF held it *as that stone's pass*: REF's
tree has the record, byte for byte, and at REF the stone's instructions, guard, approval marker and
artifacts (the record's manifest, hashed from REF's blobs into its review-input hash, and no other file of
REF's tree its artifact globs cover; a file a longer stone name's default glob also matches is that stone's,
``model.default_owner``) are the ones it names. Everything else is a new claim, which ``recheck`` runs
again in CI. Any doubt is "new": a recheck too many costs a run, one too few trusts a pass nobody checked.
"""

from __future__ import annotations

import bisect
import os
from collections.abc import Callable, Iterable, Mapping, Sequence

from routedriver import globs
from routedriver.route import hashing, programs, store
from routedriver.route.artifacts import artifact_patterns, input_patterns
from routedriver.route.checks import StoneCheck
from routedriver.route.context import StoneContext
from routedriver.route.load import GUARD_SUFFIX, STONE_SUFFIX
from routedriver.route.model import STATE_DIR, PassRecord, default_owner, writes_globs
from routedriver.route.policy_base import Base


def pass_record(context: StoneContext, key: str) -> PassRecord | None:
    """The stone's pass record for ``key`` as the driver wrote it (None: there is none, or it is not)."""
    path = context.route.state_dir / store.pass_name(context.stone.name, key)
    record = store.read_pass(path, context.stone.name)
    return record if record is not None and record.key == key else None


def _top_patterns(context: StoneContext, *, inputs: bool = False) -> list[str]:
    """The stone's artifact globs (``inputs``: its guard's ``inputs:`` globs) relative to the top-level
    (those outside it cannot name a file of REF); one naming the top-level itself (``./``) is everything
    below it."""
    head = globs.escape(os.fspath(context.base)).rstrip("/") + "/"
    written = input_patterns if inputs else artifact_patterns
    return [
        pattern.removeprefix(head) or globs.GLOBSTAR
        for pattern in written(context.route, context.stone, context.guard, context.base)
        if pattern.startswith(head)
    ]


class Holder:
    """Which passes REF held as the stones' passes (see the module's docstring). Any doubt is "no": a
    recheck too many costs a run, one too few trusts a pass nobody checked."""

    def __init__(
        self, base: Base, passed: Sequence[tuple[StoneCheck, StoneContext, PassRecord | None]]
    ) -> None:
        self.base = base
        # REF's files for every pass that may be held: the artifacts its record names and the directories its
        # globs cover (one more ``git ls-tree`` with ``--route``; nothing with ``--all``, which lists all).
        paths: set[str] = set()
        patterns: set[str] = set()
        for _check, context, record in passed:
            if record is not None:
                paths.update(record.manifest)
                paths.update(record.inputs)
                patterns.update(_top_patterns(context))
                patterns.update(_top_patterns(context, inputs=True))
        if paths or patterns:
            base.ensure([programs.Named(frozenset(paths), frozenset(patterns))])
        self.names = sorted(base.files)

    def held(self, context: StoneContext, record: PassRecord) -> bool:
        base, top = self.base, context.base
        entry = base.files.get(hashing.relative_posix(record.path, top))
        if entry is None or entry.blob != hashing.blob_id(record.path, base.repo.object_format):
            return False
        route_rel = hashing.relative_posix(context.route.path, top)
        prefix = "" if route_rel == "." else route_rel + "/"
        name = context.stone.name
        covered = (
            (prefix + name + STONE_SUFFIX, record.stone_id),
            (prefix + name + GUARD_SUFFIX, record.guard_id),
            (f"{prefix}{STATE_DIR}/{name}.approved", record.approval_id),
        )
        for path, wanted in covered:
            at_base = base.files.get(path)
            if (at_base.blob if at_base is not None else None) != wanted:
                return False
        # Its artifacts (and its guard's inputs:) as REF has them hash to the review input it passed...
        ids: dict[str, str] = {}
        upstream: dict[str, str] = {}
        for found, paths in ((ids, record.manifest), (upstream, record.inputs)):
            for path in paths:
                at_base = base.files.get(path)
                if at_base is None:
                    return False
                found[path] = at_base.blob
        if hashing.review_input_hash(ids, upstream) != record.review_input_hash:
            return False
        # ... and no other file of REF's tree was one of its artifacts or inputs (else it was not the pass
        # there). A file a longer stone name's default glob also matches is that stone's, not this one's.
        others = self._other(_top_patterns(context), ids, _driver_file)
        if not writes_globs(context.guard):
            names = base.directory(route_rel).stones | {name}
            others = [path for path in others if default_owner(path.rpartition("/")[2], names) == name]
        if others:
            return False
        return not self._other(_top_patterns(context, inputs=True), upstream, _records_file)

    def _other(
        self, patterns: Iterable[str], known: Mapping[str, str], skip: Callable[[str], bool]
    ) -> list[str]:
        """REF's files the globs ``patterns`` cover, other than ``known`` and those ``skip`` leaves out."""
        found = []
        for pattern in patterns:
            spec = globs.parse(pattern).cover
            for path in self._starting(_literal_start(spec)):
                if path not in known and not skip(path) and spec.matches(path):
                    found.append(path)
        return found

    def _starting(self, prefix: str) -> list[str]:
        """REF's listed files whose path starts with ``prefix`` (sorted names: one bisection)."""
        names = self.names
        found = []
        for path in names[bisect.bisect_left(names, prefix) :]:
            if not path.startswith(prefix):
                break
            found.append(path)
        return found


def _literal_start(spec: globs.Glob) -> str:
    """The text every path ``spec`` matches starts with: its literal directories and the literal start of
    the next component (``route/1.vision`` of ``route/1.vision*.md``); the whole path for a literal glob."""
    head, rest = spec.head, spec.rest
    if rest is None:
        return head
    lead = globs.literal_prefix(rest.parts[0]) if rest.parts else ""
    return f"{head}/{lead}" if head not in ("", ".") else lead


def _driver_file(path: str) -> bool:
    """Never an artifact: a stone, a guard, a file under a ``.route/``."""
    return path.endswith((STONE_SUFFIX, GUARD_SUFFIX)) or _records_file(path)


def _records_file(path: str) -> bool:
    """Never an input: a file under a ``.route/``."""
    return STATE_DIR in path.split("/")
