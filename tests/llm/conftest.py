"""Fixtures for the adapter tests: each provider's fake server with its adapter, a recorded sleep, and
the constants the test modules share (the key the fake servers check, a ``read`` tool)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from routedriver.llm.anthropic_chat import AnthropicChat
from routedriver.llm.openai_chat import OpenAIChat
from routedriver.llm.retry import RetryPolicy
from routedriver.llm.types import ToolSpec
from tests.fakes.llm_servers import AnthropicServer, OpenAIServer

API_KEY = "sk-test-9f8e7d6c5b4a"
READ = ToolSpec(
    "read",
    "Read a file",
    {"type": "object", "properties": {"file_path": {"type": "string"}}, "required": ["file_path"]},
)


class Sleeps(list[float]):
    """A ``sleep`` that records the waits instead of waiting, so retry tests are exact and instant."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@dataclass
class Provider:
    """One provider under test: its running fake server and a factory for adapters pointed at it."""

    kind: str  # "anthropic" or "openai"
    server: AnthropicServer | OpenAIServer
    sleeps: Sleeps
    chat_class: type[AnthropicChat] | type[OpenAIChat]

    def chat(self, **overrides: Any) -> AnthropicChat | OpenAIChat:
        options: dict[str, Any] = {
            "model": "test-model",
            "api_key": API_KEY,
            "base_url": self.server.base_url,
            "retry": RetryPolicy(max_retries=4, base_delay_s=0.5, max_delay_s=20.0, max_retry_after_s=60.0),
            "sleep": self.sleeps,
            "timeout_s": 10.0,
        }
        options.update(overrides)
        return self.chat_class(**options)


@pytest.fixture(params=["anthropic", "openai"])
def provider(request: pytest.FixtureRequest) -> Iterator[Provider]:
    server_class: type[AnthropicServer] | type[OpenAIServer]
    chat_class: type[AnthropicChat] | type[OpenAIChat]
    if request.param == "anthropic":
        server_class, chat_class = AnthropicServer, AnthropicChat
    else:
        server_class, chat_class = OpenAIServer, OpenAIChat
    with server_class(api_key=API_KEY) as server:
        yield Provider(request.param, server, Sleeps(), chat_class)


@pytest.fixture
def anthropic_server() -> Iterator[AnthropicServer]:
    with AnthropicServer(api_key=API_KEY) as server:
        yield server


@pytest.fixture
def openai_server() -> Iterator[OpenAIServer]:
    with OpenAIServer(api_key=API_KEY) as server:
        yield server
