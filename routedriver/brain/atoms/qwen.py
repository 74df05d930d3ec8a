"""The ``qwen`` atom: any OpenAI-compatible Chat Completions endpoint through ``OpenAIChat``.

Endpoint: ``--base-url`` > ``QWEN_BASE_URL`` > ``OPENAI_BASE_URL`` > DashScope's international
compatible-mode URL (mainland China accounts: ``https://dashscope.aliyuncs.com/compatible-mode/v1``).
Key: ``QWEN_API_KEY`` > ``DASHSCOPE_API_KEY`` > ``OPENAI_API_KEY``. Works as well with vLLM, Ollama,
OpenRouter or OpenAI itself (pass ``--model``).
"""

from __future__ import annotations

from typing import Any

from routedriver.brain.atoms import OFFLINE, AtomOptions, adapter_options
from routedriver.errors import Refused
from routedriver.llm.env import first_env
from routedriver.llm.openai_chat import OpenAIChat

DEFAULT_MODEL = "qwen-plus"
DASHSCOPE_URL = "https://dashscope-intl.aliyuncs.com/compatible-mode/v1"
KEY_VARS = ("QWEN_API_KEY", "DASHSCOPE_API_KEY", "OPENAI_API_KEY")
BASE_URL_VARS = ("QWEN_BASE_URL", "OPENAI_BASE_URL")
# Context windows of DashScope's models (tokens), matched by prefix, longest first; others get the default.
CONTEXT_WINDOWS = {
    "qwen-max": 32_768,
    "qwen-plus": 131_072,
    "qwen-turbo": 1_000_000,
    "qwen-long": 10_000_000,
    "qwen3-coder": 1_000_000,
    "qwen3": 131_072,
    "qwen2.5": 131_072,
}
DEFAULT_CONTEXT_WINDOW = 131_072


def context_window_for(model: str) -> int:
    for prefix in sorted(CONTEXT_WINDOWS, key=len, reverse=True):
        if model.startswith(prefix):
            return CONTEXT_WINDOWS[prefix]
    return DEFAULT_CONTEXT_WINDOW


def create(options: AtomOptions) -> Any:
    key = first_env(KEY_VARS, options.environ)
    if key is None:
        raise Refused(
            "none of QWEN_API_KEY, DASHSCOPE_API_KEY, OPENAI_API_KEY is set",
            f"export QWEN_API_KEY=…, or {OFFLINE}",
        )
    found_url = first_env(BASE_URL_VARS, options.environ)
    base_url = options.base_url or (found_url[1] if found_url else DASHSCOPE_URL)
    model = options.model or DEFAULT_MODEL
    extra = adapter_options(options)
    if "dashscope" in base_url:
        # DashScope's Qwen3 models think by default, which non-streaming calls must switch off.
        extra["extra_body"] = {"enable_thinking": False}
    return OpenAIChat(
        model=model,
        api_key=key[1],
        base_url=base_url,
        name="qwen",
        context_window=options.context_window or context_window_for(model),
        key_env=key[0],
        **extra,
    )
