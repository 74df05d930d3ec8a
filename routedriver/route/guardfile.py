"""Parse and validate ``<name>.guard`` (YAML). Every mistake is one refusal naming the file and the key."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from routedriver.errors import Refused
from routedriver.route.judges import JudgeSpecError, parse_builtin
from routedriver.route.model import DEFAULT_TIMEOUT_S, Guard, Route, Stone

ALLOWED_KEYS = ("artifacts", "judges", "protect", "reviews", "timeout")
_COMMAND_LISTS = ("reviews", "judges")
_GLOB_LISTS = ("artifacts", "protect")


def default_artifacts(stone_name: str) -> tuple[str, ...]:
    """``$route/<name>*.md``: matches ``1.vision.md`` and versioned ``1.vision.v1.i1.md`` alike."""
    return ("$route/${stone}*.md",)


_LOADER: Any = None


def _yaml_loader() -> Any:
    """A safe loader that refuses duplicate keys, built once per process. Deliberately the pure-Python
    parser: libyaml reads some texts PyYAML refuses (``[approved?]``), and a guard must mean the same
    on every installation."""
    global _LOADER
    if _LOADER is not None:
        return _LOADER
    import yaml

    class StrictLoader(yaml.SafeLoader):
        """A safe loader that refuses duplicate keys instead of silently keeping the last one."""

    def construct_mapping(loader: Any, node: Any, deep: bool = False) -> Any:
        seen: set[object] = set()
        for key_node, _ in node.value:
            key = loader.construct_object(key_node, deep=deep)
            try:
                hash(key)
            except TypeError:
                raise yaml.constructor.ConstructorError(
                    None, None, "a key that is a list or a mapping", key_node.start_mark
                ) from None
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {key!r}", key_node.start_mark
                )
            seen.add(key)
        return yaml.SafeLoader.construct_mapping(loader, node, deep=deep)

    StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, construct_mapping)
    _LOADER = StrictLoader
    return _LOADER


def _type_name(value: object) -> str:
    return "null" if value is None else type(value).__name__


def parse_guard(text: str, path: Path, shown: str, stone_name: str) -> Guard:
    """A Guard from the YAML ``text`` of the file ``path`` (``shown`` is how error messages name it)."""
    from routedriver.route import guardyaml

    data = guardyaml.load(text)  # the common shapes without PyYAML; None → PyYAML reads (and judges) it
    if data is None:
        data = _yaml_load(text, shown)
    return _guard_from(data, text, path, shown, stone_name)


def _yaml_load(text: str, shown: str) -> Any:
    import yaml

    try:
        return yaml.load(text, Loader=_yaml_loader())  # noqa: S506 - a SafeLoader subclass
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}: " if mark is not None else ""
        problem = " ".join(str(exc.problem or exc.context or "unreadable").split())
        fix = "fix the YAML syntax"
        lines = text.splitlines()
        bad_line = lines[mark.line] if mark is not None and mark.line < len(lines) else ""
        if "?" in bad_line and "[" in bad_line:
            # PyYAML cannot read a bare "approved?" inside [ ]: say how to write it instead.
            fix = "quote entries that end in '?' inside [ ] (['approved?']) or write a '- approved?' list"
        raise Refused(f"{shown}: {where}malformed YAML ({problem})", fix) from None
    except yaml.YAMLError as exc:
        raise Refused(
            f"{shown}: malformed YAML ({' '.join(str(exc).split())})", "fix the YAML syntax"
        ) from None


def _guard_from(data: Any, text: str, path: Path, shown: str, stone_name: str) -> Guard:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise Refused(
            f"{shown}: expected a mapping with keys {', '.join(ALLOWED_KEYS)}; got {_type_name(data)}",
            "write it as 'key: value' lines",
        )
    for key in data:
        if key not in ALLOWED_KEYS:
            raise Refused(f"{shown}: unknown key {str(key)!r}; allowed: {', '.join(ALLOWED_KEYS)}")

    lists: dict[str, tuple[str, ...]] = {}
    for key in (*_COMMAND_LISTS, *_GLOB_LISTS):
        if key not in data:
            continue
        value = data[key]
        if not isinstance(value, list):
            raise Refused(
                f"{shown}: {key}: expected a list of strings, got {_type_name(value)}",
                f"write {key}: [\"...\"] or a '- item' list ({key}: [] for none)",
            )
        items = []
        for index, item in enumerate(value, start=1):
            if not isinstance(item, str):
                raise Refused(
                    f"{shown}: {key}[{index}]: expected a string, got {_type_name(item)}", "quote it"
                )
            if not item.strip():
                raise Refused(
                    f"{shown}: {key}[{index}]: empty {'command' if key in _COMMAND_LISTS else 'glob'}",
                    "write one or remove the entry",
                )
            items.append(item)
        lists[key] = tuple(items)

    for index, command in enumerate(lists.get("judges", ()), start=1):
        try:
            builtin = parse_builtin(command)
        except JudgeSpecError as exc:
            raise Refused(f"{shown}: judges[{index}]: {exc}") from None
        if builtin is not None and builtin.mechanism == "reviewed?" and not lists.get("reviews"):
            raise Refused(
                f"{shown}: judges[{index}]: reviewed? needs reviews to read",
                "add a command under reviews: or remove the judge",
            )

    timeout = data.get("timeout", DEFAULT_TIMEOUT_S)
    if (
        isinstance(timeout, bool)
        or not isinstance(timeout, int | float)
        or not timeout > 0
        or timeout != timeout
        or timeout == float("inf")
    ):
        raise Refused(
            f"{shown}: timeout: expected a positive number of seconds, got {timeout!r}",
            f"write timeout: {int(DEFAULT_TIMEOUT_S)}",
        )

    # An explicit "artifacts: []" declares a stone that produces no files (e.g. a pure approval gate).
    artifacts = lists["artifacts"] if "artifacts" in lists else default_artifacts(stone_name)
    return Guard(
        path=path,
        artifacts=artifacts,
        reviews=lists.get("reviews", ()),
        judges=lists.get("judges", ()),
        timeout_s=float(timeout),
        protect=lists.get("protect", ()),
        sha256=hashlib.sha256(text.encode("utf-8")).hexdigest(),
    )


def load_guard(route: Route, stone: Stone) -> Guard | None:
    """The stone's guard, or None when it has none."""
    if stone.guard_path is None:
        return None
    shown = route.show(stone.guard_path)
    try:
        text = stone.guard_path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise Refused(f"{shown}: not UTF-8 text", "save it as UTF-8") from None
    except OSError as exc:
        raise Refused(f"cannot read {shown}: {exc.strerror}", "check that it is a readable file") from None
    return parse_guard(text, stone.guard_path, shown, stone.name)
