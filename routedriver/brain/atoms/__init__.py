"""Atoms: named factories of ``ChatModel``s (``routedriver.llm.types``), so the loop never knows the provider.

Built in: ``claude`` (Anthropic Messages API), ``qwen`` (any OpenAI-compatible endpoint, DashScope by
default) and ``scripted`` (answers from a file). More come from ``MODULE:OBJ`` or the entry-point group
``bhrain.atoms``; OBJ is a ``ChatModel`` or a factory called with ``AtomOptions``.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from routedriver.brain.plugins import is_import_path, load_object
from routedriver.errors import Refused, UserError

if TYPE_CHECKING:
    from routedriver.llm.retry import RetryPolicy

ENTRY_POINT_GROUP = "bhrain.atoms"
BUILTIN_ATOMS = {
    "claude": "routedriver.brain.atoms.claude:create",
    "qwen": "routedriver.brain.atoms.qwen:create",
    "scripted": "routedriver.brain.atoms.scripted:create",
}

# What to do without a key, said by every atom that needs one: bhrain's offline reviewer is
# ``--skill review --atom scripted`` with no --script (any other skill refuses that, asking for a script).
OFFLINE = "use the offline reviewer (no key): --atom scripted"


@dataclass(frozen=True)
class AtomOptions:
    model: str | None = None
    base_url: str | None = None
    script: Path | None = None
    context_window: int | None = None
    timeout_s: float | None = None
    retry: RetryPolicy | None = None  # None: the adapters' default policy
    environ: Mapping[str, str] = field(default_factory=lambda: dict(os.environ))
    on_retry: Callable[[int, float, BaseException], None] | None = None


class UnknownAtom(Refused):
    pass


def adapter_options(options: AtomOptions) -> dict[str, Any]:
    """The keywords every SDK atom hands its adapter unchanged; unset ones leave the adapter's defaults."""
    passed: dict[str, Any] = {"on_retry": options.on_retry}
    if options.timeout_s:
        passed["timeout_s"] = options.timeout_s
    if options.retry is not None:
        passed["retry"] = options.retry
    return passed


def _entry_points() -> dict[str, Any]:
    # importlib.metadata (~18 ms): only when an atom is looked up among the installed plugins
    from importlib.metadata import entry_points

    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP)}


def atom_names() -> list[str]:
    return [*BUILTIN_ATOMS, *sorted(n for n in _entry_points() if n not in BUILTIN_ATOMS)]


def create_atom(name: str, options: AtomOptions) -> Any:
    """The chat model the atom ``name`` makes; refuses unknown names, listing the available ones."""
    if name in BUILTIN_ATOMS:
        factory: Any = load_object(BUILTIN_ATOMS[name], what="atom")
    elif is_import_path(name):
        factory = load_object(name, what="atom")
    else:
        entry = _entry_points().get(name)
        if entry is None:
            raise UnknownAtom(
                f"unknown atom {name!r}; available atoms: {', '.join(atom_names())}",
                "pass one of them to --atom, or MODULE:OBJ for your own",
            )
        try:
            factory = entry.load()
        except Exception as exc:  # noqa: BLE001
            raise Refused(
                f"atom {name!r} failed to load: {type(exc).__name__}: {exc}", "check its package"
            ) from None
    if hasattr(factory, "complete") and not isinstance(factory, type):
        model = factory
    elif callable(factory):
        try:
            model = factory(options)
        except UserError:
            raise  # the atom's own one-line refusal (e.g. a missing API key)
        except Exception as exc:  # noqa: BLE001 - a plugin may fail in any way; report it in one line
            raise Refused(
                f"atom {name!r} failed to build: {type(exc).__name__}: {exc}",
                "check the atom (it is called with one AtomOptions argument)",
            ) from None
    else:  # type(...).__name__ of a module is "module"
        raise Refused(
            f"atom {name!r} is a {type(factory).__name__}, not a ChatModel or a factory of one",
            "point --atom at a ChatModel or a function taking AtomOptions (MODULE:OBJ)",
        )
    for attribute in ("complete", "name", "model", "context_window"):
        if not hasattr(model, attribute):
            raise Refused(
                f"atom {name!r} made {type(model).__name__}, which has no {attribute!r}",
                "an atom must produce a ChatModel (see routedriver.llm.types)",
            )
    return model
