"""``route.drive``: where a robot is on its route, what to do next, and the exact commands to do it.

It reads the state the driver keeps in files (markers, review and judge files) and recomputes only the
review-input hashes of the next stones and of the passed ones (one git index read for all), so it can tell
apart a robot that can act (write an artifact, run ``set``, fix what a judge rejected, re-run a pass its own
edits made stale) from a route that waits on a human: an approval, or a guard whose review or judge command
broke (a malfunction, recorded in the review or judge file that ``set`` wrote for these artifacts).
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from routedriver import gitops
from routedriver.fsutil import existing_directory
from routedriver.gitops import Repo, TreeEntry
from routedriver.report import Report
from routedriver.report import as_json as json_text
from routedriver.route import builtin_judges, inputs, records, store
from routedriver.route.artifacts import artifact_globs
from routedriver.route.committed import Checker, advice, listing, pass_files
from routedriver.route.context import StoneContext
from routedriver.route.guardfile import load_guard
from routedriver.route.hashing import relative_posix
from routedriver.route.human_gate import unlisted_approver
from routedriver.route.load import GUARD_SUFFIX, STONE_SUFFIX, open_route, stone_text
from routedriver.route.model import STATE_DIR, Guard, JudgeRecord, ReviewRecord, Route, Stone
from routedriver.route.provenance import REPO_APPROVERS, ROUTE_APPROVERS
from routedriver.route.select import NEXT_ALL, select, survey_of
from routedriver.route.state import Done, Survey
from routedriver.route.words import stones_passed

# What the robot should do about a stone.
NEEDS_ARTIFACT = "needs-artifact"  # write the artifact
READY = "ready"  # run route.stone.set --as passed
REJECTED = "rejected"  # fix what the judges said, then set again
STALE = "stale"  # it passed, then its artifacts changed: set again (route.verify rejects a stale pass)
WAITING = "waiting-for-approval"  # nothing the robot can do: a human approves
MALFUNCTION = "malfunction"  # nothing the robot can do: a review or judge command broke; a human fixes it
ROBOT_CAN_ACT = (NEEDS_ARTIFACT, READY, REJECTED, STALE)


@dataclass(frozen=True)
class StoneState:
    stone: Stone
    state: str
    detail: str  # the judges' reasons on a rejection, what waits on a human, …
    review_input_hash: str  # "" when there is no artifact yet


@dataclass(frozen=True)
class Guidance:
    route: Route
    passed: int  # stones whose pass holds for their artifacts as they are
    total: int
    # Passed stones whose artifacts changed since, and the active tier's incomplete stones, in route order;
    # empty when the route is complete.
    stones: tuple[StoneState, ...]
    # When complete: the files the passes stand on that no commit holds (path, how), which CI will not see.
    uncommitted: tuple[tuple[str, str], ...] = ()

    @property
    def complete(self) -> bool:
        return not self.stones

    @property
    def robot_can_act(self) -> bool:
        return any(state.state in ROBOT_CAN_ACT for state in self.stones)

    @property
    def waiting(self) -> tuple[StoneState, ...]:
        return tuple(state for state in self.stones if state.state == WAITING)

    @property
    def malfunctioning(self) -> tuple[StoneState, ...]:
        return tuple(state for state in self.stones if state.state == MALFUNCTION)

    def fingerprint(self) -> str:
        """Same next stones, same states, same artifacts → same fingerprint (loop detection)."""
        payload = [str(self.route.path), [[s.stone.name, s.state, s.review_input_hash] for s in self.stones]]
        return hashlib.sha256(json.dumps(payload).encode("utf-8")).hexdigest()


def guidance(route_option: str | None) -> Guidance:
    """Where the robot is: every stone that is not done the way route.verify would say (``state.Survey``,
    the answer every command shares) in the active tier, every stale pass in any tier, and what to do."""
    route = open_route(route_option)
    survey = survey_of(route)
    selection = select(route, NEXT_ALL, survey)
    done = {stone.name: survey.check(stone) for stone in route.stones if survey.needs_checking(stone)}
    nexts = {item.stone.name for item in selection.stones}
    states: list[StoneState] = []
    for stone in route.stones:
        found = done.get(stone.name)
        if stone.name in nexts:
            states.append(state_of(survey, stone, found))
        elif found is not None and not found.passed:
            states.append(not_done(stone, found))
    passed = sum(1 for found in done.values() if found.passed)
    unsaved = _uncommitted(survey, done) if not states else ()
    return Guidance(route, passed, len(route.stones), tuple(states), unsaved)


def _uncommitted(survey: Survey, done: dict[str, Done]) -> tuple[tuple[str, str], ...]:
    """A finished route's files that no commit holds: CI's checkout would not pass those stones."""
    repo = survey.repo
    if repo is None:
        return ()

    files = [
        path
        for stone in survey.route.stones
        if stone.name in done
        for path in pass_files(survey, stone, done[stone.name])
    ]
    found = Checker(repo).paths(files)
    return tuple(sorted(found.items()))


def not_done(stone: Stone, done: Done) -> StoneState:
    """A stone with a pass record that does not hold now (``Survey.check`` said why)."""
    key = done.inputs.review_input_hash if done.inputs is not None else ""
    if done.state == "unapproved":
        return StoneState(stone, WAITING, done.why, key)
    if done.state == "broken" and done.inputs is None:
        return StoneState(stone, MALFUNCTION, done.why, key)  # its guard does not load: a human fixes it
    return StoneState(stone, STALE, done.why, key)


def state_of(survey: Survey, stone: Stone, done: Done | None) -> StoneState:
    """What the robot should do about a stone of the active tier (``done``: its state, when it has a pass
    record to check). A stale stone whose guard already judged its current content is in the state that
    judging left it (waiting for a human, rejected, …); otherwise it is stale: run the guard again."""
    if done is not None and done.state not in ("incomplete", "stale"):
        return not_done(stone, done)
    found = _judged_state(survey, stone)
    if done is not None and done.state == "stale" and found.state == READY:
        return not_done(stone, done)  # run the guard again, and why: what changed since the pass
    return found


def _judged_state(survey: Survey, stone: Stone) -> StoneState:
    """A stone not passed for its current content, as its latest review and judge files leave it."""
    context = survey.context(stone)  # refuses when the guard does not load: a human fixes it
    guard = context.guard
    artifacts = survey.artifacts(stone)
    if not artifacts and inputs.artifacts_required(context):
        return StoneState(stone, NEEDS_ARTIFACT, "", "")
    now = survey.inputs(stone)
    review_input_hash = now.review_input_hash
    if guard is None:
        return StoneState(stone, READY, "", review_input_hash)
    names = survey.names
    broken = _broken_review(context, names, review_input_hash)
    if broken is not None:
        return StoneState(stone, MALFUNCTION, _review_problem(context, broken), review_input_hash)
    if not guard.judges:
        return StoneState(stone, READY, "", review_input_hash)
    approval = inputs.approval_state(context.route, stone.name, content_id=now.approval_id)
    approved_now = approval.marker is not None and approval.marker.review_input_hash == review_input_hash
    latest = _latest_judging(context, names, review_input_hash)
    if not latest:
        return StoneState(stone, READY, "", review_input_hash)
    if any(not _current_judge(guard, record) for record in latest):
        return StoneState(stone, READY, "the guard changed since the last run", review_input_hash)
    failing = [record for record in latest if not record.passed]
    if not failing:
        return StoneState(stone, READY, "", review_input_hash)
    malfunctioned = [record for record in failing if record.status == "malfunction"]
    if malfunctioned:  # as in route.stone.set: a malfunction outranks a rejection
        problems = "; ".join(
            f"judge j{record.position} ({record.command}): {record.reason} "
            f"(read {context.route.show(record.path)})"
            for record in malfunctioned
        )
        return StoneState(stone, MALFUNCTION, problems, review_input_hash)
    only_approval = all(builtin_judges.human_judge(record.command) is not None for record in failing)
    if only_approval and builtin_judges.gated(guard):
        unlisted = unlisted_approver(approval.marker, survey.approvers(), context)
        if approved_now and not unlisted:
            return StoneState(stone, READY, "a human approved it since the last run", review_input_hash)
        why = unlisted or "every other judge passed; it waits for a human"
        return StoneState(stone, WAITING, why, review_input_hash)
    reasons = "; ".join(
        f"j{record.position} {builtin_judges.first_word(record.command)}: {record.reason}"
        for record in failing
    )
    files = ", ".join(context.route.show(record.path) for record in failing)
    return StoneState(stone, REJECTED, f"{reasons} (read {files})", review_input_hash)


def _current_judge(guard: Guard, record: JudgeRecord) -> bool:
    """The record judged with the guard as it is now (same command at that place)."""
    return 0 < record.position <= len(guard.judges) and guard.judges[record.position - 1] == record.command


def _broken_review(
    context: StoneContext, names: frozenset[str], review_input_hash: str
) -> ReviewRecord | None:
    """The latest failed run of one of the guard's reviews, as it is now, on these artifacts, when no run
    of it succeeded: the next ``set`` would run it again on the same input and, unless a human fixed the
    tool, break again. The review file ``set`` wrote when it broke is the durable record of that."""
    guard = context.guard
    short = review_input_hash[: store.SHORT]
    entries = [entry for entry in store.review_files(names, context.stone.name) if entry.short_hash == short]
    if guard is None or not entries:
        return None
    for position, command in enumerate(guard.reviews, start=1):
        broken: ReviewRecord | None = None
        for entry in sorted((entry for entry in entries if entry.position == position), reverse=True):
            record = records.read_review(context.route.state_dir / entry.filename, context.stone.name)
            if record is None or record.command != command or record.review_input_hash != review_input_hash:
                continue
            if record.ok:  # set reuses it: this review is not what breaks
                broken = None
                break
            broken = broken or record
        if broken is not None:
            return broken
    return None


def _review_problem(context: StoneContext, record: ReviewRecord) -> str:
    how = (
        f"timed out after {context.guard.timeout_s:g}s"
        if context.guard is not None and record.status == "timeout"
        else f"failed with exit {record.exit_code}"
    )
    said = [line.strip() for line in record.stderr_tail.splitlines() if line.strip()]
    detail = f": {said[-1][:200]}" if said else ""
    shown = context.route.show(record.path)
    return f"review r{record.position} ({record.command}) {how}{detail} (read {shown})"


def _latest_judging(
    context: StoneContext, names: frozenset[str], review_input_hash: str
) -> list[JudgeRecord]:
    """The judge records of the latest judging of these artifacts (highest iteration and pass)."""
    entries = [
        entry
        for entry in store.judge_files(names, context.stone.name)
        if entry.review_short == review_input_hash[: store.SHORT]
    ]
    if not entries:
        return []
    newest = max((entry.iteration, entry.pass_number) for entry in entries)
    found = []
    for entry in entries:
        if (entry.iteration, entry.pass_number) == newest:
            record = records.read_judge(context.route.state_dir / entry.filename, context.stone.name)
            if record is not None:
                found.append(record)
    return sorted(found, key=lambda record: record.position)


# ---------------------------------------------------------------- the words a robot reads


def _quote(value: str) -> str:
    return shlex.quote(value)


def commands(route: Route, stone: Stone) -> tuple[str, str, str]:
    """(get --say, set --as passed, set --as approved) for ``stone``, quoted for a shell."""
    head = f"--route {_quote(route.display)} --stone {_quote(stone.name)}"
    return (
        f"route.stone.get {head} --say",
        f"route.stone.set {head} --as passed",
        f"route.stone.set {head} --as approved",
    )


def _artifact_hint(route: Route, stone: Stone, guard: Guard | None) -> str:
    globs = artifact_globs(stone, guard)
    if not globs:
        return "none (this stone produces no files)"
    shown = [
        pattern.replace("${stone}", stone.name)
        .replace("$stone", stone.name)
        .replace("${route}", route.display)
        for pattern in globs
    ]
    return ", ".join(item.replace("$route", route.display) for item in shown)


def _checks(guard: Guard | None) -> str:
    if guard is None:
        return "no guard: the stone passes once its artifact exists"
    parts = []
    if guard.reviews:
        parts.append(f"{len(guard.reviews)} review{'s' if len(guard.reviews) != 1 else ''}")
    for judge in guard.judges:
        human = builtin_judges.human_judge(judge)
        parts.append(f"{human.name} (a human approves)" if human is not None else f"judge: {judge}")
    return "; ".join(parts) or "the guard has no reviews or judges"


def render(guide: Guidance, instructions: bool = True) -> str:
    route = guide.route
    if guide.complete and guide.uncommitted:
        found = dict(guide.uncommitted)
        return (
            f"route {route.display}: {stones_passed(guide.passed, guide.total)}, but not committed: "
            f"{listing(found)}; CI's checkout holds only commits, and route.verify fails what stands on "
            f"them: {advice(found)}\n"
        )
    if guide.complete:
        return f"route {route.display}: {stones_passed(guide.passed, guide.total)}; nothing left to do.\n"
    names = ", ".join(state.stone.name for state in guide.stones)
    lines = [f"route {route.display}: {stones_passed(guide.passed, guide.total)}; next: {names}"]
    for state in guide.stones:
        stone = state.stone
        get, set_passed, set_approved = commands(route, stone)
        guard = load_guard(route, stone)
        lines += ["", f"## {stone.name} ({state.state})"]
        if instructions:
            text = stone_text(stone.path).rstrip("\n")
            lines += [
                f"instructions ({route.show(stone.path)}):",
                *(f"  {line}" for line in text.splitlines()),
            ]
        lines.append(f"artifacts: {_artifact_hint(route, stone, guard)}")
        lines.append(f"checked by: {_checks(guard)}")
        if state.state == NEEDS_ARTIFACT:
            lines += [
                "do: write the artifact as the instructions say, then run:",
                f"  {set_passed}",
            ]
        elif state.state == READY:
            lines += [f"do: run the guard{f' ({state.detail})' if state.detail else ''}:", f"  {set_passed}"]
        elif state.state == REJECTED:
            lines += [
                f"last result: rejected: {state.detail}",
                "do: fix what the judges said, then run again:",
                f"  {set_passed}",
            ]
        elif state.state == STALE:
            lines += [
                f"it passed, but the pass no longer holds: {state.detail}",
                "do: make sure the change is meant (or restore what passed), then run the guard again "
                "(route.verify in CI rejects a stale pass):",
                f"  {set_passed}",
            ]
        elif state.state == MALFUNCTION:
            lines += [
                f"last result: malfunction (a command of the guard broke; not a verdict): {state.detail}",
                f"do: nothing a robot can fix; tell the human. {fix_malfunction(route, stone)}",
                f"  {set_passed}",
            ]
        else:
            lines += [
                f"waiting for human approval ({state.detail}); robots cannot approve.",
                f"  a human runs, in a terminal: {set_approved}",
                f"  then: {set_passed}",
            ]
        lines.append(f"re-read the instructions: {get}")
    return "\n".join(lines) + "\n"


def fix_malfunction(route: Route, stone: Stone) -> str:
    """Who fixes a malfunction and how (robots cannot edit guards: route.bounce blocks it)."""
    where = f" ({route.show(stone.guard_path)})" if stone.guard_path is not None else ""
    return f"A human fixes the guard{where} or the tool it runs, then runs:"


def report(route_option: str | None, *, as_json: bool) -> Report:
    """What ``route.drive`` (not as a hook) prints: the guidance as text, or as one JSON document."""
    guide = guidance(route_option)
    return Report(json_text(to_json(guide)) if as_json else render(guide))


def to_json(guide: Guidance) -> dict[str, object]:
    """``route.drive --json``: the guidance as one document with stable keys (docs/route-gate.md)."""
    route = guide.route
    return {
        "route": route.display,
        "passed": guide.passed,
        "total": guide.total,
        "complete": guide.complete,
        "robot_can_act": guide.robot_can_act,
        "uncommitted": [{"path": path, "how": how} for path, how in guide.uncommitted],
        "next": [_stone_json(route, state) for state in guide.stones],
    }


def _stone_json(route: Route, state: StoneState) -> dict[str, object]:
    get, set_passed, set_approved = commands(route, state.stone)
    return {
        "name": state.stone.name,
        "state": state.state,
        "detail": state.detail,
        "file": route.show(state.stone.path),
        "who": "robot" if state.state in ROBOT_CAN_ACT else "human",
        "commands": {
            "read": get,
            "pass": set_passed,
            "approve": set_approved if builtin_judges.gated(load_guard(route, state.stone)) else None,
        },
    }


# ---------------------------------------------------------------- definitions the robot must put back

# A robot may stop when what is left is a human's to do. A definition (a stone, a guard, an approvers file)
# it broke or changed is not: ``echo x > 1.spec.guard`` over Bash would otherwise make the route unreadable
# and "a human must fix it" would release the robot. So before the Stop hook lets a robot stop, the route's
# definitions are compared with what git has committed (``to_restore``): whatever differs in the work tree
# or the index is the robot's to put back, and so is a definition that commits made in this session (since
# the SessionStart hook recorded where it began) left broken. Only what neither explains is a human's.
SESSION_FILE = ".session.state"  # under .route/, ignored by .route/.gitignore (".*.state")
_HEX_ID = frozenset("0123456789abcdef")


class Restore(NamedTuple):
    """A definition to put back as git has it, and how."""

    path: str  # relative to the top-level
    how: str  # what is wrong: "edited in the work tree", "deleted", …
    command: str  # the exact command that puts it back


def definition_paths(route_dir: Path, toplevel: Path) -> list[str]:
    """The route's definitions as they are on disk (relative to the top-level): every top-level
    ``*.stone`` and ``*.guard`` (whatever kind of file: a FIFO or a directory named so is still the robot's
    doing), the route's approvers file and the repository's ``.route-approvers``, when present."""
    found: list[str] = []
    try:
        names = sorted(os.listdir(route_dir))
    except OSError:
        names = []
    for name in names:
        if not name.startswith(".") and name.endswith((STONE_SUFFIX, GUARD_SUFFIX)):
            found.append(relative_posix(route_dir / name, toplevel))
    for path in (route_dir / ROUTE_APPROVERS, toplevel / REPO_APPROVERS):
        if os.path.lexists(path):
            found.append(relative_posix(path, toplevel))
    return found


def _is_definition(path: str, route: str) -> bool:
    """Is ``path`` (relative to the top-level) one of the definitions of the route at ``route``?"""
    if path in (REPO_APPROVERS, _join(route, ROUTE_APPROVERS)):
        return True
    parent, _, name = path.rpartition("/")
    return (
        parent == ("" if route == "." else route)
        and not name.startswith(".")
        and name.endswith((STONE_SUFFIX, GUARD_SUFFIX))
    )


def _join(route: str, name: str) -> str:
    return name if route in ("", ".") else f"{route}/{name}"


def to_restore(route_dir: Path, *, broken: bool) -> tuple[Restore, ...]:
    """The route's definitions the robot must put back before it may stop: each that differs from HEAD in
    the work tree or the index (edited, deleted, added, made unreadable); and, when the route is ``broken``
    (it cannot be read, or a guard or a command of it broke), each that the commits made in this session
    changed (``record_session_start`` says where it began). Empty outside git, before the first commit, for
    a route HEAD does not hold at all (a human is still writing it), or when nothing differs."""
    repo = gitops.find_repo(existing_directory(route_dir))
    if repo is None:
        return ()
    top = repo.toplevel
    route = relative_posix(route_dir, top)
    try:
        head = gitops.tree_files(repo, "HEAD", [route, REPO_APPROVERS])
    except gitops.GitError:
        return ()  # no commit yet: nothing to compare with
    committed = {path: entry for path, entry in head.items() if _is_definition(path, route)}
    if not any(path != REPO_APPROVERS for path in committed):
        return ()
    found = list(_work_tree_changes(repo, route_dir, committed))
    if broken and not found:
        found += _session_changes(repo, route_dir, route, committed)
    return tuple(found)


def _work_tree_changes(repo: Repo, route_dir: Path, committed: dict[str, TreeEntry]) -> list[Restore]:
    top = repo.toplevel
    on_disk = definition_paths(route_dir, top)
    paths = sorted(set(on_disk) | set(committed))
    snapshot = gitops.index_snapshot(repo, paths)
    staged = snapshot.staged if snapshot is not None else {}
    hashable = [path for path in on_disk if _plain(top / path)]
    try:
        ids = gitops.hash_files(repo, hashable, filters="git")
    except gitops.GitError:
        ids = {}
    found: list[Restore] = []
    for path in paths:
        entry = committed.get(path)
        absolute = top / path
        quoted = shlex.quote(path)
        if entry is None:
            remove = f"git rm -rf -- {quoted}" if path in staged else f"rm -rf -- {quoted}"
            found.append(Restore(path, "added since the last commit", f"remove it: {remove}"))
            continue
        index_agrees = staged.get(path) == entry.blob or (
            entry.mode == gitops.SYMLINK_MODE and path not in staged
        )
        checkout = f"git checkout -- {quoted}" if index_agrees else f"git checkout HEAD -- {quoted}"
        if not os.path.lexists(absolute):
            found.append(Restore(path, "deleted", f"restore it: {checkout}"))
        elif not _plain(absolute):
            found.append(
                Restore(path, "not a file any more", f"restore it: rm -rf -- {quoted} && {checkout}")
            )
        elif path not in ids:
            found.append(Restore(path, "unreadable", f"restore it: {checkout}"))
        elif ids[path] != entry.blob or os.path.islink(absolute) != (entry.mode == gitops.SYMLINK_MODE):
            found.append(Restore(path, "edited in the work tree", f"restore it: {checkout}"))
        elif not index_agrees:
            found.append(Restore(path, "changed in the index", f"restore it: {checkout}"))
    return found


def _plain(path: Path) -> bool:
    """A regular file or a symlink: what git can hash without blocking (a FIFO would hang it)."""
    try:
        mode = os.lstat(path).st_mode
    except OSError:
        return False
    return stat.S_ISREG(mode) or stat.S_ISLNK(mode)


def _session_changes(
    repo: Repo, route_dir: Path, route: str, committed: dict[str, TreeEntry]
) -> list[Restore]:
    """Definitions the commits made in this session changed (None recorded: none known)."""
    start = session_start(route_dir)
    if start is None:
        return []
    changed = gitops.own_changes(repo, start, [route, REPO_APPROVERS])
    if not changed:
        return []
    try:
        before = gitops.tree_files(repo, start, [route, REPO_APPROVERS])
    except gitops.GitError:
        return []
    found: list[Restore] = []
    for path in sorted(changed):
        if not _is_definition(path, route):
            continue
        quoted = shlex.quote(path)
        how = f"changed by a commit made in this session (since {start[:12]}, where it began)"
        if path in before:
            command = f"restore it: git checkout {start[:12]} -- {quoted}, then commit it"
        elif path in committed:
            command = f"remove it: git rm -f -- {quoted}, then commit that"
        else:
            continue  # added and removed again within the session
        found.append(Restore(path, how, command))
    return found


def session_start(route_dir: Path) -> str | None:
    """The commit the current robot session began at (``record_session_start``), or None."""
    text = store.read_text(route_dir / STATE_DIR / SESSION_FILE)
    try:
        state = json.loads(text) if text is not None else None
    except ValueError:
        return None
    head = state.get("head") if isinstance(state, dict) else None
    if isinstance(head, str) and len(head) in (40, 64) and set(head) <= _HEX_ID:
        return head
    return None


def record_session_start(route: Route, session_id: str | None) -> None:
    """Remember the commit a robot session began at (the SessionStart hook), so a later stop can tell the
    session's own commits from everyone else's. A session that resumes or compacts (same ``session_id``)
    keeps the commit it began at."""
    path = route.state_dir / SESSION_FILE
    if session_id:
        text = store.read_text(path)
        try:
            known = json.loads(text) if text is not None else None
        except ValueError:
            known = None
        if isinstance(known, dict) and known.get("session_id") == session_id and session_start(route.path):
            return
    repo = gitops.find_repo(route.path)
    head = gitops.head_commit(repo) if repo is not None else None
    if head is None:
        return
    store.ensure_state_dir(route)
    payload = {"session_id": session_id or "", "head": head, "at": store.utc_now()}
    store.write_text(path, json.dumps(payload) + "\n")


def render_restore(display: str, restores: tuple[Restore, ...]) -> str:
    """What the robot reads when it must put definitions back before it stops."""
    lines = [
        f"route {display}: its definitions differ from what git has committed, and the route is what git "
        "has committed (route.verify checks that); put them back:"
    ]
    lines += [f"- {item.path}: {item.how}; {item.command}" for item in restores]
    lines.append(f"then run: route.drive --route {_quote(display)}")
    return "\n".join(lines) + "\n"
