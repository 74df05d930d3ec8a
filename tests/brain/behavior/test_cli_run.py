"""`bhrain run --config FILE` with a ``security.behavior`` block, end to end through the console script:
the scripted atom, a custom toolbox by import path, and the engine blocking, warning and reminding."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.brain.behavior.domain_toolboxes import DB_NAME, create_shop, prices
from tests.conftest import run_cli

REPO_ROOT = Path(__file__).resolve().parents[3]
UPDATE = "UPDATE products SET price = price * 2"
SCRIPT = [
    {
        "text": "Doubling the prices.",
        "tool_calls": [{"name": "database__execute", "arguments": {"query": UPDATE}}],
    },
    {
        "choose": [
            {
                "if_contains": ["[BEHAVIOR BLOCKED] backup_before_modify"],
                "text": "Backing up first.",
                "tool_calls": [{"name": "database__backup", "arguments": {}}],
            },
            {"text": "The update ran without a backup: this must not happen."},
        ]
    },
    {"text": "Again.", "tool_calls": [{"name": "database__execute", "arguments": {"query": UPDATE}}]},
    {"text": "Prices doubled."},
]
CONFIG = {
    "skill": "act",
    "atom": "scripted",
    "script": "script.yaml",
    "tools": "none",
    "toolboxes": ["tests.brain.behavior.domain_toolboxes:database"],
    "security": {
        "behavior": {
            "rule_definitions": [
                {
                    "id": "backup_before_modify",
                    "trigger": ["database.execute"],
                    "action": "block",
                    "description": "Back up the database before changing data.",
                    "condition": {
                        "all": [
                            {"param_matches": {"param": "query", "pattern": "(UPDATE|DELETE)"}},
                            {"flag_is": {"name": "backup_created", "value": False}},
                        ]
                    },
                    "message": "Create a backup before running '{param:query}'.",
                },
                {
                    "id": "verify_row_count",
                    "trigger": "database.execute",
                    "when": "post_tool",
                    "action": "remind",
                    "condition": {"param_matches": {"param": "query", "pattern": r"(UPDATE|DELETE)\s"}},
                    "message": "Verify the affected row count.",
                },
            ],
            "state_tracking": {"flags": {"backup_created": {"set_on": ["database.backup"]}}},
        }
    },
}


def setup(tmp_path: Path, config: dict) -> Path:  # type: ignore[type-arg]
    create_shop(tmp_path)
    (tmp_path / "script.yaml").write_text(yaml.safe_dump(SCRIPT), encoding="utf-8")
    (tmp_path / "bhrain.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return tmp_path / "bhrain.yaml"


def test_bhrain_run_enforces_the_behavior_block(tmp_path: Path) -> None:
    config = setup(tmp_path, CONFIG)
    ran = run_cli(
        ["bhrain", "run", "--config", str(config), "--input", "Double all prices", "--json"],
        tmp_path,
        env={"PYTHONPATH": str(REPO_ROOT)},
    )
    assert ran.code == 0, ran.err
    result = json.loads(ran.out)
    assert result["result"] == "Prices doubled."
    assert [(call["name"], call["ok"]) for call in result["tool_calls"]] == [
        ("database.execute", False),
        ("database.backup", True),
        ("database.execute", True),
    ]
    assert prices(tmp_path) == [2.0, 20.0, 50.0]
    assert (tmp_path / f"{DB_NAME}.bak").exists()


def test_a_broken_behavior_block_is_refused_naming_file_and_key(tmp_path: Path) -> None:
    broken = json.loads(json.dumps(CONFIG))
    broken["security"]["behavior"]["rule_definitions"][0]["acton"] = "block"
    config = setup(tmp_path, broken)
    ran = run_cli(
        ["bhrain", "run", "--config", str(config), "--input", "Double all prices"],
        tmp_path,
        env={"PYTHONPATH": str(REPO_ROOT)},
    )
    assert ran.code == 2
    assert (
        ran.err.strip()
        .splitlines()[-1]
        .startswith(
            f"error: {config}: security.behavior.rule_definitions[0].acton: extra inputs are not permitted"
        )
    )
    assert prices(tmp_path) == [1.0, 10.0, 25.0]


def test_relative_paths_in_rules_resolve_against_the_configured_workdir(tmp_path: Path) -> None:
    # The file exists only in the agent's workdir, not where bhrain was started: a rule that looks at the
    # disk must see what the agent's tools see.
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "present.txt").write_text("here\n", encoding="utf-8")
    script = [
        {
            "text": "Looking.",
            "tool_calls": [{"name": "write", "arguments": {"file_path": "present.txt", "content": "x"}}],
        },
        {
            "choose": [
                {"if_contains": ["[BEHAVIOR BLOCKED] no_clobber"], "text": "blocked as expected"},
                {"text": "the rule did not see the file"},
            ]
        },
    ]
    config = {
        "skill": "act",
        "atom": "scripted",
        "script": "script.yaml",
        "tools": "files",
        "workdir": "work",
        "security": {
            "behavior": {
                "rule_definitions": [
                    {
                        "id": "no_clobber",
                        "trigger": "write",
                        "action": "block",
                        "condition": {"target_exists_on_disk": True},
                        "message": "{target} exists; read it first.",
                    }
                ]
            }
        },
    }
    (tmp_path / "script.yaml").write_text(yaml.safe_dump(script), encoding="utf-8")
    (tmp_path / "bhrain.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    ran = run_cli(
        ["bhrain", "run", "--config", str(tmp_path / "bhrain.yaml"), "--input", "write it", "--json"],
        tmp_path,
    )
    assert ran.code in (0, 2), ran.err
    assert json.loads(ran.out)["result"] == "blocked as expected"
    assert (tmp_path / "work" / "present.txt").read_text(encoding="utf-8") == "here\n"


def test_failed_edits_in_a_bhrain_run_get_no_edit_reminders(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("x = 1\n", encoding="utf-8")
    edits = [
        {
            "text": f"Edit {n}.",
            "tool_calls": [
                {
                    "name": "edit",
                    "arguments": {"file_path": "app.py", "old_string": f"nope{n}", "new_string": "y"},
                }
            ],
        }
        for n in range(3)
    ]
    script = [{"text": "Reading.", "tool_calls": [{"name": "read", "arguments": {"file_path": "app.py"}}]}]
    (tmp_path / "script.yaml").write_text(yaml.safe_dump([*script, *edits, "Done."]), encoding="utf-8")
    config = {"security": {"behavior": {"profile": "coding"}}}
    (tmp_path / "bhrain.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    ran = run_cli(
        ["bhrain", "run", "--skill", "act", "--atom", "scripted", "--script", "script.yaml", "--input", "x"]
        + ["--config", "bhrain.yaml", "--trace", "t.json"],
        tmp_path,
    )
    assert ran.code == 0, ran.err
    results = [m for m in json.loads((tmp_path / "t.json").read_text())["messages"] if m["role"] == "tool"]
    assert [m["is_error"] for m in results] == [False, True, True, True]
    assert all("old_string not found" in m["text"] and "BEHAVIOR" not in m["text"] for m in results[1:])
    assert (tmp_path / "app.py").read_text(encoding="utf-8") == "x = 1\n"


def test_a_block_rule_on_commands_blocks_what_the_reader_cannot_be_sure_of(tmp_path: Path) -> None:
    """The audit: a `command_matches ^rm` block rule let both of these delete their directory (the reader
    said it was unsure; the engine ignored it). A warn rule on the same pattern stays quiet: uncertainty
    blocks only when the rule blocks. Real bash runs what the engine lets through."""
    for name in ("victim1", "victim2", "kept"):
        (tmp_path / name).mkdir()
    commands = [
        "echo $($($($($($($(rm -rf victim1)))))))",
        "X=rm; $X -rf victim2",
        "ls kept",  # read with confidence, no rm: runs
        "rm -rf kept",  # found: blocked by the rule itself
    ]
    script = [
        {
            "text": "Cleaning.",
            "tool_calls": [{"name": "bash", "arguments": {"command": c}} for c in commands],
        },
        {"text": "done"},
    ]
    rule = {"command_matches": {"param": "command", "pattern": "^rm"}}
    config = {
        "skill": "act",
        "atom": "scripted",
        "script": "script.yaml",
        "tools": "bash",
        "security": {
            "behavior": {
                "rule_definitions": [
                    {"id": "no_rm", "trigger": "bash", "action": "block", "condition": rule},
                    {"id": "mind_rm", "trigger": "bash", "action": "warn", "condition": rule},
                ]
            }
        },
    }
    (tmp_path / "script.yaml").write_text(yaml.safe_dump(script), encoding="utf-8")
    (tmp_path / "bhrain.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    trace = tmp_path / "trace.json"
    ran = run_cli(
        ["bhrain", "run", "--config", "bhrain.yaml", "--input", "clean up", "--trace", str(trace)], tmp_path
    )
    assert ran.code == 2, ran.err  # the task ended right after denied calls
    calls = json.loads(trace.read_text(encoding="utf-8"))["iterations"][0]["tool_calls"]
    assert [c["status"] for c in calls] == ["denied", "denied", "ok", "denied"]
    for call in calls[:2]:
        assert call["output"].startswith("[BEHAVIOR BLOCKED] no_rm: ")
        assert "could not be read with confidence" in call["output"]
    assert "[BEHAVIOR WARNING]" not in calls[2]["output"]
    assert "could not be read with confidence" not in calls[3]["output"]
    assert all((tmp_path / name).is_dir() for name in ("victim1", "victim2", "kept"))
