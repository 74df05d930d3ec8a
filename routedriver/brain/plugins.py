"""Load user plugins named ``MODULE:OBJ`` (atoms, toolboxes, memory managers, guards, search backends)."""

from __future__ import annotations

import importlib
from typing import Any

from routedriver.errors import Refused


def is_import_path(name: str) -> bool:
    return ":" in name and not name.startswith(":") and not name.endswith(":")


def load_object(spec: str, *, what: str) -> Any:
    """Import ``MODULE:OBJ`` (OBJ may be dotted, e.g. ``pkg.mod:Class.factory``) or refuse with one line."""
    module_name, _, attr_path = spec.partition(":")
    if not module_name or not attr_path:
        raise Refused(f"{what} {spec!r} is not an import path", "use MODULE:OBJ, e.g. mypkg.tools:toolbox")
    try:
        obj: Any = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 - a plugin's import may fail in any way; report it in one line
        raise Refused(
            f"cannot import module {module_name!r} for {what} {spec!r}: {type(exc).__name__}: {exc}",
            "check the module name and that it is on PYTHONPATH",
        ) from None
    for part in attr_path.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise Refused(
                f"module {module_name!r} has no {attr_path!r} for {what} {spec!r}", "check the object name"
            ) from None
    return obj
