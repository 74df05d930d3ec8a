"""Reading judges: the verdict of any judge command, and the verdicts of the built-in judges ``reviewed?`` and
``approved?`` from their inputs (the table of built-ins, their flags and who asks them is
``route.builtin_judges``).

A judge prints ``passed: true|false`` and ``reason: …`` (the last of each wins, at the start of a line);
without a printed verdict its exit code decides: 0 passed, 2 failed, anything else malfunction. A printed
``passed: false`` fails whatever the exit code; a printed ``passed: true`` passes only with exit 0 (exit 2
fails, any other code is a malfunction).
The built-ins produce exactly what ``route.stone.judge`` prints, and that output reads back the same way.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from routedriver.route import manifest
from routedriver.route.model import Marker, ReviewRecord, Verdict

# An approval counts only for the artifacts it was given for (their review-input hash).
APPROVAL_MUST_MATCH_ARTIFACTS = True

_PASSED = re.compile(r"^passed:[ \t]*(true|false)[ \t\r]*$", re.IGNORECASE | re.MULTILINE)
_REASON = re.compile(r"^reason:[ \t]*(.*?)[ \t\r]*$", re.IGNORECASE | re.MULTILINE)
_DECOR = r"[*_`]*"  # markdown emphasis around a count: **blockers**: 1
_COUNT_PATTERNS = {
    kind: re.compile(
        rf"(?P<before>\d+){_DECOR}[ \t]+{_DECOR}{kind}s?\b"
        rf"|\b{kind}s?{_DECOR}[ \t]*:[ \t]*{_DECOR}[ \t]*(?P<after>\d+)",
        re.IGNORECASE,
    )
    for kind in ("blocker", "nitpick")
}
_LIST_ITEM = re.compile(r"^\s*(?:[-*+]|\d+[.)])\s+")


def _last_line(*texts: str) -> str:
    for text in texts:
        lines = [line.strip() for line in text.splitlines() if line.strip()]
        if lines:
            return lines[-1][:200]
    return ""


def parse_verdict(
    stdout: str, exit_code: int, timed_out: bool = False, stderr: str = "", timeout_s: float | None = None
) -> Verdict:
    """A judge command's verdict from its stdout and exit code (see the module's docstring)."""
    if timed_out:
        limit = f" after {timeout_s:g}s" if timeout_s is not None else ""
        return Verdict("malfunction", f"timed out{limit}; its process group was killed", stdout)
    verdicts = _PASSED.findall(stdout)
    reasons = _REASON.findall(stdout)
    reason = reasons[-1] if reasons else ""
    if verdicts and verdicts[-1].lower() == "false":
        return Verdict(
            "failed", reason or "printed passed: false", stdout
        )  # a "no" stands, whatever the exit
    if verdicts:
        if exit_code == 0:
            return Verdict("passed", reason or "printed passed: true", stdout)
        # A "yes" needs exit 0: `pytest -q || exit 2` exits 2 on failing tests even when a test printed
        # "passed: true". Exit 2 is a rejection; any other code makes the judge contradict itself: broken.
        detail = _last_line(stdout, stderr) if exit_code == 2 else _last_line(stderr, stdout)
        detail = "" if _PASSED.match(detail) else detail  # the verdict line itself says nothing new
        status, how = ("failed", "overrides") if exit_code == 2 else ("malfunction", "contradicts")
        return Verdict(
            status,
            f"exit {exit_code} {how} the printed passed: true" + (f"; {detail}" if detail else ""),
            stdout,
        )
    if exit_code in (0, 2):
        detail = reason or _last_line(stdout, stderr)
        return Verdict(
            "passed" if exit_code == 0 else "failed",
            f"exit {exit_code}" + (f": {detail}" if detail else ""),
            stdout,
        )
    detail = _last_line(stderr, stdout)
    return Verdict("malfunction", f"exit {exit_code}" + (f": {detail}" if detail else ""), stdout)


def count_issues(text: str) -> tuple[int | None, int | None]:
    """``(blockers, nitpicks)`` a review reports (the last mention of each wins); None where unreadable."""
    counts: list[int | None] = []
    for kind in ("blocker", "nitpick"):
        found = list(_COUNT_PATTERNS[kind].finditer(text))
        counts.append(int(found[-1]["before"] or found[-1]["after"]) if found else None)
    return counts[0], counts[1]


def feedback_lines(text: str, kind: str) -> list[str]:
    """The lines of a review about ``kind`` (blocker or nitpick): those naming it, and list items that a
    heading or label naming it owns.

    A Markdown heading (``## Blockers``) owns the list items of its section, up to the next heading; any
    other line naming a kind (``Blockers:``, ``blockers: 1``) owns the list items that follow it, up to a line
    of other text. Blank lines end nothing, and neither does a count line whose counts are all 0
    (``nitpicks: 0``): nothing can be listed under zero, so ``blockers: 1`` / ``nitpicks: 0`` / ``- fix X``
    still gives ``- fix X`` to the blockers."""
    picked: list[str] = []
    owner: frozenset[str] = frozenset()  # the kinds the current heading or label names
    section = False  # the owner is a Markdown heading: text lines do not end it
    for line in text.splitlines():
        stripped = line.strip()
        named = kind in stripped.lower()
        if not stripped:
            continue
        if _LIST_ITEM.match(line):
            if (named and not _only_counts(stripped)) or kind in owner:
                picked.append(stripped)
        elif stripped.startswith("#"):  # a heading is not feedback
            owner, section = _kinds_named(stripped), True
        elif _only_counts(stripped, labels=True):  # "blockers: 1", "nitpicks: 0", "**Blockers:**"
            listed = _kinds_named(stripped) - _counted_zero(stripped)
            if listed:  # a line of zero counts owns nothing and ends nothing
                owner, section = listed, False
        elif _kinds_named(stripped):
            if named:
                picked.append(stripped)
            owner, section = _kinds_named(stripped), False
        elif not section:
            owner = frozenset()
    return picked


def _kinds_named(line: str) -> frozenset[str]:
    lowered = line.lower()
    return frozenset(kind for kind in _COUNT_PATTERNS if kind in lowered)


def _counted_zero(line: str) -> frozenset[str]:
    """The kinds ``line`` gives a count for, every one of them 0 (``nitpicks: 0``)."""
    counts = {
        kind: [int(m["before"] or m["after"]) for m in _COUNT_PATTERNS[kind].finditer(line)]
        for kind in _COUNT_PATTERNS
    }
    return frozenset(kind for kind, found in counts.items() if found and not any(found))


def _only_counts(line: str, labels: bool = False) -> bool:
    """A summary line such as ``**Blockers:** 1`` or ``Summary: 1 blocker, 2 nitpicks``: no feedback in it.
    With ``labels``, a bare label such as ``Blockers:`` counts as one too."""
    rest = line
    for pattern in _COUNT_PATTERNS.values():
        rest = pattern.sub(" ", rest)
    if labels:
        rest = re.sub(r"(?i)\b(blocker|nitpick)s?\b", " ", rest)
    rest = re.sub(r"(?i)\b(summary|total|totals|counts?|found|and|with)\b", " ", rest)
    return not re.search(r"[^\W\d_]", rest)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def reviewed(
    reviews: Sequence[ReviewRecord],
    show: Callable[[Path], str],
    allow_blockers: int = 0,
    allow_nitpicks: int | None = None,
) -> Verdict:
    """Sum the blockers and nitpicks of the reviews and hold them to the thresholds."""
    if not reviews:
        reason = "no reviews to read for the current artifacts; run route.stone.set --as passed to run them"
        return Verdict("failed", reason, f"passed: false\nreason: {reason}\n")
    per_review: list[tuple[ReviewRecord, int, int]] = []
    for review in reviews:
        blockers, nitpicks = count_issues(review.stdout)
        if blockers is None or nitpicks is None:
            missing = "blocker" if blockers is None else "nitpick"
            reason = (
                f"review r{review.position} has no readable {missing} count ({show(review.path)}); "
                f"its command must print '{missing}s: N'"
            )
            return Verdict("malfunction", reason, f"reason: {reason}\n")
        per_review.append((review, blockers, nitpicks))
    total_blockers = sum(blockers for _, blockers, _ in per_review)
    total_nitpicks = sum(nitpicks for _, _, nitpicks in per_review)
    problems: list[str] = []
    if total_blockers > allow_blockers:
        problems.append(f"blockers exceed threshold ({total_blockers} > {allow_blockers})")
    if allow_nitpicks is not None and total_nitpicks > allow_nitpicks:
        problems.append(f"nitpicks exceed threshold ({total_nitpicks} > {allow_nitpicks})")
    blockers_over = total_blockers > allow_blockers
    nitpicks_over = allow_nitpicks is not None and total_nitpicks > allow_nitpicks
    details: list[str] = []
    feedback: list[str] = []
    for review, blockers, nitpicks in per_review:
        details.append(
            f"  r{review.position}: {_plural(blockers, 'blocker')}, {_plural(nitpicks, 'nitpick')}"
            f" ({show(review.path)})"
        )
        for kind, count, over in (("blocker", blockers, blockers_over), ("nitpick", nitpicks, nitpicks_over)):
            if not (count and over):
                continue
            for line in feedback_lines(review.stdout, kind):
                details.append(f"    {line}")
                if kind == "blocker":
                    feedback.append(f"r{review.position}: {line}")
    if problems:
        reason = "; ".join(problems)
        if feedback:
            reason += " — " + " | ".join(feedback)[:600]
        status = "failed"
    else:
        limit = "any" if allow_nitpicks is None else str(allow_nitpicks)
        reason = (
            f"within thresholds (blockers {total_blockers} ≤ {allow_blockers}, "
            f"nitpicks {total_nitpicks} ≤ {limit})"
        )
        status = "passed"
    output = (
        f"passed: {'true' if status == 'passed' else 'false'}\nreason: {reason}\n" + "\n".join(details) + "\n"
    )
    return Verdict(status, reason, output)


def approved(
    marker: Marker | None,
    marker_exists: bool,
    review_input_hash: str | None,
    show: Callable[[Path], str],
    approve_hint: str,
    require_current: bool = APPROVAL_MUST_MATCH_ARTIFACTS,
    current_artifacts: Mapping[str, str] | None = None,
) -> Verdict:
    """Pass when a human approved the stone (``$stone.approved``) for its current artifacts."""
    if marker is None:
        reason = "wait for human approval"
        hint = f"  a human approves with: {approve_hint}"
        if marker_exists:
            hint = f"  the approval marker does not parse; a human approves again with: {approve_hint}"
        return Verdict("failed", reason, f"passed: false\nreason: {reason}\n{hint}\n")
    if require_current and review_input_hash is not None and marker.review_input_hash != review_input_hash:
        what = ""
        if marker.artifacts and current_artifacts is not None:
            what = manifest.describe(marker.manifest, current_artifacts)
        reason = (
            f"wait for human approval (an approval exists, but for older content: approved at {marker.at}"
            + (f"; since then: {what}" if what else "")
            + ")"
        )
        detail = f"  {show(marker.path)}\n  a human approves the new content with: {approve_hint}\n"
        return Verdict("failed", reason, f"passed: false\nreason: {reason}\n{detail}")
    who = f" by {marker.approver_name} <{marker.approver_email}>" if marker.approver_email else ""
    reason = f"approved{who} at {marker.at}"
    return Verdict("passed", reason, f"passed: true\nreason: {reason}\n  {show(marker.path)}\n")
