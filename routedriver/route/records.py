"""Review and judge files under ``.route/``: written once their command finished, read back tolerantly.

A file is trusted only when it is whole and self-consistent: its name agrees with its front matter, and its
body still hashes to the recorded ``stdout_sha256``. Anything else (truncated, edited, renamed) is None.
A file's name is a hash of its inputs, so it holds nothing that depends on the run (no time, no duration):
the same command with the same output on the same inputs writes the same bytes in any clone, and branches
that ran it merge without a conflict. (Files of older versions may hold such fields; they are ignored.)
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from routedriver.route import frontmatter as fm
from routedriver.route.hashing import sha256_hex
from routedriver.route.model import JudgeRecord, ReviewRecord, Route
from routedriver.route.store import (
    SHORT,
    judge_files,
    judge_name,
    read_hash,
    read_text,
    review_files,
    review_name,
    write_text,
)

if TYPE_CHECKING:
    from routedriver.route.outcome import CommandOutcome


class _Common(NamedTuple):
    """What every review and judge file holds, read and checked against its name and its body."""

    fields: fm.Fields
    body: str
    position: int
    command: str
    review_input_hash: str
    status: str
    exit_code: int
    stdout_sha256: str


def _read_common(path: Path, stone: str, position_in_name: int) -> _Common | None:
    text = read_text(path)
    parsed = fm.parse_document(text) if text is not None else None
    if parsed is None:
        return None
    fields, body = parsed
    position, exit_code = fm.integer(fields, "position"), fm.integer(fields, "exit_code")
    review_input_hash, body_hash = read_hash(fields, "review_input_hash"), read_hash(fields, "stdout_sha256")
    command, status = fm.one(fields, "command"), fm.one(fields, "status")
    if (
        position is None
        or exit_code is None
        or review_input_hash is None
        or body_hash is None
        or command is None
        or status is None
        or fm.one(fields, "stone") != stone
    ):
        return None
    if position != position_in_name or sha256_hex(body) != body_hash:
        return None  # renamed, or its stdout was edited: not what the driver recorded
    return _Common(fields, body, position, command, review_input_hash, status, exit_code, body_hash)


def read_review(path: Path, stone: str) -> ReviewRecord | None:
    """A review file, or None if it is not one whole, self-consistent review of ``stone``."""
    named = review_files([path.name], stone)
    if not named:
        return None
    iteration, short, position_in_name, _ = named[0]
    common = _read_common(path, stone, position_in_name)
    if common is None or common.review_input_hash[:SHORT] != short:
        return None  # renamed, or not a review file
    return ReviewRecord(
        path=path,
        stone=stone,
        iteration=iteration,
        position=common.position,
        command=common.command,
        review_input_hash=common.review_input_hash,
        status=common.status,
        exit_code=common.exit_code,
        duration_s=0.0,  # not recorded: it differs from run to run
        stdout=common.body,
        stdout_sha256=common.stdout_sha256,
        stderr_tail=fm.one(common.fields, "stderr_tail") or "",
    )


def read_judge(path: Path, stone: str) -> JudgeRecord | None:
    """A judge file, or None if it is not one whole, self-consistent judge file of ``stone``."""
    named = judge_files([path.name], stone)
    if not named:
        return None
    iteration, pass_number, review_short, judge_short, position_in_name, _ = named[0]
    common = _read_common(path, stone, position_in_name)
    if common is None or common.status not in ("passed", "failed", "malfunction"):
        return None
    judge_input_hash = read_hash(common.fields, "judge_input_hash")
    if (
        judge_input_hash is None
        or common.review_input_hash[:SHORT] != review_short
        or judge_input_hash[:SHORT] != judge_short
    ):
        return None  # renamed, or not a judge file
    return JudgeRecord(
        path=path,
        stone=stone,
        iteration=iteration,
        pass_number=pass_number,
        position=common.position,
        command=common.command,
        review_input_hash=common.review_input_hash,
        judge_input_hash=judge_input_hash,
        status=common.status,
        exit_code=common.exit_code,
        reason=fm.one(common.fields, "reason") or "",
        duration_s=0.0,  # not recorded: it differs from run to run
        stdout=common.body,
        stderr_tail=fm.one(common.fields, "stderr_tail") or "",
    )


_REVIEW_KEYS = (
    "stone",
    "command",
    "position",
    "iteration",
    "review_input_hash",
    "status",
    "exit_code",
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
        stdout_sha256=sha256_hex(outcome.stdout),
        stderr_tail=_stderr_tail(outcome.stderr),
    )
    fields = [*_fields(record, _REVIEW_KEYS), *extra]
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
        stderr_tail=_stderr_tail(outcome.stderr),
    )
    fields = [
        *_fields(record, _JUDGE_KEYS),
        ("stdout_sha256", sha256_hex(record.stdout)),
    ]
    if record.stderr_tail:
        fields.append(("stderr_tail", record.stderr_tail))
    write_text(record.path, fm.render_document(fields, record.stdout))
    return record
