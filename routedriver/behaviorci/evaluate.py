"""Checking one output against the output contract: JSON schema (if any) and invariants (if any)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from routedriver.behaviorci.dataset import Case
from routedriver.behaviorci.invariants import Invariant, InvariantFailure
from routedriver.behaviorci.jsonout import parse_output
from routedriver.behaviorci.results import Evaluation
from routedriver.behaviorci.schema import ContractSchema

MAX_SCHEMA_ERRORS = 10


class ContractError(Exception):
    """The contract could not be applied to this output (e.g. a ``$ref`` that does not resolve): the run
    errors, the others go on."""


class ContractEvaluator:
    """Evaluates outputs; safe to share between threads (it holds no per-call state)."""

    def __init__(self, schema: ContractSchema | None, invariants: Sequence[Invariant]) -> None:
        self.invariants = tuple(invariants)
        self._validator: Any = None if schema is None else schema.validator()

    def _schema_errors(self, parsed: Any) -> list[Any]:
        # referencing comes with a schema's validator: a bundle without a schema never loads it
        from referencing.exceptions import Unresolvable

        try:
            return sorted(self._validator.iter_errors(parsed), key=lambda e: list(e.absolute_path))
        except Unresolvable as exc:  # refs are resolved at load; this is the last line of defence
            raise ContractError(f"the schema cannot be applied: cannot resolve {exc.ref!r}") from None

    def evaluate(self, raw_output: str, case: Case) -> Evaluation:
        parsed, is_json = parse_output(raw_output)
        schema_valid = True
        schema_errors: list[str] = []
        if self._validator is not None:
            if not is_json:
                schema_valid, schema_errors = False, ["output is not JSON"]
            else:
                errors = self._schema_errors(parsed)
                if errors:
                    schema_valid = False
                    schema_errors = [f"{e.json_path}: {e.message}" for e in errors[:MAX_SCHEMA_ERRORS]]
                    if len(errors) > MAX_SCHEMA_ERRORS:
                        schema_errors.append(f"... and {len(errors) - MAX_SCHEMA_ERRORS} more")

        context = {
            "raw_output": raw_output,
            "output": parsed if is_json else raw_output,
            "input": case.input,
            "expected_output": case.expected_output,
            "metadata": case.metadata,
            "case_id": case.id,
        }
        passed_map: dict[str, bool] = {}
        error_map: dict[str, str] = {}
        for invariant in self.invariants:
            try:
                value = invariant.evaluate(context)
            except InvariantFailure as exc:
                passed_map[invariant.source] = False
                error_map[invariant.source] = str(exc)
                continue
            if not isinstance(value, bool):
                passed_map[invariant.source] = False
                error_map[invariant.source] = f"returned {type(value).__name__}, not true/false"
                continue
            passed_map[invariant.source] = value
        return Evaluation(
            passed=schema_valid and all(passed_map.values()),
            schema_valid=schema_valid,
            schema_errors=tuple(schema_errors),
            invariants_passed=passed_map,
            invariant_errors=error_map,
            output_parsed=parsed,
            is_json=is_json,
        )
