"""behaviorci's errors: every configuration problem is a ``Refused`` (exit 2) raised before any case runs."""

from __future__ import annotations

from routedriver.errors import Refused


class BundleError(Refused):
    """bundle.yaml, the prompt, the dataset or the schema is unreadable or invalid (exit 2)."""


class InvalidInvariant(BundleError):
    """An invariant uses something the safe evaluator does not allow, or does not parse (exit 2)."""


class ProviderConfigError(Refused):
    """Unknown provider, missing API key, bad provider settings (exit 2)."""


class AllCasesErrored(Refused):
    """Every case errored: the run says nothing about behaviour, so it is not a threshold failure (exit 2)."""


class OutputError(Refused):
    """The report cannot be written where --output says (exit 2)."""
