"""Evaluating a checked invariant: a small tree walker with a step budget and size limits.

Limits are checked before the work where the work could be huge: a repetition, a concatenation, a
``str.join`` or ``str()`` is refused when its result would be too large, before it is built; comparing,
hashing or sorting containers is charged to the step budget by the number of elements it walks (aliasing
counted: ``[[1] * 10**6] * 10**6`` is cheap to build but 10**12 elements to compare); ``round`` takes at most
``MAX_ROUND_DIGITS`` digits. Running out of memory anyway is a limit error, never a crash.
"""

from __future__ import annotations

import ast
from collections.abc import ItemsView, Iterator, KeysView, Mapping, ValuesView
from typing import Any, TypeVar

from routedriver.behaviorci.invariants.functions import BINOPS, CMPOPS, FUNCTIONS, METHODS, SUBSCRIPTABLE
from routedriver.behaviorci.invariants.limits import (
    ELEMENTS_PER_STEP,
    MAX_ALLOC,
    MAX_INT_BITS,
    MAX_ROUND_DIGITS,
    MAX_SEQUENCE,
    MAX_STEPS,
    InvariantFailure,
    LimitExceeded,
)

T = TypeVar("T")
CONTAINERS = (list, tuple, dict, set, frozenset)
_VIEWS = (KeysView, ValuesView, ItemsView)
# Functions and methods that compare or hash the elements of their arguments.
_COMPARING_FUNCTIONS = frozenset({"sorted", "min", "max", "set", "dict"})
_COMPARING_METHODS = frozenset({"count", "index", "get"})


class Interpreter:
    def __init__(self, context: Mapping[str, Any]) -> None:
        self.context = context
        self.steps = 0
        self.allocated = 0

    def eval(self, node: ast.AST, scope: dict[str, Any]) -> Any:
        self.steps += 1
        if self.steps > MAX_STEPS:
            raise LimitExceeded(f"more than {MAX_STEPS} evaluation steps")
        handler = getattr(self, f"_{type(node).__name__}", None)
        if handler is None:  # the checker ran first, so this is a bug, not user input
            raise InvariantFailure(f"cannot evaluate {type(node).__name__}")
        try:
            return handler(node, scope)
        except InvariantFailure:
            raise
        except RecursionError:
            raise LimitExceeded("nested too deeply") from None
        except MemoryError:
            raise LimitExceeded("ran out of memory") from None
        except (ArithmeticError, LookupError, TypeError, ValueError, AttributeError) as exc:
            raise InvariantFailure(_runtime_message(node, exc)) from None

    def _charge(self, elements: int) -> None:
        """Count C-level work over ``elements`` elements against the step budget."""
        self.steps += elements // ELEMENTS_PER_STEP
        if self.steps > MAX_STEPS:
            raise LimitExceeded(f"more than {MAX_STEPS} evaluation steps (comparing or hashing large values)")

    def _charge_walk(self, *values: Any) -> None:
        """Charge comparing/hashing ``values``: the elements they hold, nested, aliasing counted."""
        if not any(type(value) in CONTAINERS or isinstance(value, _VIEWS) for value in values):
            return  # scalars and strings compare in C at a cost their (bounded) size already limits
        room = (MAX_STEPS - self.steps + 1) * ELEMENTS_PER_STEP
        self._charge(sum(weight(value, room) for value in values))

    def _produced(self, value: T) -> T:
        if isinstance(value, (str, list, tuple, dict, set)):
            if len(value) > MAX_SEQUENCE and not _is_input(value, self.context):
                raise LimitExceeded(f"would build a value of more than {MAX_SEQUENCE} items")
            self.allocated += len(value)
            if self.allocated > MAX_ALLOC:
                raise LimitExceeded(f"would build more than {MAX_ALLOC} items in total")
        elif isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
            raise LimitExceeded(f"integer larger than {MAX_INT_BITS} bits")
        return value

    def _Constant(self, node: ast.Constant, scope: dict[str, Any]) -> Any:
        return node.value

    def _Name(self, node: ast.Name, scope: dict[str, Any]) -> Any:
        if node.id in scope:
            return scope[node.id]
        if node.id in self.context:
            return self.context[node.id]
        if node.id in FUNCTIONS:
            return FUNCTIONS[node.id]
        raise InvariantFailure(f"name '{node.id}' is not defined")

    def _BoolOp(self, node: ast.BoolOp, scope: dict[str, Any]) -> Any:
        value: Any = None
        for operand in node.values:
            value = self.eval(operand, scope)
            if isinstance(node.op, ast.And) and not value:
                return value
            if isinstance(node.op, ast.Or) and value:
                return value
        return value

    def _UnaryOp(self, node: ast.UnaryOp, scope: dict[str, Any]) -> Any:
        operand = self.eval(node.operand, scope)
        if isinstance(node.op, ast.Not):
            return not operand
        if type(operand) not in (int, float, bool):
            raise InvariantFailure(f"unary minus/plus needs a number, got {type(operand).__name__}")
        return -operand if isinstance(node.op, ast.USub) else +operand

    def _BinOp(self, node: ast.BinOp, scope: dict[str, Any]) -> Any:
        left = self.eval(node.left, scope)
        right = self.eval(node.right, scope)
        _check_binop(node.op, left, right)
        return self._produced(BINOPS[type(node.op)](left, right))

    def _Compare(self, node: ast.Compare, scope: dict[str, Any]) -> bool:
        left = self.eval(node.left, scope)
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            right = self.eval(comparator, scope)
            if isinstance(op, (ast.In, ast.NotIn)) and isinstance(right, (dict, set, frozenset, KeysView)):
                self._charge_walk(left)  # a hash lookup: only the key is walked
            elif not isinstance(op, (ast.Is, ast.IsNot)):
                self._charge_walk(left, right)
            if not CMPOPS[type(op)](left, right):
                return False
            left = right
        return True

    def _IfExp(self, node: ast.IfExp, scope: dict[str, Any]) -> Any:
        return self.eval(node.body if self.eval(node.test, scope) else node.orelse, scope)

    def _Subscript(self, node: ast.Subscript, scope: dict[str, Any]) -> Any:
        container = self.eval(node.value, scope)
        if type(container) not in SUBSCRIPTABLE:
            raise InvariantFailure(f"cannot index a {type(container).__name__} value")
        key = self.eval(node.slice, scope)
        if isinstance(container, dict):
            self._charge_walk(key)
        return self._produced(container[key]) if isinstance(key, slice) else container[key]

    def _Slice(self, node: ast.Slice, scope: dict[str, Any]) -> slice:
        parts = [
            None if part is None else self.eval(part, scope) for part in (node.lower, node.upper, node.step)
        ]
        if any(part is not None and type(part) is not int for part in parts):
            raise InvariantFailure("slice bounds must be integers")
        return slice(*parts)

    def _List(self, node: ast.List, scope: dict[str, Any]) -> list[Any]:
        return self._produced([self.eval(element, scope) for element in node.elts])

    def _Tuple(self, node: ast.Tuple, scope: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(self._produced([self.eval(element, scope) for element in node.elts]))

    def _Set(self, node: ast.Set, scope: dict[str, Any]) -> set[Any]:
        elements = [self.eval(element, scope) for element in node.elts]
        self._charge_walk(elements)
        return self._produced(set(elements))

    def _Dict(self, node: ast.Dict, scope: dict[str, Any]) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        for key, value in zip(node.keys, node.values, strict=True):
            if key is None:  # `**mapping`: the checker refuses it, so this is a bug, not user input
                raise InvariantFailure("cannot evaluate ** in a dict display")
            computed = self.eval(key, scope)
            self._charge_walk(computed)
            out[computed] = self.eval(value, scope)
        return self._produced(out)

    def _Call(self, node: ast.Call, scope: dict[str, Any]) -> Any:
        args = [self.eval(arg, scope) for arg in node.args]
        kwargs = {k.arg: self.eval(k.value, scope) for k in node.keywords if k.arg is not None}
        if isinstance(node.func, ast.Name):
            name = node.func.id
            func = FUNCTIONS[name]
            if name in _COMPARING_FUNCTIONS:
                args = [_materialized(arg) for arg in args]  # a generator is walked once, here
                self._charge_walk(*args, *kwargs.values())
            elif name == "str":
                _check_str(args)
            elif name == "round":
                _check_round(args, kwargs)
            return self._produced(func(*args, **kwargs))
        assert isinstance(node.func, ast.Attribute)
        receiver = self.eval(node.func.value, scope)
        allowed = METHODS.get(type(receiver), frozenset())
        name = node.func.attr
        if name not in allowed:
            raise InvariantFailure(f"{type(receiver).__name__} values have no allowed method '.{name}()'")
        if name == "replace":
            _check_replace(receiver, args)
        elif name == "join":
            args = [_materialized(arg) for arg in args]
            _check_join(receiver, args)
        elif name in _COMPARING_METHODS and not isinstance(receiver, str):
            self._charge_walk(*args, *([] if isinstance(receiver, dict) else [receiver]))
        return self._produced(getattr(receiver, name)(*args, **kwargs))

    def _comprehension_rows(
        self, generators: list[ast.comprehension], scope: dict[str, Any]
    ) -> Iterator[dict[str, Any]]:
        def rows(index: int, current: dict[str, Any]) -> Iterator[dict[str, Any]]:
            if index == len(generators):
                yield current
                return
            gen = generators[index]
            for item in self.eval(gen.iter, current):
                self.steps += 1
                if self.steps > MAX_STEPS:
                    raise LimitExceeded(f"more than {MAX_STEPS} evaluation steps")
                bound = dict(current)
                _bind(gen.target, item, bound)
                if all(self.eval(cond, bound) for cond in gen.ifs):
                    yield from rows(index + 1, bound)

        return rows(0, dict(scope))

    def _ListComp(self, node: ast.ListComp, scope: dict[str, Any]) -> list[Any]:
        out: list[Any] = []
        for row in self._comprehension_rows(node.generators, scope):
            out.append(self.eval(node.elt, row))
            self._produced(out[-1:])
        return out

    def _SetComp(self, node: ast.SetComp, scope: dict[str, Any]) -> set[Any]:
        elements = self._ListComp(node, scope)  # type: ignore[arg-type]
        self._charge_walk(elements)
        return set(elements)

    def _GeneratorExp(self, node: ast.GeneratorExp, scope: dict[str, Any]) -> Iterator[Any]:
        return (self.eval(node.elt, row) for row in self._comprehension_rows(node.generators, scope))

    def _DictComp(self, node: ast.DictComp, scope: dict[str, Any]) -> dict[Any, Any]:
        out: dict[Any, Any] = {}
        for row in self._comprehension_rows(node.generators, scope):
            key = self.eval(node.key, row)
            self._charge_walk(key)
            out[key] = self.eval(node.value, row)
            self._produced([None])
        return out


def _bind(target: ast.expr, value: Any, scope: dict[str, Any]) -> None:
    if isinstance(target, ast.Name):
        scope[target.id] = value
        return
    assert isinstance(target, ast.Tuple)
    items = list(value)
    if len(items) != len(target.elts):
        raise InvariantFailure(f"cannot unpack {len(items)} values into {len(target.elts)} names")
    for element, item in zip(target.elts, items, strict=True):
        _bind(element, item, scope)


def _is_input(value: Any, context: Mapping[str, Any]) -> bool:
    # The case's own data may be larger than what an operation may build; returning it is not building it.
    return any(value is given for given in context.values())


def weight(value: Any, limit: int, *, text: bool = False) -> int:
    """How many elements comparing or hashing ``value`` may walk (``text``: about how many characters
    ``str(value)`` has), counting a value each time it occurs (aliasing is free to build, not to walk).
    Stops counting once past ``limit``, so the count itself costs at most ``limit`` elements."""
    total = 0
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is str:
            total += len(item) + 2 if text else 1 + len(item) // 1024
        elif kind is int:
            total += 1 + item.bit_length() // 3 if text else 1
        elif kind in CONTAINERS or isinstance(item, _VIEWS):
            total += 1 + len(item)
            if total > limit:
                return total
            members = item.items() if kind is dict else item
            for member in members:
                if kind is dict:
                    stack.extend(member)
                elif type(member) in CONTAINERS or (text and type(member) in (str, int)):
                    stack.append(member)
        else:
            total += 1
        if total > limit:
            return total
    return total


def _materialized(value: Any) -> Any:
    # A generator or view is consumed by the call anyway; as a list it can be measured first.
    return list(value) if isinstance(value, (Iterator, *_VIEWS)) else value


def _too_big() -> LimitExceeded:
    return LimitExceeded(f"would build a value of more than {MAX_SEQUENCE} items")


def _check_str(args: list[Any]) -> None:
    if args and type(args[0]) is not str and weight(args[0], MAX_SEQUENCE, text=True) > MAX_SEQUENCE:
        raise _too_big()


def _check_join(separator: str, args: list[Any]) -> None:
    if not args or not isinstance(args[0], (list, tuple, str)):
        return  # str.join raises its own TypeError for the rest
    parts = args[0]
    size = len(separator) * max(len(parts) - 1, 0)
    if isinstance(parts, str):  # joining the characters of a string
        size += len(parts)
        parts = ()
    for part in parts:
        if isinstance(part, str):
            size += len(part)
        if size > MAX_SEQUENCE:
            raise _too_big()


def _check_round(args: list[Any], kwargs: dict[str, Any]) -> None:
    digits = args[1] if len(args) > 1 else kwargs.get("ndigits")
    if type(digits) is int and abs(digits) > MAX_ROUND_DIGITS:
        raise LimitExceeded(f"round() takes at most {MAX_ROUND_DIGITS} digits either way")


def _check_binop(op: ast.operator, left: Any, right: Any) -> None:
    if isinstance(op, ast.Mod) and isinstance(left, str):
        raise InvariantFailure("%-formatting of strings is not allowed")
    sequences = (str, list, tuple)
    concatenates = isinstance(op, ast.Add) and isinstance(left, sequences) and isinstance(right, sequences)
    if concatenates and len(left) + len(right) > MAX_SEQUENCE:
        raise _too_big()
    if isinstance(op, ast.Mult):
        for seq, count in ((left, right), (right, left)):
            repeats = isinstance(seq, (str, list, tuple)) and type(count) in (int, bool)
            if repeats and len(seq) * max(count, 0) > MAX_SEQUENCE:
                raise LimitExceeded(f"would build a value of more than {MAX_SEQUENCE} items")
        if type(left) is int and type(right) is int and left.bit_length() + right.bit_length() > MAX_INT_BITS:
            raise LimitExceeded(f"integer larger than {MAX_INT_BITS} bits")
    integers = type(left) in (int, bool) and type(right) in (int, bool)
    # (bits of the base - 1) * exponent is a lower bound of the result's size: 2**4096 has 4097 bits.
    if (
        isinstance(op, ast.Pow)
        and integers
        and right > 0
        and (abs(left).bit_length() - 1) * right > MAX_INT_BITS
    ):
        raise LimitExceeded(f"integer larger than {MAX_INT_BITS} bits")


def _check_replace(receiver: str, args: list[Any]) -> None:
    if len(args) >= 2 and isinstance(args[0], str) and isinstance(args[1], str):
        hits = receiver.count(args[0]) if args[0] else len(receiver) + 1
        if len(args) >= 3 and type(args[2]) is int and args[2] >= 0:
            hits = min(hits, args[2])
        if len(receiver) + hits * (len(args[1]) - len(args[0])) > MAX_SEQUENCE:
            raise LimitExceeded(f"would build a value of more than {MAX_SEQUENCE} items")


def _runtime_message(node: ast.AST, exc: BaseException) -> str:
    if isinstance(exc, KeyError):
        return f"key {exc.args[0]!r} not found"
    return f"{type(exc).__name__}: {exc}"
