"""The behavior engine: declarative rules over every tool call, per-session state, a turn classifier.

Two ways in:
- bhrain: ``load_behavior_hook(block, config_path=..., agent_model=...)`` turns a config file's
  ``security.behavior`` block into a ``LoopHook`` (``bhrain run --config FILE``).
- any robot with Claude Code hooks: ``bhrain behave --config FILE`` (``routedriver.cli.bhrain_behave``).

This package's ``__init__`` stays import-light: the hook hot path imports ``engine`` without pydantic/yaml.
See docs/behavior.md.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from routedriver.brain.behavior.engine import BehaviorEngine

if TYPE_CHECKING:
    from routedriver.brain.behavior.hook import BehaviorHook
    from routedriver.llm.types import ChatModel

__all__ = ["load_behavior_hook"]


def load_behavior_hook(
    block: Mapping[str, Any], *, config_path: Path, agent_model: ChatModel | None, workdir: Path | None = None
) -> BehaviorHook:
    """Validate ``block`` (raises ``BehaviorConfigError``, exit 2, naming the file and key path) and return
    the hook for one bhrain session. ``agent_model`` classifies turns unless ``brain`` names another model
    or ``use_agent_brain`` is false. ``workdir`` (default: the current directory) is where relative file
    paths in tool calls are resolved, as the loop's tools do."""
    # bhrain behave imports this package before every tool call: the hook, the model adapters, the
    # classifier and the config resolver with pydantic (~90 ms), here and in make_classifier, load only for
    # a bhrain run
    from routedriver.brain.behavior.brains import build_brain
    from routedriver.brain.behavior.hook import BehaviorHook
    from routedriver.brain.behavior.resolve import resolve_behavior
    from routedriver.brain.behavior.sources import BUILTIN_PROFILES, BUILTIN_RULES

    resolved, sources = resolve_behavior(block, config_path=Path(config_path))
    engine = BehaviorEngine(resolved, cwd=str(workdir) if workdir is not None else None)
    classifier = None
    if resolved["classify_turns"]:
        brain = resolved["brain"]
        if brain is not None:
            model: Any = build_brain(
                brain,
                where=f"{config_path}: security.behavior.brain",
                timeout_s=float(resolved["classifier"]["timeout"]),
            )
        elif resolved["use_agent_brain"] and agent_model is not None:
            model = agent_model
        else:
            model = None
            logging.getLogger("routedriver.brain.behavior").warning(
                "behavior: classify_turns is on but there is no classifier model (no brain, and %s); "
                "turns are not classified",
                "use_agent_brain is false" if not resolved["use_agent_brain"] else "no agent model",
            )
        if model is not None:
            classifier = make_classifier(resolved, model)
    builtin = {str(BUILTIN_RULES), str(BUILTIN_PROFILES)}  # package data, like bhrain's code: not settings
    return BehaviorHook(engine, classifier=classifier, sources=[s for s in sources if s not in builtin])


def make_classifier(resolved: Mapping[str, Any], model: Any) -> Any:
    """A ``Classifier`` for a resolved config; ``brain.config`` may set its max_tokens and temperature."""
    # the turn classifier brings the LLM adapters: only a profile that classifies
    from routedriver.brain.behavior.classifier import Classifier

    brain_config = (resolved.get("brain") or {}).get("config") or {}
    return Classifier(
        resolved["classifier"],
        model,
        profile=resolved["profile"],
        max_tokens=int(brain_config.get("max_tokens", 800)),
        temperature=float(brain_config.get("temperature", 0.0)),
    )
