"""What model calls cost: the price table (``prices.yaml`` next to this module, plus ``prices:`` in the
config file) and the cost of a ``Usage``.

Prices are US dollars per million tokens. A model id finds its price by exact name or by the longest entry
it starts with, so dated ids (``claude-sonnet-5-5-20260101``) need no entry of their own.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

from routedriver import userfile
from routedriver.errors import Refused
from routedriver.llm.types import Usage

TABLE = Path(__file__).with_name("prices.yaml")
PRICE_KEYS = ("input", "output", "cache_read", "cache_write")
PER_TOKENS = 1_000_000


class Price(NamedTuple):
    """US dollars per million tokens."""

    input: float
    output: float
    cache_read: float
    cache_write: float

    def cost(self, usage: Usage) -> float:
        """The dollars ``usage`` costs; its cache counts, parts of ``input_tokens``, at their own rates."""
        plain = max(usage.input_tokens - usage.cache_read_tokens - usage.cache_write_tokens, 0)
        return (
            plain * self.input
            + usage.cache_read_tokens * self.cache_read
            + usage.cache_write_tokens * self.cache_write
            + usage.output_tokens * self.output
        ) / PER_TOKENS


def parse_price(value: Any, where: str) -> Price:
    """A ``{input, output, cache_read?, cache_write?}`` entry; a one-line refusal names what is wrong."""
    if not isinstance(value, Mapping):
        raise Refused(f"{where} must be a mapping like {{input: 3.0, output: 15.0}}", "fix the price")
    unknown = sorted(set(map(str, value)) - set(PRICE_KEYS))
    if unknown:
        raise Refused(f"{where}.{unknown[0]} is not a price key", f"use {', '.join(PRICE_KEYS)}")
    numbers: dict[str, float] = {}
    for key in PRICE_KEYS:
        number = value.get(key)
        if number is None and key in ("input", "output"):
            raise Refused(f"{where}.{key} is missing", "give dollars per million tokens, e.g. input: 3.0")
        if number is None:
            continue
        if isinstance(number, bool) or not isinstance(number, int | float) or not 0 <= number < float("inf"):
            raise Refused(
                f"{where}.{key} must be a number of dollars per million tokens, 0 or more, not {number!r}",
                "fix the price",
            )
        numbers[key] = float(number)
    return Price(
        numbers["input"],
        numbers["output"],
        numbers.get("cache_read", numbers["input"]),
        numbers.get("cache_write", numbers["input"]),
    )


def builtin_prices() -> dict[str, Price]:
    # The package's own table, parsed as every YAML file is (a key given twice is an error, not the last).
    data = userfile.parse_yaml(TABLE.read_text(encoding="utf-8"), shown=str(TABLE))
    return {str(model): parse_price(entry, f"{TABLE.name}: {model}") for model, entry in data.items()}


def price_for(model: str, overrides: Mapping[str, Price] | None = None) -> Price | None:
    """The price of ``model``: the config's entries first, then the built-in table; None when unknown."""
    for table in (overrides or {}, builtin_prices()):
        if model in table:
            return table[model]
        prefixes = [name for name in table if model.startswith(name)]
        if prefixes:
            return table[max(prefixes, key=len)]
    return None
