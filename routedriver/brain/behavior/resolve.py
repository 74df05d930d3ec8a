"""``security.behavior`` → the resolved, validated, plain-data form the engine compiles.

Resolution order (later wins by rule id):
1. the built-in rules the profile turns on (thresholds substituted from the profile's settings),
2. the profile file's ``custom`` and ``rule_definitions`` (for ``{{behavior.NAME}}`` profiles),
3. the config's ``custom`` (legacy rules, converted),
4. the config's ``rule_definitions``: a definition always wins over a flag with the same id.

Settings merge: built-in thresholds ← the built-in profile (or the one a profile file ``extends``) ← the
profile file's ``rules`` ← the config's ``rules``. Without a profile no built-in rule is on unless a
``rules:`` flag turns it on.

The result is JSON-able (no secrets are resolved here), so ``bhrain behave`` can cache it on disk.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from routedriver.brain.behavior import models
from routedriver.brain.behavior.conditions import ConditionError, compile_condition
from routedriver.brain.behavior.errors import BehaviorConfigError
from routedriver.brain.behavior.sources import (
    BUILTIN_PROFILES,
    BUILTIN_RULES,
    builtin_data,
    load_profile,
    load_yaml,
    profile_summary,
    prompt_ref,
    validate,
)
from routedriver.fsutil import real_path

log = logging.getLogger("routedriver.brain.behavior")
RESOLVED_VERSION = 1


def resolve_behavior(
    block: Mapping[str, Any] | None, *, config_path: Path, key_path: str = "security.behavior"
) -> tuple[dict[str, Any], list[str]]:
    """Validate ``block`` and return (resolved plain data, source files it was built from)."""
    where = str(config_path)
    config: models.BehaviorConfig = validate(models.BehaviorConfig, block, where, key_path)
    rules_data, profiles = builtin_data()
    sources = [str(BUILTIN_RULES), str(BUILTIN_PROFILES), str(real_path(config_path))]
    builtin_ids = [rule["id"] for rule in rules_data["rules"]]
    known_settings = sorted({*builtin_ids, *rules_data["thresholds"], *models.SETTING_WORDS})

    base_name, profile_file, profile_where = load_profile(
        config.profile, config_path, profiles, sources, key_path
    )
    base = profiles.get(base_name, {}) if base_name else {}
    settings: dict[str, Any] = dict(base.get("settings", {}))
    layers = []
    if profile_file is not None:
        layers.append((profile_file.rules, profile_where, "rules"))
    layers.append((config.rules, where, f"{key_path}.rules"))
    for layer, layer_where, layer_path in layers:
        for key in layer:
            if key not in known_settings:
                raise BehaviorConfigError(
                    f"{layer_where}: {layer_path}.{key}: unknown rule or setting",
                    f"use one of: {', '.join(known_settings)}",
                )
        settings.update(layer)
    thresholds = dict(rules_data["thresholds"])
    for name in thresholds:
        value = settings.get(name)
        if type(value) is int:
            thresholds[name] = value

    ordered: dict[str, tuple[dict[str, Any], str]] = {}
    for index, raw in enumerate(rules_data["rules"]):
        flag = settings.get(raw["id"], False)
        if flag is True or (type(flag) is int and flag > 0):
            definition = validate(
                models.BehaviorRuleDefinition,
                _substitute(raw, thresholds),
                str(BUILTIN_RULES),
                f"rules[{index}]",
            )
            ordered[raw["id"]] = (definition.model_dump(), f"{BUILTIN_RULES.name}: rules[{index}]")
    if profile_file is not None:
        _merge(ordered, [c.to_definition() for c in profile_file.custom], profile_where, "custom")
        _merge(
            ordered,
            [d.model_dump() for d in profile_file.rule_definitions],
            profile_where,
            "rule_definitions",
        )
    _merge(ordered, [c.to_definition() for c in config.custom], where, f"{key_path}.custom")
    _merge(ordered, [d.model_dump() for d in config.rule_definitions], where, f"{key_path}.rule_definitions")
    for definition, origin in ordered.values():
        try:
            compile_condition(definition["condition"], f"{origin}.condition")
        except ConditionError as exc:
            raise BehaviorConfigError(f"{exc.path}: {exc.message}", "fix the rule's condition") from None

    uses_builtins = base_name is not None or any(
        origin.startswith(BUILTIN_RULES.name) for _, origin in ordered.values()
    )
    tracking = _tracking(config.state_tracking, rules_data["state_tracking"] if uses_builtins else {})
    rules = [definition for definition, _ in ordered.values()]
    _warn_untracked(rules, tracking)
    classifier = config.classifier.model_dump()
    if classifier["system_prompt"]:
        classifier["system_prompt"] = prompt_ref(
            classifier["system_prompt"], config_path, sources, f"{key_path}.classifier.system_prompt"
        )
    resolved = {
        "version": RESOLVED_VERSION,
        "profile": profile_summary(base_name, base, profile_file, settings)
        if (base_name or profile_file)
        else None,
        "settings": {**settings, **thresholds},
        "rules": rules,
        "state_tracking": tracking,
        "classify_turns": config.classify_turns,
        "classifier": classifier,
        "brain": config.brain.model_dump() if config.brain else None,
        "use_agent_brain": config.use_agent_brain,
        "config_path": str(real_path(config_path)),
    }
    return resolved, sources


def _merge(
    ordered: dict[str, tuple[dict[str, Any], str]], definitions: list[dict[str, Any]], where: str, path: str
) -> None:
    seen: set[str] = set()
    for index, definition in enumerate(definitions):
        if definition["id"] in seen:
            raise BehaviorConfigError(
                f"{where}: {path}[{index}].id: duplicate rule id {definition['id']!r}",
                "give every rule a unique id",
            )
        seen.add(definition["id"])
        ordered[definition["id"]] = (definition, f"{where}: {path}[{index}]")


def _substitute(value: Any, thresholds: Mapping[str, int]) -> Any:
    if isinstance(value, str):
        for name, number in thresholds.items():
            token = f"{{{{{name}}}}}"
            if value == token:
                return number
            value = value.replace(token, str(number))
        return value
    if isinstance(value, list):
        return [_substitute(item, thresholds) for item in value]
    if isinstance(value, dict):
        return {key: _substitute(item, thresholds) for key, item in value.items()}
    return value


def _tracking(user: models.StateTrackingConfig | None, defaults: Mapping[str, Any]) -> dict[str, Any]:
    """The built-in rules' tracking, with the config's entries of the same name replacing them."""
    merged: dict[str, Any] = {}
    default_model = models.StateTrackingConfig.model_validate(defaults or {})
    for kind in ("sets", "counters", "flags"):
        entries = {name: spec.model_dump() for name, spec in getattr(default_model, kind).items()}
        if user is not None:
            entries.update({name: spec.model_dump() for name, spec in getattr(user, kind).items()})
        merged[kind] = entries
    return merged


def _warn_untracked(rules: list[dict[str, Any]], tracking: Mapping[str, Any]) -> None:
    def walk(node: Any, rule_id: str) -> None:
        if isinstance(node, list):
            for item in node:
                walk(item, rule_id)
        elif isinstance(node, dict):
            for key, arg in node.items():
                kind, name = _reference(key, arg)
                if kind and name not in tracking[kind]:
                    log.warning(
                        "behavior: rule %s refers to %s %r, which state_tracking does not declare",
                        rule_id,
                        kind[:-1],
                        name,
                    )
                walk(arg, rule_id)

    for rule in rules:
        walk(rule["condition"], rule["id"])


def _reference(key: str, arg: Any) -> tuple[str, Any]:
    if key in ("target_in_set", "target_not_in_set"):
        return "sets", arg
    if key == "counter_gte" and isinstance(arg, dict):
        return "counters", arg.get("name")
    if key == "flag_is" and isinstance(arg, dict):
        return "flags", arg.get("name")
    return "", None


def load_behavior_file(config_path: Path) -> tuple[dict[str, Any], list[str]]:
    """Read a bhrain config file and resolve its ``security.behavior`` block (used by ``bhrain behave``)."""
    data = load_yaml(config_path, str(config_path))
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("security"), dict)
        or "behavior" not in data["security"]
    ):
        raise BehaviorConfigError(
            f"{config_path}: no security.behavior block",
            "add security: {behavior: {profile: dev}} or point --config at the right file",
        )
    return resolve_behavior(data["security"]["behavior"], config_path=config_path)
