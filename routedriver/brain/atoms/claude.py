"""The ``claude`` atom: Anthropic's Messages API through ``routedriver.llm.anthropic_chat.AnthropicChat``.

Key: ``ANTHROPIC_API_KEY``. Endpoint: ``--base-url`` > ``ANTHROPIC_BASE_URL`` > Anthropic's default.
"""

from __future__ import annotations

from typing import Any

from routedriver.brain.atoms import OFFLINE, AtomOptions, adapter_options
from routedriver.errors import Refused
from routedriver.llm.anthropic_chat import AnthropicChat
from routedriver.llm.env import first_env

DEFAULT_MODEL = "claude-sonnet-5-5"  # the newest Sonnet the installed anthropic SDK lists
DEFAULT_CONTEXT_WINDOW = 200_000
KEY_VARS = ("ANTHROPIC_API_KEY",)
BASE_URL_VARS = ("ANTHROPIC_BASE_URL",)


def create(options: AtomOptions) -> Any:
    key = first_env(KEY_VARS, options.environ)
    if key is None:
        raise Refused("ANTHROPIC_API_KEY is not set", f"export it, or {OFFLINE}")
    found_url = first_env(BASE_URL_VARS, options.environ)
    return AnthropicChat(
        model=options.model or DEFAULT_MODEL,
        api_key=key[1],
        base_url=options.base_url or (found_url[1] if found_url else None),
        name="claude",
        context_window=options.context_window or DEFAULT_CONTEXT_WINDOW,
        key_env=key[0],
        **adapter_options(options),
    )
