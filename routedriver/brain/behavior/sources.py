"""The files a behavior configuration is built from, and turning their validation errors into one line.

- the built-in rules and profiles (``builtin_rules.yaml``, ``profiles.yaml``), parsed once per process;
- profile files, ``behavior/NAME.yaml`` next to the config (``{{behavior.NAME}}``);
- prompt files, ``prompts/NAME.md`` next to the config (``{{prompt.NAME}}``);
- pydantic validation, with errors as ``<file>: <key path>: <problem>``.
"""

from __future__ import annotations

import copy
import functools
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from routedriver import userfile
from routedriver.brain.behavior import models
from routedriver.brain.behavior.errors import BehaviorConfigError
from routedriver.fsutil import real_path

HERE = real_path(__file__).parent
BUILTIN_RULES = HERE / "builtin_rules.yaml"
BUILTIN_PROFILES = HERE / "profiles.yaml"
REFERENCE = re.compile(r"^\{\{\s*(behavior|prompt)\.([A-Za-z0-9_.-]+)\s*\}\}$")
AUTONOMY = {
    "low": "Ask the user before each significant step.",
    "medium": "Proceed on routine steps; ask before risky or ambiguous ones.",
    "high": "Work autonomously; ask only before destructive or irreversible actions.",
}
VERBOSITY = {
    "concise": "Keep replies short.",
    "normal": "Explain what matters, briefly.",
    "detailed": "Explain your reasoning and results in detail.",
}


def builtin_data() -> tuple[dict[str, Any], dict[str, Any]]:
    """The built-in rules and profiles (parsed once per process and file version; callers get copies)."""
    stamp = (BUILTIN_RULES.stat().st_mtime_ns, BUILTIN_PROFILES.stat().st_mtime_ns)
    return copy.deepcopy(_parse_builtins(stamp))


@functools.lru_cache(maxsize=2)
def _parse_builtins(stamp: tuple[int, int]) -> tuple[dict[str, Any], dict[str, Any]]:
    # The package's own data, parsed as every YAML file is (a key given twice is an error, not the last).
    rules = userfile.parse_yaml(BUILTIN_RULES.read_text(encoding="utf-8"), shown=str(BUILTIN_RULES))
    profiles = userfile.parse_yaml(BUILTIN_PROFILES.read_text(encoding="utf-8"), shown=str(BUILTIN_PROFILES))
    return rules, profiles


def pydantic_error_line(where: str, prefix: str, exc: ValidationError, model: type[BaseModel]) -> str:
    """One line, e.g. ``config.yaml: security.behavior.rule_definitions[0].acton: extra inputs are not
    permitted``."""
    first = exc.errors()[0]
    path = prefix
    for part in first["loc"]:
        path += f"[{part}]" if isinstance(part, int) else (f".{part}" if path else str(part))
    message = str(first["msg"]).removeprefix("Value error, ")
    message = message[:1].lower() + message[1:]
    if first["type"] == "extra_forbidden":
        allowed = _allowed_keys(model, first["loc"][:-1])
        if allowed:
            message += f" (allowed: {', '.join(allowed)})"
    more = len(exc.errors()) - 1
    return f"{where}: {path}: {message}" + (
        f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
    )


def _allowed_keys(model: type[BaseModel], loc: tuple[Any, ...]) -> list[str]:
    current: Any = model
    for part in loc:
        if isinstance(part, int) or not (isinstance(current, type) and issubclass(current, BaseModel)):
            continue
        field = current.model_fields.get(str(part))
        if field is None:
            return []
        current = _inner_model(field.annotation)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return list(current.model_fields)
    return []


def _inner_model(annotation: Any) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for arg in getattr(annotation, "__args__", ()):
        found = _inner_model(arg)
        if found is not None:
            return found
    return None


def validate(model: type[BaseModel], data: Any, where: str, prefix: str) -> Any:
    if data is not None and not isinstance(data, Mapping):
        what = prefix or "the file"  # a profile file is validated as a whole: there is no key path to name
        raise BehaviorConfigError(
            f"{where}: {what} must be a mapping of settings, not a {_yaml_kind(data)}",
            "write it as key: value lines (see docs/behavior.md)",
        )
    try:
        return model.model_validate({} if data is None else data)
    except ValidationError as exc:
        raise BehaviorConfigError(
            pydantic_error_line(where, prefix, exc, model), "fix the behavior configuration"
        ) from None


def _yaml_kind(data: Any) -> str:
    if isinstance(data, list):
        return "list"
    if isinstance(data, str):
        return "string"
    return "number" if isinstance(data, (int, float)) and not isinstance(data, bool) else type(data).__name__


def load_profile(
    name: str | None, config_path: Path, profiles: Mapping[str, Any], sources: list[str], key_path: str
) -> tuple[str | None, models.ProfileFile | None, str]:
    """(built-in profile name, profile file model, profile file display name)."""
    if name is None:
        return None, None, ""
    listing = f'use one of: {", ".join(sorted(profiles))}, or "{{{{behavior.NAME}}}}" for behavior/NAME.yaml'
    ref = REFERENCE.match(name.strip())
    if ref is None:
        if name in profiles:
            return name, None, ""
        raise BehaviorConfigError(
            f"{config_path}: {key_path}.profile: unknown behavior profile {name!r}", listing
        )
    if ref.group(1) != "behavior":
        raise BehaviorConfigError(
            f"{config_path}: {key_path}.profile: {name} is not a behavior profile", listing
        )
    folder = real_path(config_path).parent / "behavior"
    candidates = [folder / f"{ref.group(2)}.yaml", folder / f"{ref.group(2)}.yml"]
    # a FIFO too: userfile says what it is
    found = next((path for path in candidates if os.path.exists(path)), None)
    if found is None:
        raise BehaviorConfigError(
            f"{config_path}: {key_path}.profile: {candidates[0]} not found",
            f"create it, or {listing.removeprefix('use ')}",
        )
    sources.append(str(found))
    display = (
        f"{config_path.parent / 'behavior' / found.name}" if not config_path.is_absolute() else str(found)
    )
    profile = validate(models.ProfileFile, load_yaml(found, display), display, "")
    if profile.extends is not None and profile.extends not in profiles:
        raise BehaviorConfigError(
            f"{display}: extends: unknown built-in profile {profile.extends!r}",
            f"use one of: {', '.join(sorted(profiles))}",
        )
    return profile.extends, profile, display


def load_yaml(path: Path, display: str) -> Any:
    return userfile.load_yaml(path, what="behavior file", shown=display, error=BehaviorConfigError)


def prompt_ref(text: str, config_path: Path, sources: list[str], key: str) -> str:
    ref = REFERENCE.match(text.strip())
    if ref is None:
        return text
    if ref.group(1) != "prompt":
        raise BehaviorConfigError(
            f"{config_path}: {key}: {text} is not a prompt reference",
            "use {{prompt.NAME}} for prompts/NAME.md next to the config",
        )
    folder = real_path(config_path).parent / "prompts"
    for candidate in (folder / f"{ref.group(2)}.md", folder / f"{ref.group(2)}.txt", folder / ref.group(2)):
        # a FIFO or a device too: userfile says what it is
        if os.path.exists(candidate) and not os.path.isdir(candidate):
            sources.append(str(candidate))
            return userfile.read_text(candidate, what="prompt file", error=BehaviorConfigError)
    raise BehaviorConfigError(
        f"{config_path}: {key}: {folder / (ref.group(2) + '.md')} not found",
        "create the prompt file or write the prompt inline",
    )


def profile_summary(
    base_name: str | None,
    base: Mapping[str, Any],
    profile_file: models.ProfileFile | None,
    settings: Mapping[str, Any],
) -> dict[str, Any]:
    prompts = [str(base.get("prompt") or "").strip()]
    title, name, description = base.get("title"), base_name, base.get("description", "")
    if profile_file is not None:
        prompts.append(profile_file.prompt.strip())
        name = profile_file.name or base_name
        title = profile_file.name or title
        description = profile_file.description or description
    autonomy, verbosity = settings.get("autonomy"), settings.get("verbosity")
    style = []
    if autonomy in AUTONOMY:
        style.append(f"Autonomy: {autonomy}. {AUTONOMY[autonomy]}")
    if verbosity in VERBOSITY:
        style.append(f"Verbosity: {verbosity}. {VERBOSITY[verbosity]}")
    prompt = "\n\n".join(part for part in [*prompts, "\n".join(style)] if part)
    return {
        "name": name,
        "title": title,
        "description": description,
        "prompt": prompt,
        "autonomy": autonomy,
        "verbosity": verbosity,
    }
