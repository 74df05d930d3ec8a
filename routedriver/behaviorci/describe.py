"""What ``behaviorci validate`` prints for a valid bundle: what will run, and how it will be judged."""

from __future__ import annotations

from routedriver.behaviorci.bundle import Bundle, shown_path


def describe(bundle: Bundle) -> str:
    config = bundle.config
    provider = config.provider
    model = provider.model or _default_model(provider.name)
    contract = config.output_contract
    schema = shown_path(bundle.resolve(contract.schema_path)) if contract and contract.schema_path else "none"
    thresholds = "; ".join(f"{t.metric} {t.operator} {t.value:g}" for t in config.thresholds)
    rows = [
        ("version", config.version),
        ("provider", f"{provider.name} ({model})"),
        ("prompt", shown_path(bundle.resolve(config.prompt_path))),
        ("dataset", f"{bundle.dataset_shown} ({len(bundle.cases)} cases)"),
        ("schema", schema),
        ("invariants", str(len(bundle.invariants))),
        ("thresholds", thresholds or "pass_rate >= 1 (default: no thresholds given)"),
        (
            "runs",
            f"repeat {config.repeat}, concurrency {config.effective_concurrency},"
            f" timeout {config.timeout:g} s, retries {config.retries}",
        ),
    ]
    lines = [f"valid: {config.name} ({bundle.shown})"]
    lines.extend(f"  {key:<11} {value}" for key, value in rows)
    return "\n".join(lines) + "\n"


def _default_model(name: str) -> str:
    if name == "mock":
        from routedriver.behaviorci.providers.mock import DEFAULT_MODEL

        return DEFAULT_MODEL
    from routedriver.behaviorci.providers.chat import SETTINGS

    return f"default: {SETTINGS[name][0]}"
