"""``route.verify``: re-check, from the files and git alone, every claim a route makes. The CI gate.

It starts no review or judge command and imports no LLM SDK. For each stone it re-derives the review-input
hash from the work tree and then asks: does a ``.passed`` claim still hold for these artifacts, this guard and
this approval? Are the judge files behind it consistent, and do the built-in judges (pure functions of the
files) still say yes? Was every approval marker committed by a listed approver (and signed, if required)?

What it cannot do: re-check what a review command (an LLM) or a shell judge said. Their recorded output is
checked for consistency (hashes, verdict vs. output), not re-derived; see docs/route-gate.md.

Git is asked a fixed number of times for the whole run, however many stones: one ``git ls-files -v -s``,
one ``git diff-files`` (content ids of committed, unchanged files), one ``git log`` over all approval markers,
and, with ``--all``, one ``git ls-files`` to find the routes. The repository is the one holding the routes:
the current directory's (already asked) when they are inside its work tree, else one ``git rev-parse`` per
route to find theirs. The console script starts all but the log before it even imports the driver
(``gitops.prefetch_verify``); the log runs while every stone's claims are checked, and the approvals, which
need it, are looked at last. Each stone's artifacts come from one listing of their directory, with content
ids (and "is a file") from git's index wherever git vouches for them.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from routedriver import gitops
from routedriver.errors import Refused
from routedriver.later import Later
from routedriver.route import committed, inputs, judges, records, store
from routedriver.route.hashing import relative_posix
from routedriver.route.inputs import ApprovalState, StoneContext
from routedriver.route.load import load_route
from routedriver.route.model import JudgeRecord, ReviewRecord, Route, Stone
from routedriver.route.provenance import Approvers, Provenance, marker_paths
from routedriver.route.state import Done, Survey
from routedriver.route.words import count

if TYPE_CHECKING:
    from routedriver.route.policy import PolicyReport

STATUSES = (
    "passed",
    "incomplete",
    "stale",
    "unproven",
    "unapproved",
    "policy-changed",
    "uncommitted",  # passed in this work tree, but on files no commit holds: CI's checkout would not pass it
    "forged",
    "broken",
)


class StoneCheck(NamedTuple):
    route: str  # the route relative to the top-level (the cwd outside git)
    stone: str
    status: str  # one of STATUSES
    why: str
    file: str  # the file a reader should look at, relative to the top-level

    def ok(self, allow_incomplete: bool) -> bool:
        return self.status == "passed" or (allow_incomplete and self.status == "incomplete")


class VerifyReport(NamedTuple):
    checks: tuple[StoneCheck, ...]
    allow_incomplete: bool
    require_signed: bool
    policy: PolicyReport | None = None  # with --base: the routes' definitions compared with it

    @property
    def ok(self) -> bool:
        return all(check.ok(self.allow_incomplete) for check in self.checks)

    @property
    def failing(self) -> tuple[StoneCheck, ...]:
        return tuple(check for check in self.checks if not check.ok(self.allow_incomplete))

    def counts(self) -> dict[str, int]:
        found: dict[str, int] = {}
        for check in self.checks:
            found[check.status] = found.get(check.status, 0) + 1
        return found


class _Run(NamedTuple):
    repo: gitops.Repo | None
    base: Path
    index_read: Later[gitops.IndexSnapshot | None]  # read in the background while routes and guards load
    provenance: Provenance

    @property
    def snapshot(self) -> gitops.IndexSnapshot | None:
        return self.index_read.get()


def discover_routes(repo: gitops.Repo) -> list[Path]:
    """Every directory holding ``*.stone`` files that git tracks or would track (one ``git ls-files``)."""
    try:
        stones = gitops.list_files(repo, [gitops.ROUTE_STONES])
    except gitops.GitError as exc:
        raise Refused(
            f"cannot list the repository's files: {exc}", "run route.verify inside a git work tree"
        ) from None
    directories = set()
    for path in stones:
        parent, _, filename = path.rpartition("/")
        if filename.startswith(".") or f"/{parent}/".find("/.route/") >= 0:
            continue
        directories.add(repo.toplevel / parent if parent else repo.toplevel)
    return sorted(directories)


def verify(
    route_options: Sequence[str],
    *,
    all_routes: bool = False,
    approvers: Path | None = None,
    require_signed: bool = False,
    allow_incomplete: bool = False,
    allowed_signers: Path | None = None,
    cwd: Path | None = None,
    base_ref: str | None = None,
) -> VerifyReport:
    here = Path.cwd() if cwd is None else cwd
    repo = gitops.find_repo(here)
    # Git is asked in the background, each question once, while Python reads routes and guards.
    index: Later[gitops.IndexSnapshot | None] | None = None
    if all_routes or not route_options:
        index = _read_index(repo)  # the routes come from this repository: start now, listing them waits
    paths = route_paths(route_options, all_routes, repo)
    if index is None:
        repo = repository_of(paths, repo)  # --route: the repository holding the routes, not the cwd's
        index = _read_index(repo)
    base = repo.toplevel if repo is not None else here
    routes: dict[Route, frozenset[str]] = {}
    checks: list[StoneCheck] = []
    for path in paths:
        try:
            route = load_route(path)
        except Refused as exc:
            shown = relative_posix(Path(path).resolve(), base)
            checks.append(StoneCheck(shown, "*", "broken", exc.line().removeprefix("error: "), shown))
            continue
        if not route.stones:
            # A gate pointed at the wrong directory must not pass with nothing checked.
            shown = relative_posix(route.path, base)
            why = f"no stones in {shown} (no <name>.stone files); check --route"
            checks.append(StoneCheck(shown, "*", "broken", why, shown))
            continue
        routes[route] = store.list_state(route)
    provenance = Provenance(repo, approvers, require_signed, allowed_signers)
    if repo is not None:
        provenance.load_history(marker_paths(routes, repo.toplevel))
    run = _Run(repo, base, index, provenance)
    claims: list[_Claim] = []
    unsaved: dict[tuple[str, str], dict[str, committed.How]] = {}  # (route, stone) → its files not committed
    checker = _commit_checker(run, approvers_given=approvers is not None)
    for route, names in routes.items():
        route_rel = relative_posix(route.path, base)
        survey = Survey(
            route,
            repo,
            base,
            names=names,
            snapshot=run.snapshot,
            approvers=provenance.approvers(route),
        )
        for stone in route.stones:
            claims.append(_check_claim(run, survey, route_rel, stone))
            done = claims[-1][3]
            if checker is not None and done is not None and claims[-1][0].status == "passed":
                found = checker.stone(survey, stone, done)
                if found:
                    unsaved[(route_rel, stone.name)] = found
    # Approvals last: the one git log they need has been running while the claims were checked.
    checks.extend(_vouch(run, claim) for claim in claims)
    # --base: the definitions themselves are policy; they must be the base's or carry a human's approval.
    policy_report = None
    if base_ref is not None:
        from routedriver.route import policy

        policy_report = policy.compare(
            repo, base_ref, routes, paths, all_routes=all_routes, provenance=provenance
        )
        checks = policy.apply(policy_report, checks)
    if unsaved:
        checks = _uncommitted(checks, unsaved)
    return VerifyReport(tuple(checks), allow_incomplete, require_signed, policy_report)


def _commit_checker(run: _Run, *, approvers_given: bool) -> committed.Checker | None:
    """Which passes stand on files no commit holds (a local run's advice; a clean checkout has none)."""
    if run.repo is None:
        return None
    return committed.Checker(run.repo, run.snapshot, approvers_given=approvers_given)


def _uncommitted(
    checks: list[StoneCheck], unsaved: dict[tuple[str, str], dict[str, committed.How]]
) -> list[StoneCheck]:
    """A stone still passed at the end stands or falls with its files being committed: CI's checkout holds
    only commits, so there it would not pass. The local gate says what CI will say."""
    marked = []
    for check in checks:
        found = unsaved.get((check.route, check.stone)) if check.status == "passed" else None
        if found:
            first = sorted(found)[0]
            check = StoneCheck(check.route, check.stone, "uncommitted", committed.why(found), first)
        marked.append(check)
    return marked


def _read_index(repo: gitops.Repo | None) -> Later[gitops.IndexSnapshot | None]:
    return Later(lambda: gitops.index_snapshot(repo) if repo is not None else None)


def repository_of(paths: Sequence[Path], here: gitops.Repo | None) -> gitops.Repo | None:
    """The one repository holding every route in ``paths``: ``here`` (the cwd's, already asked) when they
    are inside it, which a look for ``.git`` entries on the way up settles without asking git; else git is
    asked where each one lives. Routes in different repositories are refused: each has its own history."""
    found: dict[Path | None, gitops.Repo | None] = {}
    for path in paths:
        resolved = path.resolve()
        if not resolved.is_dir():
            continue  # load_route says what is wrong with it
        repo = here if here is not None and _inside_work_tree(resolved, here.toplevel) else None
        if repo is None:
            repo = gitops.find_repo(resolved)
        found.setdefault(repo.toplevel if repo is not None else None, repo)
    if len(found) > 1:
        where = ", ".join(str(top) if top is not None else "outside git" for top in found)
        raise Refused(
            f"the routes are in different git repositories ({where})", "run route.verify once per repository"
        )
    return next(iter(found.values())) if found else here


def _inside_work_tree(path: Path, toplevel: Path) -> bool:
    """Is ``path`` (resolved) in the work tree at ``toplevel`` and not in a repository nested in it (a
    submodule, or a clone inside the checkout), which would have a ``.git`` of its own on the way up?"""
    if path != toplevel and toplevel not in path.parents:
        return False
    while path != toplevel:
        if os.path.lexists(path / ".git"):
            return False
        path = path.parent
    return True


def route_paths(route_options: Sequence[str], all_routes: bool, repo: gitops.Repo | None) -> list[Path]:
    """The routes a gate command means (``route.verify``, ``route.lint``): ``--all`` (every route in ``repo``,
    absolute), the ``--route`` options (each route once, as first named), else the route bound to the
    branch."""
    if all_routes:
        if route_options:
            raise Refused("--all and --route exclude each other", "give one of them")
        if repo is None:
            raise Refused("--all needs a git repository", "run it inside one, or use --route")
        found = discover_routes(repo)
        if not found:
            raise Refused("no routes in this repository (no *.stone files)", "add a route, or use --route")
        return found
    if route_options:
        # The same route named twice (``routes/x`` and ``$PWD/routes/x``) is checked and counted once.
        unique: dict[str, Path] = {}
        for option in route_options:
            unique.setdefault(os.path.realpath(option), Path(option))
        return list(unique.values())
    from routedriver.route.load import resolve_route

    try:
        return [resolve_route(None)]
    except Refused as exc:
        raise Refused(exc.what, "use --route, --all or route.bind --set") from None


# What a stone's claims came to, before its approval marker (if it has one) is vouched for:
# (the check, the approval to vouch for or None, the stone's context, its state as Survey.check said).
_Claim = tuple[StoneCheck, ApprovalState | None, StoneContext | None, Done | None]


def _check_claim(run: _Run, survey: Survey, route_rel: str, stone: Stone) -> _Claim:
    route = survey.route

    def result(status: str, why: str, file: Path | str | None = None) -> StoneCheck:
        where = file if isinstance(file, str) else relative_posix(file or stone.path, run.base)
        return StoneCheck(route_rel, stone.name, status, why, where)

    try:
        context = survey.context(stone)
    except Refused as exc:
        return result("broken", exc.line().removeprefix("error: "), stone.guard_path), None, None, None
    done = survey.check(stone)
    approval = inputs.approval_state(
        route, stone.name, survey.names, done.inputs.approval_id if done.inputs else None
    )
    check = _check_stone(survey, context, done, approval, result)
    return check, approval if approval.exists else None, context, done


def _vouch(run: _Run, claim: _Claim) -> StoneCheck:
    """A stone with an approval marker stands or falls with it first: was it committed by a listed human?"""
    check, approval, context, _done = claim
    if approval is None or context is None:
        return check
    path = store.approved_path(context.route, context.stone.name)
    hint = context.command_hint("set", portable=True) + " --as approved"
    vouched = run.provenance.check(context.route, approval.marker, path, hint)
    if vouched.ok:
        return check
    return StoneCheck(check.route, check.stone, vouched.status, vouched.why, relative_posix(path, run.base))


def _check_stone(
    survey: Survey,
    context: StoneContext,
    done: Done,
    approval: ApprovalState,
    result: Callable[..., StoneCheck],
) -> StoneCheck:
    """The stone's state as every command decides it (``state.Survey.check``); for a pass, the evidence
    behind it: the reviews it relied on, every judge of the current guard, and the built-in judges asked
    again now."""
    route, stone, guard = context.route, context.stone, context.guard
    if done.state == "incomplete":
        why = "not passed yet"
        gated = guard is not None and any(judges.first_word(judge) == "approved?" for judge in guard.judges)
        if gated and not approval.exists:
            why += "; waiting for human approval"
        return result("incomplete", why)
    if not done.passed:
        return result(done.state, done.why, done.file)
    record, now = survey.record(stone, done), done.inputs
    assert now is not None
    if record is None:
        path = route.state_dir / store.pass_name(stone.name, now.key)
        shown = relative_posix(path, survey.base)
        why = f"its pass record {shown} is not what the driver wrote (edited by hand?)"
        return result("forged", why, path)
    if guard is None:
        return result("passed", _passed_why("passed; its artifacts are unchanged", done))
    files = survey.files.get(stone.name)
    reviews = inputs.reviews_in_use(context, now.review_input_hash, entries=files.reviews if files else [])
    for position, command in enumerate(guard.reviews, start=1):
        if position not in reviews:
            return result(
                "unproven",
                f"review r{position} ({command}) has no successful review file for these artifacts "
                "(were the .route/ files committed?)",
                route.state_dir,
            )
    ordered = [reviews[position] for position in sorted(reviews)]
    judge_input_hash = inputs.judge_input_hash(now.review_input_hash, ordered, approval)
    if judge_input_hash != record.judge_input_hash:
        used = ", ".join(sorted(review.path.name for review in ordered))
        return result(
            "forged",
            f"the reviews in use ({used}) are not the ones its pass record relied on (edited by hand?)",
            record.path,
        )
    return _check_judges(
        context,
        files.judges if files else [],
        now.review_input_hash,
        judge_input_hash,
        ordered,
        approval,
        now.artifacts,
        survey.approvers(),
        done,
        result,
    )


def _passed_why(why: str, done: Done) -> str:
    if not done.history:
        return why
    older = count(done.history, "other pass record")
    return f"{why}; {older} kept as history"


def _check_judges(
    context: StoneContext,
    entries: list[store.JudgeEntry],
    review_input_hash: str,
    judge_input_hash: str,
    reviews: list[ReviewRecord],
    approval: inputs.ApprovalState,
    artifact_ids: dict[str, str],
    approvers: Approvers,
    done: Done,
    result: Callable[..., StoneCheck],
) -> StoneCheck:
    """Every judge of the CURRENT guard: a passed, self-consistent judge file for these hashes and this
    command, and the built-ins say yes again right now."""
    assert context.guard is not None
    route, stone = context.route, context.stone.name
    for position, command in enumerate(context.guard.judges, start=1):
        record, tampered = _judge_file(
            route, stone, entries, review_input_hash, judge_input_hash, position, command
        )
        if record is None:
            if tampered is not None:
                return result(
                    "forged",
                    f"judge file j{position} ({command}) is not what the driver wrote (edited by hand?)",
                    tampered,
                )
            return result(
                "unproven",
                f"no passed judge file for j{position} ({command}) at these hashes "
                "(were the .route/ files committed?)",
                route.state_dir,
            )
        spec = judges.parse_builtin(command)
        if spec is None:
            verdict = judges.parse_verdict(record.stdout, record.exit_code)
            if not verdict.passed:
                return result(
                    "forged",
                    f"judge file j{position} ({command}) says passed, but its recorded output and exit "
                    f"code say {verdict.status}: {verdict.reason}",
                    record.path,
                )
            continue
        verdict = inputs.builtin_verdict(
            context, spec, reviews, approval, review_input_hash, artifact_ids, approvers
        )
        if verdict.passed:
            continue
        if spec.mechanism == "reviewed?":
            return result(
                "forged",
                f"judge file j{position} says reviewed? passed, but the reviews say {verdict.status}: "
                f"{verdict.reason}",
                record.path,
            )
        return result(
            "unapproved",
            f"j{position} approved? does not hold now: {verdict.reason}",
            store.approved_path(route, stone),
        )
    judged = len(context.guard.judges)
    why = f"passed and fresh ({count(judged, 'judge')} re-checked)" if judged else "passed and fresh"
    return result("passed", _passed_why(why, done))


def _judge_file(
    route: Route,
    stone: str,
    entries: list[store.JudgeEntry],
    review_input_hash: str,
    judge_input_hash: str,
    position: int,
    command: str,
) -> tuple[JudgeRecord | None, Path | None]:
    """The latest passed judge file for exactly these inputs, or (None, a file named for them that does not
    read back as the driver wrote it)."""
    tampered: Path | None = None
    for entry in sorted(entries, reverse=True):
        if (
            entry.position != position
            or entry.review_short != review_input_hash[: store.SHORT]
            or entry.judge_short != judge_input_hash[: store.SHORT]
        ):
            continue
        path = route.state_dir / entry.filename
        record = records.read_judge(path, stone)
        if record is None:
            tampered = tampered or path
            continue
        if (
            record.passed
            and record.command == command
            and record.review_input_hash == review_input_hash
            and record.judge_input_hash == judge_input_hash
        ):
            return record, None
    return None, tampered
