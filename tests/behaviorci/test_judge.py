"""behaviorci as a route judge: ``route.stone.set`` passes or fails the stone on its verdict lines."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml

from tests.conftest import run_cli
from tests.fakes.llm_servers import OpenAIServer, Reply
from tests.route.routes import passed_record

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "behaviorci" / "route"
GOOD_PROMPT = """You are the support bot for {{ product }}. Never promise a refund; a human reviews billing.
Customer question: {{ question }}
Reply with JSON only: {"answer": "<your reply>", "escalate": true or false}
"""
WEAK_PROMPT = "You are the support bot for {{ product }}.\nCustomer: {{ question }}\n"


def _route(repo: Path) -> Path:
    route = repo / "route"
    shutil.copytree(EXAMPLE, route)
    return route


def _set(repo: Path, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """``route.stone.set`` of the example's stone: (exit code, stdout, stderr)."""
    ran = run_cli(
        ["route.stone.set", "--route", "route", "--stone", "1.prompt", "--as", "passed"], repo, env=env
    )
    return ran.code, ran.out, ran.err


def test_example_route_passes_and_fails_the_stone(git_repo: Path) -> None:
    route = _route(git_repo)
    (route / "1.prompt.md").write_text(WEAK_PROMPT, encoding="utf-8")
    code, out, err = _set(git_repo)
    # A failed threshold is behaviorci exit 1, which alone would read as a malfunction; the verdict lines
    # make it a plain rejection the robot can act on.
    assert code == 2, (out, err)
    assert "stone rejected: 1.prompt" in out
    assert "reason: 0/3 cases passed; threshold failed: pass_rate 0 fails == 1" in out
    assert "invariant `'answer' in raw_output and 'escalate' in raw_output` is false" in out  # the feedback
    assert passed_record(route, "1.prompt") is None

    (route / "1.prompt.md").write_text(GOOD_PROMPT, encoding="utf-8")
    code, out, err = _set(git_repo)
    assert code == 0, (out, err)
    assert "stone passed: 1.prompt" in out
    assert passed_record(route, "1.prompt") is not None
    assert run_cli(["route.stone.get", "--route", "route"], git_repo).out.strip() == "all stones passed"


def test_a_prompt_with_an_undefined_variable_fails_the_stone(git_repo: Path) -> None:
    route = _route(git_repo)
    (route / "1.prompt.md").write_text(GOOD_PROMPT + "Region: {{ region }}\n", encoding="utf-8")
    code, out, _ = _set(git_repo)
    assert code == 2
    assert "'region' is undefined" in out


def test_real_provider_judge_against_a_fake_server(git_repo: Path) -> None:
    route = _route(git_repo)
    (route / "1.prompt.md").write_text(GOOD_PROMPT, encoding="utf-8")
    bundle = route / "behavior" / "bundle.yaml"
    config = yaml.safe_load(bundle.read_text(encoding="utf-8"))
    config["provider"] = {"name": "openai", "model": "support-model"}
    config["retries"] = 0
    config["cache"] = False  # the fake "model" changes its answer below; a cache would (rightly) hide that
    config["output_contract"] = {
        "invariants": [
            "isinstance(output, dict) and isinstance(output.get('escalate'), bool)",
            "not matches('(?i)refund (is|has been) (granted|approved)', output.get('answer', ''))",
        ]
    }
    bundle.write_text(yaml.safe_dump(config), encoding="utf-8")
    reply = {"answer": "Your refund is approved!", "escalate": False}
    with OpenAIServer(responder=lambda request: Reply.text(json.dumps(reply))) as server:
        env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.base_url}
        code, out, err = _set(git_repo, env)
        assert code == 2, err
        assert "stone rejected" in out and "refund" in out
        assert len(server.requests) == 3

        reply["answer"] = "A colleague will look at the charge."
        bundle.write_text(bundle.read_text(encoding="utf-8") + "\n", encoding="utf-8")  # a new judge input
        code, out, err = _set(git_repo, env)
        assert code == 0, (out, err)
        assert len(server.requests) == 6
