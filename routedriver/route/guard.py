"""Evaluate a stone's guard: reviews (in parallel), then judges, reusing every result whose inputs match.

Held under the stone's lock from start to end, so two evaluations of one stone never run the same review
twice: the second waits, then finds the first one's files and reuses them.
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Literal, NamedTuple

from routedriver import proc
from routedriver.errors import Malfunction, Refused
from routedriver.route import builtin_judges, hashing, inputs, judges, records, state, store
from routedriver.route.builtin_judges import Reading
from routedriver.route.context import StoneContext
from routedriver.route.model import JudgeRecord, ReviewRecord, Verdict
from routedriver.route.outcome import CommandOutcome
from routedriver.route.subst import environment, substitute
from routedriver.threads import run_all

# Bytes of stdout kept per command: the beginning and the last 64 KiB (where a review's counts are); the
# middle beyond it is counted (stdout_dropped_bytes) and marked in the recorded output.
MAX_OUTPUT = 16 << 20
MAX_PARALLEL_REVIEWS = 32


class ReviewResult(NamedTuple):
    record: ReviewRecord
    reused: bool


class JudgeResult(NamedTuple):
    record: JudgeRecord
    reused: bool


Outcome = Literal["passed", "rejected", "waiting", "malfunction"]


class Evaluation(NamedTuple):
    """What ``route.stone.set --as passed`` decided, with every file it used."""

    stone: str
    # passed; rejected (a judge said no: the robot fixes it); waiting (only judges that need a human, such as
    # approved?, said no: a human approves); malfunction (a review or judge command broke: a human fixes the
    # guard or the tool)
    outcome: Outcome
    review_input_hash: str
    judge_input_hash: str | None  # None when a review malfunctioned and judges did not run
    artifacts: tuple[str, ...]  # relative to the git top-level (or cwd)
    reviews: tuple[ReviewResult, ...]
    judges: tuple[JudgeResult, ...]
    marker: Path | None  # the pass record when passed
    problem: str = ""  # malfunction: what broke, naming the command, what it said and its file

    @property
    def failing(self) -> tuple[JudgeResult, ...]:
        return tuple(judge for judge in self.judges if not judge.record.passed)


def _shell() -> str:
    return "bash" if shutil.which("bash") else "sh"


def search_path() -> str:
    """PATH plus this install's bin directory (last), so guards find bhrain, behaviorci and route.stone.*
    from the same install as the driver even when its venv is not activated."""
    current = os.environ.get("PATH", "")
    own = os.path.dirname(sys.executable)
    return current if own in current.split(os.pathsep) else f"{current}{os.pathsep}{own}" if current else own


def _run(
    context: StoneContext, command: str, hash_value: str, timeout_s: float, what: str
) -> proc.ProcResult:
    """Run one review or judge command (``what``: ``review r1`` / ``judge j2``). A command that we stopped
    (Ctrl-C, SIGTERM) has no verdict: whatever it exited with is never recorded, so no later run trusts it
    (a review that traps SIGTERM and prints clean counts would otherwise be reused as a real one)."""
    # $hash is spelled as file names spell it (their first store.SHORT hex digits): one hash, one spelling.
    values = {"route": context.route_arg, "stone": context.stone.name, "hash": hash_value[: store.SHORT]}
    text = substitute(command, values)
    result = proc.run(
        text if context.jail is None else context.jail(text),
        shell=_shell() if context.jail is None else None,
        cwd=context.base,
        extra_env={**environment(values), "PATH": search_path()},
        timeout=timeout_s,
        max_output=MAX_OUTPUT,
    )
    if result.start_error and context.guard is not None:  # never ran (e.g. too long for execve): no verdict
        where = context.route.show(context.guard.path)
        raise Refused(f"{where}: {what} cannot start: {result.start_error}", "move the command into a script")
    if result.interrupted:
        raise Malfunction(
            f"{context.stone.name}: {what} was stopped before it finished ({command}); nothing was recorded",
            "run the command again",
        )
    return result


def _max_iteration(names: frozenset[str], stone: str) -> int:
    iterations = [entry[0] for entry in store.review_files(names, stone)]
    iterations += [entry[0] for entry in store.judge_files(names, stone)]
    return max(iterations, default=0)


def records_in(context: StoneContext, directory: Path) -> StoneContext:
    """``context`` with the review and judge files of ``run_reviews`` and ``run_judge`` written to
    ``directory`` instead of ``$route/.route/``: the commands run exactly as they would (same working
    directory, ``$route``, ``$stone``, ``$hash``, environment and timeout), and nothing is written into the
    route (``route.verify --recheck`` leaves the checkout as it was). For running commands only: the route's
    own files (its artifacts, its approval marker) are still read through the original context."""
    return context._replace(route=context.route._replace(state_dir=directory))


def run_reviews(
    context: StoneContext, review_input_hash: str, iteration: int, positions: Sequence[int]
) -> dict[int, ReviewRecord]:
    """Run the guard's reviews at ``positions`` (1-based), concurrently, and record each one's output as
    it finishes; ``{position: record}``. Nothing is reused: the caller decided these must run."""
    assert context.guard is not None
    guard = context.guard

    def one(position: int) -> ReviewRecord:
        command = guard.reviews[position - 1]
        result = _run(context, command, review_input_hash, guard.timeout_s, f"review r{position}")
        status = "timeout" if result.timed_out else ("ok" if result.returncode == 0 else "failed")
        extra: list[tuple[str, str | int | float | None]] = []
        if result.stdout_dropped:
            extra.append(("stdout_dropped_bytes", result.stdout_dropped))
        outcome = CommandOutcome(status, result.returncode, result.duration_s, result.stdout, result.stderr)
        # Written only now that the command has finished by itself (_run raises for one we stopped): a
        # killed run leaves no review to trust, with one review or many running in threads.
        return records.write_review(
            context.route, context.stone.name, iteration, position, command, review_input_hash, outcome, extra
        )

    if len(positions) == 1:
        return {positions[0]: one(positions[0])}

    # The one helper for threads: Ctrl-C exits at once (no pool to join), proc stops the commands, and a
    # review that raised lets the others finish writing their records before it is raised here.
    found = run_all(one, positions, workers=MAX_PARALLEL_REVIEWS, name="review")
    return dict(zip(positions, found, strict=True))


_EXIT_OF = {"passed": 0, "failed": 2, "malfunction": 1}


def run_judge(
    context: StoneContext,
    iteration: int,
    pass_number: int,
    position: int,
    review_input_hash: str,
    judge_input_hash: str,
    builtin: Verdict | None,
) -> JudgeRecord:
    """Record one judge's verdict: ``builtin`` (a built-in judge, already decided in-process from the same
    reviews and approval the judge-input hash was made of), else run the judge command."""
    assert context.guard is not None
    command = context.guard.judges[position - 1]
    if builtin is not None:
        verdict = builtin
        outcome = CommandOutcome(verdict.status, _EXIT_OF[verdict.status], 0.0, verdict.output)
    else:
        result = _run(context, command, judge_input_hash, context.guard.timeout_s, f"judge j{position}")
        verdict = judges.parse_verdict(
            result.stdout, result.returncode, result.timed_out, result.stderr, context.guard.timeout_s
        )
        outcome = CommandOutcome(
            verdict.status, result.returncode, result.duration_s, verdict.output, result.stderr
        )
    return records.write_judge(
        context.route,
        context.stone.name,
        iteration,
        pass_number,
        position,
        command,
        review_input_hash,
        judge_input_hash,
        outcome,
        verdict.reason,
    )


def _reusable_judge(
    context: StoneContext,
    names: frozenset[str],
    review_input_hash: str,
    judge_input_hash: str,
    position: int,
    command: str,
    builtin: Verdict | None,
) -> JudgeRecord | None:
    """A judge file to reuse for exactly these inputs: a passed one (a judge is not asked twice what it
    already said yes to), or, for a built-in judge, one with the verdict it gives now (``builtin``): asking
    again while a stone waits for a human must not write a new file each time."""
    for entry in sorted(store.judge_files(names, context.stone.name), reverse=True):
        if (
            entry.position != position
            or entry.review_short != review_input_hash[: store.SHORT]
            or entry.judge_short != judge_input_hash[: store.SHORT]
        ):
            continue
        record = records.read_judge(context.route.state_dir / entry.filename, context.stone.name)
        if (
            record is None
            or record.command != command
            or record.review_input_hash != review_input_hash
            or record.judge_input_hash != judge_input_hash
        ):
            continue
        if builtin is not None:
            if record.status == builtin.status and record.reason == builtin.reason:
                return record
        elif record.passed:
            return record
    return None


def _judge_iteration(
    names: frozenset[str],
    stone: str,
    review_input_hash: str,
    ran_reviews: int | None,
    reviews: Sequence[ReviewRecord],
) -> int:
    if ran_reviews is not None:
        return ran_reviews
    if reviews:
        return max(review.iteration for review in reviews)
    # No reviews at all: an iteration per artifact content, found again by its review-input hash.
    short = review_input_hash[: store.SHORT]
    same_input = [entry.iteration for entry in store.judge_files(names, stone) if entry.review_short == short]
    return max(same_input) if same_input else _max_iteration(names, stone) + 1


def evaluate(
    context: StoneContext, artifacts: Sequence[Path] | None = None, *, rerun: bool = False
) -> Evaluation:
    """Run (or reuse) the stone's reviews and judges and record the outcome. Call under the stone's lock;
    ``artifacts`` saves finding them again when the caller just did; ``rerun`` runs every review again even
    when one already ran on these artifacts (a fixed review command whose old output is still reused).

    Everything a pass binds is hashed from disk (what the reviews read), never taken from git's index."""
    route, stone = context.route, context.stone.name
    if artifacts is None:
        artifacts = inputs.artifacts_or_refuse(context)
    now = state.gather(context, {context.show(path): path for path in artifacts}, from_disk=True)
    _refuse_rewritten(context, now)
    review_input_hash, artifact_names = now.review_input_hash, tuple(sorted(now.artifacts))
    reviews, ran = _reviews(context, review_input_hash, store.list_state(route), rerun=rerun)
    broken = next((review.record for review in reviews if not review.record.ok), None)
    if broken is not None:  # judges do not run on what a broken review did not say
        store.remove_pass(route, stone, now.key)
        problem = _review_problem(context, broken)
        return Evaluation(
            stone, "malfunction", review_input_hash, None, artifact_names, reviews, (), None, problem
        )

    used = [review.record for review in reviews]
    approval = inputs.approval_state(route, stone, content_id=now.approval_id)
    judge_input_hash = inputs.judge_input_hash(review_input_hash, used, approval)
    reading = Reading(context, review_input_hash, now.artifacts, used, approval)
    judged = _judges(context, reading, judge_input_hash, ran)
    outcome = _outcome(judged)
    marker = None
    if outcome == "passed":
        # What the stone passed on (now) and the review and judge files it relied on.
        files = [review.record.path.name for review in reviews] + [judge.record.path.name for judge in judged]
        marker = state.write_pass(route, stone, now, judge_input_hash=judge_input_hash, files=files)
    else:
        store.remove_pass(route, stone, now.key)
    problem = _judge_problem(context, judged) if outcome == "malfunction" else ""
    return Evaluation(
        stone, outcome, review_input_hash, judge_input_hash, artifact_names, reviews, judged, marker, problem
    )


def _refuse_rewritten(context: StoneContext, now: state.StoneInputs) -> None:
    """No pass on a file git checks out as other bytes than it stores (``hashing.rewritten_on_checkout``):
    route.verify would call the stone broken, in CI and here."""
    if context.repo is None:
        return
    stone = context.stone
    ids = {**now.artifacts, **now.inputs, context.show(stone.path): now.stone_id}
    if stone.guard_path is not None and now.guard_id is not None:
        ids[context.show(stone.guard_path)] = now.guard_id
    if now.approval_id is not None:
        ids[context.show(store.approved_path(context.route, stone.name))] = now.approval_id
    rewritten = hashing.rewritten_on_checkout(context.repo, ids, lambda _paths: ids)
    if rewritten:
        path = min(rewritten)
        raise Refused(*hashing.rewritten_line(path, rewritten[path]))


def _reviews(
    context: StoneContext, review_input_hash: str, names: frozenset[str], *, rerun: bool
) -> tuple[tuple[ReviewResult, ...], int | None]:
    """The guard's reviews of these artifacts, by position: each reused where a run of it succeeded on them
    (unless ``rerun``), the others run now, in a new iteration (returned too; None when none ran)."""
    count = len(context.guard.reviews) if context.guard else 0
    used = {} if rerun else inputs.reviews_in_use(context, review_input_hash, names)
    reused = set(used)
    missing = [position for position in range(1, count + 1) if position not in used]
    iteration: int | None = None
    if missing:
        iteration = _max_iteration(names, context.stone.name) + 1
        used.update(run_reviews(context, review_input_hash, iteration, missing))
    return tuple(ReviewResult(used[position], position in reused) for position in sorted(used)), iteration


def _judges(
    context: StoneContext, reading: Reading, judge_input_hash: str, ran: int | None
) -> tuple[JudgeResult, ...]:
    """Every judge of the guard, in order: reused where a file holds its verdict on exactly these inputs,
    else asked (a built-in, on ``reading``) or run, into one new pass of the iteration (``ran``: the one the
    reviews just ran in)."""
    stone, review_input_hash = context.stone.name, reading.review_input_hash
    names = store.list_state(context.route)  # again: reviews that ran wrote their files
    iteration = _judge_iteration(names, stone, review_input_hash, ran, reading.reviews)
    results: list[JudgeResult] = []
    pass_number: int | None = None
    for position, command in enumerate(context.guard.judges if context.guard else (), start=1):
        spec = builtin_judges.parse_builtin(command)
        builtin = spec.verdict(reading) if spec is not None else None
        prior = _reusable_judge(
            context, names, review_input_hash, judge_input_hash, position, command, builtin
        )
        if prior is not None:
            results.append(JudgeResult(prior, True))
            continue
        if pass_number is None:
            passes = [
                entry.pass_number for entry in store.judge_files(names, stone) if entry.iteration == iteration
            ]
            pass_number = max(passes, default=0) + 1
        record = run_judge(
            context, iteration, pass_number, position, review_input_hash, judge_input_hash, builtin
        )
        results.append(JudgeResult(record, False))
    return tuple(results)


def how_it_broke(record: ReviewRecord, timeout_s: float) -> str:
    """``timed out after 60s`` or ``failed with exit 3``: what became of a review that did not succeed."""
    return (
        f"timed out after {timeout_s:g}s"
        if record.status == "timeout"
        else f"failed with exit {record.exit_code}"
    )


def _review_problem(context: StoneContext, broken: ReviewRecord) -> str:
    """One short line: the command and its file are on stdout (route.stone.set lists them), so the line holds
    what the command said and what to do (a missing API key must read as one)."""
    assert context.guard is not None  # reviews are a guard's
    how = how_it_broke(broken, context.guard.timeout_s) + said(broken.stderr_tail)
    return f"{context.stone.name}: review r{broken.position} {how}; {fix_hint(context)}"


def _judge_problem(context: StoneContext, judged: Sequence[JudgeResult]) -> str:
    first = next(judge.record for judge in judged if judge.record.status == "malfunction")
    return (
        f"{context.stone.name}: judge j{first.position} malfunctioned ({first.command}): "
        f"{first.reason}{said(first.stderr_tail)}; {fix_hint(context, rerun=True)}"
    )


def _outcome(results: Sequence[JudgeResult]) -> Outcome:
    statuses = {judge.record.status for judge in results}
    if "malfunction" in statuses:
        return "malfunction"
    failing = [judge.record for judge in results if not judge.record.passed]
    if not failing:
        return "passed"
    if all(builtin_judges.human_judge(record.command) is not None for record in failing):
        return "waiting"  # every other judge said yes: nothing for the robot to fix
    return "rejected"


def said(stderr_tail: str, lines: int = 3) -> str:
    """The last lines a broken command wrote on stderr, for the message on the terminal ("" if none):
    'command not found' or a missing API key must not hide inside a file under .route/. A line that is our
    own tools' ``error: …`` is shown without that word (the message is an error line already)."""
    kept = [line.strip() for line in stderr_tail.splitlines() if line.strip()][-lines:]
    if not kept:
        return ""
    return ": " + " / ".join(line.removeprefix("error: ")[:300] for line in kept)


def fix_hint(context: StoneContext, *, rerun: bool = False) -> str:
    """What a human does about a malfunction: fix the command (in the guard) or what it needs, then run the
    guard again; with ``--rerun`` when a review that finished may be what misled a judge (a finished review
    is otherwise reused; a broken one never is)."""
    guard_path = context.stone.guard_path
    guard = context.show(guard_path) if guard_path is not None else f"{context.stone.name}.guard"
    again = f"then run {context.command_hint('set')} --as passed"
    if rerun:
        again += " (add --rerun to run reviews that already finished again)"
    return f"fix {guard} or what it needs, {again}"
