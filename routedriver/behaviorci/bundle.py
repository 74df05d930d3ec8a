"""Loading a bundle: bundle.yaml, the prompt template, the dataset, the schema and the invariants.

Everything that can be wrong with a bundle is found here, before any provider call: unknown keys (named
with their full key path), missing or unreadable files, invalid JSON schema, unsafe invariants, unknown
threshold metrics, and prompts that do not render for some case (Jinja2 ``StrictUndefined``: a variable a
case does not define is an error naming the variable and the case). Each problem is one ``BundleError``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from routedriver import userfile
from routedriver.behaviorci.dataset import Case, load_dataset
from routedriver.behaviorci.errors import BundleError, InvalidInvariant
from routedriver.behaviorci.invariants import Invariant, UnsafeExpression, compile_invariant
from routedriver.behaviorci.models import BundleConfig
from routedriver.behaviorci.schema import ContractSchema, load_schema
from routedriver.behaviorci.text import lone_surrogate_at
from routedriver.fsutil import real_path

BUNDLE_FILENAMES = ("bundle.yaml", "bundle.yml")

# Settings that decide where the provider key is sent or where answers are read and written. Whoever writes
# bundle.yaml may not be whoever holds the key (a route's robot writes files the judge then reads, and CI's
# recheck runs that judge with the reviewer's key), so only the person running behaviorci chooses them.
# (key path, what it would choose, the option to use instead)
RUNNER_ONLY = (
    (("provider", "base_url"), "where the provider key is sent", "--base-url URL"),
    (("provider", "api_key_env"), "which variable's secret is sent as the provider key", "--api-key-env VAR"),
    (("cache", "dir"), "where cached answers are read from and written to", "--cache-dir DIR"),
)


@dataclass(frozen=True)
class Bundle:
    path: Path  # bundle.yaml in its directory (that directory resolved; a symlinked bundle.yaml is not)
    shown: str  # how messages name bundle.yaml
    config: BundleConfig
    cases: tuple[Case, ...]
    prompts: dict[str, str]  # case id → rendered prompt
    schema: ContractSchema | None
    invariants: tuple[Invariant, ...]
    dataset_shown: str
    warnings: tuple[str, ...] = ()  # worth a look, not a reason to refuse (keys the dataset has but not read)

    @property
    def dir(self) -> Path:
        return self.path.parent

    def resolve(self, relative: str) -> Path:
        return real_path(self.dir / os.path.expanduser(relative))


def shown_path(path: Path) -> str:
    """``path`` relative to the working directory when it is below it, else absolute; a symlink is named
    as itself, not as what it points to (a dataset linked to /dev/zero is refused as the dataset)."""
    real = real_path(path.parent) / path.name
    try:
        return str(real.relative_to(real_path(Path.cwd())))
    except ValueError:
        return str(real)


def find_bundle_file(argument: str) -> Path:
    path = Path(argument)
    if os.path.isdir(path):
        for name in BUNDLE_FILENAMES:
            candidate = path / name  # a FIFO too: userfile says what it is
            if os.path.exists(candidate) and not os.path.isdir(candidate):
                return candidate
        raise BundleError(
            f"no bundle.yaml in {argument}", "pass the path of a bundle.yaml or run behaviorci init"
        )
    if not os.path.exists(path):
        raise BundleError(
            f"bundle {argument} not found", "check the path or run behaviorci init to create one"
        )
    return path


def read_config(path: Path, shown: str) -> BundleConfig:
    raw = userfile.load_yaml(path, what="bundle", shown=shown, error=BundleError)
    if not isinstance(raw, dict):
        raise BundleError(
            f"{shown}: expected a mapping of keys (name:, prompt_path:, …)", "see behaviorci init"
        )
    surrogate = lone_surrogate_at(raw)
    if surrogate is not None:
        raise BundleError(
            f"{shown}: '{surrogate}' holds a lone surrogate (a \\ud800-\\udfff escape without its pair)",
            "write the character itself or both halves of its surrogate pair",
        )
    _refuse_runner_only(raw, shown)
    try:
        return BundleConfig.model_validate(raw)
    except ValidationError as exc:
        raise _config_error(exc, shown) from None


def _refuse_runner_only(raw: dict[Any, Any], shown: str) -> None:
    """Refuse a bundle that sets a ``RUNNER_ONLY`` key, before anything else is read from it."""
    for (section, key), chooses, option in RUNNER_ONLY:
        settings = raw.get(section)
        if isinstance(settings, dict) and key in settings:
            raise BundleError(
                f"{shown} sets {section}.{key}: a bundle does not choose {chooses}",
                f"remove it and pass {option} to behaviorci run instead",
            )


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
    found = find_bundle_file(argument)
    # The bundle's directory is the one bundle.yaml is found in, even when bundle.yaml is a symlink to a
    # file elsewhere: its files, cache.dir and what messages show all start from there (not the target's).
    base = real_path(found.parent)
    path = base / found.name
    shown = str(Path(shown_path(base)) / found.name)
    config = read_config(path, shown)

    def resolve(relative: str) -> Path:
        path = Path(os.path.normpath(base / os.path.expanduser(relative)))
        return real_path(path.parent) / path.name  # the file itself, a symlink or not: it is what we read

    dataset_path = resolve(config.dataset_path)
    dataset_shown = shown_path(dataset_path)
    dataset = load_dataset(dataset_path, dataset_shown, default_min_pass_rate=config.min_pass_rate)
    cases = dataset.cases
    _check_mock_case_ids(config, cases, shown, dataset_shown)
    prompts = _render_prompts(resolve(config.prompt_path), base, cases, dataset_shown)
    contract = config.output_contract
    schema = None
    if contract and contract.schema_path:
        schema_path = resolve(contract.schema_path)
        schema = load_schema(schema_path, shown_path(schema_path))
    invariants = _compile_invariants(contract.invariants if contract else [], shown)
    return Bundle(
        path, shown, config, tuple(cases), prompts, schema, invariants, dataset_shown, dataset.warnings
    )


def _check_mock_case_ids(config: BundleConfig, cases: list[Case], shown: str, dataset_shown: str) -> None:
    """A mock setting naming a case the dataset does not have would be silently ignored: refuse it."""
    provider = config.provider
    known = {case.id for case in cases}
    for key, ids in (
        ("responses", list(provider.responses)),
        ("cycle", list(provider.cycle)),
        ("fail_cases", provider.fail_cases),
    ):
        unknown = [case_id for case_id in ids if case_id not in known]
        if unknown:
            listed = ", ".join(sorted(known)[:10]) + (" …" if len(known) > 10 else "")
            raise BundleError(
                f"{shown}: provider.{key} names case '{unknown[0]}', which {dataset_shown} does not have",
                f"fix the case id (the dataset's ids: {listed})",
            )


def _render_prompts(path: Path, bundle_dir: Path, cases: list[Case], dataset_shown: str) -> dict[str, str]:
    """Render the prompt for every case. ``{% include %}`` and friends look in the bundle's directory first
    (BehaviorCI 0.1.0 loaded templates from there, so ``prompts/header.md`` works from ``prompts/main.md``),
    then in the prompt's own directory; a name with ``..`` is refused by Jinja2's loader."""
    # jinja2 (~25 ms), here and in _prompt_loader: only where a prompt template is read or rendered
    import jinja2

    from routedriver.jinjasandbox import BoundedSandbox, render

    shown = shown_path(path)
    if os.path.isdir(path):  # the likeliest slip: the prompts folder, not a template in it
        raise BundleError(f"prompt {shown} is a directory", "point prompt_path in bundle.yaml at a template")
    if not os.path.exists(path):  # what is there but is no file (a FIFO, a device), userfile names
        raise BundleError(f"prompt {shown} not found", "check prompt_path in bundle.yaml")
    env = BoundedSandbox(  # bounded: a template cannot build text of any size ({{ 'x' * 10**9 }})
        loader=_prompt_loader([str(bundle_dir), str(path.parent)]),
        undefined=jinja2.StrictUndefined,
        autoescape=False,  # prompts are not HTML
    )
    try:
        template = _main_template(env, path, bundle_dir)
    except jinja2.TemplateSyntaxError as exc:
        raise BundleError(
            f"{shown} line {exc.lineno}: template error: {exc.message}", "fix the template"
        ) from None
    except (OSError, UnicodeDecodeError, jinja2.TemplateError) as exc:
        raise BundleError(f"cannot read prompt {shown}: {exc}", "make it a readable UTF-8 file") from None
    prompts: dict[str, str] = {}
    for case in cases:
        try:
            prompts[case.id] = render(template, case.input)  # a mapping: a variable may be called `self`
        except jinja2.UndefinedError as exc:
            raise BundleError(
                f"{shown}: case '{case.id}' ({dataset_shown} line {case.line}): {exc.message}",
                "add the variable to the case's input or fix the template",
            ) from None
        except BundleError:
            raise  # a file it includes cannot be read: that file's own line
        except Exception as exc:  # noqa: BLE001 - a template can raise anything; name the case and go on
            raise BundleError(
                f"{shown}: case '{case.id}' ({dataset_shown} line {case.line}): cannot render: "
                f"{type(exc).__name__}: {exc}",
                "fix the template or the case's input",
            ) from None
    return prompts


def _main_template(env: Any, path: Path, bundle_dir: Path) -> Any:
    try:
        # By its path in the bundle, as 0.1.0 named it (a bare name could find a namesake in bundle_dir).
        return env.get_template(path.relative_to(bundle_dir).as_posix())
    except ValueError:  # a prompt outside the bundle's directory (prompt_path: ../shared/p.md)
        return env.from_string(_read_prompt(path))


def _read_prompt(path: Path) -> str:
    # bom: a byte order mark is not part of the prompt (bundle.yaml and the dataset drop it too).
    return userfile.read_text(path, what="prompt", shown=shown_path(path), error=BundleError, bom=True)


def _prompt_loader(searchpath: list[str]) -> Any:
    """Jinja2's file system loader (the same search, ``..`` refused), reading through ``userfile``."""
    # jinja2 (~25 ms): only a bundle with prompt templates
    import jinja2
    from jinja2.loaders import split_template_path

    class PromptLoader(jinja2.FileSystemLoader):
        def get_source(self, environment: Any, template: str) -> tuple[str, str, Any]:
            for folder in self.searchpath:
                candidate = Path(folder, *split_template_path(template))
                if os.path.exists(candidate):  # a directory or a FIFO too: userfile says what it is
                    return _read_prompt(candidate), str(candidate), lambda: True
            raise jinja2.TemplateNotFound(template)

    return PromptLoader(searchpath)


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
