"""What ``route.stone.get|set|del|judge`` print and how they exit, as ``report.Report`` values.

Pure functions of the operations' results (``route.api``); the CLI hands the report to ``cli._exits``, and
route.mcp answers with the same text and documents.
"""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING, Any

from routedriver.errors import ExitCode, UserError
from routedriver.report import Report, as_json, one_line
from routedriver.route.load import stone_text
from routedriver.route.words import count

if TYPE_CHECKING:
    from routedriver.route.api import DelResult, GetResult, SetResult
    from routedriver.route.approve import ApproveResult
    from routedriver.route.model import Verdict


def refusal(facts: dict[str, Any], exc: UserError) -> str:
    """With ``--json``, a refusal or malfunction is still one JSON document on stdout."""
    outcome = "refused" if exc.exit_code == ExitCode.REFUSED else "malfunction"
    return as_json({**facts, "outcome": outcome, "error": exc.line()})


# ---------------------------------------------------------------- route.stone.get


def get_payload(result: GetResult, say: bool) -> dict[str, Any]:
    """What ``route.stone.get --json`` prints (also route.mcp's ``route_next``)."""
    stones = []
    for item in result.selection.stones:
        entry: dict[str, Any] = {
            "name": item.stone.name,
            "path": result.route.show(item.stone.path),
            "status": item.status,
            "prefix": ".".join(map(str, item.stone.prefix)),
        }
        if say:
            entry["content"] = stone_text(item.stone.path)
        stones.append(entry)
    return {"route": result.route.display, "stones": stones, "all_passed": result.selection.all_passed}


def get_text(result: GetResult, say: bool) -> str:
    """What ``route.stone.get`` prints (also route.mcp's ``route_next``)."""
    selection = result.selection
    if not selection.stones:
        return "all stones passed\n"
    by_name = not result.selector.startswith("@")
    out: list[str] = []
    for index, item in enumerate(selection.stones):
        if not say:
            out.append(f"{item.stone.name}\t{item.status}\n" if by_name else f"{item.stone.name}\n")
            continue
        if index:
            out.append("\n")
        # One header per stone, like `head` does for several files, so a robot can split the output.
        out.append(f"==> {result.route.show(item.stone.path)} ({item.status}) <==\n")
        text = stone_text(item.stone.path)
        out.append(text if text.endswith("\n") or not text else text + "\n")
    return "".join(out)


def get_report(result: GetResult, say: bool, json: bool) -> Report:
    return Report(as_json(get_payload(result, say)) if json else get_text(result, say))


# ---------------------------------------------------------------- route.stone.set --as passed


def set_payload(result: SetResult) -> dict[str, Any]:
    """What ``route.stone.set --as passed --json`` prints (also route.mcp's ``route_set_passed``). Files are
    named relative to the repository's top level, as route.verify names them, from wherever it runs."""
    evaluation, show = result.evaluation, result.show
    return {
        "route": result.route.display,
        "stone": evaluation.stone,
        "outcome": evaluation.outcome,
        "review_input_hash": evaluation.review_input_hash,
        "judge_input_hash": evaluation.judge_input_hash,
        "artifacts": list(evaluation.artifacts),
        "reviews": [
            {
                "position": r.record.position,
                "command": r.record.command,
                "path": show(r.record.path),
                "reused": r.reused,
                "status": r.record.status,
                "exit_code": r.record.exit_code,
                "duration_s": r.record.duration_s,
            }
            for r in evaluation.reviews
        ],
        "judges": [
            {
                "position": j.record.position,
                "command": j.record.command,
                "path": show(j.record.path),
                "reused": j.reused,
                "status": j.record.status,
                "reason": j.record.reason,
                "exit_code": j.record.exit_code,
                "duration_s": j.record.duration_s,
            }
            for j in evaluation.judges
        ],
        "marker": show(evaluation.marker) if evaluation.marker else None,
        "problem": evaluation.problem or None,
    }


def _feedback(output: str) -> list[str]:
    """A failing judge's output without its verdict lines (already shown), last 40 lines."""
    lines = [
        line
        for line in output.splitlines()
        if not line.lower().startswith(("passed:", "reason:")) and line.strip()
    ]
    return lines[-40:]


def _said_no(result: SetResult) -> list[Any]:
    """The failing judges that are not a human gate waiting (those said no; approved? waits)."""
    from routedriver.route.judges import first_word  # set's report only: get never loads the judges

    return [judge for judge in result.evaluation.failing if first_word(judge.record.command) != "approved?"]


def _judges(result: SetResult) -> str:
    return count(len(result.evaluation.judges), "judge")


def set_text(result: SetResult) -> str:
    """What ``route.stone.set --as passed`` prints on stdout: the verdict, the failing judges' feedback and
    every file used (relative to the repository's top level)."""
    evaluation, show = result.evaluation, result.show
    lines: list[str] = []
    if evaluation.outcome == "passed":
        lines.append(f"stone passed: {evaluation.stone}")
    elif evaluation.outcome == "rejected":
        lines.append(
            f"stone rejected: {evaluation.stone} ({len(_said_no(result))} of {_judges(result)} said no)"
        )
    elif evaluation.outcome == "waiting":
        lines.append(f"stone waiting for approval: {evaluation.stone} (every other judge passed)")
    else:
        # What broke is said once, on stderr (set_error_line); here, which command it was.
        lines.append(f"stone not evaluated: {evaluation.stone} (malfunction)")
        lines += [f"  {line}" for line in _broken(result)]
    for judge in evaluation.failing:
        lines += [
            "",
            f"j{judge.record.position} {judge.record.command}: {judge.record.status}",
            f"  reason: {judge.record.reason}",
        ]
        lines += [f"  {line}" for line in _feedback(judge.record.stdout)]
    lines += ["", "files:"]
    for review in evaluation.reviews:
        state = "reused" if review.reused else "fresh"
        lines.append(
            f"  review r{review.record.position} {state} {review.record.status}: {show(review.record.path)}"
        )
    for judge in evaluation.judges:
        state = "reused" if judge.reused else "fresh"
        lines.append(
            f"  judge j{judge.record.position} {state} {judge.record.status}: {show(judge.record.path)}"
        )
    if evaluation.marker is not None:
        lines.append(f"  pass record: {show(evaluation.marker)}")
    return "\n".join(lines)


def _broken(result: SetResult) -> list[str]:
    """The command that broke (the first broken review, else the first judge that malfunctioned)."""
    evaluation = result.evaluation
    for review in evaluation.reviews:
        record = review.record
        if not record.ok:
            how = "timed out" if record.status == "timeout" else f"failed with exit {record.exit_code}"
            return [f"review r{record.position} {how}: {record.command}"]
    for judge in evaluation.judges:
        if judge.record.status == "malfunction":
            return [f"judge j{judge.record.position} malfunctioned: {judge.record.command}"]
    return []


def set_error_line(result: SetResult) -> str | None:
    """The one line ``route.stone.set`` writes on stderr (None when the stone passed)."""
    evaluation = result.evaluation
    if evaluation.outcome == "passed":
        return None
    if evaluation.outcome == "waiting":
        # The approved? judge's reason already says "wait for human approval" (and why: older content, who
        # may approve); the line adds only the stone and the command a person runs.
        waiting = evaluation.failing[0].record
        route, stone = result.route.display, evaluation.stone
        approve = shlex.join(["route.stone.set", "--route", route, "--stone", stone, "--as", "approved"])
        return one_line(
            f"error: {evaluation.stone}: {waiting.reason[:300]}; a human runs, at a terminal: {approve}"
        )
    if evaluation.outcome == "rejected":
        from routedriver.route.judges import first_word

        said_no = _said_no(result)
        reasons = "; ".join(
            f"j{judge.record.position} {first_word(judge.record.command)}: {judge.record.reason[:160]}"
            for judge in said_no
        )
        return one_line(
            f"error: {evaluation.stone} rejected by {len(said_no)} of {_judges(result)} ({reasons}); "
            "read the feedback on stdout, then fix and run route.stone.set again"
        )
    return one_line(f"error: {evaluation.problem}")


def set_report(result: SetResult, json: bool) -> Report:
    """Exit 0 passed; 2 rejected or waiting for a human (the caller acts); 1 a command broke."""
    stdout = as_json(set_payload(result)) if json else set_text(result) + "\n"
    line = set_error_line(result)
    if line is None:
        return Report(stdout)
    code = ExitCode.MALFUNCTION if result.evaluation.outcome == "malfunction" else ExitCode.REFUSED
    return Report(stdout, (line,), code)


# ---------------------------------------------------------------- route.stone.set --as approved


def approved_report(result: ApproveResult, json: bool) -> Report:
    show = result.route.show
    warnings = tuple(f"warning: {warning}" for warning in result.warnings)
    if json:
        document = {
            "route": result.route.display,
            "stone": result.stone,
            "outcome": result.outcome,
            "marker": show(result.marker),
            "review_input_hash": result.review_input_hash,
            "approver": {"name": result.approver[0], "email": result.approver[1]},
            "commit": result.commit,
            "committed": not result.not_committed,
            "not_committed": result.not_committed or None,
            "commit_with": result.commit_with or None,
            "renewed": result.renewed or None,
            "warnings": list(result.warnings),
        }
        return Report(as_json(document), warnings)
    who = f"{result.approver[0]} <{result.approver[1]}>"
    if result.outcome == "already-approved":
        lines = [f"already approved: {result.stone} by {who} for these artifacts (nothing changed)"]
    elif result.renewed:
        lines = [f"stone approved again: {result.stone} by {who} ({result.renewed})"]
    else:
        lines = [f"stone approved: {result.stone} by {who}"]
    lines.append(f"  marker {show(result.marker)}")
    if result.commit:
        lines.append(f"  committed {result.commit[:12]} (only the marker; other staged work is untouched)")
    elif result.commit_with:
        lines.append(f"  not committed ({result.not_committed}); commit it alone, with hooks off:")
        lines.append(f"  {result.commit_with}")
    elif result.not_committed:
        lines.append(f"  not committed ({result.not_committed}); commit {show(result.marker)} yourself")
    return Report("\n".join(lines) + "\n", warnings)


# ---------------------------------------------------------------- route.stone.del


def del_report(result: DelResult, json: bool) -> Report:
    show = result.route.show
    notices = tuple(kept.notice for kept in result.kept)
    if json:
        document = {
            "route": result.route.display,
            "outcome": "deleted",
            "deleted": [
                {"stone": name, "removed": [show(path) for path in paths]} for name, paths in result.deleted
            ],
            "kept": [{"stone": kept.stone, kept.kind: kept.path} for kept in result.kept],
        }
        return Report(as_json(document), notices)
    return Report("".join(f"{name}\n" for name, _ in result.deleted), notices)


# ---------------------------------------------------------------- route.stone.judge


def verdict_error_line(stone: str, mechanism: str, verdict: Verdict) -> str | None:
    """The one line ``route.stone.judge`` writes on stderr (None when the judge passed)."""
    if verdict.passed:
        return None
    if verdict.status == "failed":
        return one_line(f"error: {stone}: {mechanism} did not pass: {verdict.reason[:300]}")
    return one_line(f"error: {stone}: {mechanism} malfunctioned: {verdict.reason[:300]}")


def verdict_report(stone: str, mechanism: str, verdict: Verdict) -> Report:
    """Exit 0 passed, 2 failed, 1 malfunction."""
    line = verdict_error_line(stone, mechanism, verdict)
    if line is None:
        return Report(verdict.output)
    code = ExitCode.REFUSED if verdict.status == "failed" else ExitCode.MALFUNCTION
    return Report(verdict.output, (line,), code)
