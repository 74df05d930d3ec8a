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
    base_url: str | None = None,
    api_key_env: str | None = None,
    environ: Mapping[str, str] | None = None,
    on_retry: RetryNotice | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> Provider:
    """The provider the bundle asks for, or ``name``/``model`` from ``--provider``/``--model``; ``base_url``
    and ``api_key_env`` come from ``--base-url``/``--api-key-env`` only (a bundle cannot set them).

    Switching to another provider keeps temperature and max_tokens but not the bundle's model (it belongs
    to the bundle's provider), nor the mock settings unless the result is mock.
    """
    bundle_provider = config.provider
    chosen = (name or bundle_provider.name).lower()
    if chosen not in PROVIDERS:
        raise ProviderConfigError(f"unknown provider '{name}'", f"use one of: {', '.join(PROVIDERS)}")
    same = chosen == bundle_provider.name
    effective_model = model or (bundle_provider.model if same else None)
    if chosen == "mock":
        if base_url is not None or api_key_env is not None:
            raise ProviderConfigError(
                "--base-url and --api-key-env are not used by the mock provider",
                "drop them, or pass --provider openai or --provider anthropic",
            )
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
        base_url=base_url,
        api_key_env=api_key_env,
        timeout_s=config.timeout,
        retries=config.retries,
        environ=os.environ if environ is None else environ,
        on_retry=on_retry,
        sleep=sleep,
    )
