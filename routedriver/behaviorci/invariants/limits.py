"""What an invariant may do, in numbers, and the errors raised when it may not."""

from __future__ import annotations

import re

CONTEXT_NAMES = ("raw_output", "output", "input", "expected_output", "metadata", "case_id")

MAX_SOURCE_CHARS = 2000
MAX_DEPTH = 40
MAX_STEPS = 200_000  # node evaluations per invariant and case
MAX_SEQUENCE = 1_000_000  # elements/characters one operation may produce
MAX_ALLOC = 10_000_000  # elements/characters all operations of one evaluation may produce together
MAX_INT_BITS = 4096
MAX_ROUND_DIGITS = 400  # round(x, n): |n| beyond this is a no-op for floats and 0 for ints, yet 10**n costs
# Comparing, hashing or printing containers walks their elements in C, ~this many per interpreted step.
ELEMENTS_PER_STEP = 16
MAX_PATTERN_CHARS = 1000
MAX_REGEX_SECONDS = 1.0  # per regex helper call; beyond it the case errors instead of hanging
MAX_GENERATORS = 2

DUNDER = re.compile(r"__\w+__")


class UnsafeExpression(ValueError):
    """The invariant uses something the evaluator does not allow (raised when the bundle is loaded)."""


class InvariantFailure(Exception):
    """The invariant could not be evaluated for this output (a missing key, a type error, a limit)."""


class LimitExceeded(InvariantFailure):
    """The invariant tried to do more work or build more data than an invariant may."""
