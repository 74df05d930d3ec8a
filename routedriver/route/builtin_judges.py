"""The built-in judges, as data: one ``Builtin`` entry each in ``BUILTINS``, from which every part of the
driver that knows a built-in judge takes what it needs.

A built-in judge is a judge line in the driver's own syntax (a name ending in ``?``, then its flags), decided
in-process from the inputs the stone's judge-input hash is made of; it runs no command. An entry holds:

- ``name`` and ``summary``: ``route.stone.judge --mechanism``'s choices and help, ``route.mcp``'s
  ``route_judge`` tool (its enum and description);
- ``flags``: each a whole number ≥ 0 with its default (None: no limit); a guard's judge line is read by them
  (``parse_builtin``: ``guardfile``, ``route.lint``), and they are ``route.stone.judge``'s options and
  ``route_judge``'s arguments;
- ``reads``: which judge inputs it reads (``JUDGE_INPUTS``: the reviews in use, the approval marker). The
  judge-input hash covers every one of them for every stone (``inputs.judge_input_hash``), so a judge is asked
  again when what it reads changes; a guard with a judge that reads reviews must list reviews
  (``guardfile``), and ``route.stone.judge`` gathers only what the judge reads;
- ``needs_human``: a no from it waits for a human, not the robot: the stone is a human gate (``gated``:
  ``route.stone.set`` refuses a symlinked artifact, ``route.stone.del`` keeps the stone, ``route.drive``
  offers the approve command, ``route.verify`` says an unpassed one waits for approval), and when only such
  judges say no the stone is ``waiting``, not ``rejected`` (``guard``, ``route.drive``, ``route.stone.set``'s
  report, ``route_judge``);
- ``verify_as``: what ``route.verify``, which asks every built-in of a pass again, calls a recorded yes that
  it does not give now: ``forged`` for a judge whose verdict is a function of what the judge-input hash binds
  (the record cannot be its own), ``unapproved`` for one that also depends on what the hash does not bind
  (who may approve, whether an artifact became a symlink);
- ``verdict``: its function, called with a ``Reading`` and its flags as keyword arguments, by
  ``route.stone.set`` (``guard``), ``route.verify``, ``route.verify --recheck`` (on CI's own reviews) and
  ``route.stone.judge`` alike.

Adding a built-in judge is an entry here and its function. This module is imported by ``route.mcp``'s
handshake, which lists the judges before the driver loads: a judge's function imports what it needs when it
is asked (``judges``: ~8 ms of regular expressions and their modules).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Literal, NamedTuple

from routedriver.errors import Refused

if TYPE_CHECKING:
    from routedriver.route.context import ApprovalState, StoneContext
    from routedriver.route.model import Guard, ReviewRecord, Verdict
    from routedriver.route.provenance import Approvers

JudgeInput = Literal["reviews", "approval"]
# What the judge-input hash covers, in its order (``hashing.judge_input_hash``): every input a judge reads.
JUDGE_INPUTS: tuple[JudgeInput, ...] = ("reviews", "approval")


class Flag(NamedTuple):
    """A flag of a built-in judge's line (``--allow-blockers 1`` or ``--allow-blockers=1``): a whole number
    ≥ 0."""

    flag: str  # "--allow-blockers"
    help: str  # what it sets, with its default: route.stone.judge's --help, route_judge's schema
    default: int | None  # its value when the line leaves it out; None: no limit

    @property
    def keyword(self) -> str:
        """``allow_blockers``: the verdict function's keyword, route.stone.judge's and route_judge's name."""
        return self.flag.removeprefix("--").replace("-", "_")


class Reading(NamedTuple):
    """What a built-in judge reads of a stone: the inputs its judge-input hash is made of, as the caller
    gathered them, and what it may need besides (the stone itself, who may approve)."""

    context: StoneContext
    review_input_hash: str
    artifacts: Mapping[str, str]  # the artifacts as they are now: path relative to the top-level → content id
    reviews: Sequence[ReviewRecord]  # the guard's reviews in use, by position (empty unless it reads reviews)
    approval: ApprovalState  # the approval marker as it is now
    approvers: Approvers | None = None  # who may approve, when the caller has them (else looked up if needed)


class Builtin(NamedTuple):
    """One built-in judge (see the module's docstring for what each part drives)."""

    name: str  # "reviewed?"
    summary: str  # what it says, after its name: "reads the latest reviews' blocker and nitpick counts"
    flags: tuple[Flag, ...]
    reads: tuple[JudgeInput, ...]
    needs_human: bool
    verify_as: Literal["forged", "unapproved"]
    verdict: Callable[..., Verdict]  # (reading: Reading, *, <each flag's keyword>: int | None) -> Verdict


class BuiltinJudge(NamedTuple):
    """A built-in judge line, read: the judge it names and the value of each of its flags (the flag's default
    where the line leaves it out), in the judge's order."""

    judge: Builtin
    values: tuple[tuple[str, int | None], ...] = ()  # (keyword, value)

    @property
    def name(self) -> str:
        return self.judge.name

    def verdict(self, reading: Reading) -> Verdict:
        return self.judge.verdict(reading, **dict(self.values))


class JudgeSpecError(ValueError):
    """A guard's built-in judge is written wrong; the message says what to fix."""


# ---------------------------------------------------------------- the judges


def reviewed(reading: Reading, *, allow_blockers: int | None, allow_nitpicks: int | None) -> Verdict:
    """The blockers and nitpicks of the reviews in use, summed, held to the thresholds."""
    # the judges' work: only when asked (route.mcp's handshake reads this table)
    from routedriver.route import judges

    return judges.reviewed(reading.reviews, reading.context.show, allow_blockers or 0, allow_nitpicks)


def approved(reading: Reading) -> Verdict:
    """A human the approvers file lists approved the stone's artifacts as they are now."""
    # the approvals' reader: only when asked (see reviewed)
    from routedriver.route import human_gate

    return human_gate.verdict(
        reading.context, reading.approval, reading.review_input_hash, reading.artifacts, reading.approvers
    )


REVIEWED = Builtin(
    name="reviewed?",
    summary="reads the latest reviews' blocker and nitpick counts",
    flags=(
        Flag("--allow-blockers", "blockers allowed (default 0).", 0),
        Flag("--allow-nitpicks", "nitpicks allowed (default: any number).", None),
    ),
    reads=("reviews",),
    needs_human=False,
    verify_as="forged",
    verdict=reviewed,
)
APPROVED = Builtin(
    name="approved?",
    summary="says whether a human approved the current artifacts",
    flags=(),
    reads=("approval",),
    needs_human=True,
    verify_as="unapproved",
    verdict=approved,
)
# In the order commands list them. Read at each use (not copied at import), so a judge added to it is known
# everywhere at once.
BUILTINS: tuple[Builtin, ...] = (REVIEWED, APPROVED)


# ---------------------------------------------------------------- reading judge lines


def named(name: str) -> Builtin | None:
    """The built-in judge called ``name``, or None."""
    return next((judge for judge in BUILTINS if judge.name == name), None)


def names() -> str:
    """``approved?, reviewed?``: the built-ins, as refusals list them."""
    return ", ".join(sorted(judge.name for judge in BUILTINS))


def first_word(command: str) -> str:
    """A judge line's first word: the built-in judge it names (``reviewed?``, ``approved?``), or, for a shell
    judge, what messages show it by. A built-in judge line is the driver's own syntax, not shell (its name,
    then its flags, separated by blanks; no quoting), so it is split at blanks here; a shell judge's text is
    only ever run, or read with ``shellsyntax``."""
    parts = command.split(None, 1)
    return parts[0] if parts else ""


def is_builtin(command: str) -> bool:
    """Is the judge line written in the built-ins' syntax (its first word ends in ``?``)? Such a line runs
    nothing: a guard that loaded names a known judge with it."""
    return first_word(command).endswith("?")


def human_judge(command: str) -> Builtin | None:
    """The built-in judge the line names, when it is one that needs a human."""
    judge = named(first_word(command))
    return judge if judge is not None and judge.needs_human else None


def gate_of(guard: Guard | None) -> Builtin | None:
    """The guard's first judge that needs a human (its human gate), or None."""
    for command in guard.judges if guard is not None else ():
        judge = human_judge(command)
        if judge is not None:
            return judge
    return None


def gated(guard: Guard | None) -> bool:
    """Does the guard have a human gate (a judge that needs a human, such as ``approved?``)?"""
    return gate_of(guard) is not None


def shell_commands(guard: Guard | None) -> list[str]:
    """The commands a guard runs: its reviews and shell judges (the built-in judges run nothing)."""
    if guard is None:
        return []
    return [*guard.reviews, *(judge for judge in guard.judges if parse_builtin(judge) is None)]


def judges_its_own(guard: Guard | None) -> bool:
    """Would a copy of this guard, under another stone's name, judge that stone's files? Where its artifact
    globs name the stone (``$stone``: the default ``$route/${stone}*.md`` does) every command it runs must
    name it too: ``bhrain review $route/1.vision.md`` copied to ``4.notes`` reviews 1.vision's file, while
    ``4.notes.md`` is what the copy's pass binds. A guard whose globs do not name the stone binds the same
    files under any name, judged the same way."""
    from routedriver.route.model import DEFAULT_ARTIFACTS, VARIABLE

    def names_stone(text: str) -> bool:
        return any("stone" in (match[1], match[2]) for match in VARIABLE.finditer(text))

    artifacts = guard.artifacts if guard is not None else DEFAULT_ARTIFACTS
    if not any(names_stone(pattern) for pattern in artifacts):
        return True
    return all(names_stone(command) for command in shell_commands(guard))


@lru_cache(maxsize=256)
def parse_builtin(command: str) -> BuiltinJudge | None:
    """The built-in judge ``command`` names, with its flags' values; None for a shell command;
    JudgeSpecError when misspelled.

    Cached: a pure function of the text, asked for every judge of every guard (route.verify reads them all,
    and most guards share the same few judges)."""
    name = first_word(command)
    if not name.endswith("?"):
        return None
    judge = named(name)
    if judge is None:
        raise JudgeSpecError(f"unknown judge mechanism {name!r}; built-ins: {names()}")
    words = command.split()[1:]  # the driver's syntax: flags separated by blanks (see first_word)
    by_flag = {flag.flag: flag for flag in judge.flags}
    given: dict[str, int] = {}
    while words:
        word = words.pop(0)
        text, equals, value = word.partition("=")
        flag = by_flag.get(text)
        if flag is None:
            usage = ", ".join(f"{flag.flag} N" for flag in judge.flags) or "no flags"
            raise JudgeSpecError(f"{name}: unknown flag {word!r}; allowed: {usage}")
        if not equals:
            if not words:
                raise JudgeSpecError(f"{name}: {text} needs a number; write {text} 0")
            value = words.pop(0)
        if not (value.isascii() and value.isdigit()):
            raise JudgeSpecError(f"{name}: {text} {value!r} is not a whole number ≥ 0; write {text} 0")
        given[flag.keyword] = int(value)
    return BuiltinJudge(
        judge, tuple((flag.keyword, given.get(flag.keyword, flag.default)) for flag in judge.flags)
    )


def asked(name: str, values: Mapping[str, int | None]) -> BuiltinJudge:
    """The judge ``route.stone.judge --mechanism NAME`` (or ``route_judge``) asks for, with the flags given
    (``values`` by keyword; None: not given, the default then). Refuses an unknown judge, and a flag given
    that belongs to another judge."""
    judge = named(name)
    if judge is None:
        raise Refused(f"unknown judge mechanism {name!r}", f"built-ins: {names()}")
    mine = {flag.keyword for flag in judge.flags}
    stray = {keyword for keyword, value in values.items() if value is not None and keyword not in mine}
    if stray:
        owners = [other for other in BUILTINS if any(flag.keyword in stray for flag in other.flags)]
        shown = [flag.flag for other in owners for flag in other.flags] or sorted(stray)
        verb, pronoun = ("applies", "it") if len(shown) == 1 else ("apply", "them")
        whose = " and ".join(other.name for other in owners) or "no built-in judge"
        raise Refused(f"{' and '.join(shown)} {verb} only to {whose}", f"drop {pronoun}")
    return BuiltinJudge(
        judge,
        tuple(
            (flag.keyword, flag.default if values.get(flag.keyword) is None else values[flag.keyword])
            for flag in judge.flags
        ),
    )
