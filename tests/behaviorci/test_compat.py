"""A bundle written for BehaviorCI 0.1.0 (every 0.1.0 field, nothing of ours) runs unchanged."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.fakes.llm_servers import OpenAIServer, Recorded, Reply

DATA = Path(__file__).parent / "data" / "hello_world"


def _greet(request: Recorded) -> Reply:
    prompt = request.json["messages"][0]["content"]
    name = re.search(r"greeting for (\w+)\.", prompt)
    assert name is not None, prompt
    return Reply.text(
        json.dumps({"greeting": f"Hello, {name.group(1)}!", "confidence": 0.97}),
        input_tokens=20,
        output_tokens=9,
    )


@pytest.fixture
def bundle(tmp_path: Path) -> Path:
    shutil.copytree(DATA, tmp_path / "hello_world")
    return tmp_path / "hello_world" / "bundle.yaml"


def test_0_1_0_bundle_runs_unchanged_against_an_openai_compatible_server(
    bundle: Path, tmp_path: Path
) -> None:
    with OpenAIServer(responder=_greet) as server:
        env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.base_url}
        assert run_cli(["behaviorci", "validate", str(bundle)], tmp_path, env=env).code == 0
        ran = run_cli(
            ["behaviorci", "run", str(bundle), "-f", "json", "-o", "report.json", "-q"], tmp_path, env=env
        )
        assert ran.code == 0, ran.err
        assert ran.out == "" and ran.err == ""
        report = json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))
        assert report["passed"] is True
        assert [case["id"] for case in report["cases"]] == ["ada", "line-2", "linus"]
        assert report["usage"] == {"input_tokens": 60, "output_tokens": 27}
        assert len(server.requests) == 3
        sent = server.requests[0].json
        assert sent["model"] == "gpt-4o-mini" and sent["temperature"] == 0.0 and sent["max_tokens"] == 200
        assert [m["role"] for m in sent["messages"]] == ["user"]
        assert server.requests[0].headers["authorization"] == "Bearer sk-test"
        prompts = sorted(r.json["messages"][0]["content"] for r in server.requests)
        assert prompts[0].startswith("Write a one-line greeting for Ada.\nAnswer with JSON only")


def test_0_1_0_bundle_with_the_mock_provider_flag(bundle: Path, tmp_path: Path) -> None:
    # Under --provider mock a case answers with its expected_output; these lack "confidence", so the
    # contract fails exactly as it would for a model that left it out: exit 1, a readable verdict.
    ran = run_cli(["behaviorci", "run", str(bundle), "-p", "mock", "-v"], tmp_path)
    assert ran.code == 1
    lines = ran.out.splitlines()
    assert lines[-2] == "passed: false"
    assert lines[-1].startswith("reason: 0/3 cases passed; threshold failed: pass_rate 0 fails >= 0.9")
    assert "schema: $: 'confidence' is a required property" in ran.out
    assert "all cases:" in ran.out  # --verbose lists every case


def test_0_1_0_model_override(bundle: Path, tmp_path: Path) -> None:
    with OpenAIServer(responder=_greet) as server:
        env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.base_url}
        ran = run_cli(["behaviorci", "run", str(bundle), "-m", "qwen-plus", "--no-cache"], tmp_path, env=env)
        assert ran.code == 0, ran.err
        assert {r.json["model"] for r in server.requests} == {"qwen-plus"}
