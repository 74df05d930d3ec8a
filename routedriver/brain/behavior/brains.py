"""The classifier's own model, from a ``brain: {provider, model, backend, config}`` block.

``backend`` picks the wire format (``anthropic`` → ``AnthropicChat``; ``openai``/``openai_compat`` →
``OpenAIChat``); when absent it follows the provider. ``config`` may hold ``api_key``, ``base_url``,
``timeout``, ``max_tokens``, ``temperature``, ``context_window``; ``{{secret.NAME}}`` in a value is read
from the environment variable NAME (never written to any cache or log). Without an ``api_key`` the
provider's usual variables are tried.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from routedriver.brain.behavior.errors import BehaviorConfigError
from routedriver.llm.anthropic_chat import AnthropicChat
from routedriver.llm.env import first_env
from routedriver.llm.openai_chat import OpenAIChat
from routedriver.llm.retry import RetryPolicy
from routedriver.llm.types import ChatModel

_SECRET = re.compile(r"\{\{\s*secret\.([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")

# provider -> (backend, default base URL, key variables)
PROVIDERS: dict[str, tuple[str, str | None, tuple[str, ...]]] = {
    "anthropic": ("anthropic", None, ("ANTHROPIC_API_KEY",)),
    "claude": ("anthropic", None, ("ANTHROPIC_API_KEY",)),
    "openai": ("openai_compat", None, ("OPENAI_API_KEY",)),
    "deepseek": ("openai_compat", "https://api.deepseek.com", ("DEEPSEEK_API_KEY",)),
    "qwen": (
        "openai_compat",
        "https://dashscope.aliyuncs.com/compatible-mode/v1",
        ("QWEN_API_KEY", "DASHSCOPE_API_KEY"),
    ),
    "dashscope": (
        "openai_compat",
        "https://dashscope.aliyuncs.com/compatible-mode/v1",
        ("DASHSCOPE_API_KEY",),
    ),
    "openrouter": ("openai_compat", "https://openrouter.ai/api/v1", ("OPENROUTER_API_KEY",)),
    "ollama": ("openai_compat", "http://localhost:11434/v1", ()),
}


def resolve_secrets(value: Any, environ: Mapping[str, str], where: str) -> Any:
    if isinstance(value, str):

        def lookup(match: re.Match[str]) -> str:
            name = match.group(1)
            if not environ.get(name):
                raise BehaviorConfigError(
                    f"{where}: secret {name} is not set",
                    f"export {name} in the environment that runs the agent",
                )
            return environ[name]

        return _SECRET.sub(lookup, value)
    if isinstance(value, dict):
        return {key: resolve_secrets(item, environ, where) for key, item in value.items()}
    return value


def build_brain(
    brain: Mapping[str, Any],
    *,
    where: str = "security.behavior.brain",
    environ: Mapping[str, str] | None = None,
    timeout_s: float = 15.0,
) -> ChatModel:
    """The classifier's model. ``timeout_s`` (the classifier's deadline) bounds the SDK's own timeout too,
    so a call the classifier gave up on does not linger; retries are few for the same reason."""
    env = os.environ if environ is None else environ
    provider = str(brain["provider"]).lower()
    default_backend, default_url, key_vars = PROVIDERS.get(provider, ("openai_compat", None, ()))
    backend = brain.get("backend") or default_backend
    config = resolve_secrets(dict(brain.get("config") or {}), env, where)
    found = first_env(key_vars, env)
    api_key = config.get("api_key") or (found[1] if found else None)
    base_url = config.get("base_url") or default_url
    if provider == "ollama" and not api_key:
        api_key = "ollama"  # Ollama ignores the key, the SDK wants one
    if not api_key:
        names = " or ".join(key_vars) or "config.api_key"
        raise BehaviorConfigError(
            f"{where}: no API key for the classifier brain ({provider})",
            f'set {names}, or config.api_key: "{{{{secret.NAME}}}}"',
        )
    if backend == "openai_compat" and provider not in PROVIDERS and not base_url:
        raise BehaviorConfigError(
            f"{where}: provider {provider!r} needs config.base_url",
            "give the OpenAI-compatible endpoint's URL",
        )

    options: dict[str, Any] = {
        "model": brain["model"],
        "api_key": api_key,
        "base_url": base_url,
        "name": f"behavior-classifier-{provider}",
        "timeout_s": timeout_s,
        "retry": RetryPolicy(max_retries=1, base_delay_s=0.25, max_delay_s=2.0, max_retry_after_s=5.0),
    }
    if config.get("timeout") is not None:
        options["timeout_s"] = float(config["timeout"])
    if config.get("max_tokens") is not None:
        options["default_max_tokens"] = int(config["max_tokens"])
    if config.get("context_window") is not None:
        options["context_window"] = int(config["context_window"])
    if backend == "anthropic":
        return AnthropicChat(**options)
    return OpenAIChat(**options)
