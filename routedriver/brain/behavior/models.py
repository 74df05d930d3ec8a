"""The ``security.behavior`` configuration as pydantic models (all ``extra="forbid"``: a typo fails at load).

Only the loader imports this module (pydantic costs ~65 ms); the engine runs on the plain data the loader
produces, so ``bhrain behave`` pays for validation only when a config file changed.
"""

from __future__ import annotations

import math
import re
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

When = Literal["pre_tool", "post_tool", "on_text"]
Action = Literal["block", "warn", "remind"]
SETTING_WORDS = {"autonomy": ("low", "medium", "high"), "verbosity": ("concise", "normal", "detailed")}


class Strict(BaseModel):
    # allow_inf_nan: a NaN timeout passes every check (each comparison with it is false) and limits nothing.
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


def _name_list(value: Any) -> Any:
    """``"edit"`` / ``"edit, write"`` / ``["edit"]`` → a list of names (anything else is left to pydantic)."""
    if isinstance(value, str):
        return [part.strip() for part in value.split(",") if part.strip()]
    return value


def check_settings(value: Any) -> Any:
    """``rules:`` values: true/false toggles, integer thresholds, and the autonomy/verbosity words."""
    if not isinstance(value, dict):
        return value
    for key, item in value.items():
        words = SETTING_WORDS.get(str(key))
        if words is not None:
            if item not in words:
                raise ValueError(f"{key} must be one of {', '.join(words)}, got {item!r}")
        elif not isinstance(item, (bool, int)):
            raise ValueError(f"{key} must be true, false or an integer, got {item!r}")
    return value


class BehaviorRuleDefinition(Strict):
    id: str = Field(min_length=1)
    description: str = ""
    trigger: list[str] = Field(default_factory=lambda: ["*"])
    when: When = "pre_tool"
    action: Action = "warn"
    condition: dict[str, Any] = Field(default_factory=dict)
    message: str = ""

    normalize_names = field_validator("trigger", mode="before")(_name_list)

    @field_validator("condition", mode="before")
    @classmethod
    def _no_null_condition(cls, value: Any) -> Any:
        return {} if value is None else value

    @model_validator(mode="after")
    def _block_needs_pre_tool(self) -> BehaviorRuleDefinition:
        if self.action == "block" and self.when != "pre_tool":
            raise ValueError(
                f"rule {self.id}: action block needs when: pre_tool (a tool that already ran "
                "cannot be blocked); use warn or remind"
            )
        if not self.trigger:
            raise ValueError(f'rule {self.id}: trigger is empty; name a tool, a list of tools, or "*"')
        return self


class BehaviorCustomRule(Strict):
    """The legacy ``custom:`` form; converted to a rule definition. ``param`` with ``pattern`` or ``contains``
    is shorthand for a ``param_matches`` / ``param_contains`` condition."""

    id: str = Field(min_length=1)
    description: str = ""
    trigger: list[str] = Field(default_factory=lambda: ["*"])
    when: When = "pre_tool"
    action: Action = "warn"
    condition: dict[str, Any] | None = None
    message: str = ""
    param: str | None = None
    pattern: str | None = None
    contains: str | None = None

    normalize_names = field_validator("trigger", mode="before")(_name_list)

    def to_definition(self) -> dict[str, Any]:
        condition = dict(self.condition or {})
        if self.param and self.pattern is not None:
            condition["param_matches"] = {"param": self.param, "pattern": self.pattern}
        if self.param and self.contains is not None:
            condition["param_contains"] = {"param": self.param, "value": self.contains}
        return {
            "id": self.id,
            "description": self.description,
            "trigger": self.trigger,
            "when": self.when,
            "action": self.action,
            "condition": condition,
            "message": self.message,
        }

    @model_validator(mode="after")
    def _shorthand_complete(self) -> BehaviorCustomRule:
        if (self.pattern is not None or self.contains is not None) and not self.param:
            raise ValueError(f"custom rule {self.id}: pattern/contains need param (the parameter to look at)")
        return self


class ResetWhen(Strict):
    tool: list[str]
    param: str = Field(min_length=1)
    matches: str = Field(min_length=1)

    normalize_names = field_validator("tool", mode="before")(_name_list)

    @field_validator("matches")
    @classmethod
    def _valid_regex(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"invalid regex {value!r}: {exc}") from None
        return value


class StateTrackingSetConfig(Strict):
    add_on: list[str] = Field(default_factory=list)
    target: str | None = None  # the parameter whose value is collected (default: file_path/path/url/…)
    aliases: list[str] = Field(default_factory=list)
    label: str | None = None  # how the classifier snapshot names it

    normalize_names = field_validator("add_on", mode="before")(_name_list)


class StateTrackingCounterConfig(Strict):
    increment_on: list[str] = Field(default_factory=list, validate_default=True)
    reset_on: list[str] = Field(default_factory=list)
    reset_when: ResetWhen | None = None
    label: str | None = None

    normalize_names = field_validator("increment_on", "reset_on", mode="before")(_name_list)

    @field_validator("increment_on")
    @classmethod
    def _must_tick(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError(
                "a counter needs increment_on (the tools that add 1): a counter that never ticks is useless"
            )
        return value


class StateTrackingFlagConfig(Strict):
    set_on: list[str] = Field(default_factory=list, validate_default=True)
    unset_on: list[str] = Field(default_factory=list)
    label: str | None = None

    normalize_names = field_validator("set_on", "unset_on", mode="before")(_name_list)

    @field_validator("set_on")
    @classmethod
    def _must_set(cls, value: list[str]) -> list[str]:
        if not value:
            raise ValueError(
                "a flag needs set_on (the tools that turn it on): a flag that is never set is useless"
            )
        return value


class StateTrackingConfig(Strict):
    sets: dict[str, StateTrackingSetConfig] = Field(default_factory=dict)
    counters: dict[str, StateTrackingCounterConfig] = Field(default_factory=dict)
    flags: dict[str, StateTrackingFlagConfig] = Field(default_factory=dict)


class VocabEntry(Strict):
    name: str = Field(min_length=1)
    label: str | None = None
    when: str | None = None
    behavior: str | None = None


def _vocab(value: Any) -> Any:
    if isinstance(value, list):
        return [{"name": item} if isinstance(item, str) else item for item in value]
    return value


def _default_vocab(*entries: tuple[str, str, str]) -> Any:
    return lambda: [
        VocabEntry(name=name, when=when, behavior=behavior or None) for name, when, behavior in entries
    ]


class ClassifierContext(Strict):
    tool_inventory: bool = True
    session_state: bool = True
    workspace_info: bool = True
    recent_history: bool = True
    history_depth: int = Field(default=8, ge=0, le=100)


class ClassifierConfig(Strict):
    frequency: Literal["every_turn", "first_turn", "every_n_turns", "on_new_message"] = "every_turn"
    frequency_n: int = Field(default=3, ge=1)
    skip_followups: bool = True
    timeout: float = Field(default=15.0, gt=0)
    complexity_levels: list[VocabEntry] = Field(
        default_factory=_default_vocab(
            ("trivial", "a one-step answer or change", ""),
            ("simple", "a few obvious steps", ""),
            ("moderate", "several steps or files; some investigation needed", ""),
            (
                "complex",
                "many files, unclear cause, or design decisions",
                "Break the work into verified steps.",
            ),
            (
                "critical",
                "production data, security or irreversible changes",
                "Move slowly, verify every step, and confirm with the user before acting.",
            ),
        )
    )
    approaches: list[VocabEntry] = Field(
        default_factory=_default_vocab(
            ("direct", "the path is clear", "Go straight to the tool calls; keep the text short."),
            (
                "explore_first",
                "the relevant code or data must be found first",
                "Search and read before changing anything.",
            ),
            (
                "plan_and_confirm",
                "risky or ambiguous changes",
                "Write the plan and wait for the user's approval before changing anything.",
            ),
            ("delegate", "large, separable work", "Split the work into independent parts."),
            ("research_first", "facts or APIs the agent is unsure of", "Look things up before answering."),
        )
    )
    risk_levels: list[VocabEntry] = Field(
        default_factory=_default_vocab(
            ("none", "read-only questions", ""),
            ("low", "small reversible changes", ""),
            ("medium", "changes that touch shared code or data", ""),
            ("high", "destructive, irreversible or security-relevant actions", ""),
        )
    )
    max_directives: int = Field(default=5, ge=0)
    context: ClassifierContext = Field(default_factory=ClassifierContext)
    system_prompt: str | None = None
    directive_prefix: str = "[BEHAVIOR DIRECTIVE - {complexity} complexity, {risk} risk]"
    high_risk_warning: str = (
        "Risk level: {risk}. Confirm destructive or irreversible actions with the user before proceeding."
    )
    high_risk_threshold: str = "medium"
    directive_footer: str = "Follow these directives for this turn; they come from the behavior engine."

    normalize_vocabs = field_validator("complexity_levels", "approaches", "risk_levels", mode="before")(
        _vocab
    )

    @field_validator("complexity_levels", "approaches", "risk_levels")
    @classmethod
    def _unique(cls, value: list[VocabEntry]) -> list[VocabEntry]:
        names = [entry.name for entry in value]
        if not names:
            raise ValueError("needs at least one entry")
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"duplicate name {', '.join(duplicates)}")
        return value

    @model_validator(mode="after")
    def _threshold_known(self) -> ClassifierConfig:
        names = [entry.name for entry in self.risk_levels]
        if "high_risk_threshold" in self.model_fields_set and self.high_risk_threshold not in names:
            raise ValueError(
                f"high_risk_threshold {self.high_risk_threshold!r} is not one of the risk_levels "
                f"({', '.join(names)})"
            )
        return self


BRAIN_CONFIG_KEYS = ("api_key", "base_url", "timeout", "max_tokens", "temperature", "context_window")


class AgentBrain(Strict):
    provider: str = Field(min_length=1)
    model: str = Field(min_length=1)
    backend: Literal["openai_compat", "openai", "anthropic"] | None = None
    config: dict[str, Any] = Field(default_factory=dict)

    @field_validator("config")
    @classmethod
    def _known_keys(cls, value: dict[str, Any]) -> dict[str, Any]:
        unknown = sorted(key for key in value if key not in BRAIN_CONFIG_KEYS)
        if unknown:
            raise ValueError(f"unknown key {', '.join(unknown)}; known keys: {', '.join(BRAIN_CONFIG_KEYS)}")
        for key, item in value.items():  # a free-form mapping, so allow_inf_nan does not reach it
            if isinstance(item, float) and not math.isfinite(item):
                raise ValueError(f"{key} must be a finite number, got {item!r}")
        return value


class BehaviorConfig(Strict):
    profile: str | None = None
    rules: dict[str, Any] = Field(default_factory=dict)
    custom: list[BehaviorCustomRule] = Field(default_factory=list)
    rule_definitions: list[BehaviorRuleDefinition] = Field(default_factory=list)
    state_tracking: StateTrackingConfig | None = None
    classify_turns: bool = False
    classifier: ClassifierConfig = Field(default_factory=ClassifierConfig)
    brain: AgentBrain | None = None
    use_agent_brain: bool = True

    check_setting_values = field_validator("rules", mode="after")(check_settings)

    @field_validator("classifier", mode="before")
    @classmethod
    def _null_classifier(cls, value: Any) -> Any:
        return {} if value is None else value


class ProfileFile(Strict):
    """``behavior/<name>.yaml``: a reusable profile."""

    name: str | None = None
    description: str = ""
    extends: str | None = None
    rules: dict[str, Any] = Field(default_factory=dict)
    prompt: str = ""
    custom: list[BehaviorCustomRule] = Field(default_factory=list)
    rule_definitions: list[BehaviorRuleDefinition] = Field(default_factory=list)

    check_setting_values = field_validator("rules", mode="after")(check_settings)
