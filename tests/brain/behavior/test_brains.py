"""A classifier with its own ``brain``: the REAL SDK clients (through routedriver's adapters) against the
local fake provider servers; secrets from the environment."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from routedriver.brain.behavior import load_behavior_hook
from routedriver.brain.behavior.brains import build_brain, resolve_secrets
from routedriver.brain.behavior.errors import BehaviorConfigError
from tests.brain.behavior.helpers import ScriptedChat
from tests.fakes.llm_servers import AnthropicServer, OpenAIServer, Reply

VERDICT = json.dumps(
    {
        "complexity": "simple",
        "approach": "direct",
        "risk": "none",
        "directives": ["Answer from the code you already read."],
    }
)


def test_secrets_come_from_the_environment() -> None:
    config = {"api_key": "{{secret.MY_KEY}}", "base_url": "http://h/{{ secret.PATH_PART }}/v1"}
    assert resolve_secrets(config, {"MY_KEY": "k-1", "PATH_PART": "p"}, "where") == {
        "api_key": "k-1",
        "base_url": "http://h/p/v1",
    }
    with pytest.raises(BehaviorConfigError) as caught:
        resolve_secrets(config, {"PATH_PART": "p"}, "config.yaml: security.behavior.brain")
    assert caught.value.line() == (
        "error: config.yaml: security.behavior.brain: secret MY_KEY is not set; "
        "export MY_KEY in the environment that runs the agent"
    )


def test_a_missing_secret_fails_at_load_not_mid_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    block = {
        "classify_turns": True,
        "brain": {
            "provider": "deepseek",
            "model": "deepseek-chat",
            "config": {"api_key": "{{secret.DEEPSEEK_API_KEY}}"},
        },
    }
    with pytest.raises(BehaviorConfigError) as caught:
        load_behavior_hook(block, config_path=tmp_path / "config.yaml", agent_model=None)
    assert "secret DEEPSEEK_API_KEY is not set" in caught.value.line()


def test_no_key_at_all_names_the_variables() -> None:
    with pytest.raises(BehaviorConfigError) as caught:
        build_brain({"provider": "qwen", "model": "qwen-turbo"}, environ={})
    assert "set QWEN_API_KEY or DASHSCOPE_API_KEY" in caught.value.line()


def test_an_unknown_provider_needs_a_base_url() -> None:
    with pytest.raises(BehaviorConfigError) as caught:
        build_brain({"provider": "mystery", "model": "m", "config": {"api_key": "k"}}, environ={})
    assert "provider 'mystery' needs config.base_url" in caught.value.line()


def test_openai_compatible_brain_classifies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-deepseek-test")
    agent = ScriptedChat()  # must NOT be used: the brain block names another model
    with OpenAIServer() as server:
        server.enqueue(Reply.text(VERDICT))
        block = {
            "classify_turns": True,
            "brain": {
                "provider": "deepseek",
                "model": "deepseek-chat",
                "backend": "openai_compat",
                "config": {"api_key": "{{secret.DEEPSEEK_API_KEY}}", "base_url": server.base_url},
            },
        }
        hook = load_behavior_hook(block, config_path=tmp_path / "config.yaml", agent_model=agent)
        (directive,) = hook.on_user_message("What does the parser return on empty input?")
    assert directive.startswith("[BEHAVIOR DIRECTIVE - simple complexity, none risk]")
    assert "- Answer from the code you already read." in directive
    assert agent.calls == []
    (request,) = server.requests
    assert request.headers["authorization"] == "Bearer sk-deepseek-test"
    assert request.json["model"] == "deepseek-chat"
    assert request.json["messages"][0]["role"] == "system"
    assert "What does the parser return on empty input?" in request.json["messages"][-1]["content"]


def test_anthropic_brain_classifies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    with AnthropicServer() as server:
        server.enqueue(Reply.text("```json\n" + VERDICT + "\n```"))
        block = {
            "classify_turns": True,
            "brain": {
                "provider": "anthropic",
                "model": "claude-haiku-test",
                "config": {"base_url": server.base_url, "max_tokens": 300},
            },
        }
        hook = load_behavior_hook(block, config_path=tmp_path / "config.yaml", agent_model=None)
        (directive,) = hook.on_user_message("Explain the retry policy")
    assert "Answer from the code you already read." in directive
    (request,) = server.requests
    # this SDK version sends the key as a bearer token; older ones used x-api-key
    assert "sk-ant-test" in (request.headers.get("x-api-key") or request.headers.get("authorization", ""))
    assert request.json["model"] == "claude-haiku-test" and request.json["max_tokens"] == 300
    assert "complexity (pick one):" in str(request.json["system"])


def test_a_provider_error_gives_no_directive(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-test")
    with OpenAIServer() as server:
        server.enqueue(Reply.error(401, message="bad key"))
        block = {
            "classify_turns": True,
            "brain": {"provider": "openai", "model": "gpt-test", "config": {"base_url": server.base_url}},
        }
        hook = load_behavior_hook(block, config_path=tmp_path / "config.yaml", agent_model=None)
        assert hook.on_user_message("Fix the bug") == ()
    assert len(server.requests) == 1  # 401 is not retried
