"""first_env: key and URL look-up chains."""

from __future__ import annotations

import pytest

from routedriver.llm.env import first_env


def test_first_non_blank_variable_wins() -> None:
    env = {"QWEN_API_KEY": "", "DASHSCOPE_API_KEY": "  sk-dash\n", "OPENAI_API_KEY": "sk-openai"}
    assert first_env(["QWEN_API_KEY", "DASHSCOPE_API_KEY", "OPENAI_API_KEY"], env) == (
        "DASHSCOPE_API_KEY",
        "sk-dash",
    )


def test_order_is_the_callers() -> None:
    env = {"A": "1", "B": "2"}
    assert first_env(["B", "A"], env) == ("B", "2")


def test_nothing_set_is_none() -> None:
    assert first_env(["A", "B"], {"A": "   "}) is None
    assert first_env([], {"A": "1"}) is None


def test_defaults_to_the_process_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ROUTEDRIVER_TEST_FIRST_ENV", "value")
    monkeypatch.delenv("ROUTEDRIVER_TEST_MISSING", raising=False)
    assert first_env(["ROUTEDRIVER_TEST_MISSING", "ROUTEDRIVER_TEST_FIRST_ENV"]) == (
        "ROUTEDRIVER_TEST_FIRST_ENV",
        "value",
    )
