"""The route driver core: stones, guards, reviews, judges and the content-hash cache.

Public API (imported lazily, so ``import routedriver.route`` stays cheap for ``route.stone.get``)::

    from routedriver.route import compute_stone_review_input_hash, compute_stone_judge_input_hash
    review_hash = compute_stone_review_input_hash("routes/demo", "1.vision")
    judge_hash = compute_stone_judge_input_hash("routes/demo", "1.vision", review_hash)

Also: ``load_route``, ``resolve_route``, ``load_guard``, ``stone_context``, ``approval_state``,
``reviews_in_use`` and the result types in ``routedriver.route.model``. Where a helper takes a route and a
stone, the route is a directory's path or a loaded ``Route`` and the stone a name or a ``Stone``. Nothing here
prints or imports click.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_EXPORTS = {
    "compute_stone_review_input_hash": "routedriver.route.inputs",
    "compute_stone_judge_input_hash": "routedriver.route.inputs",
    "stone_context": "routedriver.route.inputs",
    "approval_state": "routedriver.route.inputs",
    "reviews_in_use": "routedriver.route.inputs",
    "load_route": "routedriver.route.load",
    "resolve_route": "routedriver.route.load",
    "load_guard": "routedriver.route.inputs",
    "Route": "routedriver.route.model",
    "Stone": "routedriver.route.model",
    "Guard": "routedriver.route.model",
    "ReviewRecord": "routedriver.route.model",
    "JudgeRecord": "routedriver.route.model",
    "Marker": "routedriver.route.model",
    "Verdict": "routedriver.route.model",
}

__all__ = [
    "Guard",
    "JudgeRecord",
    "Marker",
    "ReviewRecord",
    "Route",
    "Stone",
    "Verdict",
    "approval_state",
    "compute_stone_judge_input_hash",
    "compute_stone_review_input_hash",
    "load_guard",
    "load_route",
    "resolve_route",
    "reviews_in_use",
    "stone_context",
]

if TYPE_CHECKING:
    from routedriver.route.inputs import (
        approval_state,
        compute_stone_judge_input_hash,
        compute_stone_review_input_hash,
        load_guard,
        reviews_in_use,
        stone_context,
    )
    from routedriver.route.load import load_route, resolve_route
    from routedriver.route.model import Guard, JudgeRecord, Marker, ReviewRecord, Route, Stone, Verdict


def __getattr__(name: str) -> Any:
    module_name = _EXPORTS.get(name)
    if module_name is None:
        raise AttributeError(f"module 'routedriver.route' has no attribute {name!r}")

    value = getattr(importlib.import_module(module_name), name)
    globals()[name] = value
    return value
