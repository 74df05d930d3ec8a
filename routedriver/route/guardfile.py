"""Parse and validate ``<name>.guard`` (YAML). Every mistake is a refusal naming the file and the key:
commands refuse with a guard's first one, ``route.lint`` lists them all (``check_guard``)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any, NamedTuple

from routedriver import userfile
from routedriver.errors import Refused
from routedriver.route.builtin_judges import JudgeSpecError, parse_builtin
from routedriver.route.model import DEFAULT_TIMEOUT_S, STATE_DIR, Guard, Route, Stone, default_artifacts

ALLOWED_KEYS = ("artifacts", "inputs", "judges", "protect", "reviews", "timeout")
_COMMAND_LISTS = ("reviews", "judges")
_GLOB_LISTS = ("artifacts", "protect", "inputs")
_LISTS = (*_COMMAND_LISTS, *_GLOB_LISTS)  # the order their problems are listed in


def _type_name(value: object) -> str:
    return "null" if value is None else type(value).__name__


class GuardCheck(NamedTuple):
    """What validating a guard found: the guard when it has no problem, else None and every problem."""

    guard: Guard | None
    # Unknown keys first, then by key: reviews, judges, artifacts, protect, inputs, timeout. Each names file
    # and key.
    problems: tuple[Refused, ...]


def check_guard(text: str, path: Path, shown: str, stone_name: str) -> GuardCheck:
    """Validate the YAML ``text`` of the guard file ``path`` (``shown`` is how messages name it), listing
    every independent problem: what ``route.lint`` shows. A YAML syntax error stops the reading, so it is
    then the only problem."""
    problems: list[Refused] = []
    guard = _validate(text, path, shown, stone_name, problems)
    return GuardCheck(guard, tuple(problems))


def parse_guard(text: str, path: Path, shown: str, stone_name: str) -> Guard:
    """A Guard from the YAML ``text`` of the file ``path``; refuses with its first problem."""
    guard = _first(check_guard(text, path, shown, stone_name))
    assert guard is not None  # text always makes a guard or a problem
    return guard


def _first(check: GuardCheck) -> Guard | None:
    """What commands use: the guard, or a refusal with its first problem."""
    if check.problems:
        raise check.problems[0]
    return check.guard


def _validate(text: str, path: Path, shown: str, stone_name: str, problems: list[Refused]) -> Guard | None:
    """The ONE set of guard rules, shared by every command and ``route.lint``: the guard, or None after
    appending each of its problems to ``problems``."""
    try:
        data = userfile.parse_yaml(text, shown=shown, hint=_yaml_hint)
    except Refused as exc:
        problems.append(exc)
        return None
    return _guard_from(data, text, path, shown, stone_name, problems)


def _yaml_hint(line: str) -> str | None:
    """A better fix than "fix the YAML syntax", from the text of the line PyYAML could not read."""
    if "?" in line and "[" in line:
        # PyYAML cannot read a bare "approved?" inside [ ]: say how to write it instead.
        return "quote entries that end in '?' inside [ ] (['approved?']) or write a '- approved?' list"
    if line.lstrip().startswith("- ") and ": " in line:
        # `- echo a: b: c`: the colon trap with a second ': ', which YAML cannot even read as a mapping.
        return _COLON_FIX
    return None


_COLON_FIX = (
    "a ': ' inside an unquoted command makes YAML read a mapping; quote the whole command "
    "(- 'echo blockers: 0') or write it as a block (- |, then the command on the next line, indented)"
)


def _colon_trap(where: str, item: dict[Any, Any], text: str) -> Refused:
    """The list item YAML read as a mapping, nearly always a command with ': ' in it (``- echo blockers:
    0`` is ``{'echo blockers': 0}``): say why, and show the item quoted the way that works."""
    written = _written_item(item, text)
    if written is None:
        return Refused(f"{where}: expected a string, got a mapping", _COLON_FIX)
    quoted = f"'{written}'" if "'" not in written else json.dumps(written, ensure_ascii=False)
    return Refused(
        f"{where}: a ': ' inside an unquoted command makes YAML read a mapping instead of the command "
        f"({written})",
        f"quote the whole command (- {quoted}) or write it as a block (- |, then the command on the next "
        "line, indented)",
    )


def _written_item(item: dict[Any, Any], text: str) -> str | None:
    """The command as it was written, for a one-key mapping item: its line in the guard when found, else
    rebuilt from the key and the value."""
    if len(item) != 1:
        return None
    key, value = next(iter(item.items()))
    if not isinstance(key, str):
        return None
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(f"- {key}:"):  # a block item: the rest of its line
            return stripped[2:].split(" #", 1)[0].rstrip()
        start = line.find(f"{key}:")
        if start > 0 and line[:start].rstrip().endswith(("[", ",")):  # an item of a flow list
            rest = line[start + len(key) + 1 :]
            ends = [index for index in (rest.find(","), rest.find("]")) if index >= 0]
            return (line[start : start + len(key) + 1] + rest[: min(ends, default=len(rest))]).strip()
    return f"{key}:" if value is None else f"{key}: {value}"


def _guard_from(
    data: Any, text: str, path: Path, shown: str, stone_name: str, problems: list[Refused]
) -> Guard | None:
    """The guard ``data`` describes, or None after appending each problem it has to ``problems``. A key
    whose value is wrong is reported once and then left out, so no problem is a mere echo of another."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        problems.append(
            Refused(
                f"{shown}: expected a mapping with keys {', '.join(ALLOWED_KEYS)}; got {_type_name(data)}",
                "write it as 'key: value' lines",
            )
        )
        return None
    for key in data:
        if key not in ALLOWED_KEYS:
            problems.append(Refused(f"{shown}: unknown key {str(key)!r}; allowed: {', '.join(ALLOWED_KEYS)}"))

    lists: dict[str, tuple[str, ...]] = {}
    for key in _LISTS:
        if key not in data:
            continue
        value = data[key]
        if not isinstance(value, list):
            problems.append(
                Refused(
                    f"{shown}: {key}: expected a list of strings, got {_type_name(value)}",
                    f"write {key}: [\"...\"] or a '- item' list ({key}: [] for none)",
                )
            )
            continue
        items = []
        reviewed = data.get("reviews", []) != []  # absent or [] (a wrong shape is a problem of its own)
        for index, item in enumerate(value, start=1):
            problem = _item_problem(f"{shown}: {key}[{index}]", key, item, text, reviewed=reviewed)
            if problem is None:
                items.append(item)
            else:
                problems.append(problem)
        lists[key] = tuple(items)

    timeout = data.get("timeout", DEFAULT_TIMEOUT_S)
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not timeout > 0
        or timeout != timeout
        or timeout == math.inf
    ):
        problems.append(
            Refused(
                f"{shown}: timeout: expected a positive number of seconds, got {timeout!r}",
                f"write timeout: {int(DEFAULT_TIMEOUT_S)}",
            )
        )
    if problems:
        return None

    # An explicit "artifacts: []" declares a stone that produces no files (e.g. a pure approval gate).
    artifacts = lists["artifacts"] if "artifacts" in lists else default_artifacts(stone_name)
    return Guard(
        path=path,
        artifacts=artifacts,
        reviews=lists.get("reviews", ()),
        judges=lists.get("judges", ()),
        timeout_s=float(timeout),
        protect=lists.get("protect", ()),
        inputs=lists.get("inputs", ()),
    )


def _item_problem(where: str, key: str, item: object, text: str, *, reviewed: bool) -> Refused | None:
    """What is wrong with ``item`` of the list ``key`` (``where`` names it), or None to keep it; ``text`` is
    the guard's own text, ``reviewed`` whether it has reviews for a judge to read."""
    if isinstance(item, dict):
        return _colon_trap(where, item, text)
    if not isinstance(item, str):
        return Refused(f"{where}: expected a string, got {_type_name(item)}", "quote it")
    if not item.strip():
        return Refused(
            f"{where}: empty {'command' if key in _COMMAND_LISTS else 'glob'}",
            "write one or remove the entry",
        )
    unsayable = next((char for char in item if char == "\0" or "\ud800" <= char <= "\udfff"), None)
    if (
        unsayable is not None
    ):  # YAML's "\0" and "\ud800" escapes: no program, argument or file name holds them
        return Refused(
            f"{where}: holds U+{ord(unsayable):04X}, which no command or file name can hold", "remove it"
        )
    if key == "inputs":
        escape = _escaping_input(item)
        return Refused(f"{where}: {item!r} {escape}", _INPUTS_FIX) if escape else None
    if key != "judges":
        return None
    try:
        builtin = parse_builtin(item)
    except JudgeSpecError as exc:
        return Refused(f"{where}: {exc}")
    if builtin is not None and "reviews" in builtin.judge.reads and not reviewed:
        return Refused(
            f"{where}: {builtin.name} needs reviews to read",
            "add a command under reviews: or remove the judge",
        )
    return None


_INPUTS_FIX = "name the file from the repository's top (routes/x/2.plan.md) or from $route ($route/2.plan.md)"


def _escaping_input(pattern: str) -> str:
    """Why an ``inputs:`` glob may not be used ("" when it may): its files are hashed into the stone's pass,
    which CI re-derives from a checkout, so they must be files of the repository: no absolute path, no
    ``..`` (which could climb out of it), and none of the driver's own ``.route/`` records."""
    if pattern.startswith(("/", "~")):
        return "is outside the repository (an absolute path)"
    parts = pattern.split("/")
    if ".." in parts:
        return "could escape the repository ('..')"
    if STATE_DIR in parts:
        return f"names the driver's own {STATE_DIR}/ records, which are not inputs"
    return ""


def load_guard(route: Route, stone: Stone) -> Guard | None:
    """The stone's guard, or None when it has none; refuses with the guard's first problem."""
    return _first(check_guard_file(route, stone))


def check_guard_file(route: Route, stone: Stone) -> GuardCheck:
    """Read and validate the stone's guard file as every command does, listing every problem it has (no
    guard file: no guard and no problem)."""
    problems: list[Refused] = []
    guard = None if stone.guard_path is None else _read(route, stone.guard_path, stone.name, problems)
    return GuardCheck(guard, tuple(problems))


def _read(route: Route, path: Path, stone_name: str, problems: list[Refused]) -> Guard | None:
    shown = route.show(path)
    try:
        text = userfile.read_text(path, what="guard", shown=shown)
    except Refused as exc:  # a FIFO, a link to /dev/zero, too big, not UTF-8: this stone's problem
        problems.append(exc)
        return None
    return _validate(text, path, shown, stone_name, problems)
