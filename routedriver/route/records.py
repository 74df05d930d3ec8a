"""Review and judge files under ``.route/``: written once their command finished, read back tolerantly.

A file is trusted only when it is whole and self-consistent: its name agrees with its front matter, and its
body still hashes to the recorded ``stdout_sha256``. Anything else (truncated, edited, renamed) is None.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from routedriver.route import frontmatter as fm
from routedriver.route.model import JudgeRecord, ReviewRecord, Route
from routedriver.route.store import (
    SHORT,
    judge_files,
    judge_name,
    read_hash,
    read_text,
    review_files,
    review_name,
    utc_now,
    write_text,
)

if TYPE_CHECKING:
    from routedriver.route.outcome import CommandOutcome


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def read_review(path: Path, stone: str) -> ReviewRecord | None:
    """A review file, or None if it is not one whole, self-consistent review of ``stone``."""
    named = review_files([path.name], stone)
    text = read_text(path) if named else None
    parsed = fm.parse_document(text) if text is not None else None
    if parsed is None:
        return None
    fields, body = parsed
    iteration, short, position_in_name, _ = named[0]
    position, exit_code, duration = (
        fm.integer(fields, "position"),
        fm.integer(fields, "exit_code"),
        fm.number(fields, "duration_s"),
    )
    review_input_hash, body_hash = read_hash(fields, "review_input_hash"), read_hash(fields, "stdout_sha256")
    command, status = fm.one(fields, "command"), fm.one(fields, "status")
    if (
        position is None
        or exit_code is None
        or duration is None
        or review_input_hash is None
        or body_hash is None
        or command is None
        or status is None
        or fm.one(fields, "stone") != stone
    ):
        return None
    if position != position_in_name or review_input_hash[:SHORT] != short or sha256_text(body) != body_hash:
        return None  # renamed, or its stdout was edited: not what the driver recorded
    return ReviewRecord(
        path=path,
        stone=stone,
        iteration=iteration,
        position=position,
        command=command,
        review_input_hash=review_input_hash,
        status=status,
        exit_code=exit_code,
        duration_s=duration,
        stdout=body,
        stdout_sha256=body_hash,
        stderr_tail=fm.one(fields, "stderr_tail") or "",
    )


def read_judge(path: Path, stone: str) -> JudgeRecord | None:
    """A judge file, or None if it is not one whole, self-consistent judge file of ``stone``."""
    named = judge_files([path.name], stone)
    text = read_text(path) if named else None
    parsed = fm.parse_document(text) if text is not None else None
    if parsed is None:
        return None
    fields, body = parsed
    iteration, pass_number, review_short, judge_short, position_in_name, _ = named[0]
    position, exit_code, duration = (
        fm.integer(fields, "position"),
        fm.integer(fields, "exit_code"),
        fm.number(fields, "duration_s"),
    )
    review_input_hash, judge_input_hash = (
        read_hash(fields, "review_input_hash"),
        read_hash(fields, "judge_input_hash"),
    )
    command, status, body_hash = (
        fm.one(fields, "command"),
        fm.one(fields, "status"),
        read_hash(fields, "stdout_sha256"),
    )
    if (
        position is None
        or exit_code is None
        or duration is None
        or review_input_hash is None
        or judge_input_hash is None
        or command is None
        or status not in ("passed", "failed", "malfunction")
        or body_hash is None
        or fm.one(fields, "stone") != stone
    ):
        return None
    if (
        position != position_in_name
        or review_input_hash[:SHORT] != review_short
        or judge_input_hash[:SHORT] != judge_short
        or sha256_text(body) != body_hash
    ):
        return None
    return JudgeRecord(
        path=path,
        stone=stone,
        iteration=iteration,
        pass_number=pass_number,
        position=position,
        command=command,
        review_input_hash=review_input_hash,
        judge_input_hash=judge_input_hash,
        status=status,
        exit_code=exit_code,
        reason=fm.one(fields, "reason") or "",
        duration_s=duration,
        stdout=body,
    )


_REVIEW_KEYS = (
    "stone",
    "command",
    "position",
    "iteration",
    "review_input_hash",
    "status",
    "exit_code",
    "duration_s",
    "stdout_sha256",
)
_JUDGE_KEYS = (
    "stone",
    "command",
    "position",
    "iteration",
    "pass_number",
    "review_input_hash",
    "judge_input_hash",
    "status",
    "reason",
    "exit_code",
    "duration_s",
)


def _fields(record: ReviewRecord | JudgeRecord, keys: Sequence[str]) -> list[tuple[str, fm.Value]]:
    return [("pass" if key == "pass_number" else key, getattr(record, key)) for key in keys]


def _stderr_tail(stderr: str) -> str:
    return stderr[-2000:].strip()


def write_review(
    route: Route,
    stone: str,
    iteration: int,
    position: int,
    command: str,
    review_input_hash: str,
    outcome: CommandOutcome,
    extra: Sequence[tuple[str, fm.Value]] = (),
) -> ReviewRecord:
    """Record one finished review command (its stdout verbatim) and return the record."""
    record = ReviewRecord(
        path=route.state_dir / review_name(stone, iteration, review_input_hash, position),
        stone=stone,
        iteration=iteration,
        position=position,
        command=command,
        review_input_hash=review_input_hash,
        status=outcome.status,
        exit_code=outcome.exit_code,
        duration_s=round(outcome.duration_s, 3),
        stdout=outcome.stdout,
        stdout_sha256=sha256_text(outcome.stdout),
        stderr_tail=_stderr_tail(outcome.stderr),
    )
    fields = [*_fields(record, _REVIEW_KEYS), ("written_at", utc_now()), *extra]
    if record.stderr_tail:
        fields.append(("stderr_tail", record.stderr_tail))
    write_text(record.path, fm.render_document(fields, record.stdout))
    return record


def write_judge(
    route: Route,
    stone: str,
    iteration: int,
    pass_number: int,
    position: int,
    command: str,
    review_input_hash: str,
    judge_input_hash: str,
    outcome: CommandOutcome,
    reason: str,
) -> JudgeRecord:
    """Record one judge's verdict (its stdout verbatim) and return the record."""
    name = judge_name(stone, iteration, pass_number, review_input_hash, judge_input_hash, position)
    record = JudgeRecord(
        path=route.state_dir / name,
        stone=stone,
        iteration=iteration,
        pass_number=pass_number,
        position=position,
        command=command,
        review_input_hash=review_input_hash,
        judge_input_hash=judge_input_hash,
        status=outcome.status,
        exit_code=outcome.exit_code,
        reason=reason,
        duration_s=round(outcome.duration_s, 3),
        stdout=outcome.stdout,
    )
    fields = [
        *_fields(record, _JUDGE_KEYS),
        ("stdout_sha256", sha256_text(record.stdout)),
        ("written_at", utc_now()),
    ]
    if tail := _stderr_tail(outcome.stderr):
        fields.append(("stderr_tail", tail))
    write_text(record.path, fm.render_document(fields, record.stdout))
    return record
