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


def _echo_bundle(
    root: Path, prompt_files: dict[str, bytes], prompt_path: str, row: dict[str, object]
) -> Path:
    root.mkdir()
    for name, data in prompt_files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(data)
    (root / "dataset.jsonl").write_text(json.dumps(row) + "\n", encoding="utf-8")
    (root / "bundle.yaml").write_text(
        f"name: echo\nprompt_path: {prompt_path}\ndataset_path: dataset.jsonl\n"
        "output_contract:\n  invariants: ['len(raw_output) > 0']\nprovider:\n  name: mock\n  echo: true\n",
        encoding="utf-8",
    )
    return root / "bundle.yaml"


def _sent_prompt(bundle: Path, cwd: Path) -> str:
    ran = run_cli(["behaviorci", "run", str(bundle), "-f", "json", "-v"], cwd)
    assert ran.code == 0, ran.err
    output: str = json.loads(ran.out)["cases"][0]["output"]
    return output


def test_includes_resolve_from_the_bundle_directory_as_in_0_1_0(tmp_path: Path) -> None:
    # 0.1.0 loaded templates from the bundle's directory: prompts/main.md includes "prompts/header.md".
    # A name relative to the prompt's own directory keeps working too.
    files = {
        "prompts/main.md": b'{% include "prompts/header.md" %}{% include "footer.md" %}Q: {{ question }}\n',
        "prompts/header.md": b"HEADER\n",
        "prompts/footer.md": b"FOOTER\n",
    }
    bundle = _echo_bundle(tmp_path / "b", files, "prompts/main.md", {"input": {"question": "why?"}})
    assert _sent_prompt(bundle, tmp_path) == "HEADERFOOTERQ: why?"  # Jinja2 drops a final newline


def test_an_include_escaping_the_bundle_is_refused(tmp_path: Path) -> None:
    (tmp_path / "secret.md").write_text("secret", encoding="utf-8")
    files = {"prompts/main.md": b'{% include "../secret.md" %}{{ question }}'}
    bundle = _echo_bundle(tmp_path / "b", files, "prompts/main.md", {"input": {"question": "q"}})
    ran = run_cli(["behaviorci", "validate", str(bundle)], tmp_path)
    assert ran.code == 2 and "secret" not in ran.out
    assert ran.err.startswith("error: ") and "../secret.md" in ran.err and ran.err.count("\n") == 1


def test_a_byte_order_mark_is_not_sent_and_a_variable_may_be_called_self(tmp_path: Path) -> None:
    files = {"prompt.md": "\ufeffQ: {{ question }}\n".encode()}
    row = {"input": {"question": "q?", "self": "unused by the template"}}
    bundle = _echo_bundle(tmp_path / "b", files, "prompt.md", row)
    assert _sent_prompt(bundle, tmp_path) == "Q: q?"
