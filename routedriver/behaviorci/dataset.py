"""The dataset: one JSON object per line, each a case.

Keys: ``input`` (object, required: the prompt's variables), ``id`` (string or integer; default
``line-<n>``, so ids stay the same across runs, unlike 0.1.0's per-process ``hash()``), ``expected_output``,
``metadata`` (object), and ours: ``mock_output`` (what the mock provider answers for this case) and
``min_pass_rate`` (share of ``repeat`` runs that must pass). Any other key (``tags``, a misspelled
``expected_ouput``) is not read, as BehaviorCI 0.1.0 did not read it, so 0.1.0 datasets load unchanged; but
not silently: each such key is one warning naming its lines (and the key it may be a typo of). Extra data
that invariants should see belongs under ``metadata``.
"""

from __future__ import annotations

import difflib
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from routedriver import userfile
from routedriver.behaviorci.errors import BundleError
from routedriver.behaviorci.text import lone_surrogate_at

CASE_KEYS = ("input", "id", "expected_output", "metadata", "mock_output", "min_pass_rate")
_MISSING: Any = object()
MAX_BYTES = 1 << 30  # a dataset may be large; one gigabyte is still read whole, so more is refused


@dataclass(frozen=True)
class Case:
    id: str
    line: int
    input: dict[str, Any]
    expected_output: Any = None
    metadata: dict[str, Any] = field(default_factory=dict)
    mock_output: Any = _MISSING
    min_pass_rate: float = 1.0

    @property
    def has_mock_output(self) -> bool:
        return self.mock_output is not _MISSING


class Dataset(NamedTuple):
    cases: list[Case]
    warnings: tuple[str, ...]  # one per key the dataset has that is not read


def load_dataset(path: Path, shown: str, *, default_min_pass_rate: float = 1.0) -> Dataset:
    """Parse the JSONL file at ``path`` (``shown`` is how errors and warnings name it)."""
    if os.path.isdir(path):
        raise BundleError(
            f"dataset {shown} is a directory", "point dataset_path in bundle.yaml at a JSONL file"
        )
    if not os.path.exists(path):  # what is there but is no file (a FIFO, a device), userfile names
        raise BundleError(f"dataset {shown} not found", "check dataset_path in bundle.yaml")
    text = userfile.read_text(path, what="dataset", shown=shown, limit=MAX_BYTES, error=BundleError, bom=True)

    cases: list[Case] = []
    seen: dict[str, int] = {}
    ignored: dict[str, list[int]] = {}  # key not read → the lines that have it
    # "\n" only, not str.splitlines(): that also splits at U+2028, U+2029 and U+0085, which JSON writers
    # (json.dumps(ensure_ascii=False)) leave raw inside strings.
    for number, raw in enumerate(text.split("\n"), start=1):
        raw = raw.removesuffix("\r")
        if not raw.strip():
            continue
        case = _parse_line(raw, number, shown, default_min_pass_rate, ignored)
        if case.id in seen:
            raise BundleError(
                f"{shown} line {number}: case id '{case.id}' is already used on line {seen[case.id]}",
                "give every case a unique id",
            )
        seen[case.id] = number
        cases.append(case)
    if not cases:
        raise BundleError(
            f"dataset {shown} has no cases", 'add one JSON object per line, e.g. {"input": {...}}'
        )
    return Dataset(cases, tuple(_ignored_warning(shown, key, lines) for key, lines in ignored.items()))


def _ignored_warning(shown: str, key: str, lines: list[int]) -> str:
    more = f" and {len(lines) - 5} more" if len(lines) > 5 else ""
    listed = ", ".join(str(line) for line in lines[:5]) + more
    close = difflib.get_close_matches(key, CASE_KEYS, n=1)
    typo = f" (did you mean '{close[0]}'?)" if close else ""
    return (
        f"{shown} line{'s' if len(lines) > 1 else ''} {listed}: key '{key}' is not read{typo}; "
        'put data that invariants should see under "metadata"'
    )


def _parse_line(
    raw: str, number: int, shown: str, default_min_pass_rate: float, ignored: dict[str, list[int]]
) -> Case:
    where = f"{shown} line {number}"
    data = userfile.parse_json(raw, shown=where, error=BundleError)
    if not isinstance(data, dict):
        raise BundleError(f"{where}: expected a JSON object, got {_kind(data)}", 'write {"input": {...}}')
    surrogate = lone_surrogate_at(data) if "\\u" in raw else None  # only a \u escape can spell one
    if surrogate is not None:
        raise BundleError(
            f"{where}: {surrogate} holds a lone surrogate (a \\ud800-\\udfff escape without its pair)",
            "write the character itself or both halves of its surrogate pair",
        )
    for key in data:
        if key not in CASE_KEYS:
            ignored.setdefault(key, []).append(number)
    if "input" not in data:
        raise BundleError(
            f"{where}: missing required key 'input'", 'add "input": {...} with the prompt variables'
        )
    if not isinstance(data["input"], dict):
        raise BundleError(
            f"{where}: 'input' must be an object of prompt variables, got {_kind(data['input'])}",
            'write "input": {"name": value}',
        )
    metadata = data.get("metadata", {})
    if metadata is None:
        metadata = {}
    if not isinstance(metadata, dict):
        raise BundleError(f"{where}: 'metadata' must be an object, got {_kind(metadata)}", "wrap it in {...}")
    return Case(
        id=_case_id(data.get("id"), number, where),
        line=number,
        input=data["input"],
        expected_output=data.get("expected_output"),
        metadata=metadata,
        mock_output=data.get("mock_output", _MISSING),
        min_pass_rate=_min_pass_rate(data.get("min_pass_rate", default_min_pass_rate), where),
    )


def _case_id(value: Any, number: int, where: str) -> str:
    if value is None:
        return f"line-{number}"
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise BundleError(f"{where}: 'id' must be a string or an integer, got {_kind(value)}", "fix the id")
    text = str(value).strip()
    if not text or "\n" in text or "\r" in text:
        raise BundleError(f"{where}: 'id' must be a non-empty single line", "fix the id")
    return text


def _min_pass_rate(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise BundleError(
            f"{where}: 'min_pass_rate' must be a number from 0 to 1, got {value!r}", "fix the value"
        )
    return float(value)


def _kind(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number"
    )
