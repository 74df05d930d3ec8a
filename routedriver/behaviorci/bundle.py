"""Loading a bundle: bundle.yaml, the prompt template, the dataset, the schema and the invariants.

Everything that can be wrong with a bundle is found here, before any provider call: unknown keys (named
with their full key path), missing or unreadable files, invalid JSON schema, unsafe invariants, unknown
threshold metrics, and prompts that do not render for some case (Jinja2 ``StrictUndefined``: a variable a
case does not define is an error naming the variable and the case). Each problem is one ``BundleError``.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from routedriver.behaviorci.dataset import Case, load_dataset
from routedriver.behaviorci.errors import BundleError, InvalidInvariant
from routedriver.behaviorci.invariants import Invariant, UnsafeExpression, compile_invariant
from routedriver.behaviorci.models import BundleConfig

BUNDLE_FILENAMES = ("bundle.yaml", "bundle.yml")


@dataclass(frozen=True)
class Bundle:
    path: Path  # bundle.yaml
    shown: str  # how messages name bundle.yaml
    config: BundleConfig
    cases: tuple[Case, ...]
    prompts: dict[str, str]  # case id → rendered prompt
    schema: dict[str, Any] | None
    invariants: tuple[Invariant, ...]
    dataset_shown: str

    @property
    def dir(self) -> Path:
        return self.path.parent

    def resolve(self, relative: str) -> Path:
        return (self.dir / os.path.expanduser(relative)).resolve()


def shown_path(path: Path) -> str:
    """``path`` relative to the working directory when it is below it, else absolute."""
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path.resolve())


def find_bundle_file(argument: str) -> Path:
    path = Path(argument)
    if path.is_dir():
        for name in BUNDLE_FILENAMES:
            if (path / name).is_file():
                return path / name
        raise BundleError(
            f"no bundle.yaml in {argument}", "pass the path of a bundle.yaml or run behaviorci init"
        )
    if not path.exists():
        raise BundleError(
            f"bundle {argument} not found", "check the path or run behaviorci init to create one"
        )
    return path


def read_config(path: Path, shown: str) -> BundleConfig:
    import yaml
    from pydantic import ValidationError

    try:
        text = path.read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise BundleError(f"cannot read {shown}: {reason}", "make it a readable UTF-8 file") from None
    try:
        raw = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "cannot parse"
        raise BundleError(f"{shown}: invalid YAML{where} ({problem})", "fix the YAML syntax") from None
    if not isinstance(raw, dict):
        raise BundleError(
            f"{shown}: expected a mapping of keys (name:, prompt_path:, …)", "see behaviorci init"
        )
    try:
        return BundleConfig.model_validate(raw)
    except ValidationError as exc:
        raise _config_error(exc, shown) from None


def _config_error(exc: Any, shown: str) -> BundleError:
    errors = exc.errors()
    # Unknown keys are the most common mistake and the most precise message; report them first.
    errors.sort(key=lambda e: e["type"] != "extra_forbidden")
    first = errors[0]
    loc = _key_path(first["loc"])
    more = f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
    if first["type"] == "extra_forbidden":
        allowed = _allowed_keys(first["loc"][:-1])
        return BundleError(
            f"{shown}: unknown key '{loc}'{more}",
            f"remove it or fix its spelling (allowed here: {', '.join(allowed)})",
        )
    if first["type"] == "missing":
        return BundleError(f"{shown}: missing required key '{loc}'{more}", f"add {loc}: to {shown}")
    message = str(first["msg"]).removeprefix("Value error, ")
    what, _, fix = message.partition("; ")  # our validators say "<problem>; <what to do>"
    where = f"'{loc}': " if loc else ""
    return BundleError(f"{shown}: {where}{what}{more}", fix or "fix that value")


def _key_path(loc: tuple[Any, ...]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def _allowed_keys(loc: tuple[Any, ...]) -> list[str]:
    from pydantic import BaseModel

    model: Any = BundleConfig
    for part in loc:
        if isinstance(part, int):
            continue
        field = (
            model.model_fields.get(part) if isinstance(model, type) and issubclass(model, BaseModel) else None
        )
        if field is None:
            return []
        annotation = field.annotation
        inner = [
            a for a in getattr(annotation, "__args__", ()) if isinstance(a, type) and issubclass(a, BaseModel)
        ]
        model = inner[0] if inner else annotation
    return list(model.model_fields) if isinstance(model, type) and issubclass(model, BaseModel) else []


def load_bundle(argument: str) -> Bundle:
    path = find_bundle_file(argument)
    shown = shown_path(path)
    config = read_config(path, shown)
    base = path.parent

    def resolve(relative: str) -> Path:
        return (base / os.path.expanduser(relative)).resolve()

    dataset_path = resolve(config.dataset_path)
    dataset_shown = shown_path(dataset_path)
    cases = load_dataset(dataset_path, dataset_shown, default_min_pass_rate=config.min_pass_rate)
    prompts = _render_prompts(resolve(config.prompt_path), config.prompt_path, cases, dataset_shown)
    contract = config.output_contract
    schema = _load_schema(resolve(contract.schema_path)) if contract and contract.schema_path else None
    invariants = _compile_invariants(contract.invariants if contract else [], shown)
    return Bundle(path.resolve(), shown, config, tuple(cases), prompts, schema, invariants, dataset_shown)


def _render_prompts(path: Path, relative: str, cases: list[Case], dataset_shown: str) -> dict[str, str]:
    import jinja2
    from jinja2.sandbox import SandboxedEnvironment

    shown = shown_path(path)
    if not path.is_file():
        raise BundleError(f"prompt {shown} not found", "check prompt_path in bundle.yaml")
    env = SandboxedEnvironment(
        loader=jinja2.FileSystemLoader(str(path.parent)),
        undefined=jinja2.StrictUndefined,
        autoescape=False,  # prompts are not HTML
    )
    try:
        template = env.get_template(path.name)
    except jinja2.TemplateSyntaxError as exc:
        raise BundleError(
            f"{shown} line {exc.lineno}: template error: {exc.message}", "fix the template"
        ) from None
    except (OSError, UnicodeDecodeError, jinja2.TemplateError) as exc:
        raise BundleError(f"cannot read prompt {shown}: {exc}", "make it a readable UTF-8 file") from None
    prompts: dict[str, str] = {}
    for case in cases:
        try:
            prompts[case.id] = template.render(**case.input)
        except jinja2.UndefinedError as exc:
            raise BundleError(
                f"{shown}: case '{case.id}' ({dataset_shown} line {case.line}): {exc.message}",
                "add the variable to the case's input or fix the template",
            ) from None
        except Exception as exc:  # noqa: BLE001 - a template can raise anything; name the case and go on
            raise BundleError(
                f"{shown}: case '{case.id}' ({dataset_shown} line {case.line}): cannot render: "
                f"{type(exc).__name__}: {exc}",
                "fix the template or the case's input",
            ) from None
    return prompts


def _load_schema(path: Path) -> dict[str, Any]:
    shown = shown_path(path)
    try:
        schema = json.loads(path.read_text(encoding="utf-8-sig"))
    except FileNotFoundError:
        raise BundleError(
            f"schema {shown} not found", "check output_contract.schema_path in bundle.yaml"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise BundleError(f"cannot read schema {shown}: {exc}", "make it a readable UTF-8 file") from None
    except json.JSONDecodeError as exc:
        raise BundleError(
            f"{shown} line {exc.lineno}: invalid JSON ({exc.msg})", "fix the schema file"
        ) from None
    if not isinstance(schema, (dict, bool)):
        raise BundleError(f"{shown}: a JSON schema must be an object", "fix the schema file")
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import Draft7Validator, validator_for

    try:
        validator_for(schema, default=Draft7Validator).check_schema(schema)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "(top)"
        raise BundleError(
            f"{shown}: not a valid JSON schema at {where}: {exc.message}", "fix the schema"
        ) from None
    return schema if isinstance(schema, dict) else {} if schema else {"not": {}}


def _compile_invariants(sources: list[str], shown: str) -> tuple[Invariant, ...]:
    compiled = []
    for index, source in enumerate(sources):
        try:
            compiled.append(compile_invariant(source))
        except UnsafeExpression as exc:
            raise InvalidInvariant(
                f"{shown}: output_contract.invariants[{index}] `{source}` is not a valid invariant: {exc}",
                "see 'Invariants' in docs/behaviorci.md for what an invariant may use",
            ) from None
    return tuple(compiled)
