"""Rule messages: ``{target}``, ``{tool}``, ``{param:query}``, ``{counter:x}`` … filled from call and state.

Only the documented placeholders are replaced; anything else in braces (``{oops}``, JSON in a message) is
left exactly as written, so a message can never crash the engine or leak Python attribute access the way
``str.format`` would.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from routedriver.brain.behavior.names import bare_name
from routedriver.brain.behavior.state import PRIMARY_TARGETS, SessionState, pick_param

PARAM_CUT = 100  # a {param:x} longer than this is cut, so a 5 KB heredoc does not flood the message
_PLACEHOLDER = re.compile(
    r"\{(target|tool|turn|tool_calls_this_turn|consecutive_same_tool|(param|counter|set_count|flag):([^{}\s]+))\}"
)


def _short(value: Any, limit: int = PARAM_CUT) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def primary_target(params: Mapping[str, Any]) -> str:
    picked = pick_param(params, PRIMARY_TARGETS)
    return _short(picked[1]) if picked else ""


def render(
    template: str, *, tool: str, params: Mapping[str, Any], state: SessionState, calls: int, streak: int
) -> str:
    if "{" not in template:
        return template

    def fill(match: re.Match[str]) -> str:
        whole, kind, name = match.group(1), match.group(2), match.group(3)
        if kind is None:
            if whole == "target":
                return primary_target(params)
            if whole == "tool":
                return bare_name(tool)
            if whole == "turn":
                return str(state.turn)
            if whole == "tool_calls_this_turn":
                return str(calls)
            return str(streak)  # consecutive_same_tool
        if kind == "param":
            value = params.get(name)
            return "" if value is None else _short(value)
        if kind == "counter":
            return str(state.counters.get(name, 0))
        if kind == "set_count":
            return str(len(state.sets.get(name, ())))
        return str(bool(state.flags.get(name, False)))  # flag

    return _PLACEHOLDER.sub(fill, template)
