"""Benchmarks of the LLM layer: import cost, per-call overhead over the raw SDK, fake-server concurrency.

Targets:
- importing both adapters (what ``bhrain --help`` / ``behaviorci --help`` pay) ≤ 2.5× bare python start-up
  and ≤ 1.3× importing the conversation model (``routedriver.llm.types``) that every LLM caller imports
  anyway: the SDKs (1.4 s + 0.6 s) must not be imported;
- an adapter call against a local server (translation, retry wrapper, error mapping) ≤ 1.3× the raw SDK
  call it wraps, for both providers;
- 200 requests at concurrency 20 against a fake server that answers in 100 ms ≤ 1.6 s wall (ideal 1.0 s):
  the fake servers must never be what a concurrency benchmark measures.
"""

from __future__ import annotations

import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, for tests.fakes

import _harness

from routedriver.llm.anthropic_chat import AnthropicChat
from routedriver.llm.openai_chat import OpenAIChat
from routedriver.llm.retry import RetryPolicy
from routedriver.llm.types import Message, ToolSpec
from tests.fakes.llm_servers import AnthropicServer, OpenAIServer, Reply

KEY = "sk-bench"
CONVERSATION = [Message(role="user", text="Summarize the file.")]
TOOLS = [ToolSpec("read", "Read a file", {"type": "object", "properties": {"file_path": {"type": "string"}}})]


def bench_import() -> None:
    # Measured as installed code runs: with bytecode caches (this sandbox sets PYTHONDONTWRITEBYTECODE=1,
    # which would recompile every module on every start and count that as import time).
    python = str(_harness.commands_dir() / "python")
    cached = {"PYTHONDONTWRITEBYTECODE": ""}
    walls = _harness.interleaved(
        {
            "adapters": _harness.command(
                [python, "-c", "import routedriver.llm.anthropic_chat, routedriver.llm.openai_chat"],
                env=cached,
            ),
            "types": _harness.command([python, "-c", "import routedriver.llm.types"], env=cached),
            "bare": _harness.bare_python(),
        }
    )
    _harness.report(
        "llm: import both adapters vs bare python", walls["adapters"], walls["bare"], max_ratio=2.5
    )
    _harness.report(
        "llm: import both adapters vs routedriver.llm.types alone",
        walls["adapters"],
        walls["types"],
        max_ratio=1.3,
    )


def bench_call_overhead() -> None:
    with AnthropicServer() as a_server, OpenAIServer() as o_server:
        a_server.responder = lambda recorded: Reply.tool_calls([("read", {"file_path": "a.txt"})], text="ok")
        o_server.responder = lambda recorded: Reply.tool_calls([("read", {"file_path": "a.txt"})], text="ok")
        import anthropic
        import openai

        raw_claude = anthropic.Anthropic(api_key=KEY, base_url=a_server.base_url, max_retries=0, timeout=30)
        raw_gpt = openai.OpenAI(api_key=KEY, base_url=o_server.base_url, max_retries=0, timeout=30)
        claude = AnthropicChat(
            model="m", api_key=KEY, base_url=a_server.base_url, retry=RetryPolicy(max_retries=0)
        )
        gpt = OpenAIChat(model="m", api_key=KEY, base_url=o_server.base_url, retry=RetryPolicy(max_retries=0))
        tool_param: Any = [
            {"name": "read", "description": "Read a file", "input_schema": TOOLS[0].input_schema}
        ]
        fn_param: Any = [
            {
                "type": "function",
                "function": {
                    "name": "read",
                    "description": "Read a file",
                    "parameters": TOOLS[0].input_schema,
                },
            }
        ]
        user: Any = [{"role": "user", "content": [{"type": "text", "text": CONVERSATION[0].text}]}]
        chat_user: Any = [{"role": "user", "content": CONVERSATION[0].text}]

        _harness.report(
            "llm: AnthropicChat.complete vs raw SDK call",
            _harness.median_wall(lambda: claude.complete(CONVERSATION, tools=TOOLS), repeat=60, warmup=5),
            _harness.median_wall(
                lambda: raw_claude.messages.create(
                    model="m", max_tokens=4096, messages=user, tools=tool_param
                ),
                repeat=60,
                warmup=5,
            ),
            max_ratio=1.3,
        )
        _harness.report(
            "llm: OpenAIChat.complete vs raw SDK call",
            _harness.median_wall(lambda: gpt.complete(CONVERSATION, tools=TOOLS), repeat=60, warmup=5),
            _harness.median_wall(
                lambda: raw_gpt.chat.completions.create(
                    model="m", max_tokens=4096, messages=chat_user, tools=fn_param
                ),
                repeat=60,
                warmup=5,
            ),
            max_ratio=1.3,
        )


def bench_fake_server_concurrency() -> None:
    with OpenAIServer(responder=lambda recorded: Reply.text("ok", delay_s=0.1)) as server:
        chat = OpenAIChat(model="m", api_key=KEY, base_url=server.base_url, retry=RetryPolicy(max_retries=0))
        chat.complete(CONVERSATION)  # build the client (and import openai) outside the measurement
        with ThreadPoolExecutor(max_workers=20) as pool:
            started = time.perf_counter()
            answers = list(pool.map(lambda _: chat.complete(CONVERSATION).text, range(200)))
            wall = time.perf_counter() - started
        assert answers == ["ok"] * 200
    _harness.report_absolute(
        "llm: 200 calls, concurrency 20, 100 ms replies (ideal 1.0 s)", wall, max_value=1.6
    )


def main() -> int:
    bench_import()
    bench_call_overhead()
    bench_fake_server_concurrency()
    return _harness.exit_code()


if __name__ == "__main__":
    sys.exit(main())
