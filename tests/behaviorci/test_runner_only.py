"""A bundle does not choose where the provider key goes, nor where answers are cached: the runner does.

The attack (red team, gate 5): a route's guard listed the bundle among the stone's artifacts, so the robot
wrote it with ``provider.base_url`` at a server of its own and ``provider.api_key_env`` naming the key CI's
recheck holds. CI re-ran the judge, and behaviorci sent ``Authorization: Bearer <the CI secret>`` to the
robot's server and judged the answer that server gave. Here the installed ``behaviorci`` runs against real
local OpenAI-wire servers (the real SDK client); the bundle is refused before a single request is sent.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.behaviorci.helpers import answer, write_bundle
from tests.conftest import run_cli
from tests.fakes.llm_servers import OpenAIServer, Reply

SECRET = "sk-CI-REVIEWER-SECRET"

# (label, the bundle's attacking settings given the robot's server URL, the key path named, the option named)
RUNNER_ONLY: list[tuple[str, Callable[[str], dict[str, Any]], str, str]] = [
    (
        "base_url and api_key_env (the finding)",
        lambda robot: {"provider": {"name": "openai", "base_url": robot, "api_key_env": "CI_REVIEWER_KEY"}},
        "provider.base_url",
        "--base-url URL",
    ),
    (
        "base_url: the runner's own key to the robot's server",
        lambda robot: {"provider": {"name": "openai", "base_url": robot}},
        "provider.base_url",
        "--base-url URL",
    ),
    (
        "api_key_env: another secret as the key",
        lambda robot: {"provider": {"name": "anthropic", "api_key_env": "CI_REVIEWER_KEY"}},
        "provider.api_key_env",
        "--api-key-env VAR",
    ),
    (
        "cache.dir outside the bundle: planted answers, writes elsewhere",
        lambda robot: {"provider": {"name": "openai"}, "cache": {"dir": "../planted"}},
        "cache.dir",
        "--cache-dir DIR",
    ),
    (
        "cache.dir inside the bundle",
        lambda robot: {"provider": {"name": "openai"}, "cache": {"enabled": True, "dir": ".cache"}},
        "cache.dir",
        "--cache-dir DIR",
    ),
]


@pytest.mark.parametrize(("label", "settings", "key", "option"), RUNNER_ONLY, ids=[r[0] for r in RUNNER_ONLY])
def test_a_bundle_naming_where_the_key_goes_is_refused_before_any_request(
    tmp_path: Path, label: str, settings: Callable[[str], dict[str, Any]], key: str, option: str
) -> None:
    def reply(request: Any) -> Reply:
        return Reply.text(answer("anything"))

    with OpenAIServer(responder=reply) as robot, OpenAIServer(responder=reply) as runner:
        write_bundle(tmp_path / "route" / "behavior", settings(robot.base_url), schema=None)
        env = {
            "OPENAI_API_KEY": SECRET,
            "ANTHROPIC_API_KEY": SECRET,
            "CI_REVIEWER_KEY": SECRET,
            "OPENAI_BASE_URL": runner.base_url,  # where the runner sends its calls
            "ANTHROPIC_BASE_URL": runner.base_url,
            "XDG_CACHE_HOME": str(tmp_path / "ci-cache"),
        }
        ran = run_cli(["behaviorci", "run", "route/behavior/bundle.yaml"], tmp_path, env=env)
        assert ran.code == 2, (label, ran.out, ran.err)
        assert ran.err == (
            f"error: route/behavior/bundle.yaml sets {key}: a bundle does not choose {_chooses(key)}; "
            f"remove it and pass {option} to behaviorci run instead\n"
        )
        assert ran.out == ""
        assert robot.requests == [] and runner.requests == []  # nothing sent, to anyone
        # validate says the same, so the bundle's author hears it without running anything
        ran = run_cli(["behaviorci", "validate", "route/behavior"], tmp_path, env=env)
        assert ran.code == 2 and f"sets {key}:" in ran.err
    assert not (tmp_path / "route" / "planted").exists()
    assert not (tmp_path / "route" / "behavior" / ".cache").exists()


def _chooses(key: str) -> str:
    from routedriver.behaviorci.bundle import RUNNER_ONLY as TABLE

    return next(chooses for path, chooses, _ in TABLE if ".".join(path) == key)


def test_the_runner_chooses_the_endpoint_the_key_and_the_cache(tmp_path: Path) -> None:
    with OpenAIServer(responder=lambda request: Reply.text(answer("fine"))) as server:
        write_bundle(tmp_path / "b", {"provider": {"name": "openai", "model": "m"}})
        env = {
            "OPENAI_API_KEY": "sk-default",
            "QWEN_API_KEY": "sk-chosen",
            "OPENAI_BASE_URL": "http://127.0.0.1:9",
        }
        options = ["--base-url", server.base_url, "--api-key-env", "QWEN_API_KEY", "--cache-dir", "answers"]
        ran = run_cli(["behaviorci", "run", "b", *options], tmp_path, env=env)
        assert ran.code == 0, ran.err
        assert "passed: true" in ran.out
        assert [r.headers["authorization"] for r in server.requests] == ["Bearer sk-chosen"] * 3
        assert len(list((tmp_path / "answers").rglob("*.json"))) == 3
        ran = run_cli(["behaviorci", "run", "b", *options], tmp_path, env=env)  # answered from that cache
        assert ran.code == 0 and len(server.requests) == 3


def test_base_url_and_key_options_are_refused_with_the_mock_provider(tmp_path: Path) -> None:
    write_bundle(tmp_path / "b")
    for option in (["--base-url", "http://127.0.0.1:9/v1"], ["--api-key-env", "X"]):
        ran = run_cli(["behaviorci", "run", "b", *option], tmp_path)
        assert ran.code == 2 and ran.out == ""
        assert ran.err == (
            "error: --base-url and --api-key-env are not used by the mock provider; "
            "drop them, or pass --provider openai or --provider anthropic\n"
        )
