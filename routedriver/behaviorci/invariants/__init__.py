"""Invariants: one-line Python-like expressions about a case's output, checked by a safe evaluator.

BehaviorCI 0.1.0 ran invariants through ``eval`` with empty builtins, which any attribute walk such as
``().__class__.__base__.__subclasses__()`` escapes. Here an invariant is parsed with ``ast`` and checked
against an allow-list when the bundle is loaded (so ``behaviorci validate`` rejects it), then interpreted
node by node by a small tree walker; Python's ``eval``/``compile`` never see it.

Allowed: literals; the case names (``raw_output``, ``output``, ``input``, ``expected_output``, ``metadata``,
``case_id``); comparisons, ``and``/``or``/``not``, ``x if c else y``, arithmetic, subscripts and slices;
list/tuple/set/dict displays; comprehensions (at most two ``for`` clauses, no nesting); calls of the
functions in ``FUNCTIONS`` and of the methods in ``METHODS`` on str/dict/list/tuple values. Everything else
(attribute access, names or attributes starting with ``_``, lambdas, f-strings, walrus, starred arguments,
string constants that look like dunder names) is rejected.

Work is bounded at run time: a step budget, a cap on the size of any string/list a single operation may
build (``'a' * 10**12`` is refused before it allocates), a total allocation budget, and a cap on integer
size. Sub-expressions made only of constants are evaluated at load time, so such bombs fail ``validate``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from routedriver.behaviorci.invariants.check import Checker, fold_constants
from routedriver.behaviorci.invariants.functions import FUNCTIONS, METHODS
from routedriver.behaviorci.invariants.interpret import Interpreter
from routedriver.behaviorci.invariants.limits import (
    CONTEXT_NAMES,
    MAX_ALLOC,
    MAX_DEPTH,
    MAX_INT_BITS,
    MAX_SEQUENCE,
    MAX_SOURCE_CHARS,
    MAX_STEPS,
    InvariantFailure,
    LimitExceeded,
    UnsafeExpression,
)

__all__ = [
    "CONTEXT_NAMES",
    "FUNCTIONS",
    "MAX_ALLOC",
    "MAX_DEPTH",
    "MAX_INT_BITS",
    "MAX_SEQUENCE",
    "MAX_STEPS",
    "METHODS",
    "Invariant",
    "InvariantFailure",
    "LimitExceeded",
    "UnsafeExpression",
    "compile_invariant",
]


@dataclass(frozen=True)
class Invariant:
    """A checked invariant, ready to evaluate against many outputs."""

    source: str
    tree: ast.expr

    def evaluate(self, context: Mapping[str, Any]) -> Any:
        """The expression's value for ``context``; raises ``InvariantFailure`` when it cannot be computed."""
        return Interpreter(context).eval(self.tree, {})


def compile_invariant(source: str, names: Iterable[str] = CONTEXT_NAMES) -> Invariant:
    """Parse and check ``source``; raises ``UnsafeExpression`` naming the first thing not allowed."""
    if not isinstance(source, str) or not source.strip():
        raise UnsafeExpression("an invariant must be a non-empty expression")
    if len(source) > MAX_SOURCE_CHARS:
        raise UnsafeExpression(f"longer than {MAX_SOURCE_CHARS} characters")
    try:
        tree = ast.parse(source.strip(), mode="eval").body
    except SyntaxError as exc:
        raise UnsafeExpression(f"not a valid expression ({exc.msg})") from None
    Checker(frozenset(names)).check(tree, frozenset(), 0)
    fold_constants(tree)
    return Invariant(source, tree)
