"""``route.verify --base REF --recheck``: CI runs what a new claim rests on itself, and decides from that.

``route.verify`` alone proves that the records are consistent, fresh and approved; it cannot know what a
review or a shell judge said, so a robot that swapped ``tools/review.py`` (or a judge, or a program on its
PATH) for one that says yes, passed the stone and put the real one back, leaves records that verify. With
``--recheck``, every pass that is a **new claim** is re-derived in CI:

- **New claims.** A stone's pass (the record that holds now) is a new claim unless REF held it *as that
  stone's pass*: REF's tree has the record, byte for byte, and at REF the stone's instructions, guard,
  approval marker and artifacts (the record's manifest, hashed from REF's blobs into its review-input hash,
  and no other file of REF's tree its artifact globs cover) are the ones it names. Such a pass was gated
  when it merged (by induction over the base's history; docs/route-gate.md says what branch protection that
  needs); a record that only rode along (history of a stone whose pass at the time was another one) was
  never checked, so it is new when it becomes the one that holds (``recheck_claims``).
- **Which guard runs** (``Guarded``): REF's (``base``), read from REF's tree when the pull request changed
  it; the current one where a valid human policy approval covers the difference (``approved``); the stone's
  own where the stone is new in the pull request (``own``), only when the base or a human vouches for every
  command it runs: each is a command an unchanged guard of the base runs with the same artifacts, and the
  files they run (guard programs) are the base's; otherwise a human's ``route.policy.approve`` of the
  route, as for any change.
  A guard's programs must be the base's (or approved) for anything to run at all: CI never runs a program
  the pull request wrote, even for a stone that fails policy anyway.
- **Running** goes through ``guard.py``'s own machinery (``run_reviews``: concurrently, as ``set`` runs them;
  ``run_judge``), on the checkout's files, with ``$route``, ``$stone`` and ``$hash`` as ``set`` puts them,
  each command exactly once (nothing is reused: the point is CI's own output), stones concurrently too,
  each under bubblewrap (``recheck_sandbox``: a judge that runs the tests runs code the robot wrote, which
  must not reach the gate). Records go to a temporary directory or ``--recheck-dir``
  (``guard.records_in``), never into the checkout.
- **The verdict** is CI's: ``reviewed?`` counts CI's review output, a shell judge is CI's exit and verdict,
  ``approved?`` is asked again (its marker's provenance is verify's, as always). A stone that does not
  pass is ``rejected`` (which judge, its feedback, and that the local pass said otherwise); a review or judge
  that breaks in CI (a non-zero exit that is no verdict, a timeout, a missing program) is a ``malfunction``:
  not passed either, with the command's last stderr lines.

What runs here is the repository's (its guards and guard programs): see docs/route-gate.md, "Recheck", for
why that is acceptable and what a workflow must do.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Literal, NamedTuple

from routedriver import gitops
from routedriver.errors import Refused
from routedriver.fsutil import realpath, remove_tree
from routedriver.route import builtin_judges, guardfile, hashing, inputs, programs, recheck_sandbox, state
from routedriver.route import guard as guards
from routedriver.route.checks import StoneCheck
from routedriver.route.context import StoneContext
from routedriver.route.load import GUARD_SUFFIX
from routedriver.route.model import JudgeRecord, PassRecord, ReviewRecord
from routedriver.route.policy import PolicyReport, RoutePolicy, approval_now
from routedriver.route.policy_base import Base
from routedriver.route.recheck_claims import Holder, pass_record
from routedriver.route.words import count
from routedriver.threads import run_all

if TYPE_CHECKING:
    from routedriver.route.provenance import Approvers, Provenance
    from routedriver.route.state import Done

Guarded = Literal["base", "approved", "own"]
Outcome = Literal["passed", "rejected", "malfunction", "not-run"]
MAX_PARALLEL_STONES = 8  # stones rechecked at once (each runs its reviews concurrently, as set does)
_GUARD_WORDS: dict[Guarded, str] = {
    "base": "the base's guard",
    "approved": "the guard a human approved",
    "own": "its own guard (new in the pull request)",
}


class Options(NamedTuple):
    """``--recheck`` and its flags."""

    directory: Path | None = None  # --recheck-dir: where the review and judge files go (else a temp dir)
    max_claims: int | None = None  # --recheck-max: more new claims than this is refused before any runs
    sandbox: recheck_sandbox.Mode = "auto"  # --recheck-sandbox: run the commands under bubblewrap


class Ran(NamedTuple):
    """One command CI ran."""

    what: str  # "review r1", "judge j2"
    command: str  # as written in the guard
    status: str  # reviews: ok | failed | timeout; judges: passed | failed | malfunction
    exit_code: int
    seconds: float
    file: str  # its record, relative to the recheck directory


class StoneRecheck(NamedTuple):
    """What recheck made of one passed stone."""

    route: str
    stone: str
    claim: Literal["held", "new"]  # held: REF holds this pass (not run again); new: rechecked
    guard: Guarded | None = None  # new: the guard CI ran
    outcome: Outcome | None = None  # new: what CI's run came to
    status: str = ""  # the stone's status when it does not pass ("" when it does)
    why: str = ""
    ran: tuple[Ran, ...] = ()
    seconds: float = 0.0  # wall time of this stone's recheck

    @property
    def passed(self) -> bool:
        return self.claim == "held" or self.outcome == "passed"


class RecheckReport(NamedTuple):
    base: str  # REF as given
    commit: str
    stones: tuple[StoneRecheck, ...]
    seconds: float  # wall time of the whole recheck
    directory: Path | None  # --recheck-dir, when given (a temporary directory is gone afterwards)
    notice: str = ""  # why the commands ran without a sandbox (--recheck-sandbox auto), for stderr

    @property
    def new(self) -> int:
        return sum(1 for stone in self.stones if stone.claim == "new")

    @property
    def held(self) -> int:
        return sum(1 for stone in self.stones if stone.claim == "held")

    @property
    def rechecked(self) -> int:
        return sum(1 for stone in self.stones if stone.claim == "new" and stone.outcome != "not-run")

    @property
    def commands(self) -> int:
        return sum(len(stone.ran) for stone in self.stones)

    @property
    def command_seconds(self) -> float:
        return sum(ran.seconds for stone in self.stones for ran in stone.ran)

    def summary(self) -> str:
        """``recheck: 2 new claims rechecked against <REF>: 5 commands, 3.1 s; 3 passes held by the base``."""
        if not self.stones:
            return f"recheck: no passes to recheck against {self.commit[:12]}"
        text = (
            f"recheck: {count(self.rechecked, 'new claim')} rechecked against {self.commit[:12]}: "
            f"{count(self.commands, 'command')}, {seconds(self.command_seconds)} "
            f"(wall {seconds(self.seconds)})"
        )
        if self.new > self.rechecked:
            text += f"; {self.new - self.rechecked} not run"
        return text + f"; {count(self.held, 'pass', 'passes')} held by the base"


def seconds(value: float) -> str:
    """``0 s``, ``68 ms``, ``3.1 s``."""
    if value == 0:
        return "0 s"
    return f"{value:.1f} s" if value >= 0.1 else f"{value * 1000:.0f} ms"


class _Plan(NamedTuple):
    """A new claim and how it is rechecked: ``context`` carries the guard to run; or why nothing runs."""

    check: StoneCheck
    context: StoneContext
    guard: Guarded
    refusal: str = ""  # why CI runs nothing for it ("" when it runs)
    refused_status: str = ""  # the stone's status then
    # Are its guard's programs still to be compared with the base's? Not when --base compared them already
    # (an unchanged stone's) or a human's policy approval covers them.
    programs_unchecked: bool = True
    approvers: Approvers | None = None  # who may approve, as verify reads it (--approvers included)
    claimed: str = ""  # the review-input hash of the pass verify found: what CI's run must judge


# ---------------------------------------------------------------- the run


class Claim(NamedTuple):
    """One stone as ``route.verify`` left it: its check (approvals vouched for), context and state."""

    check: StoneCheck
    context: StoneContext | None
    done: Done | None


def run(
    options: Options, base: Base, policy: PolicyReport, claims: Sequence[Claim], provenance: Provenance
) -> RecheckReport:
    """Recheck the passed stones among ``claims`` against REF (``base``, ``policy``: what ``--base``
    found). Refuses before anything runs when ``--recheck-dir`` is unusable or there are more new claims
    than ``--recheck-max``."""
    started = time.monotonic()
    passed: list[tuple[StoneCheck, StoneContext, PassRecord | None]] = []
    claimed: dict[tuple[str, str], str] = {}
    for check, context, done in claims:
        if check.status == "passed" and context is not None and done is not None and done.inputs is not None:
            passed.append((check, context, pass_record(context, done.inputs.key)))
            claimed[(check.route, check.stone)] = done.inputs.review_input_hash
    holder = Holder(base, passed)
    held: list[StoneRecheck] = []
    new: list[tuple[StoneCheck, StoneContext]] = []
    for check, context, record in passed:
        if record is not None and holder.held(context, record):
            held.append(StoneRecheck(check.route, check.stone, "held"))
        else:
            new.append((check, context))
    if options.max_claims is not None and len(new) > options.max_claims:
        raise Refused(
            f"{count(len(new), 'new claim')} to recheck (passes {base.short} does not hold), more than "
            f"--recheck-max {options.max_claims}",
            "recheck fewer passes in one pull request, or raise --recheck-max",
        )
    directory = _prepare(options.directory, base.repo) if options.directory is not None else None
    plans = [
        plan._replace(claimed=claimed[(plan.check.route, plan.check.stone)])
        for plan in _Planner(base, policy, claims, provenance).plans(new)
    ]
    runs = any(not plan.refusal for plan in plans)
    with tempfile.TemporaryDirectory(prefix="route-recheck-") as temporary:
        scratch = Path(temporary) / "tmp"  # what the sandboxed commands wrote: removed with care, first
        try:
            jail = recheck_sandbox.Jail(None)
            if runs:
                jail = recheck_sandbox.prepare(options.sandbox, base.repo, scratch)
            records = directory if directory is not None else Path(temporary) / "records"
            rechecked = _run_plans(plans, records, jail)
        finally:
            remove_tree(scratch)
    by_stone = {(stone.route, stone.stone): stone for stone in (*held, *rechecked)}
    stones = tuple(by_stone[(check.route, check.stone)] for check, _context, _record in passed)
    return RecheckReport(
        base.ref, base.commit, stones, time.monotonic() - started, options.directory, jail.notice
    )


def apply(report: RecheckReport, checks: Sequence[StoneCheck]) -> list[StoneCheck]:
    """``checks`` with recheck's verdicts: a new claim CI's run did not pass fails (``rejected``,
    ``malfunction``, or why CI ran nothing); one it passed says what ran. A stone another check failed
    meanwhile (``policy-changed``) keeps its status, and its line says what recheck found too."""
    found = {(stone.route, stone.stone): stone for stone in report.stones if stone.claim == "new"}
    result = []
    for check in checks:
        rechecked = found.get((check.route, check.stone))
        if rechecked is None:
            result.append(check)
        elif check.status != "passed":
            result.append(check._replace(why=f"{check.why}; {_aside(rechecked)}"))
        elif rechecked.passed:
            result.append(check._replace(why=f"{check.why}; {rechecked.why}"))
        else:
            result.append(check._replace(status=rechecked.status, why=rechecked.why))
    return result


def _aside(rechecked: StoneRecheck) -> str:
    if rechecked.outcome == "passed":
        return f"on recheck it passes {_GUARD_WORDS[rechecked.guard or 'base']} ({rechecked.why})"
    return f"on recheck: {rechecked.why}"


def _prepare(directory: Path, repo: gitops.Repo) -> Path:
    """``--recheck-dir``: outside the checkout (recheck writes nothing into it), new or empty."""
    absolute = Path(os.path.abspath(directory))
    real = Path(realpath(absolute))
    top = Path(realpath(repo.toplevel))
    if real == top or top in real.parents:
        raise Refused(
            f"--recheck-dir {directory} is inside the checkout ({repo.toplevel}); recheck writes nothing "
            "into the checkout",
            "give a directory outside it (in GitHub Actions: under $RUNNER_TEMP)",
        )
    try:
        absolute.mkdir(parents=True, exist_ok=True)
        if any(absolute.iterdir()):
            raise Refused(
                f"--recheck-dir {directory} is not empty",
                "give a new or empty directory for this run's files",
            )
    except OSError as exc:
        raise Refused(
            f"cannot use --recheck-dir {directory}: {exc.strerror or exc}", "give a directory you can write"
        ) from None
    return absolute


def _run_plans(plans: Sequence[_Plan], directory: Path, jail: recheck_sandbox.Jail) -> list[StoneRecheck]:
    if not plans:
        return []

    def one(plan: _Plan) -> StoneRecheck:
        return _recheck(plan._replace(context=plan.context._replace(jail=jail.start)), directory)

    return run_all(one, plans, workers=MAX_PARALLEL_STONES, name="recheck")


# ---------------------------------------------------------------- which guard runs


class _Planner:
    """Decides, for each new claim, the guard CI runs and whether the base or a human vouches for it."""

    def __init__(
        self,
        base: Base,
        policy: PolicyReport,
        claims: Sequence[Claim],
        provenance: Provenance,
    ) -> None:
        self.base = base
        self.routes: dict[str, RoutePolicy] = {route.route: route for route in policy.routes}
        self.claims = claims
        self.provenance = provenance
        self._known: frozenset[tuple[str, tuple[str, ...]]] | None = None
        self._approvals: dict[str, str] = {}  # route → why its policy approval does not vouch ("" it does)

    def plans(self, new: Sequence[tuple[StoneCheck, StoneContext]]) -> list[_Plan]:
        plans = [
            plan._replace(approvers=self.provenance.approvers(plan.context.route))
            for plan in (self._plan(check, context) for check, context in new)
        ]
        return self._programs_vouched(plans)

    def _plan(self, check: StoneCheck, context: StoneContext) -> _Plan:
        route = self.routes.get(check.route)
        if route is None or route.problem:
            why = "not rechecked: its route's definitions cannot be compared with the base"
            return _Plan(check, context, "base", why, "broken")
        at_base = self.base.directory(check.route).stones if route.state != "added" else set()
        if check.stone not in at_base:
            return self._new_stone(check, context, route)
        changed = any(change.stone == check.stone for change in route.changes)
        if not changed:  # its guard and the programs it runs are the base's, byte for byte
            return _Plan(check, context, "base", programs_unchecked=False)
        if route.accepted:
            return _Plan(check, context, "approved", programs_unchecked=False)
        return self._base_guard(check, context)

    def _base_guard(self, check: StoneCheck, context: StoneContext) -> _Plan:
        """A stone whose definitions changed without a human's approval (it is policy-changed anyway): CI
        runs the guard REF defines, read from REF's tree."""
        prefix = "" if check.route == "." else check.route + "/"
        entry = self.base.files.get(prefix + check.stone + GUARD_SUFFIX)
        if entry is None:
            return _Plan(check, context._replace(guard=None), "base")
        shown = f"{prefix}{check.stone}{GUARD_SUFFIX} at {self.base.short}"
        raw = gitops.blob_bytes(self.base.repo, entry.blob)
        try:
            if raw is None:
                raise Refused(f"cannot read {shown} from git", "fetch the base's history")
            path = context.stone.guard_path or context.route.path / (check.stone + GUARD_SUFFIX)
            guard = guardfile.parse_guard(raw.decode("utf-8"), path, shown, check.stone)
        except (Refused, UnicodeDecodeError) as exc:
            what = exc.line().removeprefix("error: ") if isinstance(exc, Refused) else "it is not UTF-8"
            return _Plan(
                check, context, "base", f"not rechecked: the base's guard cannot be read: {what}", "broken"
            )
        return _Plan(check, context._replace(guard=guard), "base")

    def _new_stone(self, check: StoneCheck, context: StoneContext, route: RoutePolicy) -> _Plan:
        """A stone the pull request adds runs its own guard, when the base or a human vouches for every
        command in it: each is a command an unchanged guard of the base runs (its programs are compared
        later), or the route's policy approval covers the current definitions."""
        # A command is vouched for with the artifacts it is run with: which of the files it names are what it
        # judges (its stone's artifacts, never compared with the base) and which are what it runs depends on
        # them, and a pull request that declared the base's program an artifact of its new stone would have
        # CI run its own version of that program.
        artifacts = context.guard.artifacts if context.guard is not None else ()
        unknown = [
            command
            for command in builtin_judges.shell_commands(context.guard)
            if (command, artifacts) not in self.known()
        ]
        # The base's commands, copied under a new name, judge the base stone's files unless they name $stone.
        elsewhere = not builtin_judges.judges_its_own(context.guard)
        if not unknown and not elsewhere:
            return _Plan(check, context, "own")
        if route.accepted and route.approval is not None and route.approval.ok:
            return _Plan(check, context, "approved", programs_unchecked=False)
        problem = self._approval(check.route, context)
        if not problem:
            return _Plan(check, context, "approved", programs_unchecked=False)
        if not unknown:
            runs = (
                "runs the base's commands, which do not name $stone where its artifacts do (they judge "
                "another stone's files)"
            )
        elif any(command == unknown[0] for command, _artifacts in self.known()):
            runs = f"runs {unknown[0]!r} with artifacts no guard of the base that runs it has"
        else:
            runs = f"runs {unknown[0]!r}, a command no guard of the base runs"
        why = (
            f"not rechecked: its guard is new in the pull request and {runs} ({problem}); CI runs only what "
            "the base or a human vouches for: write its commands and artifacts as the base's guards do "
            f"(with $route and $stone), or a human runs route.policy.approve --route {check.route}"
        )
        return _Plan(check, context, "own", why, "policy-changed")

    def known(self) -> frozenset[tuple[str, tuple[str, ...]]]:
        """The commands REF's guards run, each with its guard's artifacts, as the unchanged guards here show
        them (byte for byte REF's)."""
        if self._known is None:
            found: set[tuple[str, tuple[str, ...]]] = set()
            for check, context, _done in self.claims:
                route = self.routes.get(check.route)
                if context is None or route is None or route.state != "compared":
                    continue
                if check.stone not in self.base.directory(check.route).stones:
                    continue
                if any(change.stone == check.stone for change in route.changes):
                    continue
                if context.guard is not None:
                    found.update(
                        (command, context.guard.artifacts)
                        for command in builtin_judges.shell_commands(context.guard)
                    )
            self._known = frozenset(found)
        return self._known

    def _approval(self, route_name: str, context: StoneContext) -> str:
        """Why the route's policy approval does not vouch for its current definitions ("" when it does)."""
        if route_name not in self._approvals:
            found = approval_now(self.base, context.route, self.provenance)
            self._approvals[route_name] = (
                "and no policy approval covers it" if found is None else "" if found.ok else found.why
            )
        return self._approvals[route_name]

    def _programs_vouched(self, plans: list[_Plan]) -> list[_Plan]:
        """Nothing runs a program the pull request wrote: each guard program of a plan on the base's guard
        or its own must be the base's, byte for byte; one a human's policy approval covers may differ. The
        programs are what the commands name among the files git tracks now and among REF's (as
        ``route.policy`` compares them): a program REF has that is no tracked file now (its directory became
        a symlink to the pull request's own) is not the base's either."""
        named: dict[int, programs.Named] = {}
        for index, plan in enumerate(plans):
            context = plan.context
            if plan.refusal or not plan.programs_unchecked or context.guard is None:
                continue
            named[index] = programs.stone_names(
                context.route, context.stone, context.guard, self.base.repo.toplevel
            )
        if not named:
            return plans
        tracked = programs.tracked(self.base.repo, named.values())
        self.base.ensure(named.values(), tracked.inside.values())
        wanted = {
            index: sorted(tracked.resolve(names) | names.resolve(self.base.files))
            for index, names in named.items()
        }
        present = tracked.files | set(tracked.inside.values())
        now = programs.identities(
            self.base.repo, sorted({path for paths in wanted.values() for path in paths if path in present})
        )
        result = list(plans)
        for index, paths in wanted.items():
            for path in paths:
                at_base = self.base.program(path)
                if at_base is not None and programs.base_identity(at_base) == now.get(path):
                    continue
                plan = plans[index]
                how = "added" if at_base is None else "changed" if path in now else "removed"
                why = (
                    f"not rechecked: {path}, a program {_GUARD_WORDS[plan.guard]} runs, is {how} since "
                    f"{self.base.short}; CI does not run a program the pull request wrote (a human runs "
                    f"route.policy.approve --route {plan.check.route})"
                )
                result[index] = plan._replace(refusal=why, refused_status="policy-changed")
                break
        return result


# ---------------------------------------------------------------- one stone


def _recheck(plan: _Plan, directory: Path) -> StoneRecheck:
    started = time.monotonic()
    check, context = plan.check, plan.context

    def finished(outcome: Outcome, why: str, status: str = "", ran: Sequence[Ran] = ()) -> StoneRecheck:
        return StoneRecheck(
            check.route,
            check.stone,
            "new",
            plan.guard,
            outcome,
            status,
            why,
            tuple(ran),
            time.monotonic() - started,
        )

    if plan.refusal:
        return finished("not-run", plan.refusal, plan.refused_status)
    guard = context.guard
    words = _GUARD_WORDS[plan.guard]
    try:
        now = _gather(context)
    except Refused as exc:
        why = f"failed on recheck with {words}: {exc.line().removeprefix('error: ')}"
        return finished("rejected", why, "rejected")
    # The files must be the ones the pass binds before CI's run and still be after it: a command CI runs
    # for another stone at the same time (one that loads code from the checkout) could change them.
    if now.review_input_hash != plan.claimed:
        return finished("rejected", _changed("before"), "broken")
    if guard is None or not (guard.reviews or guard.judges):
        return finished("passed", f"rechecked with {words}: nothing to run")
    out = guards.records_in(context, directory / check.route if check.route != "." else directory)
    review_input_hash = now.review_input_hash
    ran: list[Ran] = []
    reviews: dict[int, ReviewRecord] = {}
    if guard.reviews:
        try:
            reviews = guards.run_reviews(out, review_input_hash, 1, range(1, len(guard.reviews) + 1))
        except Refused as exc:  # a command too long to start at all
            return finished("malfunction", _broke(exc.line().removeprefix("error: ")), "malfunction")
    ordered = [reviews[position] for position in sorted(reviews)]
    ran += [_ran(f"review r{review.position}", review, directory) for review in ordered]
    broken = next((review for review in ordered if not review.ok), None)
    if broken is not None:
        how = guards.how_it_broke(broken, guard.timeout_s) + guards.said(broken.stderr_tail)
        what = f"review r{broken.position} ({broken.command}) {how}"
        return finished("malfunction", _broke(what), "malfunction", ran)
    approval = inputs.approval_state(context.route, check.stone, content_id=now.approval_id)
    judge_input_hash = inputs.judge_input_hash(review_input_hash, ordered, approval)
    # The built-in judges are asked again, on CI's own reviews.
    reading = builtin_judges.Reading(
        context, review_input_hash, now.artifacts, ordered, approval, plan.approvers
    )
    verdicts: list[JudgeRecord] = []
    for position, command in enumerate(guard.judges, start=1):
        spec = builtin_judges.parse_builtin(command)
        builtin = spec.verdict(reading) if spec is not None else None
        try:
            record = guards.run_judge(out, 1, 1, position, review_input_hash, judge_input_hash, builtin)
        except Refused as exc:
            return finished("malfunction", _broke(exc.line().removeprefix("error: ")), "malfunction", ran)
        verdicts.append(record)
        if spec is None:
            ran.append(_ran(f"judge j{position}", record, directory))
    failing = next((record for record in verdicts if record.status == "malfunction"), None)
    if failing is not None:
        what = (
            f"judge j{failing.position} ({failing.command}) broke: {failing.reason}"
            f"{guards.said(failing.stderr_tail)}"
        )
        return finished("malfunction", _broke(what), "malfunction", ran)
    failing = next((record for record in verdicts if not record.passed), None)
    if failing is not None:
        why = (
            f"failed on recheck: judge j{failing.position} ({failing.command}) said no: {failing.reason}; "
            f"the local pass said passed, but CI's own run of {words} on these files does not"
        )
        return finished("rejected", why, "rejected", ran)
    try:
        after = _gather(context).review_input_hash
    except Refused:
        after = ""
    if after != plan.claimed:
        return finished("rejected", _changed("while"), "broken", ran)
    spent = sum(each.seconds for each in ran)
    return finished(
        "passed", f"rechecked with {words}: {count(len(ran), 'command')} ran ({seconds(spent)})", ran=ran
    )


def _gather(context: StoneContext) -> state.StoneInputs:
    """The stone's inputs as they are on disk now (its artifacts listed again)."""
    artifacts = inputs.artifacts_or_refuse(context)
    return state.gather(context, {context.show(path): path for path in artifacts}, from_disk=True)


def _changed(when: Literal["before", "while"]) -> str:
    return (
        f"its files changed {when} CI rechecked it: what CI's run judged is not what the pass binds (a "
        "command CI ran wrote into the checkout; guard programs must only read it)"
    )


def _broke(what: str) -> str:
    return (
        f"recheck broke: {what}; CI could not re-derive the pass, so it is not passed (fix what the command "
        "needs in CI: its program, a credential; or its guard)"
    )


def _ran(what: str, record: ReviewRecord | JudgeRecord, directory: Path) -> Ran:
    return Ran(
        what,
        record.command,
        record.status,
        record.exit_code,
        record.duration_s,
        hashing.relative_posix(record.path, directory),
    )
