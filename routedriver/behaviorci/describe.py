"""What ``behaviorci validate`` prints for a valid bundle: what will run, and how it will be judged.

``summary`` is the one reading of a loaded bundle; ``describe`` renders it as text and ``--json`` prints it
as it is (keys documented in docs/behaviorci.md, "validate --json").
"""

from __future__ import annotations

from typing import Any

from routedriver.behaviorci.bundle import Bundle, shown_path
from routedriver.behaviorci.providers.chat import SETTINGS
from routedriver.behaviorci.providers.mock import DEFAULT_MODEL


def summary(bundle: Bundle) -> dict[str, Any]:
    config = bundle.config
    provider = config.provider
    contract = config.output_contract
    schema = shown_path(bundle.resolve(contract.schema_path)) if contract and contract.schema_path else None
    thresholds = [
        {"metric": t.metric, "operator": t.operator, "value": t.value, "default": False}
        for t in config.thresholds
    ] or [{"metric": "pass_rate", "operator": ">=", "value": 1.0, "default": True}]  # as check_thresholds
    return {
        "valid": True,
        "bundle": bundle.shown,
        "name": config.name,
        "version": config.version,
        "provider": {
            "name": provider.name,
            "model": provider.model or _default_model(provider.name),
            "model_is_default": not provider.model,
        },
        "prompt": shown_path(bundle.resolve(config.prompt_path)),
        "dataset": {"path": bundle.dataset_shown, "cases": len(bundle.cases)},
        "schema": schema,
        "invariants": len(bundle.invariants),
        "thresholds": thresholds,
        "runs": {
            "repeat": config.repeat,
            "concurrency": config.effective_concurrency,
            "timeout_s": config.timeout,
            "retries": config.retries,
        },
        "warnings": list(bundle.warnings),
    }


def describe(bundle: Bundle) -> str:
    facts = summary(bundle)
    provider = facts["provider"]
    model = provider["model"]
    if provider["model_is_default"] and provider["name"] != "mock":
        model = f"default: {model}"
    thresholds = "; ".join(f"{t['metric']} {t['operator']} {t['value']:g}" for t in facts["thresholds"])
    if facts["thresholds"][0]["default"]:
        thresholds += " (default: no thresholds given)"
    runs = facts["runs"]
    rows = [
        ("version", facts["version"]),
        ("provider", f"{provider['name']} ({model})"),
        ("prompt", facts["prompt"]),
        ("dataset", f"{facts['dataset']['path']} ({facts['dataset']['cases']} cases)"),
        ("schema", facts["schema"] or "none"),
        ("invariants", str(facts["invariants"])),
        ("thresholds", thresholds),
        (
            "runs",
            f"repeat {runs['repeat']}, concurrency {runs['concurrency']},"
            f" timeout {runs['timeout_s']:g} s, retries {runs['retries']}",
        ),
    ]
    lines = [f"valid: {facts['name']} ({facts['bundle']})"]
    lines.extend(f"  {key:<11} {value}" for key, value in rows)
    return "\n".join(lines) + "\n"


def _default_model(name: str) -> str:
    if name == "mock":
        return DEFAULT_MODEL
    return SETTINGS[name][0]
