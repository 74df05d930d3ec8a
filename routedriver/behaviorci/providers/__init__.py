"""Providers: ``openai`` and ``anthropic`` (the official SDKs through routedriver.llm) and ``mock``."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping

from routedriver.behaviorci.errors import ProviderConfigError
from routedriver.behaviorci.models import PROVIDERS, BundleConfig, ProviderConfig
from routedriver.behaviorci.providers.base import Provider, RetryNotice
from routedriver.behaviorci.providers.chat import ChatProvider
from routedriver.behaviorci.providers.mock import MockProvider


def make_provider(
    config: BundleConfig,
    *,
    name: str | None = None,
    model: str | None = None,
    environ: Mapping[str, str] | None = None,
    on_retry: RetryNotice | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> Provider:
    """The provider the bundle asks for, or ``name``/``model`` from ``--provider``/``--model``.

    Switching to another provider keeps temperature and max_tokens but not the bundle's model, base_url or
    key variable (those belong to the bundle's provider), nor the mock settings unless the result is mock.
    """
    bundle_provider = config.provider
    chosen = (name or bundle_provider.name).lower()
    if chosen not in PROVIDERS:
        raise ProviderConfigError(f"unknown provider '{name}'", f"use one of: {', '.join(PROVIDERS)}")
    same = chosen == bundle_provider.name
    effective_model = model or (bundle_provider.model if same else None)
    if chosen == "mock":
        mock_config = bundle_provider if same else ProviderConfig(name="mock")
        return MockProvider(
            mock_config,
            model=effective_model,
            retries=config.retries,
            timeout_s=config.timeout,
            on_retry=on_retry,
            sleep=sleep,
        )

    return ChatProvider(
        chosen,
        model=effective_model,
        temperature=bundle_provider.temperature,
        max_tokens=bundle_provider.max_tokens,
        base_url=bundle_provider.base_url if same else None,
        api_key_env=bundle_provider.api_key_env if same else None,
        timeout_s=config.timeout,
        retries=config.retries,
        environ=os.environ if environ is None else environ,
        on_retry=on_retry,
        sleep=sleep,
    )
