"""The functions and methods an invariant may call (and the operators it may use)."""

from __future__ import annotations

import ast
import json
from collections.abc import Callable, Iterable
from functools import lru_cache
from typing import Any

from routedriver.behaviorci.invariants.limits import (
    MAX_PATTERN_CHARS,
    MAX_REGEX_SECONDS,
    InvariantFailure,
    LimitExceeded,
)
from routedriver.behaviorci.jsonout import parse_output


@lru_cache(maxsize=256)
def compile_regex(pattern: str) -> Any:
    """Compile with the ``regex`` engine (``re``-compatible syntax) because it can give up: a pattern that
    backtracks catastrophically on some model output must fail that case, not hang the whole run."""
    # regex (~8 ms): only a bundle with a regex invariant loads it
    import regex

    if not isinstance(pattern, str):
        raise InvariantFailure(f"a regex pattern must be a string, not {type(pattern).__name__}")
    if len(pattern) > MAX_PATTERN_CHARS:
        raise LimitExceeded(f"regex pattern longer than {MAX_PATTERN_CHARS} characters")
    try:
        return regex.compile(pattern)
    except regex.error as exc:
        raise InvariantFailure(f"invalid regex {pattern!r}: {exc}") from None


def _match(pattern: str, text: Any, fn: str) -> Any:
    compiled = compile_regex(pattern)
    method = "search" if fn == "matches" else fn
    try:
        return getattr(compiled, method)(_text(text, fn), timeout=MAX_REGEX_SECONDS)
    except TimeoutError:
        raise LimitExceeded(
            f"{fn}({pattern!r}, …) gave up after {MAX_REGEX_SECONDS:g} s (the pattern backtracks too much "
            "on this text; make it more specific)"
        ) from None


def _text(value: Any, fn: str) -> str:
    if not isinstance(value, str):
        raise InvariantFailure(f"{fn}() needs a string to search, got {type(value).__name__}")
    return value


def matches(pattern: str, text: str) -> bool:
    """True when ``pattern`` matches anywhere in ``text`` (``re.search``)."""
    return _match(pattern, text, "matches") is not None


def search(pattern: str, text: str) -> str | None:
    """The first match of ``pattern`` in ``text`` (the whole match), or None."""
    found = _match(pattern, text, "search")
    return None if found is None else found.group(0)


def fullmatch(pattern: str, text: str) -> bool:
    """True when ``pattern`` matches all of ``text``."""
    return _match(pattern, text, "fullmatch") is not None


def findall(pattern: str, text: str) -> list[Any]:
    """Every non-overlapping match of ``pattern`` in ``text`` (as ``re.findall`` returns them)."""
    return list(_match(pattern, text, "findall"))


def is_json(text: str) -> bool:
    """True when ``text`` is JSON (or holds JSON in a ```json fence)."""
    return parse_output(_text(text, "is_json"))[1]


def _sum(values: Iterable[Any], start: int | float = 0) -> Any:
    # Only numbers: sum(list_of_lists, []) would be a quadratic copy the step budget cannot see.
    if type(start) not in (int, float):
        raise InvariantFailure("sum() adds numbers only")
    total: Any = start
    for value in values:
        if type(value) not in (int, float, bool):
            raise InvariantFailure(f"sum() adds numbers only, got {type(value).__name__}")
        total += value
    return total


def _loads(text: str) -> Any:
    try:
        return json.loads(_text(text, "json_loads"))
    except json.JSONDecodeError as exc:
        raise InvariantFailure(f"json_loads(): {exc}") from None


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "len": len,
    "str": str,
    "int": int,
    "float": float,
    "bool": bool,
    "abs": abs,
    "min": min,
    "max": max,
    "sum": _sum,
    "any": any,
    "all": all,
    "sorted": sorted,
    "round": round,
    "isinstance": isinstance,
    "list": list,
    "tuple": tuple,
    "set": set,
    "dict": dict,
    "matches": matches,
    "search": search,
    "fullmatch": fullmatch,
    "findall": findall,
    "is_json": is_json,
    "json_loads": _loads,
}
REGEX_FUNCTIONS = frozenset({"matches", "search", "fullmatch", "findall"})
KEYWORDS = frozenset({"reverse", "key", "default", "maxsplit", "sep", "start"})

METHODS: dict[type, frozenset[str]] = {
    str: frozenset(
        {
            "lower",
            "upper",
            "strip",
            "lstrip",
            "rstrip",
            "startswith",
            "endswith",
            "split",
            "rsplit",
            "splitlines",
            "count",
            "find",
            "rfind",
            "index",
            "rindex",
            "replace",
            "join",
            "isdigit",
            "isalpha",
            "isalnum",
            "isspace",
            "islower",
            "isupper",
            "isnumeric",
            "isdecimal",
            "title",
            "capitalize",
            "casefold",
            "partition",
            "rpartition",
            "removeprefix",
            "removesuffix",
        }
    ),
    dict: frozenset({"get", "keys", "values", "items"}),
    list: frozenset({"count", "index"}),
    tuple: frozenset({"count", "index"}),
}
ALL_METHODS = frozenset().union(*METHODS.values())
SUBSCRIPTABLE = (str, list, tuple, dict)

BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: lambda a, b: a + b,
    ast.Sub: lambda a, b: a - b,
    ast.Mult: lambda a, b: a * b,
    ast.Div: lambda a, b: a / b,
    ast.FloorDiv: lambda a, b: a // b,
    ast.Mod: lambda a, b: a % b,
    ast.Pow: lambda a, b: a**b,
}
CMPOPS: dict[type, Callable[[Any, Any], bool]] = {
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
    ast.In: lambda a, b: a in b,
    ast.NotIn: lambda a, b: a not in b,
    ast.Is: lambda a, b: a is b,
    ast.IsNot: lambda a, b: a is not b,
}
COMPREHENSIONS = (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)
