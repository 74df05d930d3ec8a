"""The bundle.yaml schema: BehaviorCI 0.1.0's fields plus ours, every model closed to unknown keys.

0.1.0 fields: name, version, description, prompt_path, dataset_path, output_contract {schema_path,
invariants}, thresholds [{metric, operator, value}], provider {name, model, temperature, max_tokens},
parallel, timeout, retries. Ours: concurrency, repeat, min_pass_rate, cache and the mock provider's
settings (see ``MOCK_KEYS``). Where the key goes and where answers are cached are not here: they are the
runner's (``--base-url``, ``--api-key-env``, ``--cache-dir``), see ``bundle.RUNNER_ONLY``.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from routedriver.behaviorci.thresholds import METRICS

PROVIDERS = ("openai", "anthropic", "mock")
DEFAULT_CONCURRENCY = 8
MOCK_KEYS = (
    "echo",
    "default_response",
    "responses",
    "cycle",
    "fail_cases",
    "failure_rate",
    "failure_status",
    "fail_attempts",
    "failure_seed",
    "latency_ms",
)


class _Closed(BaseModel):
    # strict: a value of the wrong type is refused, not converted (`value: true` read as 1, `timeout: "30"`,
    # `concurrency: true`); a whole number still works where a float is meant. allow_inf_nan: NaN passes
    # every check (each comparison with it is false).
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True, allow_inf_nan=False)


class ThresholdConfig(_Closed):
    metric: str
    operator: Literal[">=", ">", "<=", "<", "=="] = ">="
    value: float = Field(ge=0, allow_inf_nan=False)  # .inf would make the JSON report invalid JSON

    @field_validator("metric")
    @classmethod
    def _known_metric(cls, metric: str) -> str:
        if metric not in METRICS:
            raise ValueError(f"unknown metric '{metric}' (known: {', '.join(METRICS)})")
        return metric


def _usable_path(path: str | None) -> str | None:
    if path is not None and "\0" in path:
        raise ValueError("a path cannot contain a NUL character; remove it")
    return path


class OutputContract(_Closed):
    schema_path: str | None = None
    invariants: list[str] = Field(default_factory=list)

    _schema_path_usable = field_validator("schema_path")(_usable_path)


class ProviderConfig(_Closed):
    name: str = "openai"  # 0.1.0's default
    model: str | None = None
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_tokens: int | None = Field(default=None, gt=0)
    # The mock provider (name: mock). Outputs are strings; any other JSON value is sent as its JSON text.
    echo: bool = False  # answer with the rendered prompt itself (the contract then checks the prompt)
    default_response: Any = None  # when no other rule gives an output
    responses: dict[str, Any] = Field(default_factory=dict)  # case id → output
    cycle: dict[str, list[Any]] = Field(default_factory=dict)  # case id → outputs, one per repeat, cycled
    fail_cases: list[str] = Field(default_factory=list)  # these case ids always error
    failure_rate: float = Field(default=0.0, ge=0.0, le=1.0)  # this share of calls error (deterministic)
    failure_status: int | Literal["timeout"] = 500  # what the injected error looks like
    fail_attempts: int | None = Field(default=None, ge=1)  # only the first N attempts of a failing call
    failure_seed: int = 0  # picks which calls failure_rate hits
    latency_ms: float = Field(default=0.0, ge=0.0, le=60_000.0)  # simulated (really waited) latency

    @field_validator("name")
    @classmethod
    def _known_provider(cls, name: str) -> str:
        if name.lower() not in PROVIDERS:
            raise ValueError(f"unknown provider '{name}' (known: {', '.join(PROVIDERS)})")
        return name.lower()

    @field_validator("responses", "cycle", mode="before")
    @classmethod
    def _keys_are_case_ids(cls, mapping: Any) -> Any:
        # Case ids may be integers in the dataset (`"id": 1` is case "1"), so `responses: {1: …}` means it.
        if isinstance(mapping, dict):
            return {_case_id(key): value for key, value in mapping.items()}
        return mapping

    @field_validator("fail_cases", mode="before")
    @classmethod
    def _items_are_case_ids(cls, ids: Any) -> Any:
        return [_case_id(item) for item in ids] if isinstance(ids, list) else ids

    @field_validator("failure_status")
    @classmethod
    def _error_status(cls, status: int | str) -> int | str:
        if isinstance(status, int) and not 400 <= status <= 599:
            raise ValueError("failure_status must be an HTTP error status (400-599) or 'timeout'")
        return status

    @model_validator(mode="after")
    def _mock_keys_only_for_mock(self) -> ProviderConfig:
        if self.name != "mock":
            stray = [key for key in MOCK_KEYS if key in self.model_fields_set]
            if stray:
                raise ValueError(
                    f"'{stray[0]}' is a mock provider setting but the provider is '{self.name}'; "
                    "remove it, or set provider.name: mock"
                )
        return self


def _case_id(value: Any) -> Any:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


class CacheConfig(_Closed):
    enabled: bool = True  # where: --cache-dir, else $XDG_CACHE_HOME/routedriver/behaviorci


class BundleConfig(_Closed):
    name: str = Field(min_length=1)
    version: str = "1.0"
    description: str | None = None
    prompt_path: str
    dataset_path: str
    output_contract: OutputContract | None = None
    thresholds: list[ThresholdConfig] = Field(default_factory=list)
    provider: ProviderConfig = Field(default_factory=ProviderConfig)
    parallel: bool | None = None  # 0.1.0: false = one case at a time; true = concurrently (bounded)
    concurrency: int | None = Field(default=None, ge=1, le=256)
    timeout: float = Field(default=30.0, gt=0, allow_inf_nan=False)  # seconds per provider call attempt
    retries: int = Field(default=2, ge=0, le=10)  # retries of 429/5xx/timeouts after the first attempt
    repeat: int = Field(default=1, ge=1, le=100)
    min_pass_rate: float = Field(default=1.0, ge=0.0, le=1.0)  # a case's default share of passing repeats
    cache: CacheConfig = Field(default_factory=CacheConfig)  # `cache: false` is short for {enabled: false}

    @field_validator("version", mode="before")
    @classmethod
    def _version_text(cls, version: Any) -> Any:
        # `version: 1.0` in YAML is a float; 0.1.0 documents it as a string. Accept both.
        return (
            str(version) if isinstance(version, (int, float)) and not isinstance(version, bool) else version
        )

    @field_validator("cache", mode="before")
    @classmethod
    def _cache_shorthand(cls, cache: Any) -> Any:
        return {"enabled": cache} if isinstance(cache, bool) else cache

    @field_validator("prompt_path", "dataset_path")
    @classmethod
    def _path_not_empty(cls, path: str) -> str:
        if not path.strip():
            raise ValueError("must not be empty")
        _usable_path(path)
        return path

    @model_validator(mode="after")
    def _parallel_agrees(self) -> BundleConfig:
        if self.parallel is False and self.concurrency not in (None, 1):
            raise ValueError(f"parallel: false contradicts concurrency: {self.concurrency}; drop one of them")
        return self

    @property
    def effective_concurrency(self) -> int:
        if self.parallel is False:
            return 1
        return self.concurrency or DEFAULT_CONCURRENCY
