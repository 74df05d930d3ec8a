"""Load-time checking of an invariant against the allow-list, and folding of its constant parts."""

from __future__ import annotations

import ast
from collections.abc import Iterable

from routedriver.behaviorci.invariants.functions import (
    ALL_METHODS,
    BINOPS,
    COMPREHENSIONS,
    FUNCTIONS,
    KEYWORDS,
    REGEX_FUNCTIONS,
    compile_regex,
)
from routedriver.behaviorci.invariants.interpret import Interpreter
from routedriver.behaviorci.invariants.limits import (
    DUNDER,
    MAX_DEPTH,
    MAX_GENERATORS,
    InvariantFailure,
    UnsafeExpression,
)


class Checker:
    def __init__(self, names: frozenset[str]) -> None:
        self.names = names

    def check(self, node: ast.AST, scope: frozenset[str], depth: int) -> None:
        if depth > MAX_DEPTH:
            raise UnsafeExpression(f"nested more than {MAX_DEPTH} levels deep")
        method = getattr(self, f"_{type(node).__name__}", None)
        if method is None:
            raise UnsafeExpression(f"{_describe(node)} is not allowed")
        method(node, scope, depth + 1)

    def _all(self, nodes: Iterable[ast.AST | None], scope: frozenset[str], depth: int) -> None:
        for child in nodes:
            if child is not None:
                self.check(child, scope, depth)

    def _Constant(self, node: ast.Constant, scope: frozenset[str], depth: int) -> None:
        value = node.value
        if value is None or type(value) in (bool, int, float):
            return
        if type(value) is str:
            if DUNDER.search(value):
                raise UnsafeExpression(f"the string {value!r} looks like a dunder name, which is not allowed")
            return
        raise UnsafeExpression(f"constants of type {type(value).__name__} are not allowed")

    def _Name(self, node: ast.Name, scope: frozenset[str], depth: int) -> None:
        if node.id.startswith("_"):
            raise UnsafeExpression(f"names starting with '_' are not allowed ({node.id})")
        if node.id not in self.names and node.id not in FUNCTIONS and node.id not in scope:
            raise UnsafeExpression(f"unknown name '{node.id}' (use one of: {', '.join(sorted(self.names))})")

    def _Attribute(self, node: ast.Attribute, scope: frozenset[str], depth: int) -> None:
        self.check(node.value, scope, depth)
        if node.attr.startswith("_"):
            raise UnsafeExpression(f"attribute '{node.attr}' is not allowed")
        attr = node.attr
        hint = f"index with ['{attr}'] or call .get('{attr}')"
        raise UnsafeExpression(f"attribute access '.{attr}' is not allowed; {hint}")

    def _Call(self, node: ast.Call, scope: frozenset[str], depth: int) -> None:
        func = node.func
        if isinstance(func, ast.Name):
            if func.id.startswith("_") or func.id not in FUNCTIONS:
                raise UnsafeExpression(
                    f"calling '{func.id}' is not allowed (allowed: {', '.join(sorted(FUNCTIONS))})"
                )
            if func.id in REGEX_FUNCTIONS and node.args and isinstance(node.args[0], ast.Constant):
                try:
                    compile_regex(node.args[0].value)
                except InvariantFailure as exc:
                    raise UnsafeExpression(str(exc)) from None
        elif isinstance(func, ast.Attribute):
            self.check(func.value, scope, depth)  # inside out: name the innermost offender
            if func.attr.startswith("_"):
                raise UnsafeExpression(f"attribute '{func.attr}' is not allowed")
            if func.attr not in ALL_METHODS:
                raise UnsafeExpression(f"method '.{func.attr}()' is not allowed")
        else:
            self.check(func, scope, depth)
            raise UnsafeExpression("only named functions and allowed methods can be called")
        for arg in node.args:
            if isinstance(arg, ast.Starred):
                raise UnsafeExpression("*arguments are not allowed")
        for keyword in node.keywords:
            if keyword.arg is None:
                raise UnsafeExpression("**arguments are not allowed")
            if keyword.arg not in KEYWORDS:
                raise UnsafeExpression(f"keyword argument '{keyword.arg}=' is not allowed")
        self._all(node.args, scope, depth)
        self._all((k.value for k in node.keywords), scope, depth)

    def _BoolOp(self, node: ast.BoolOp, scope: frozenset[str], depth: int) -> None:
        self._all(node.values, scope, depth)

    def _BinOp(self, node: ast.BinOp, scope: frozenset[str], depth: int) -> None:
        if type(node.op) not in BINOPS:
            raise UnsafeExpression(f"the operator {type(node.op).__name__} is not allowed")
        self._all((node.left, node.right), scope, depth)

    def _UnaryOp(self, node: ast.UnaryOp, scope: frozenset[str], depth: int) -> None:
        if not isinstance(node.op, (ast.Not, ast.USub, ast.UAdd)):
            raise UnsafeExpression(f"the operator {type(node.op).__name__} is not allowed")
        self.check(node.operand, scope, depth)

    def _Compare(self, node: ast.Compare, scope: frozenset[str], depth: int) -> None:
        self._all((node.left, *node.comparators), scope, depth)

    def _IfExp(self, node: ast.IfExp, scope: frozenset[str], depth: int) -> None:
        self._all((node.test, node.body, node.orelse), scope, depth)

    def _Subscript(self, node: ast.Subscript, scope: frozenset[str], depth: int) -> None:
        self._all((node.value, node.slice), scope, depth)

    def _Slice(self, node: ast.Slice, scope: frozenset[str], depth: int) -> None:
        self._all((node.lower, node.upper, node.step), scope, depth)

    def _List(self, node: ast.List | ast.Tuple | ast.Set, scope: frozenset[str], depth: int) -> None:
        for element in node.elts:
            if isinstance(element, ast.Starred):
                raise UnsafeExpression("*unpacking is not allowed")
        self._all(node.elts, scope, depth)

    _Tuple = _List
    _Set = _List

    def _Dict(self, node: ast.Dict, scope: frozenset[str], depth: int) -> None:
        if any(key is None for key in node.keys):
            raise UnsafeExpression("**unpacking is not allowed")
        self._all((*node.keys, *node.values), scope, depth)

    def _comprehension(
        self, node: ast.expr, elts: tuple[ast.expr, ...], scope: frozenset[str], depth: int
    ) -> None:
        generators: list[ast.comprehension] = node.generators  # type: ignore[attr-defined]
        if len(generators) > MAX_GENERATORS:
            raise UnsafeExpression(f"comprehensions may have at most {MAX_GENERATORS} 'for' clauses")
        if any(isinstance(inner, COMPREHENSIONS) for elt in elts for inner in ast.walk(elt)) or any(
            isinstance(inner, COMPREHENSIONS) for gen in generators for inner in ast.walk(gen.iter)
        ):
            raise UnsafeExpression("nested comprehensions are not allowed")
        inner_scope = scope
        for gen in generators:
            if gen.is_async:
                raise UnsafeExpression("async comprehensions are not allowed")
            self.check(gen.iter, inner_scope, depth)
            inner_scope = inner_scope | _target_names(gen.target)
            self._all(gen.ifs, inner_scope, depth)
        self._all(elts, inner_scope, depth)

    def _ListComp(
        self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp, scope: frozenset[str], depth: int
    ) -> None:
        self._comprehension(node, (node.elt,), scope, depth)

    _SetComp = _ListComp
    _GeneratorExp = _ListComp

    def _DictComp(self, node: ast.DictComp, scope: frozenset[str], depth: int) -> None:
        self._comprehension(node, (node.key, node.value), scope, depth)


def _target_names(target: ast.expr) -> frozenset[str]:
    if isinstance(target, ast.Name):
        if target.id.startswith("_"):
            raise UnsafeExpression(f"names starting with '_' are not allowed ({target.id})")
        return frozenset({target.id})
    if isinstance(target, ast.Tuple):
        names: frozenset[str] = frozenset()
        for element in target.elts:
            names |= _target_names(element)
        return names
    raise UnsafeExpression("a comprehension may only bind plain names")


def _describe(node: ast.AST) -> str:
    special = {
        "Lambda": "lambda",
        "JoinedStr": "an f-string",
        "FormattedValue": "an f-string",
        "NamedExpr": "':='",
        "Starred": "*unpacking",
        "Await": "await",
        "Yield": "yield",
        "YieldFrom": "yield",
    }
    return special.get(type(node).__name__, f"the syntax {type(node).__name__}")


def fold_constants(tree: ast.expr) -> None:
    """Evaluate every sub-expression that uses no names now, so bombs and certain errors fail at load."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.Call, ast.Subscript)) and not any(
            isinstance(inner, (ast.Name, ast.comprehension)) and not _is_function_name(inner, node)
            for inner in ast.walk(node)
        ):
            try:
                Interpreter({}).eval(node, {})
            except InvariantFailure as exc:
                raise UnsafeExpression(f"`{ast.unparse(node)}` cannot be computed: {exc}") from None


def _is_function_name(inner: ast.AST, root: ast.AST) -> bool:
    # `len('abc')` uses the name `len` but no case data; it is still constant.
    return (
        isinstance(inner, ast.Name)
        and inner.id in FUNCTIONS
        and any(isinstance(call, ast.Call) and call.func is inner for call in ast.walk(root))
    )
