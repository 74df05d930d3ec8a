"""The seed's three domain examples (coding, database pipeline, research team) driven through the REAL bhrain
loop with the scripted atom, real tools and small custom toolboxes. The classifier uses the agent's own
(scripted) model, so each script's first turn is the classifier's JSON answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from routedriver.brain.atoms.scripted import ScriptedModel, parse_script
from routedriver.brain.behavior import load_behavior_hook
from routedriver.brain.behavior.state import SessionState
from routedriver.brain.loop import Loop, LoopResult
from routedriver.brain.toolbox import Toolbox, ToolRegistry
from routedriver.brain.tools import builtin_tools
from routedriver.brain.tools.base import ToolSettings
from routedriver.llm.types import Message
from tests.brain.behavior import domain_toolboxes
from tests.brain.behavior.domain_toolboxes import DB_NAME, create_shop, prices
from tests.brain.helpers import call


def run_loop(
    workdir: Path, block_yaml: str, turns: list[Any], toolboxes: list[Toolbox], task: str
) -> tuple[LoopResult, ScriptedModel, SessionState]:
    model = parse_script(turns, source="test script")
    config_path = workdir / "config.yaml"
    hook = load_behavior_hook(
        yaml.safe_load(block_yaml), config_path=config_path, agent_model=model, workdir=workdir
    )
    loop = Loop(model, ToolRegistry(toolboxes), workdir=workdir, hooks=[hook])
    try:
        result = loop.run(task)
        state = hook.state  # taken before close(), which frees the session's state
    finally:
        loop.close()
    return result, model, state


def tool_results(result: LoopResult) -> list[str]:
    return [message.text for message in result.messages if message.role == "tool"]


def result_with(result: LoopResult, needle: str) -> str:
    found = [text for text in tool_results(result) if needle in text]
    assert found, f"no tool result contains {needle!r}:\n" + "\n---\n".join(tool_results(result))
    return found[0]


def user_messages(messages: list[Message] | tuple[Message, ...]) -> list[str]:
    return [message.text for message in messages if message.role == "user"]


# -- coding assistant ----------------------------------------------------------------------------------------
CODING = """
profile: dev
classify_turns: true
rules:
  max_blind_reads: 2
  changes_before_test_reminder: 2
rule_definitions:
  - id: protect_migrations
    trigger: [edit, write]
    when: pre_tool
    action: block
    condition:
      param_contains: { param: file_path, value: "migration" }
    message: "Migration files are protected. Ask the user first."
"""


def test_coding_assistant(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("def add(a, b):\n    return a - b\n", encoding="utf-8")
    (tmp_path / "migrations").mkdir()
    migration = tmp_path / "migrations" / "0001_init.py"
    migration.write_text("# initial schema\n", encoding="utf-8")
    (tmp_path / "test_app.py").write_text(
        "import unittest\nfrom src.app import add\n\n\nclass T(unittest.TestCase):\n"
        "    def test_add(self):\n        self.assertEqual(add(2, 3), 5)\n",
        encoding="utf-8",
    )
    (tmp_path / "src" / "__init__.py").write_text("", encoding="utf-8")
    turns = [
        json.dumps(
            {
                "complexity": "simple",
                "approach": "explore_first",
                "risk": "low",
                "directives": ["Read src/app.py before editing it."],
            }
        ),
        {"tool_calls": [call("grep", pattern="def add", path="src")]},
        {
            "text": "Fixing the sign.",
            "tool_calls": [call("edit", file_path="src/app.py", old_string="a - b", new_string="a + b")],
        },
        {"text": "Checking.", "tool_calls": [call("read", file_path="src/app.py")]},
        {
            "text": "Updating the migration too.",
            "tool_calls": [
                call("edit", file_path="migrations/0001_init.py", old_string="initial", new_string="x")
            ],
        },
        {
            "text": "Adding a helper.",
            "tool_calls": [call("write", file_path="src/util.py", content="X = 1\n")],
        },
        {
            "text": "Running the tests.",
            "tool_calls": [call("bash", command="python -m unittest -q test_app")],
        },
        {"text": "Cleaning up.", "tool_calls": [call("bash", command="rm -rf src")]},
        {"text": "Showing it.", "tool_calls": [call("bash", command="cat src/app.py")]},
        {"text": "Fixed add(). I'm not sure the changelog mentions it."},
        {"text": "Done: add() adds; tests pass."},
    ]
    files = Toolbox("default", builtin_tools(["files", "bash"], ToolSettings(workdir=tmp_path)))
    result, model, state = run_loop(tmp_path, CODING, turns, [files], "Fix add() in src/app.py")

    assert result.exit_code == 0 and result.text == "Done: add() adds; tests pass."
    # the classifier directive follows the user's message
    first_agent_request = model.requests[1]
    directive = user_messages(first_agent_request.messages)[1]
    assert directive.startswith("[BEHAVIOR DIRECTIVE - simple complexity, low risk]")
    assert "- Read src/app.py before editing it." in directive
    # the dev profile's prompt and the rules' descriptions are in the system prompt
    system = first_agent_request.system or ""
    assert "## Behavior profile: Senior developer discipline" in system
    assert "- confirm_destructive (block): Never run destructive" in system
    assert "- protect_migrations (block)" not in system  # no description, nothing to add
    # warnings ride in front of the results, reminders after
    grep_result = result_with(result, "plan_before_execute")
    assert grep_result.startswith("[BEHAVIOR WARNING] plan_before_execute")
    edit_result = result_with(result, "read_before_edit")
    assert edit_result.startswith("[BEHAVIOR WARNING] read_before_edit: You are editing 'src/app.py'")
    assert "[BEHAVIOR REMINDER] verify_after_edit" in edit_result
    # the protected migration was never touched
    blocked = result_with(result, "protect_migrations")
    assert blocked.startswith("[BEHAVIOR BLOCKED] protect_migrations: Migration files are protected.")
    assert migration.read_text(encoding="utf-8") == "# initial schema\n"
    # 2 changes (edit + write) → the test reminder at the dev threshold the config lowered to 2
    assert "[BEHAVIOR REMINDER] test_after_changes: 2 changes since the last test run" in result_with(
        result, "src/util.py"
    )
    assert "return a + b" in result_with(result, "[BEHAVIOR WARNING] no_bash_for_files")  # warned, and it ran
    # rm -rf was blocked: src/ is still there and fixed
    assert "[BEHAVIOR BLOCKED] confirm_destructive" in result_with(result, "rm -rf src")
    assert (tmp_path / "src" / "app.py").read_text(encoding="utf-8") == "def add(a, b):\n    return a + b\n"
    # on_text: unsure without a web search → one nudge message, then the agent finished
    nudge = user_messages(model.requests[-1].messages)[-1]
    assert nudge.startswith("[BEHAVIOR WARNING] web_search_when_unknown")
    assert state.counters["changes_since_test"] == 0  # the unittest run reset it
    assert {v["rule"] for v in state.violations} >= {
        "plan_before_execute",
        "read_before_edit",
        "protect_migrations",
        "confirm_destructive",
        "no_bash_for_files",
    }


# -- database pipeline ---------------------------------------------------------------------------------------
DATABASE = """
classify_turns: true
classifier:
  complexity_levels:
    - { name: query, when: "Single SELECT, no side effects", behavior: "Execute directly" }
    - { name: transform, when: "UPDATE/INSERT affecting rows", behavior: "Verify row count after execution" }
    - { name: migration, when: "ALTER/DROP/CREATE schema changes",
        behavior: "MUST get user approval, run in transaction" }
  approaches:
    - { name: direct, label: "Execute directly", when: "Safe read-only query" }
    - { name: dry_run_first, label: "Dry-run before executing", when: "Bulk data modification",
        behavior: "Run with LIMIT 10 first, then full query" }
    - { name: plan_and_confirm, label: "Plan and get approval", when: "Schema changes or data deletion",
        behavior: "Show the SQL plan, wait for user approval" }
  risk_levels:
    - { name: read_only, when: "SELECT queries" }
    - { name: write, when: "INSERT/UPDATE operations" }
    - { name: destructive, when: "DELETE/DROP/TRUNCATE", behavior: "MUST confirm with user" }
  directive_prefix: "[DATA DIRECTIVE - {complexity}, {risk} risk]"
  high_risk_threshold: write
rule_definitions:
  - id: backup_before_modify
    trigger: [database.execute]
    when: pre_tool
    action: block
    condition:
      all:
        - param_matches: { param: query, pattern: "(UPDATE|DELETE|ALTER|DROP)" }
        - flag_is: { name: backup_created, value: false }
    message: "BLOCKED: Create a backup before running '{param:query}'."
  - id: verify_row_count
    trigger: [database.execute]
    when: post_tool
    action: remind
    condition:
      param_matches: { param: query, pattern: "(UPDATE|DELETE)\\\\s" }
    message: "Verify the affected row count matches expectations."
  - id: no_select_star
    trigger: [database.query]
    when: pre_tool
    action: warn
    condition:
      param_matches: { param: query, pattern: "SELECT\\\\s+\\\\*\\\\s+FROM" }
    message: "Avoid SELECT * - specify columns to reduce data transfer."
  - id: schema_before_query
    trigger: [database.query]
    when: pre_tool
    action: warn
    condition:
      counter_gte: { name: queries_since_schema, value: 3 }
    message: "You ran {counter:queries_since_schema} queries without checking the schema."
state_tracking:
  sets:
    tables_queried:
      add_on: [database.query, database.execute]
      target: table
  counters:
    queries_since_schema:
      increment_on: [database.query]
      reset_on: [database.schema, database.describe]
  flags:
    backup_created:
      set_on: [database.backup]
"""


def test_database_pipeline(tmp_path: Path) -> None:
    create_shop(tmp_path)
    update = "UPDATE products SET price = price * 2"
    names = "SELECT name FROM products"
    turns = [
        json.dumps(
            {
                "complexity": "transform",
                "approach": "dry_run_first",
                "risk": "write",
                "directives": ["Count the rows before and after."],
            }
        ),
        {
            "text": "Doubling prices.",
            "tool_calls": [call("database.execute", query=update, table="products")],
        },
        {"text": "Backing up first.", "tool_calls": [call("database.backup")]},
        {"text": "Now the update.", "tool_calls": [call("database.execute", query=update, table="products")]},
        {
            "text": "Checking.",
            "tool_calls": [call("database.query", query="SELECT * FROM products", table="products")],
        },
        {"text": "Names.", "tool_calls": [call("database.query", query=names, table="products")]},
        {"text": "Names again.", "tool_calls": [call("database.query", query=names, table="products")]},
        {"text": "One more.", "tool_calls": [call("database.query", query=names, table="products")]},
        {"text": "Schema.", "tool_calls": [call("database.schema", table="products")]},
        {"text": "Last query.", "tool_calls": [call("database.query", query=names, table="products")]},
        {"text": "Prices doubled; 3 rows updated."},
    ]
    result, model, state = run_loop(
        tmp_path, DATABASE, turns, [domain_toolboxes.database], "Double all prices"
    )

    assert result.exit_code == 0
    directive = user_messages(model.requests[1].messages)[1]
    assert directive.splitlines()[:3] == [
        "[DATA DIRECTIVE - transform, write risk]",
        "Risk level: write. Confirm destructive or irreversible actions with the user before proceeding.",
        "- Approach: Dry-run before executing",
    ]
    blocked = result_with(result, "backup_before_modify")
    assert blocked == (
        f"[BEHAVIOR BLOCKED] backup_before_modify: BLOCKED: Create a backup before running '{update}'."
    )
    assert (tmp_path / f"{DB_NAME}.bak").exists()
    assert prices(tmp_path) == [2.0, 20.0, 50.0]  # doubled exactly once: the blocked UPDATE never ran
    assert "[BEHAVIOR REMINDER] verify_row_count" in result_with(result, "3 rows affected")
    assert result_with(result, "no_select_star").startswith("[BEHAVIOR WARNING] no_select_star")
    warned = [text for text in tool_results(result) if "schema_before_query" in text]
    assert len(warned) == 1 and "You ran 3 queries without checking the schema." in warned[0]
    assert list(state.sets["tables_queried"]) == ["products"]
    assert state.counters["queries_since_schema"] == 1 and state.flags["backup_created"] is True


# -- research team -------------------------------------------------------------------------------------------
RESEARCH = """
classify_turns: true
classifier:
  complexity_levels: [quick, standard, deep]
  approaches:
    - { name: answer_directly, label: "Answer from knowledge", when: "Well-known fact, high confidence",
        behavior: "State the answer with a citation if available" }
    - { name: verify_then_answer, label: "Verify first", when: "Probably correct but should double-check",
        behavior: "One quick search, then answer" }
    - { name: multi_source, label: "Cross-reference sources",
        when: "Conflicting information or evolving topic",
        behavior: "Search 3+ independent sources, compare findings" }
  risk_levels:
    - { name: factual, when: "Well-established facts" }
    - { name: uncertain, when: "Evolving field, conflicting sources",
        behavior: "Flag uncertainty, present competing views" }
    - { name: speculative, when: "Predictions, extrapolations",
        behavior: "Label as speculative, never present as fact" }
  directive_prefix: "[RESEARCH - {complexity}, {risk}]"
  directive_footer: "Prioritize accuracy over speed."
rule_definitions:
  - id: cite_sources
    trigger: [web.fetch]
    when: post_tool
    action: remind
    message: "You fetched a source. Remember to cite it."
  - id: cross_reference
    trigger: [memory.remember]
    when: pre_tool
    action: remind
    condition:
      counter_gte: { name: sources_collected, value: 3 }
    message: "You have {counter:sources_collected} sources. Cross-reference before adding more."
  - id: max_fetches_per_angle
    trigger: [web.fetch]
    when: pre_tool
    action: warn
    condition:
      consecutive_gte: 5
    message: "5 fetches in a row. Synthesize what you have first."
state_tracking:
  sets:
    fetched_urls:
      add_on: [web.fetch]
      target: url
    search_queries:
      add_on: [web.search]
      target: query
  counters:
    sources_collected:
      increment_on: [web.fetch]
      reset_on: [memory.remember]
  flags:
    synthesis_done:
      set_on: [memory.remember]
      unset_on: [web.fetch]
"""


def test_research_team(tmp_path: Path) -> None:
    urls = [f"https://example.org/{letter}" for letter in "abcde"]
    turns = [
        json.dumps(
            {
                "complexity": "standard",
                "approach": "multi_source",
                "risk": "uncertain",
                "directives": ["Note where the sources disagree."],
            }
        ),
        {"text": "Searching.", "tool_calls": [call("web.search", query="bridge opening year")]},
        {"text": "Fetching all five.", "tool_calls": [call("web.fetch", url=url) for url in urls]},
        {
            "text": "Writing it down.",
            "tool_calls": [call("memory.remember", text="Opened 1932 (4 of 5 sources)")],
        },
        {"text": "Double-checking A.", "tool_calls": [call("web.fetch", url=urls[0])]},
        {"text": "It opened in 1932 [A, B, D, E]; one source says 1931 [C]."},
    ]
    result, model, state = run_loop(
        tmp_path,
        RESEARCH,
        turns,
        [domain_toolboxes.web, domain_toolboxes.memory],
        "When did the bridge open?",
    )

    assert result.exit_code == 0
    directive = user_messages(model.requests[1].messages)[1]
    assert directive.splitlines() == [
        "[RESEARCH - standard, uncertain]",
        "- Approach: Cross-reference sources",
        "- Search 3+ independent sources, compare findings",
        "- Flag uncertainty, present competing views",
        "- Note where the sources disagree.",
        "Prioritize accuracy over speed.",
    ]
    fetches = [text for text in tool_results(result) if text.count("Source ")]
    assert len(fetches) == 6 and all("[BEHAVIOR REMINDER] cite_sources" in text for text in fetches)
    warned = [text for text in fetches if "max_fetches_per_angle" in text]
    assert (
        len(warned) == 1
        and warned[0].startswith("[BEHAVIOR WARNING] max_fetches_per_angle")
        and "Source E" in warned[0]
    )  # the 5th fetch in a row
    remembered = result_with(result, "remembered")
    assert remembered.startswith("remembered")  # a pre_tool remind arrives AFTER the result
    assert "[BEHAVIOR REMINDER] cross_reference: You have 5 sources." in remembered
    assert (tmp_path / "notes.md").read_text(encoding="utf-8") == "Opened 1932 (4 of 5 sources)\n"
    assert list(state.sets["fetched_urls"]) == urls[1:] + urls[:1]  # re-fetching a moves it to the end
    assert list(state.sets["search_queries"]) == ["bridge opening year"]
    assert state.counters["sources_collected"] == 1
    assert state.flags["synthesis_done"] is False  # the fetch after remembering unset it
