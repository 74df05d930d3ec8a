"""The response cache, proven against the fake server's request count."""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from routedriver.fsutil import is_temp
from tests.behaviorci.helpers import answer, invoke, write_bundle
from tests.conftest import run_cli
from tests.fakes.llm_servers import OpenAIServer, Recorded, Reply


def _answer_or_fail(request: Recorded) -> Reply:
    prompt = request.json["messages"][-1]["content"]
    if "question 2?" in prompt:
        return Reply.error(500, message="upstream exploded")
    return Reply.text(answer("cached?"), input_tokens=7, output_tokens=3)


@pytest.fixture
def server() -> Iterator[OpenAIServer]:
    with OpenAIServer(
        responder=lambda request: Reply.text(answer("ok"), input_tokens=7, output_tokens=3)
    ) as fake:
        yield fake


def _run(bundle: Path, server: OpenAIServer, *args: str) -> tuple[int, dict[str, Any]]:
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.base_url}
    result = invoke(["run", str(bundle), "--format", "json", *args], env=env)
    assert result.stdout, result.stderr
    return result.exit_code, json.loads(result.stdout)


def _bundle(root: Path, **config: Any) -> Path:
    return write_bundle(root, {"provider": {"name": "openai", "model": "gpt-test"}, "retries": 0, **config})


def test_rerun_of_an_unchanged_bundle_makes_zero_calls(tmp_path: Path, server: OpenAIServer) -> None:
    bundle = _bundle(tmp_path / "b")
    cache = tmp_path / "cache"
    code, first = _run(bundle, server, "--cache-dir", str(cache))
    assert code == 0 and len(server.requests) == 3
    assert first["cache"] == {"hits": 0, "misses": 3, "dir": str(cache)}
    code, second = _run(bundle, server, "--cache-dir", str(cache))
    assert code == 0
    assert len(server.requests) == 3  # not one more request
    assert second["cache"]["hits"] == 3 and second["cache"]["misses"] == 0
    assert second["usage"] == first["usage"] == {"input_tokens": 21, "output_tokens": 9}
    assert [c["passed"] for c in second["cases"]] == [c["passed"] for c in first["cases"]]
    entries = [p for p in cache.rglob("*") if p.is_file()]
    assert len(entries) == 3 and not any(is_temp(p) for p in entries)


def test_no_cache_calls_again(tmp_path: Path, server: OpenAIServer) -> None:
    bundle = _bundle(tmp_path / "b")
    cache = ["--cache-dir", str(tmp_path / "cache")]
    _run(bundle, server, *cache)
    _, report = _run(bundle, server, *cache, "--no-cache")
    assert len(server.requests) == 6
    assert report["cache"]["hits"] == 0


def test_errors_are_never_cached(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path / "b", thresholds=[{"metric": "pass_rate", "value": 0}])
    cache = ["--cache-dir", str(tmp_path / "cache")]
    with OpenAIServer(responder=_answer_or_fail) as server:
        _, first = _run(bundle, server, *cache)
        assert [c["error"] is not None for c in first["cases"]] == [False, True, False]
        _, second = _run(bundle, server, *cache)
        assert len(server.requests) == 4  # only the failed case was asked again
        assert second["cache"] == {"hits": 2, "misses": 1, "dir": str(tmp_path / "cache")}


def test_key_covers_prompt_model_temperature_and_repeat(tmp_path: Path, server: OpenAIServer) -> None:
    cache = ["--cache-dir", str(tmp_path / "cache")]
    bundle = _bundle(tmp_path / "b")
    _run(bundle, server, *cache)
    _run(bundle, server, *cache, "--model", "other-model")
    assert len(server.requests) == 6
    _bundle(tmp_path / "b", provider={"name": "openai", "model": "gpt-test", "temperature": 0.7})
    _run(bundle, server, *cache)
    assert len(server.requests) == 9
    (tmp_path / "b" / "prompt.md").write_text("Another prompt: {{ question }}\n", encoding="utf-8")
    _run(bundle, server, *cache)
    assert len(server.requests) == 12
    _, report = _run(bundle, server, *cache, "--repeat", "3")  # run 0 is cached; runs 1 and 2 are new calls
    assert len(server.requests) == 18
    assert report["cache"]["hits"] == 3
    _run(bundle, server, *cache, "--repeat", "3")
    assert len(server.requests) == 18


def test_corrupt_entries_are_misses_and_get_replaced(tmp_path: Path, server: OpenAIServer) -> None:
    bundle = _bundle(tmp_path / "b")
    cache_dir = tmp_path / "cache"
    _run(bundle, server, "--cache-dir", str(cache_dir))
    entries = sorted(p for p in cache_dir.rglob("*.json"))
    entries[0].write_text("{ half a json", encoding="utf-8")
    entries[1].write_text(json.dumps({"v": 1, "key": "someone else's"}), encoding="utf-8")
    code, report = _run(bundle, server, "--cache-dir", str(cache_dir))
    assert code == 0
    assert len(server.requests) == 5
    assert report["cache"]["hits"] == 1
    json.loads(entries[0].read_text(encoding="utf-8"))  # rewritten whole


def test_cache_settings_in_the_bundle(tmp_path: Path, server: OpenAIServer) -> None:
    off = _bundle(tmp_path / "off", cache=False)
    _run(off, server)
    _, report = _run(off, server)
    assert len(server.requests) == 6 and report["cache"]["dir"] is None

    # `cache: {enabled: false}` says the same; where the cache is, only --cache-dir says (test_runner_only)
    spelled = _bundle(tmp_path / "spelled", cache={"enabled": False})
    _run(spelled, server, "--cache-dir", str(tmp_path / "cache"))
    assert len(server.requests) == 9 and not (tmp_path / "cache").exists()


def test_default_cache_dir_is_under_xdg_cache_home(tmp_path: Path, server: OpenAIServer) -> None:
    bundle = _bundle(tmp_path / "b")
    env = {
        "OPENAI_API_KEY": "sk-test",
        "OPENAI_BASE_URL": server.base_url,
        "XDG_CACHE_HOME": str(tmp_path / "xdg"),
    }
    for _ in range(2):
        result = invoke(["run", str(bundle), "--format", "json"], env=env)
    assert len(server.requests) == 3
    assert json.loads(result.stdout)["cache"]["dir"] == str(tmp_path / "xdg" / "routedriver" / "behaviorci")
    assert len(list((tmp_path / "xdg" / "routedriver" / "behaviorci").rglob("*.json"))) == 3


def test_the_mock_is_not_cached(tmp_path: Path) -> None:
    bundle = write_bundle(tmp_path / "b")
    result = invoke(["run", str(bundle), "--format", "json", "--cache-dir", str(tmp_path / "cache")])
    assert json.loads(result.stdout)["cache"] == {"hits": 0, "misses": 0, "dir": None}
    assert not (tmp_path / "cache").exists()


def test_answers_from_the_cache_never_wait_for_the_sdk_import(tmp_path: Path, server: OpenAIServer) -> None:
    # Only a call imports the provider's SDK (~0.4 s of Python holding the GIL, which no thread can hide): a
    # rerun answered from the cache imports neither it nor its HTTP stack, so no case waits for it.
    bundle = _bundle(tmp_path / "b")
    script = shutil.which("behaviorci")
    assert script is not None
    argv = [sys.executable, "-X", "importtime", script, "run", str(bundle), "-f", "json"]
    env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.base_url}
    imported = []
    for _ in range(2):
        ran = run_cli([*argv, "--cache-dir", str(tmp_path / "cache")], tmp_path, env=env)
        assert ran.code == 0, ran.err
        # The packages any module was imported from (importlib.import_module's own module is not listed).
        imported.append(
            {line.split("|")[-1].strip().split(".")[0] for line in ran.err.splitlines() if "|" in line}
        )
    assert json.loads(ran.out)["cache"]["hits"] == 3 and len(server.requests) == 3
    assert {"openai", "httpx2"} <= imported[0]
    assert not {"openai", "httpx2", "anthropic"} & imported[1]
