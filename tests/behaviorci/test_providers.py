"""The openai and anthropic providers: the REAL SDK clients against local fake servers.

Retry waits are checked two ways: end to end through the command (with short Retry-After values), and
through ``make_provider(..., sleep=…)`` where the injected sleep records what the retry policy asked for.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from routedriver.behaviorci.bundle import Bundle, load_bundle
from routedriver.behaviorci.providers import make_provider
from routedriver.behaviorci.providers.base import Generation, ProviderCallError
from tests.behaviorci.helpers import answer, invoke, write_bundle
from tests.fakes.llm_servers import AnthropicServer, OpenAIServer, Recorded, Reply

OK = answer("fine")
KINDS = [("openai", OpenAIServer, "OPENAI"), ("anthropic", AnthropicServer, "ANTHROPIC")]


def _bundle(root: Path, kind: str, **config: Any) -> Path:
    settings = {"name": kind, "model": f"{kind}-test-model", **config.pop("provider", {})}
    return write_bundle(root, {"provider": settings, "retries": 2, **config})


def _env(prefix: str, server: OpenAIServer | AnthropicServer) -> dict[str, str]:
    return {f"{prefix}_API_KEY": "sk-test-key", f"{prefix}_BASE_URL": server.base_url}


def _loaded(root: Path, kind: str, **config: Any) -> Bundle:
    return load_bundle(str(_bundle(root, kind, **config)))


def _generate(
    bundle: Bundle,
    prefix: str,
    server: OpenAIServer | AnthropicServer,
    sleep: Callable[[float], None] = lambda seconds: None,
) -> Generation:
    """The first case's answer from the bundle's provider; ``sleep`` receives every retry wait."""
    chosen = make_provider(bundle.config, environ=_env(prefix, server), sleep=sleep)
    return chosen.generate(bundle.prompts["q1"], bundle.cases[0], 0)


@pytest.mark.parametrize(("provider", "server_class", "prefix"), KINDS)
def test_a_bundle_runs_through_the_real_sdk(
    tmp_path: Path, provider: str, server_class: type, prefix: str
) -> None:
    with server_class(responder=lambda request: Reply.text(OK, input_tokens=11, output_tokens=4)) as server:
        result = invoke(
            ["run", str(_bundle(tmp_path / "b", provider)), "--format", "json", "--no-cache"],
            env=_env(prefix, server),
        )
        assert result.exit_code == 0, result.stderr
        report = json.loads(result.stdout)
        assert report["provider"] == provider and report["model"] == f"{provider}-test-model"
        assert report["usage"] == {"input_tokens": 33, "output_tokens": 12}
        assert all(case["latency_ms"] > 0 for case in report["cases"])
        assert len(server.requests) == 3
        body = server.requests[0].json
        assert body["model"] == f"{provider}-test-model"
        assert body["messages"][0]["role"] == "user" and len(body["messages"]) == 1
        content = body["messages"][0]["content"]
        text = content if isinstance(content, str) else content[0]["text"]
        assert text.startswith("Answer as JSON.\nQuestion: question ")
        if provider == "anthropic":
            assert body["max_tokens"] == 1024
            assert "temperature" not in body  # the Messages API version of the installed SDK has none
            headers = server.requests[0].headers
            assert "sk-test-key" in (
                headers.get("x-api-key"),
                headers.get("authorization", "").removeprefix("Bearer "),
            )
        else:
            assert body["temperature"] == 0.0 and body["max_tokens"] == 4096
            assert server.requests[0].headers["authorization"] == "Bearer sk-test-key"


@pytest.mark.parametrize(("provider", "server_class", "prefix"), KINDS)
def test_base_url_and_key_options_win_over_the_environment(
    tmp_path: Path, provider: str, server_class: type, prefix: str
) -> None:
    with server_class(responder=lambda request: Reply.text(OK)) as server:
        bundle = _bundle(tmp_path / "b", provider)
        env = {
            f"{prefix}_API_KEY": "sk-default-key",
            f"{prefix}_BASE_URL": "http://127.0.0.1:9/nowhere",
            "QWEN_API_KEY": "sk-chosen-key",
        }
        options = ["--base-url", server.base_url, "--api-key-env", "QWEN_API_KEY"]
        result = invoke(["run", str(bundle), "--no-cache", *options], env=env)
        assert result.exit_code == 0, result.stderr
        assert len(server.requests) == 3
        headers = server.requests[0].headers
        sent = headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")
        assert sent == "sk-chosen-key"


@pytest.mark.parametrize(("provider", "server_class", "prefix"), KINDS)
def test_429_with_retry_after_is_waited_for_then_succeeds(
    tmp_path: Path, provider: str, server_class: type, prefix: str
) -> None:
    bundle = _loaded(tmp_path / "b", provider)
    slept: list[float] = []
    with server_class() as server:
        server.enqueue(Reply.error(429, retry_after="3"), Reply.text(OK))
        generation = _generate(bundle, prefix, server, slept.append)
    assert generation.text == OK and generation.attempts == 2
    assert slept == [3.0]  # exactly what the server asked for
    assert len(server.requests) == 2


def test_retry_after_is_honoured_end_to_end(tmp_path: Path) -> None:
    with OpenAIServer(responder=lambda request: Reply.text(OK)) as server:
        server.enqueue(Reply.error(429, retry_after="0.4"))
        bundle = _bundle(tmp_path / "b", "openai", concurrency=1)
        started = time.monotonic()
        result = invoke(["run", str(bundle), "--no-cache"], env=_env("OPENAI", server))
        elapsed = time.monotonic() - started
    assert result.exit_code == 0, result.stderr
    assert elapsed >= 0.4  # the wait really happened
    assert "HTTP 429" in result.stderr and "retrying in 0.4 s (retry 1)" in result.stderr
    assert len(server.requests) == 4


@pytest.mark.parametrize(("provider", "server_class", "prefix"), KINDS)
def test_500s_are_retried_with_backoff(
    tmp_path: Path, provider: str, server_class: type, prefix: str
) -> None:
    bundle = _loaded(tmp_path / "b", provider)
    slept: list[float] = []
    with server_class() as server:
        server.enqueue(Reply.error(500), Reply.error(503), Reply.text(OK))
        generation = _generate(bundle, prefix, server, slept.append)
    assert generation.attempts == 3 and len(server.requests) == 3
    assert len(slept) == 2 and 0 <= slept[0] <= 0.5 and 0 <= slept[1] <= 1.0  # full jitter under the cap


@pytest.mark.parametrize(("provider", "server_class", "prefix"), KINDS)
def test_retries_run_out(tmp_path: Path, provider: str, server_class: type, prefix: str) -> None:
    bundle = _loaded(tmp_path / "b", provider, retries=1)
    with server_class() as server:
        server.enqueue(
            Reply.error(500, message="the upstream is down"), Reply.error(500, message="still down")
        )
        with pytest.raises(ProviderCallError) as caught:
            _generate(bundle, prefix, server)
    assert len(server.requests) == 2
    assert caught.value.attempts == 2 and not caught.value.auth
    assert "HTTP 500" in caught.value.message and "still down" in caught.value.message
    assert "sk-test-key" not in caught.value.message


@pytest.mark.parametrize(("provider", "server_class", "prefix"), KINDS)
def test_retry_after_above_the_cap_fails_without_waiting(
    tmp_path: Path, provider: str, server_class: type, prefix: str
) -> None:
    bundle = _loaded(tmp_path / "b", provider)
    slept: list[float] = []
    with server_class() as server:
        server.enqueue(Reply.error(429, retry_after="3600"))
        with pytest.raises(ProviderCallError) as caught:
            _generate(bundle, prefix, server, slept.append)
    assert slept == [] and len(server.requests) == 1
    assert "429" in caught.value.message and "3600" in caught.value.message


@pytest.mark.parametrize("status", [400, 404, 422])
def test_client_errors_are_not_retried(tmp_path: Path, status: int) -> None:
    bundle = _loaded(tmp_path / "b", "openai")
    with OpenAIServer() as server:
        server.enqueue(Reply.error(status))
        with pytest.raises(ProviderCallError) as caught:
            _generate(bundle, "OPENAI", server)
    assert len(server.requests) == 1
    assert f"HTTP {status}" in caught.value.message


def test_a_failing_case_errors_while_the_others_pass(tmp_path: Path) -> None:
    def respond(request: Recorded) -> Reply:
        prompt = request.json["messages"][0]["content"]
        return Reply.error(500, retry_after="0") if "question 2?" in prompt else Reply.text(OK)

    with OpenAIServer(responder=respond) as server:
        bundle = _bundle(tmp_path / "b", "openai", retries=1)
        result = invoke(["run", str(bundle), "--no-cache", "--format", "json"], env=_env("OPENAI", server))
    assert result.exit_code == 1
    report = json.loads(result.stdout)
    errors = {case["id"]: case["error"] for case in report["cases"]}
    assert errors["q1"] is None and errors["q3"] is None
    assert "HTTP 500" in errors["q2"] and "after 2 attempts" in errors["q2"]
    assert report["thresholds"]["metrics"]["error_rate"] == pytest.approx(1 / 3)
    assert len(server.requests) == 4


def test_timeouts_are_retried_then_reported(tmp_path: Path) -> None:
    bundle = _loaded(tmp_path / "b", "openai", timeout=0.3, retries=1)
    with OpenAIServer() as server:
        server.enqueue(Reply.text(OK, delay_s=5), Reply.text(OK, delay_s=5))
        with pytest.raises(ProviderCallError) as caught:
            _generate(bundle, "OPENAI", server)
    assert caught.value.attempts == 2
    assert "timed out after 0.3 s" in caught.value.message


def test_anthropic_overloaded_529_is_retried(tmp_path: Path) -> None:
    bundle = _loaded(tmp_path / "b", "anthropic")
    with AnthropicServer() as server:
        server.enqueue(Reply.error(529), Reply.text(OK))
        assert _generate(bundle, "ANTHROPIC", server).attempts == 2


def test_switching_provider_on_the_command_line(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path / "b", "openai")
    with AnthropicServer(responder=lambda request: Reply.text(OK)) as server:
        result = invoke(
            ["run", str(bundle), "--provider", "anthropic", "--format", "json", "--no-cache"],
            env=_env("ANTHROPIC", server),
        )
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    # The bundle's model belongs to its provider; the new provider uses its own default.
    assert report["provider"] == "anthropic" and report["model"] == "claude-haiku-4-5"
    assert {r.json["model"] for r in server.requests} == {"claude-haiku-4-5"}
