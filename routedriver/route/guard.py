"""Evaluate a stone's guard: reviews (in parallel), then judges, reusing every result whose inputs match.

Held under the stone's lock from start to end, so two evaluations of one stone never run the same review
twice: the second waits, then finds the first one's files and reuses them.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from routedriver import proc
from routedriver.errors import Malfunction, Refused
from routedriver.route import inputs, judges, records, store
from routedriver.route.inputs import ApprovalState, StoneContext
from routedriver.route.model import JudgeRecord, ReviewRecord
from routedriver.route.outcome import CommandOutcome
from routedriver.route.subst import environment, substitute

# Bytes of stdout kept per command: the beginning and the last 64 KiB (where a review's counts are); the
# middle beyond it is counted (stdout_dropped_bytes) and marked in the recorded output.
MAX_OUTPUT = 16 << 20
MAX_PARALLEL_REVIEWS = 32


@dataclass(frozen=True)
class ReviewResult:
    record: ReviewRecord
    reused: bool


@dataclass(frozen=True)
class JudgeResult:
    record: JudgeRecord
    reused: bool


@dataclass(frozen=True)
class Evaluation:
    """What ``route.stone.set --as passed`` decided, with every file it used."""

    stone: str
    outcome: str  # passed | rejected | malfunction
    review_input_hash: str
    judge_input_hash: str | None  # None when a review malfunctioned and judges did not run
    artifacts: tuple[str, ...]  # relative to the git top-level (or cwd)
    reviews: tuple[ReviewResult, ...]
    judges: tuple[JudgeResult, ...]
    marker: Path | None  # the .passed marker when passed
    problem: str = ""  # malfunction: what broke, naming the command and its file

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
    values = {"route": context.route_arg, "stone": context.stone.name, "hash": hash_value}
    result = proc.run(
        substitute(command, values),
        shell=_shell(),
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


def _run_reviews(
    context: StoneContext, review_input_hash: str, iteration: int, positions: Sequence[int]
) -> dict[int, ReviewRecord]:
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
    import threading

    # Daemon threads rather than a pool: on Ctrl-C the driver exits at once instead of waiting for every
    # review to finish (a pool's threads are joined at interpreter exit).
    slots = threading.BoundedSemaphore(MAX_PARALLEL_REVIEWS)
    results: dict[int, ReviewRecord] = {}
    errors: list[BaseException] = []

    def work(position: int) -> None:
        with slots:
            try:
                results[position] = one(position)
            except BaseException as exc:  # re-raised in the calling thread below
                errors.append(exc)

    threads = [
        threading.Thread(target=work, args=(position,), name=f"review-r{position}", daemon=True)
        for position in positions
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if errors:
        raise errors[0]
    return results


_EXIT_OF = {"passed": 0, "failed": 2, "malfunction": 1}


def _judge(
    context: StoneContext,
    iteration: int,
    pass_number: int,
    position: int,
    review_input_hash: str,
    judge_input_hash: str,
    reviews: Sequence[ReviewRecord],
    approval: ApprovalState,
    manifest: dict[str, str],
) -> JudgeRecord:
    assert context.guard is not None
    command = context.guard.judges[position - 1]
    spec = judges.parse_builtin(command)
    if spec is not None:
        # In-process, from the same snapshot of reviews and approval that the judge-input hash was made of.
        started = time.monotonic()
        verdict = inputs.builtin_verdict(context, spec, reviews, approval, review_input_hash, manifest)
        outcome = CommandOutcome(
            verdict.status, _EXIT_OF[verdict.status], time.monotonic() - started, verdict.output
        )
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
) -> JudgeRecord | None:
    for entry in sorted(store.judge_files(names, context.stone.name), reverse=True):
        _iteration, _pass, review_short, judge_short, at, filename = entry
        if at != position or review_short != review_input_hash[:16] or judge_short != judge_input_hash[:16]:
            continue
        record = records.read_judge(context.route.state_dir / filename, context.stone.name)
        if (
            record is not None
            and record.passed
            and record.command == command
            and record.review_input_hash == review_input_hash
            and record.judge_input_hash == judge_input_hash
        ):
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
    same_input = [entry[0] for entry in store.judge_files(names, stone) if entry[2] == review_input_hash[:16]]
    return max(same_input) if same_input else _max_iteration(names, stone) + 1


def evaluate(context: StoneContext, artifacts: Sequence[Path] | None = None) -> Evaluation:
    """Run (or reuse) the stone's reviews and judges and record the outcome. Call under the stone's lock;
    ``artifacts`` saves finding them again when the caller just did."""
    route, stone, guard = context.route, context.stone.name, context.guard
    if artifacts is None:
        artifacts = inputs.artifacts_or_refuse(context)
    review_input_hash, ids = inputs.review_input(context, artifacts)
    names = store.list_state(route)
    commands = guard.reviews if guard else ()

    used = inputs.reviews_in_use(context, review_input_hash, names)
    reused_positions = set(used)
    missing = [position for position in range(1, len(commands) + 1) if position not in used]
    ran_iteration: int | None = None
    if missing:
        ran_iteration = _max_iteration(names, stone) + 1
        used.update(_run_reviews(context, review_input_hash, ran_iteration, missing))
    reviews = tuple(ReviewResult(used[position], position in reused_positions) for position in sorted(used))
    artifact_names = tuple(sorted(ids.ids))

    broken = [review.record for review in reviews if not review.record.ok]
    if broken:
        first = broken[0]
        how = (
            f"timed out after {guard.timeout_s:g}s"
            if guard and first.status == "timeout"
            else f"failed with exit {first.exit_code}"
        )
        problem = f"{stone}: review r{first.position} {how} ({first.command}); see {route.show(first.path)}"
        _drop_stale_marker(context, review_input_hash, always=False)
        return Evaluation(
            stone, "malfunction", review_input_hash, None, artifact_names, reviews, (), None, problem
        )

    review_records = [review.record for review in reviews]
    approval = inputs.approval_state(route, stone)
    judge_input_hash = inputs.judge_input_hash(review_input_hash, review_records, approval)
    names = store.list_state(route)
    iteration = _judge_iteration(names, stone, review_input_hash, ran_iteration, review_records)
    judge_results: list[JudgeResult] = []
    pass_number: int | None = None
    for position, command in enumerate(guard.judges if guard else (), start=1):
        prior = _reusable_judge(context, names, review_input_hash, judge_input_hash, position, command)
        if prior is not None:
            judge_results.append(JudgeResult(prior, True))
            continue
        if pass_number is None:
            passes = [entry[1] for entry in store.judge_files(names, stone) if entry[0] == iteration]
            pass_number = max(passes, default=0) + 1
        record = _judge(
            context,
            iteration,
            pass_number,
            position,
            review_input_hash,
            judge_input_hash,
            review_records,
            approval,
            ids.ids,
        )
        judge_results.append(JudgeResult(record, False))

    statuses = {judge.record.status for judge in judge_results}
    outcome = "malfunction" if "malfunction" in statuses else "rejected" if "failed" in statuses else "passed"
    marker = None
    problem = ""
    if outcome == "passed":
        files = [review.record.path.name for review in reviews] + [
            judge.record.path.name for judge in judge_results
        ]
        marker = _mark_passed(context, review_input_hash, judge_input_hash, files, ids.ids, approval.sha256)
    else:
        _drop_stale_marker(context, review_input_hash, always=outcome == "rejected")
        if outcome == "malfunction":
            first_broken = next(
                judge.record for judge in judge_results if judge.record.status == "malfunction"
            )
            problem = (
                f"{stone}: judge j{first_broken.position} malfunctioned ({first_broken.command}): "
                f"{first_broken.reason}; see {route.show(first_broken.path)}"
            )
    return Evaluation(
        stone,
        outcome,
        review_input_hash,
        judge_input_hash,
        artifact_names,
        reviews,
        tuple(judge_results),
        marker,
        problem,
    )


def _mark_passed(
    context: StoneContext,
    review_input_hash: str,
    judge_input_hash: str,
    files: list[str],
    manifest: dict[str, str],
    approval_sha256: str | None,
) -> Path:
    path = store.passed_path(context.route, context.stone.name)
    current = store.read_marker(path, context.stone.name)
    guard_sha256 = context.guard.sha256 if context.guard else None
    if (
        current is not None
        and current.review_input_hash == review_input_hash
        and current.judge_input_hash == judge_input_hash
        and list(current.files) == files
        and current.manifest == manifest
        and current.guard_sha256 == (guard_sha256 or None)
    ):
        return path  # already says exactly this; leave its time and bytes alone
    return store.write_passed(
        context.route,
        context.stone.name,
        review_input_hash,
        judge_input_hash,
        files,
        manifest,
        approval_sha256,
        guard_sha256,
    )


def _drop_stale_marker(context: StoneContext, review_input_hash: str, always: bool) -> None:
    """A stone is never "passed" for content its judges rejected, nor for content nobody evaluated."""
    path = store.passed_path(context.route, context.stone.name)
    current = store.read_marker(path, context.stone.name)
    if current is not None and (always or current.review_input_hash != review_input_hash):
        store.remove_passed(context.route, context.stone.name)
