"""Importing the adapters must not import the SDKs: bhrain --help and behaviorci --help stay fast."""

from __future__ import annotations

import subprocess
import sys

CHECK = """
import sys
import routedriver.llm, routedriver.llm.anthropic_chat, routedriver.llm.openai_chat
import routedriver.llm.errors, routedriver.llm.retry, routedriver.llm.env, routedriver.llm.types
from routedriver.llm.anthropic_chat import AnthropicChat
from routedriver.llm.openai_chat import OpenAIChat
AnthropicChat(model="m", api_key="k"); OpenAIChat(model="m", api_key="k")  # construction is free too
heavy = sorted(m for m in ("anthropic", "openai", "httpx", "httpx2", "pydantic") if m in sys.modules)
print(",".join(heavy))
"""


def test_adapters_import_and_construct_without_the_sdks() -> None:
    done = subprocess.run([sys.executable, "-c", CHECK], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""
