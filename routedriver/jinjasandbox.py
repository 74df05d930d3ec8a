"""The Jinja2 sandbox that user templates render in (bhrain's review rubric, behaviorci's prompts), bounded.

Jinja2's sandbox keeps a template away from Python's internals and caps ``range()`` at 100,000 items, but not
the size of what a template builds, and it folds constant expressions while the template compiles: the
20-byte ``{{ 'x' * 10**9 }}`` took 36 s and 3.9 GB before anything ran. Here what can build more than its
inputs hold is measured first, and a result longer than ``MAX_TEXT`` characters or items, or an integer of
more than ``MAX_INT_BITS`` bits, is refused before it is built:

- the operators ``*``, ``**``, ``+`` and ``%`` (intercepted: Jinja2 then never folds them, and calls
  ``call_binop`` at run time) and ``~`` (compiled to a bounded join);
- the filters and the ``str``/``bytes`` methods whose result a number or a repeated argument sizes
  (``center(10**9)``, ``'x'.ljust(…)``, ``replace('', long)``, ``indent``, ``wordwrap``, ``join``,
  ``batch``/``slice`` with a fill, ``lipsum(n)`` …): the tables ``_FILTERS`` and ``_METHODS``; ``str.format``
  through a formatter that measures each field (``'{:>999999999}'.format(1)``);
- text made of a value that holds one long text many times (``{{ [s] * 100000 }}``, ``|string``,
  ``|tojson``): its size as text is counted (``_text_size``) before ``str()`` makes it;
- items a filter keeps from a generator (``range(100000)|map('center', 8000000)|list``), counted as they come.

Every other filter's or call's result is checked after it is made (a text or sequence longer than
``MAX_TEXT``): those make at most a few times what they were given (``upper``, ``escape``, ``encode``), so a
chain of them cannot grow. ``render`` caps the whole text as it streams out, and every captured block
(``{% set x %}…{% endset %}``, a macro's output) the same way, which bounds loops (``range(100000)`` times a
long string). A refusal is Jinja2's ``SecurityError``, which the callers already report in one line naming
the template. Time is not bounded here: nested loops run as long as they run.

Import this module where a template is rendered, not at the top: it imports jinja2 (~25 ms).
"""

from __future__ import annotations

import functools
import inspect
import math
import re
import types
from collections import abc
from collections.abc import Callable, Iterator
from typing import Any

from jinja2.compiler import CodeGenerator, Frame
from jinja2.exceptions import SecurityError
from jinja2.filters import make_attrgetter
from jinja2.nodes import Concat
from jinja2.runtime import markup_join, str_join
from jinja2.sandbox import (
    ImmutableSandboxedEnvironment,
    SandboxedEnvironment,
    SandboxedEscapeFormatter,
    SandboxedFormatter,
)
from jinja2.utils import Namespace, generate_lorem_ipsum, pass_context
from markupsafe import Markup

MAX_TEXT = 8 << 20  # characters: the size of the largest file the project reads as text (userfile.MAX_BYTES)
MAX_INT_BITS = 14_000  # about 4,300 digits, the longest integer Python itself turns into text
_TEXT = f" (a template may make {MAX_TEXT:,})"
_BITS = f" (a template may make {MAX_INT_BITS:,})"
# printf-style conversions of ``text % args``: a width or precision makes that much text ("%999999999s").
_PRINTF = re.compile(r"%(?:\([^)]*\))?[#0 +-]*(\*|\d*)(?:\.(\*|\d*))?")
_DIGITS = re.compile(r"\d+")
_END: Any = object()
_DEEPEST = 1000  # str() of a value nested deeper fails in Python's recursion limit anyway


def _size(value: Any) -> int | None:
    return len(value) if isinstance(value, str | bytes | bytearray | list | tuple) else None


def _bits(value: Any) -> int | None:
    return abs(value).bit_length() if isinstance(value, int) else None


def _number(value: Any) -> int:
    """A count or width given to a call (a non-number makes the call fail on its own)."""
    return value if isinstance(value, int) else 0


def _quoted_size(text: str | bytes | bytearray, json: bool) -> int:
    """How long ``repr(text)`` (``json``: its JSON, HTML-safe as ``tojson`` writes it) is, at most."""
    if isinstance(text, str) and text.isascii() and text.isprintable():
        escaped = text.count("\\") + text.count('"' if json else "'")
        return len(text) + escaped + (5 * sum(text.count(c) for c in "<>&'") if json else 0) + 2
    if isinstance(text, str) and text.isprintable() and not json:
        return len(text) + text.count("\\") + text.count("'") + 2
    return 12 * len(text) + 3  # "\U000e0001" in a repr, a surrogate pair "\ud83d\ude00" in JSON


def _text_size(value: Any, *, json: bool = False, indent: int = 0, pretty: bool = False) -> int:
    """How long ``str(value)`` is at most (``json``: as ``tojson`` writes it, ``indent`` wide a level;
    ``pretty``: as ``pprint`` lays it out, each line indented past its keys and brackets). A list that holds
    one long text many times is small in memory and huge as text. Counting stops past ``MAX_TEXT``, so this
    is quick whatever the value holds."""
    if isinstance(value, str) and not json:
        return len(value)
    # each frame: the items of a container, how far its lines are indented, whether it is a mapping
    stack: list[tuple[Iterator[Any], int, bool]] = [(iter((value,)), 0, False)]
    size = 0
    while stack and size <= MAX_TEXT:
        items, width, mapping = stack[-1]
        item = next(items, _END)
        if item is _END:
            stack.pop()
            continue
        inner = width + 1
        if mapping:
            key, item = item
            key_size = _text_size((key,), json=json)  # quoted, and ": " after it
            size, inner = size + key_size, inner + key_size
        size += 2 + (width if pretty else indent * len(stack))  # a separator, the line's indentation
        if isinstance(item, str | bytes | bytearray):
            size += _quoted_size(item, json)
        elif isinstance(item, int):
            size += abs(item).bit_length() // 3
        elif len(stack) >= _DEEPEST:
            size += 5  # str() shows "[...]" for a value inside itself, and fails past this depth
        elif isinstance(item, Namespace):  # its repr shows what it holds
            stack.append((iter(object.__getattribute__(item, "_Namespace__attrs").items()), inner, True))
        elif isinstance(item, abc.Mapping):
            stack.append((iter(item.items()), inner, True))
        elif isinstance(item, abc.Collection):
            stack.append((iter(item), inner, False))
        else:
            size += 20  # a float, None, an object the caller passed (its own text is the caller's)
    return size


class _Oversize(Exception):
    def __init__(self, size: int) -> None:
        super().__init__(size)
        self.size = size


def _limit(size: int) -> int:
    if size > MAX_TEXT:
        raise _Oversize(size)
    return size


def _text(value: Any) -> str:
    """``str(value)``, made only when it is not too long (a rule's ``_Oversize`` otherwise)."""
    if isinstance(value, str):
        return value
    _limit(_text_size(value))
    return str(value)


def _counted(items: Any, what: str) -> Any:
    """``items``, each counted (its length, or 1) as it comes: a generator's items are made one by one, and
    a filter that keeps them (``list``, ``sort``, ``join`` …) is refused before they add up past the cap."""
    if not isinstance(items, abc.Iterator):
        return items  # already held: keeping it again costs a reference an item

    def counting() -> Any:
        total = 0
        for item in items:
            total += _size(item) or 1
            if total > MAX_TEXT:
                raise SecurityError(f"{what} would keep more than {MAX_TEXT:,} characters or items{_TEXT}")
            yield item

    return counting()


def _held(arguments: dict[str, Any], name: str, what: str) -> list[Any]:
    """The items of ``arguments[name]`` as a list (counted as ``_counted`` counts), put back in its place."""
    items = list(_counted(arguments[name], what))
    arguments[name] = items
    return items


def _too_large(operator: str, left: Any, right: Any, what: str = "") -> str | None:
    """Why ``left operator right`` would be too large to build, or None."""
    what = what or f"'{operator}'"
    if operator == "+":
        sizes = (_size(left), _size(right))
        if sizes[0] is not None and sizes[1] is not None and sizes[0] + sizes[1] > MAX_TEXT:
            return f"{what} would make {sizes[0] + sizes[1]:,} characters or items{_TEXT}"
    elif operator == "*":
        for seq, count in ((left, right), (right, left)):
            size, n = _size(seq), count if isinstance(count, int) else None
            if size is not None and n is not None and size * n > MAX_TEXT:
                return f"{what} would make {size * n:,} characters or items{_TEXT}"
        bits = (_bits(left), _bits(right))
        if bits[0] is not None and bits[1] is not None and bits[0] + bits[1] > MAX_INT_BITS:
            return f"{what} would make an integer of about {bits[0] + bits[1]:,} bits{_BITS}"
    elif operator == "**":
        if isinstance(left, int) and isinstance(right, int) and right > 0 and abs(left) > 1:
            power = right * math.log2(abs(left))
            if power > MAX_INT_BITS:
                return f"{what} would make an integer of about {power:,.0f} bits{_BITS}"
    elif operator == "%" and isinstance(left, str | bytes):
        args = right if isinstance(right, tuple) else (right,)
        for match in _PRINTF.finditer(left.decode("latin-1") if isinstance(left, bytes) else left):
            for number in match.groups(""):  # "" for a precision not given
                star = number == "*" and any(isinstance(a, int) and abs(a) > MAX_TEXT for a in args)
                wide = number.isdigit() and (len(number) > 9 or int(number) > MAX_TEXT)
                if star or wide:
                    return (
                        f"{what} would make a field wider than a template may make ({MAX_TEXT:,} characters)"
                    )
        made = len(left) + _text_size(right)  # "%s" of a list that holds a long text many times
        if made > MAX_TEXT:
            return f"{what} would make about {made:,} characters{_TEXT}"
    return None


# -- how large a call's result would be, from its arguments --------------------------------------------------


def _width(text: Any, width: Any) -> int:
    return max(len(text), _number(width))


def _replaced(text: Any, old: Any, new: Any, count: Any) -> int:
    kind = str if isinstance(text, str) else bytes | bytearray
    if not isinstance(old, kind) or not isinstance(new, kind):
        return len(text)  # the call fails on its own
    times = text.count(old) if old else len(text) + 1  # "" matches between every two characters
    if isinstance(count, int) and count >= 0:
        times = min(times, count)
    return len(text) + times * (len(new) - len(old))


def _joined(items: list[Any], separator: Any, measure: Callable[[Any], int] = _text_size) -> int:
    size = len(separator) * max(len(items) - 1, 0) if isinstance(separator, str | bytes | bytearray) else 0
    for item in items:
        size += measure(item)
        if size > MAX_TEXT:
            break
    return size


def _translated(text: str | bytes | bytearray, table: Any) -> int:
    if not isinstance(text, str) or not isinstance(table, abc.Mapping):
        return len(text)  # bytes.translate maps a byte to a byte
    size = len(text)
    for key, value in table.items():
        if isinstance(key, int) and isinstance(value, str) and 0 <= key <= 0x10FFFF:
            size += text.count(chr(key)) * (len(value) - 1)
    return size


def _attributes(items: list[Any], environment: Any, attribute: Any) -> list[Any]:
    return items if attribute is None else list(map(make_attrgetter(environment, attribute), items))


def _join_filter(a: dict[str, Any], environment: Any) -> int:
    items = _held(a, "value", "the filter 'join'")
    return _joined(_attributes(items, environment, a["attribute"]), a["d"])


def _sum_filter(a: dict[str, Any], environment: Any) -> int:
    items = _attributes(_held(a, "iterable", "the filter 'sum'"), environment, a["attribute"])
    start = _size(a["start"])  # numbers: a sum of integers stays within their bits
    return 0 if start is None else start + _joined(items, None, lambda item: _size(item) or 0)


def _format_filter(a: dict[str, Any]) -> int:
    problem = _too_large("%", _text(a["value"]), a["kwargs"] or a["args"], "the filter 'format'")
    if problem is not None:
        raise SecurityError(problem)
    return 0


def _json_indent(indent: Any) -> int:
    return len(indent) if isinstance(indent, str) else _number(indent)


# The filters whose result a number or a repeated argument sizes: the size their result would have, from
# their arguments bound to their parameters. (What is made a few times over, ``escape`` or ``upper``, is
# checked when made.) A rule may put a generator it reads back as a list (``_held``).
_FILTERS: dict[str, Callable[[dict[str, Any], Any], int]] = {
    "center": lambda a, env: _width(_text(a["value"]), a["width"]),
    # the indentation, a number of spaces or a text, on every line
    "indent": lambda a, env: len(s := _text(a["s"])) + (s.count("\n") + 1) * _json_indent(a["width"]),
    # the wrap string after every line, a line being at least a character
    "wordwrap": lambda a, env: (
        (len(_text(a["s"])) + 1)
        * len(_text(a["wrapstring"] if a["wrapstring"] is not None else env.newline_sequence))
    ),
    "replace": lambda a, env: _replaced(_text(a["s"]), _text(a["old"]), _text(a["new"]), a["count"]),
    "format": lambda a, env: _format_filter(a),
    "join": _join_filter,
    "sum": _sum_filter,
    "batch": lambda a, env: (
        _number(a["linecount"]) if a["fill_with"] is not None else 0
    ),  # the last is filled up
    "slice": lambda a, env: _number(a["slices"]),  # as many lists, whatever the value holds
    # any word may become a link carrying target and rel
    "urlize": lambda a, env: (
        (len(_text(a["value"])) // 2 + 1) * (len(_text(a["target"] or "")) + len(_text(a["rel"] or "")))
    ),
    "tojson": lambda a, env: _text_size(a["value"], json=True, indent=_json_indent(a["indent"])),
    "pprint": lambda a, env: _text_size(a["value"], pretty=True),
}
# Filters that make text of their value (a long text many times over, before anything else): its parameter.
_TEXT_OF = {
    "capitalize": "s", "title": "s", "lower": "s", "upper": "s", "wordcount": "s", "string": "s", "e": "s",
    "escape": "s", "trim": "value", "striptags": "value", "truncate": "s", "forceescape": "value",
    "safe": "value", "urlencode": "value", "xmlattr": "d",
}  # fmt: skip
# Filters that keep the items of a generator they are given (made as they are read): its parameter.
_KEEPING = {
    "list": "value", "sort": "value", "reverse": "value", "unique": "value", "batch": "value",
    "slice": "value", "groupby": "value",
}  # fmt: skip

# ``str``/``bytes``/``list`` methods whose result a number or a repeated argument sizes: the size it would
# have, from the text (or list) and the arguments bound to the method's parameters. ``format`` and
# ``format_map`` are measured field by field (``_BoundedFields``).
_METHODS: dict[str, Callable[[Any, dict[str, Any]], int]] = {
    "center": lambda text, a: _width(text, a["width"]),
    "ljust": lambda text, a: _width(text, a["width"]),
    "rjust": lambda text, a: _width(text, a["width"]),
    "zfill": lambda text, a: _width(text, a["width"]),
    # a tab becomes up to tabsize spaces
    "expandtabs": lambda text, a: (
        len(text)
        + text.count(type(text)("\t" if isinstance(text, str) else b"\t")) * max(_number(a["tabsize"]), 0)
    ),
    "replace": lambda text, a: _replaced(text, a["old"], a["new"], a["count"]),
    "join": lambda text, a: _joined(_held(a, "iterable", f"{type(text).__name__}.join()"), text),
    "translate": lambda text, a: _translated(text, a["table"]),
    # a list (BoundedSandbox lets a template change one) grows by what is added: l.extend(l) doubles it
    "extend": lambda items, a: (
        len(items)
        + len(
            _held(
                a, "iterable" if "iterable" in a else "iterable_of_ints", f"{type(items).__name__}.extend()"
            )
        )
    ),
    "append": lambda items, a: len(items) + 1,
    "insert": lambda items, a: len(items) + 1,
}
# Functions a template may call whose result a number sizes: lipsum(n, html, min, max) writes n paragraphs
# of up to max words of up to 13 characters.
_FUNCTIONS: dict[Callable[..., Any], tuple[str, Callable[[dict[str, Any]], int]]] = {
    generate_lorem_ipsum: (
        "lipsum()",
        lambda a: max(_number(a["n"]), 0) * (max(_number(a["max"]), 0) * 14 + 30),
    ),
}


def _measured(what: str, rule: Callable[[dict[str, Any]], int], arguments: dict[str, Any]) -> None:
    """Refuse the call ``what`` before it runs when ``rule`` says its result would be too large."""
    try:
        size = rule(arguments)
    except _Oversize as exc:
        size = exc.size
    if size > MAX_TEXT:
        raise SecurityError(f"{what} would make {size:,} characters or items{_TEXT}")


def _made(what: str, result: Any) -> Any:
    """``result`` of a call that makes at most a few times what it was given, checked once made."""
    size = _size(result)
    if size is not None and size > MAX_TEXT:
        raise SecurityError(f"{what} made {size:,} characters or items{_TEXT}")
    return result


def _bound(signature: inspect.Signature, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """The arguments by parameter, defaults filled in; None for a call that fails on its own."""
    try:
        bound = signature.bind(*args, **kwargs)
    except TypeError:
        return None  # the call itself says in its own words what is wrong
    bound.apply_defaults()
    return bound


# What Jinja2 passes a pass_context/pass_eval_context/pass_environment filter first, from the context.
_PASSED: dict[str, Callable[[Any], Any]] = {
    "context": lambda context: context,
    "eval_context": lambda context: context.eval_ctx,
    "environment": lambda context: context.environment,
}


def _bounded_filter(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` (the filter ``name``) measured by the tables above before it runs and checked once
    made. It takes the context, from which it gives the filter what the filter asks for: Jinja2 then never
    calls it while compiling (a constant ``'x'|center(8000000)`` joined a hundred times with ``~``)."""
    rule, text_of, keeping = _FILTERS.get(name), _TEXT_OF.get(name), _KEEPING.get(name)
    what, signature = f"the filter {name!r}", inspect.signature(function)
    passes = getattr(function, "jinja_pass_arg", None)
    given = None if passes is None else _PASSED[passes.name]
    parameters = list(signature.parameters.values())
    if (
        given is not None
        and parameters[:1]
        and parameters[0].name in ("context", "eval_ctx", "environment", "env")
    ):
        signature = signature.replace(parameters=parameters[1:])  # an async variant's signature shows none

    @pass_context
    @functools.wraps(function)
    def bounded(context: Any, *args: Any, **kwargs: Any) -> Any:
        first = () if given is None else (given(context),)
        bound = _bound(signature, args, kwargs)
        if bound is None:
            return function(*first, *args, **kwargs)  # the filter says in its own words what is wrong
        if text_of is not None:
            _measured(what, lambda a: _text_size(a[text_of]), bound.arguments)
        if rule is not None:
            _measured(what, lambda a: rule(a, context.environment), bound.arguments)
        if keeping is not None:
            bound.arguments[keeping] = _counted(bound.arguments[keeping], what)
        return _made(what, function(*first, *bound.args, **bound.kwargs))

    return bounded


class _BoundedFields(SandboxedFormatter):
    """``str.format`` measured field by field before each is made: a width or precision
    (``{:>999999999}``, ``{:.999999999f}``) or a value holding a long text many times, and the total."""

    def vformat(self, format_string: str, args: Any, kwargs: Any) -> str:
        self.made = len(format_string)
        return super().vformat(format_string, args, kwargs)

    def _add(self, size: int) -> None:
        self.made += size
        if self.made > MAX_TEXT:
            raise SecurityError(f"str.format() would make {self.made:,} characters or more{_TEXT}")

    def convert_field(self, value: Any, conversion: str | None) -> Any:
        if conversion in ("r", "a"):  # repr() or ascii() of the value, its escapes up to ten times its text
            self._add(_text_size((value,)) * (10 if conversion == "a" else 1))
        return super().convert_field(value, conversion)

    def format_field(self, value: Any, format_spec: str) -> Any:
        widths = [int(n[:18]) for n in _DIGITS.findall(format_spec)]  # 18 digits are past the cap already
        self._add(max([_text_size(value), *widths]))
        return super().format_field(value, format_spec)


class _BoundedEscapedFields(_BoundedFields, SandboxedEscapeFormatter):
    """The same for ``Markup.format``, which escapes each field."""


class _CodeGenerator(CodeGenerator):
    def visit_Concat(self, node: Concat, frame: Frame) -> None:
        """``a ~ b``: Jinja2 joins the operands' text; here the environment's bounded ``tilde`` does."""
        self.write("environment.tilde((")
        for argument in node.nodes:
            self.visit(argument, frame)
            self.write(", ")
        self.write("), context.eval_ctx)")


def _concat(parts: Any) -> str:
    """``"".join(parts)``, refused once the text passes ``MAX_TEXT``: what Jinja2 joins (the output of a
    macro, of ``{% set x %}…{% endset %}``, of ``{% filter %}``) is every bit as long as what it holds."""
    collected, size = [], 0
    for part in parts:
        size += len(part)
        if size > MAX_TEXT:
            raise SecurityError(
                f"the rendered text is longer than a template may make ({MAX_TEXT:,} characters)"
            )
        collected.append(part)
    return "".join(collected)


class _Bounded(SandboxedEnvironment):
    intercepted_binops = frozenset({"*", "**", "+", "%"})
    code_generator_class = _CodeGenerator
    concat = staticmethod(_concat)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("finalize", self._finalized)  # the callers give none of their own
        super().__init__(*args, **kwargs)
        self.filters = {name: _bounded_filter(name, f) for name, f in self.filters.items()}

    @staticmethod
    def _finalized(value: Any) -> Any:
        """What ``{{ … }}`` prints, measured as text before ``str()`` makes it (``{{ [s] * 100000 }}``)."""
        if not isinstance(value, str) and (size := _text_size(value)) > MAX_TEXT:
            raise SecurityError(f"the value printed would make {size:,} characters or more{_TEXT}")
        return value

    def tilde(self, operands: tuple[Any, ...], eval_ctx: Any) -> str:
        size = 0
        for operand in operands:
            size += _text_size(operand)
            if size > MAX_TEXT:
                raise SecurityError(f"'~' would make {size:,} characters or more{_TEXT}")
        return (markup_join if eval_ctx.autoescape else str_join)(operands)

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        problem = _too_large(operator, left, right)
        if problem is not None:
            raise SecurityError(problem)
        return super().call_binop(context, operator, left, right)

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        """A call from the template, refused before it runs when a table above says its result would be
        too large, and checked once made otherwise."""
        owner, name = getattr(__obj, "__self__", None), getattr(__obj, "__name__", type(__obj).__name__)
        what = f"{name}()"
        # Jinja2's own keywords inside a loop or block, which Context.call takes off: not the callee's
        scope = {key: kwargs.pop(key) for key in ("_loop_vars", "_block_vars") if key in kwargs}
        base = next((t for t in (str, bytes, bytearray, list) if isinstance(owner, t)), None)
        if base is not None and name in _METHODS and callable(getattr(base, name, None)):
            # a method of a text (Markup's too, which wraps str's) or a list, read by the base type's
            # parameters: the text is `self`
            what = f"{type(owner).__name__}.{name}()"
            bound = _bound(inspect.signature(getattr(base, name)), (owner, *args), kwargs)
            if bound is not None:
                _measured(what, functools.partial(_METHODS[name], owner), bound.arguments)
                args, kwargs = bound.args[1:], bound.kwargs
        elif isinstance(__obj, types.FunctionType) and __obj in _FUNCTIONS:
            what, rule = _FUNCTIONS[__obj]
            if (bound := _bound(inspect.signature(__obj), args, kwargs)) is not None:
                _measured(what, rule, bound.arguments)
        return _made(what, super().call(__context, __obj, *args, **kwargs, **scope))

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        """Jinja2's own (its sandboxed ``str.format``), with a formatter that measures each field."""
        wrapped = super().wrap_str_format(value)
        if wrapped is None:
            return None
        text, is_format_map = value.__self__, value.__name__ == "format_map"
        formatter: SandboxedFormatter
        if isinstance(text, Markup):
            formatter = _BoundedEscapedFields(self, escape=text.escape)
        else:
            formatter = _BoundedFields(self)

        def bounded(*args: Any, **kwargs: Any) -> str:
            if is_format_map:
                if kwargs or len(args) != 1:
                    return wrapped(*args, **kwargs)  # Jinja2's own TypeError, before anything is formatted
                kwargs, args = args[0], ()
            made: str = type(text)(formatter.vformat(text, args, kwargs))
            return made

        return functools.update_wrapper(bounded, value)


class BoundedSandbox(_Bounded):
    """``SandboxedEnvironment`` with what a template builds bounded."""


class BoundedImmutableSandbox(_Bounded, ImmutableSandboxedEnvironment):
    """``ImmutableSandboxedEnvironment`` (lists and dicts passed in stay as they are), bounded."""


def render(template: Any, *args: Any, **variables: Any) -> str:
    """``template.render(...)``, refused with a ``SecurityError`` once the text passes ``MAX_TEXT``."""
    return _concat(template.generate(*args, **variables))
