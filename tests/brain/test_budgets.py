"""Budgets: ``--max-tokens-total`` and ``--max-cost`` stop the loop gracefully, like ``--max-iterations``.

Checked before each model call against everything spent so far: the partial answer and why, exit 2. Prices
come from ``routedriver/brain/prices.yaml`` and the config's ``prices:``; a cost budget on a model without a
price is refused before any call.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from routedriver.brain.atoms import claude, qwen
from routedriver.brain.loop import Limits
from routedriver.brain.prices import Price, builtin_prices, price_for
from routedriver.llm.types import Message, Usage
from tests.brain.helpers import bhrain, call, make_loop, scripted_run, write_script
from tests.fakes.llm_servers import AnthropicServer, Reply

BUSY = {
    "text": "Still counting.",
    "tool_calls": [call("bash", command="true")],
    "usage": {"input_tokens": 1_000, "output_tokens": 100},
}


def test_the_token_budget_stops_before_the_call_that_would_start_over_it(tmp_path: Path) -> None:
    loop, scripted = make_loop(tmp_path, [BUSY] * 6, limits=Limits(max_tokens_total=2_500))
    result = loop.run("count")
    assert (result.stop_reason, result.exit_code, result.iterations) == ("max_tokens_total", 2, 3)
    assert len(scripted.requests) == 3 and result.usage.total_tokens == 3_300  # the third call crossed it
    assert result.text == "Still counting."
    assert result.explanation == (
        "stopped after 3,300 tokens of a budget of 2,500 in 3 iterations before the task was finished; "
        "3 tool calls ran, 0 of them failed or were refused. Raise --max-tokens-total or narrow the task."
    )


def test_the_cost_budget_prices_every_call_and_stops_the_same_way(tmp_path: Path) -> None:
    price = Price(input=10.0, output=30.0, cache_read=1.0, cache_write=12.5)  # $0.013 a call of BUSY
    loop, scripted = make_loop(tmp_path, [BUSY] * 6, limits=Limits(max_cost=0.03), price=price)
    result = loop.run("count")
    assert (result.stop_reason, result.exit_code, len(scripted.requests)) == ("max_cost", 2, 3)
    assert result.cost_usd == pytest.approx(0.039)
    assert "stopped after $0.0390 of a budget of $0.0300 in 3 iterations" in result.explanation
    assert "Raise --max-cost" in result.explanation


def test_a_cost_budget_without_a_price_is_a_programming_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="needs the price of the model 'scripted'"):
        make_loop(tmp_path, ["x"], limits=Limits(max_cost=1.0))


def test_cached_input_is_billed_at_its_own_rates() -> None:
    price = price_for("claude-sonnet-5-5")
    assert price == Price(3.0, 15.0, 0.30, 3.75)
    usage = Usage(
        input_tokens=1_000_000, output_tokens=100_000, cache_read_tokens=600_000, cache_write_tokens=200_000
    )
    # 200k plain input at $3, 600k read at $0.30, 200k written at $3.75, 100k output at $15 (per million)
    assert price.cost(usage) == pytest.approx(0.6 + 0.18 + 0.75 + 1.5)


def test_every_atoms_default_model_has_a_price_and_dated_ids_find_theirs() -> None:
    table = builtin_prices()
    for model in (claude.DEFAULT_MODEL, qwen.DEFAULT_MODEL, "scripted"):
        assert model in table, model
    assert price_for("claude-sonnet-5-5-20260101") == table["claude-sonnet-5-5"]
    assert price_for("qwen-plus-latest") == table["qwen-plus"] and price_for("gpt-unknown") is None
    mine = {"qwen": Price(9, 9, 9, 9)}  # the config's entries come first, even as a shorter prefix
    assert price_for("qwen-plus", mine) == Price(9, 9, 9, 9)


# -- the command line ----------------------------------------------------------------------------------------
def test_cli_token_budget_prints_the_partial_answer_and_why(tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", [BUSY] * 6)
    ran = bhrain([*scripted_run(script), "--input", "count", "--max-tokens-total", "1500"], tmp_path)
    assert ran.code == 2 and ran.err == ""
    assert ran.out.startswith(
        "Still counting.\n\n[bhrain stopped early] stopped after 2,200 tokens of a budget"
    )
    ran = bhrain(
        [*scripted_run(script), "--input", "count", "--max-tokens-total", "1500", "--json"], tmp_path
    )
    out = json.loads(ran.out)
    assert (out["stop_reason"], out["exit_code"], out["iterations"], out["cost_usd"]) == (
        "max_tokens_total",
        2,
        2,
        0,
    )


def test_cli_cost_budget_with_prices_from_the_config(tmp_path: Path) -> None:
    script = write_script(tmp_path / "s.json", [BUSY] * 6, model="house-model")
    config = tmp_path / "bhrain.yaml"
    config.write_text("max_cost: 0.02\nprices:\n  house-model: {input: 10, output: 30}\n", encoding="utf-8")
    ran = bhrain([*scripted_run(script), "--config", str(config), "--input", "count", "--json"], tmp_path)
    assert ran.code == 2, ran.err
    out = json.loads(ran.out)
    assert (out["stop_reason"], out["iterations"], out["cost_usd"]) == ("max_cost", 2, 0.026)
    assert out["result"].startswith("Still counting.")  # the partial answer
    assert "Raise --max-cost" in out["explanation"]


def test_cli_refuses_a_cost_budget_for_a_model_without_a_price_before_any_call(tmp_path: Path) -> None:
    script = write_script(
        tmp_path / "s.json", [{"tool_calls": [call("write", file_path="x", content="x")]}, "ok"]
    )
    ran = bhrain(
        [*scripted_run(script), "--model", "mystery-1", "--input", "go", "--max-cost", "0.5"], tmp_path
    )
    assert (ran.code, ran.out) == (2, "")
    assert ran.err == (
        "error: --max-cost needs the price of the model 'mystery-1', and it has none; "
        "add it to the config file: prices: {mystery-1: {input: …, output: …}} "
        "(US dollars per million tokens)\n"
    )
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize(
    ("config", "said"),
    [
        ("max_cost: -1\n", "max_cost must be a positive number, not -1"),
        ("max_tokens_total: 0\n", "max_tokens_total must be a positive integer, not 0"),
        ("prices: [1]\n", "prices must map model ids to prices"),
        ("prices: {m: {input: 1}}\n", "prices.m.output is missing"),
        ("prices: {m: {input: 1, output: -2}}\n", "prices.m.output must be a number of dollars per million"),
        ("prices: {m: {input: 1, output: 2, per: 3}}\n", "prices.m.per is not a price key"),
    ],
)
def test_budget_settings_in_the_config_are_checked_in_one_line(
    tmp_path: Path, config: str, said: str
) -> None:
    (tmp_path / "c.yaml").write_text(config, encoding="utf-8")
    script = write_script(tmp_path / "s.json", ["ok"])
    ran = bhrain([*scripted_run(script), "--config", "c.yaml", "--input", "go"], tmp_path)
    assert ran.code == 2 and ran.out == ""
    assert ran.err.startswith(f"error: config file c.yaml: {said}") and ran.err.count("\n") == 1


@pytest.mark.parametrize(
    "flag",
    [
        ["--max-cost", "0"],
        ["--max-tokens-total", "0"],
        ["--max-cost", "x"],
        # click's FloatRange takes both: a NaN budget was never spent (each comparison with NaN is false)
        ["--max-cost", "nan"],
        ["--max-cost", "inf"],
    ],
)
def test_budget_flags_refuse_what_is_no_budget(tmp_path: Path, flag: list[str]) -> None:
    script = write_script(tmp_path / "s.json", ["ok"])
    ran = bhrain([*scripted_run(script), "--input", "go", *flag], tmp_path)
    assert ran.code == 2 and ran.err.startswith(f"error: Invalid value for '{flag[0]}'")


def test_the_claude_atom_stops_at_its_cost_budget_with_the_cache_priced_in(tmp_path: Path) -> None:
    with AnthropicServer(prompt_cache=True) as server:
        server.responder = lambda recorded: Reply.tool_calls(
            [("bash", {"command": "true"})], output_tokens=2_000
        )
        ran = bhrain(
            [
                *("run", "--skill", "act", "--atom", "claude", "--base-url", server.base_url),
                *("--input", "work", "--max-cost", "0.1", "--json"),
            ],
            tmp_path,
            env={"ANTHROPIC_API_KEY": "sk-ant-budget"},
        )
        calls = len(server.requests)
    assert ran.code == 2, ran.err
    out = json.loads(ran.out)
    usage = out["usage"]
    expected = price_for("claude-sonnet-5-5")
    assert expected is not None
    assert out["cost_usd"] == round(expected.cost(Usage(**usage)), 6) and out["cost_usd"] >= 0.1
    assert (out["stop_reason"], out["iterations"]) == ("max_cost", calls)
    assert calls == 4  # 2,000 output tokens at $15 a million: $0.03 a call, and a little for the input
    assert usage["cache_read_tokens"] > 0


# -- memory never spends past a budget -------------------------------------------------------------------
def test_a_spent_budget_stops_the_run_before_a_summary_call(tmp_path: Path) -> None:
    """The audit: with a small context window the second answer crossed --max-tokens-total 1000 and the
    summarize-on-limit memory still asked the model for a summary (3 requests, 8,620 tokens)."""
    (tmp_path / "small.txt").write_text("a small file\n", encoding="utf-8")
    (tmp_path / "big.txt").write_text("a line of a big file\n" * 1_000, encoding="utf-8")  # ~5,000 tokens
    (tmp_path / "bhrain.yaml").write_text("context_window: 8000\nmax_tokens_total: 1000\n", encoding="utf-8")
    with AnthropicServer() as server:
        server.enqueue(
            Reply.tool_calls([("read", {"file_path": "small.txt"})], input_tokens=300, output_tokens=20),
            Reply.tool_calls([("read", {"file_path": "big.txt"})], input_tokens=800, output_tokens=20),
            Reply.text("a summary of the history"),  # what the summary call would get
            Reply.text("read both"),
        )
        ran = bhrain(
            [
                *("run", "--skill", "act", "--atom", "claude", "--base-url", server.base_url),
                *("--tools", "files", "--max-tokens", "512", "--config", "bhrain.yaml"),
                *("--input", "read small.txt, then big.txt", "--json"),
            ],
            tmp_path,
            env={"ANTHROPIC_API_KEY": "sk-ant-budget"},
        )
        requests = len(server.requests)
    assert ran.code == 2, ran.err
    out = json.loads(ran.out)
    assert (out["stop_reason"], out["iterations"], requests) == ("max_tokens_total", 2, 2)
    assert out["usage"]["input_tokens"] + out["usage"]["output_tokens"] == 1_140
    assert [c["status"] for c in out["tool_calls"]] == ["ok", "ok"]


def test_the_model_a_memory_manager_gets_refuses_a_call_past_the_budget(tmp_path: Path) -> None:
    """A plugin (or a background manager) that calls the model itself is held to the budgets too."""
    from routedriver.brain.memory.base import BudgetSpent, MemoryManager

    class Greedy(MemoryManager):
        name = "greedy"
        calls = 0

        def consult(self, state: Any) -> None:
            assert self.session is not None
            completion = self.session.model.complete([Message("user", "summarize")], max_tokens=10)
            self.session.record_usage(completion.usage)
            self.calls += 1

    greedy = Greedy()
    loop, scripted = make_loop(
        tmp_path, [BUSY, BUSY, "spare"], memory=greedy, limits=Limits(max_tokens_total=1_500)
    )
    result = loop.run("count")
    # The first answer (1,100 tokens) left room for the memory's call, which spent the rest (2,200 in all):
    # no further call, from the loop or from memory.
    assert (result.stop_reason, result.usage.total_tokens, greedy.calls) == ("max_tokens_total", 2_200, 1)
    assert len(scripted.requests) == 2
    assert greedy.session is not None and greedy.session.budget_spent() == "2,200 tokens of a budget of 1,500"
    with pytest.raises(BudgetSpent, match="no model call for memory: 2,200 tokens of a budget of 1,500"):
        greedy.session.model.complete([Message("user", "one more")])
    assert len(scripted.requests) == 2
