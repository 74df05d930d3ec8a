"""``bhrain`` as a user runs it: the installed console script, real files, no terminal.

Seed 000 usecases 11 and 13, boundaries 1 and 2, and the flags, config file, JSON and trace contracts.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.brain.helpers import bhrain, call, scripted_run, write_script
from tests.fakes.llm_servers import AnthropicServer


def scripted(tmp_path: Path, turns: list[object], **options: object) -> list[str]:
    return scripted_run(write_script(tmp_path / "script.json", turns, **options))


def test_help_lists_subcommands_without_loading_the_sdks(tmp_path: Path) -> None:
    ran = bhrain(["--help"], tmp_path)
    assert ran.code == 0
    assert "run     Run the brain on one task" in ran.out and "behave" in ran.out
    probe = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, routedriver.cli.bhrain as m; "
            "print(sorted(n for n in ('anthropic', 'openai', 'routedriver.brain.behavior.engine', "
            "'routedriver.brain.loop') if n in sys.modules))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert probe.stdout.strip() == "[]"
    run_help = bhrain(["run", "--help"], tmp_path)
    for flag in (
        "--skill",
        "--atom",
        "--input",
        "--input-file",
        "--arch",
        "--model",
        "--max-iterations",
        "--tools",
        "--permissions",
        "--toolbox",
        "--memory",
        "--json",
        "--trace",
        "--script",
        "--config",
        "--base-url",
        "--rubric",
        "--temperature",
        "--max-tokens",
        "--verbose",
    ):
        assert flag in run_help.out, flag
    assert bhrain(["behave", "--help"], tmp_path).code == 0


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["run", "--atom", "scripted", "--input", "x"], "error: missing --skill; choose act, ask or review"),
        (
            ["run", "--skill", "act", "--input", "x"],
            "error: missing --atom; choose one of claude, qwen, scripted",
        ),
        (["run", "--skill", "act", "--atom", "claude"], "error: missing --input or --input-file"),
        (
            ["run", "--skill", "fly", "--atom", "claude", "--input", "x"],
            "error: unknown skill 'fly'; the skills are act, ask, review; see bhrain run --help",
        ),
        (
            ["run", "--skill", "act", "--atom", "gpt5", "--input", "x"],
            "error: unknown atom 'gpt5'; available atoms: claude, qwen, scripted",
        ),
        (
            ["run", "--skill", "act", "--atom", "scripted", "--input", "x", "--arch", "v2"],
            "error: unknown arch 'v2'; bhrain implements bhrain.struct.v1",
        ),
        (
            ["run", "--skill", "act", "--atom", "scripted", "--input-file", "missing.md"],
            "error: input file missing.md not found",
        ),
        (
            ["run", "--skill", "act", "--atom", "scripted", "--input", "x", "--tools", "files,shell"],
            "error: unknown tool set shell",
        ),
        (
            ["run", "--skill", "act", "--atom", "scripted", "--input", "x", "--max-iterations", "0"],
            "error: Invalid value for '--max-iterations'",
        ),
        (
            ["run", "--skill", "act", "--atom", "scripted", "--input", "x", "--temperature", "nan"],
            "error: Invalid value for '--temperature': 'nan' is not a finite number",
        ),
        (
            ["run", "--skill", "ask", "--atom", "os:path", "--input", "x"],
            "error: atom 'os:path' is a module, not a ChatModel or a factory of one; point --atom at",
        ),
        (
            ["run", "--skill", "ask", "--atom", "os:getcwd", "--input", "x"],
            "error: atom 'os:getcwd' failed to build: TypeError: ",
        ),
    ],
)
def test_bad_invocations_get_one_helpful_line_and_exit_2(
    tmp_path: Path, args: list[str], expected: str
) -> None:
    if "scripted" in args:
        args = [*args, "--script", str(write_script(tmp_path / "s.json", ["never"]))]
    ran = bhrain(args, tmp_path)
    assert ran.code == 2
    assert ran.err.startswith(expected), ran.err
    assert len(ran.err.strip().splitlines()) == 1 and ran.out == ""


def test_empty_input_asks_for_clarification_without_starting_a_loop(tmp_path: Path) -> None:
    with AnthropicServer() as server:
        ran = bhrain(
            [
                "run",
                "--skill",
                "act",
                "--atom",
                "claude",
                "--input",
                "   \n",
                "--base-url",
                server.base_url,
                "--json",
            ],
            tmp_path,
        )
        assert server.requests == []
    assert ran.code == 2
    out = json.loads(ran.out)
    assert out["stop_reason"] == "clarification_needed" and out["iterations"] == 0
    assert out["result"].startswith("The input is empty") and "What should I do?" in out["result"]


def test_oversized_input_is_refused_before_any_call_naming_both_sizes(tmp_path: Path) -> None:
    config = tmp_path / "bhrain.yaml"
    config.write_text("context_window: 2000\n", encoding="utf-8")
    (tmp_path / "huge.md").write_text("word " * 4000, encoding="utf-8")
    with AnthropicServer() as server:
        ran = bhrain(
            [
                "run",
                "--skill",
                "ask",
                "--atom",
                "claude",
                "--input-file",
                "huge.md",
                "--config",
                str(config),
                "--base-url",
                server.base_url,
            ],
            tmp_path,
            env={"ANTHROPIC_API_KEY": "sk-1234567"},
        )
        assert server.requests == []
    assert ran.code == 2
    assert ran.err.startswith("error: the input is too large for the claude atom: about ")
    assert "but its context window is 2,000 tokens; shorten the input" in ran.err


def test_json_output_shape(tmp_path: Path) -> None:
    args = scripted(
        tmp_path,
        [
            {
                "text": "checking",
                "tool_calls": [call("bash", command="echo hi"), call("read", file_path="nope")],
                "usage": {"input_tokens": 100, "output_tokens": 20},
            },
            {"text": "all done", "usage": {"input_tokens": 150, "output_tokens": 10}},
        ],
    )
    ran = bhrain([*args, "--input", "do it", "--json"], tmp_path)
    assert ran.code == 0 and ran.err == ""
    out = json.loads(ran.out)
    assert out["result"] == "all done" and out["iterations"] == 2
    assert out["usage"] == {
        "input_tokens": 250,
        "output_tokens": 30,
        "cache_read_tokens": 0,
        "cache_write_tokens": 0,
    }
    assert isinstance(out["elapsed_s"], float) and out["elapsed_s"] >= 0
    assert [(c["name"], c["input"], c["ok"]) for c in out["tool_calls"]] == [
        ("bash", {"command": "echo hi"}, True),
        ("read", {"file_path": "nope"}, False),
    ]
    assert (out["stop_reason"], out["exit_code"], out["skill"], out["atom"]) == ("done", 0, "act", "scripted")
    assert out["context_tokens"] > 0


def test_text_output_is_the_result_only_and_quiet_stderr_without_a_terminal(tmp_path: Path) -> None:
    ran = bhrain([*scripted(tmp_path, ["The answer."]), "--input", "q"], tmp_path)
    assert (ran.code, ran.out, ran.err) == (0, "The answer.\n", "")


def test_verbose_logs_tool_calls_iterations_tokens_and_totals(tmp_path: Path) -> None:
    args = scripted(tmp_path, [{"tool_calls": [call("bash", command="echo visible-output")]}, "done"])
    ran = bhrain([*args, "--input", "q", "-v"], tmp_path)
    assert ran.out == "done\n"
    assert "bhrain: iteration 1: about " in ran.err and "context tokens" in ran.err
    assert 'bhrain: → bash {"command": "echo visible-output"}' in ran.err
    assert "bhrain: ← bash ok" in ran.err and "visible-output" in ran.err
    assert "bhrain: finished (done): 2 iterations," in ran.err and "input +" in ran.err and " s" in ran.err


def test_max_iterations_prints_the_partial_response_with_an_explanation(tmp_path: Path) -> None:
    busy = {"text": "Found 3 of 5 items so far.", "tool_calls": [call("bash", command="true")]}
    ran = bhrain([*scripted(tmp_path, [busy] * 3), "--input", "q", "--max-iterations", "2"], tmp_path)
    assert ran.code == 2
    assert ran.out.startswith(
        "Found 3 of 5 items so far.\n\n[bhrain stopped early] stopped after 2 iterations"
    )
    assert "Raise --max-iterations" in ran.out


def test_trace_is_written_after_every_iteration(tmp_path: Path) -> None:
    args = scripted(
        tmp_path,
        [
            {"text": "first", "tool_calls": [call("bash", command="true")]},
            {"tool_calls": [call("read", file_path="trace.json")]},  # reads the trace as it stands mid-run
            {"text": "done"},
        ],
    )
    ran = bhrain([*args, "--input", "q", "--trace", "trace.json", "--json"], tmp_path)
    assert ran.code == 0, ran.err
    final = json.loads((tmp_path / "trace.json").read_text())
    mid_run = json.loads(next(m["text"] for m in final["messages"][3:] if m["role"] == "tool"))
    assert mid_run["status"] == "running" and [i["iteration"] for i in mid_run["iterations"]] == [1]
    assert final["status"] == "done" and [i["iteration"] for i in final["iterations"]] == [1, 2, 3]
    assert final["totals"]["iterations"] == 3 and final["result"] == "done"
    assert final["iterations"][0]["tool_calls"][0]["output"].startswith("exit code: 0")
    assert all(i["context_tokens"] > 0 for i in final["iterations"])
    assert final["arch"] == "bhrain.struct.v1" and "## Tools" in final["system"]
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name]


def test_a_trace_a_command_replaces_with_a_link_is_never_written_through(tmp_path: Path) -> None:
    # bhrain writes the trace from outside the sandbox: a command that swaps the trace (or its folder) for a
    # symlink must not get bhrain to write wherever it points, past the rules and outside the workdir.
    work, outside = tmp_path / "work", tmp_path / "outside"
    (work / "traces").mkdir(parents=True)
    outside.mkdir()
    (outside / "bashrc").write_text("keep me\n", encoding="utf-8")
    swap = (
        f"rm -f traces/run.json && ln -s {outside}/bashrc traces/run.json && "
        f"mv traces kept && ln -s {outside} traces"
    )
    args = scripted(work, [{"text": "x", "tool_calls": [call("bash", command=swap)]}, "done"])
    ran = bhrain([*args, "--input", "q", "--trace", "traces/run.json", "--sandbox", "on", "--json"], work)
    assert ran.code == 0, ran.err
    assert (outside / "bashrc").read_text(encoding="utf-8") == "keep me\n"
    assert sorted(path.name for path in outside.iterdir()) == ["bashrc"]
    # Every write after the swap went to the folder the run started with, as a file of its own.
    kept = work / "kept" / "run.json"
    assert not kept.is_symlink() and json.loads(kept.read_text())["status"] == "done"


def test_a_trace_path_that_is_a_link_is_refused_before_the_run(tmp_path: Path) -> None:
    # A link an earlier run's command left where the next run's trace goes is not followed.
    (tmp_path / "target").write_text("keep me\n", encoding="utf-8")
    (tmp_path / "t.json").symlink_to(tmp_path / "target")
    ran = bhrain([*scripted(tmp_path, ["done"]), "--input", "x", "--trace", "t.json"], tmp_path)
    assert (ran.code, ran.out) == (2, "")
    assert ran.err == (
        "error: cannot write the trace to t.json: it is a symbolic link, not a regular file; give --trace a "
        "file path in a writable directory\n"
    )
    assert (tmp_path / "target").read_text(encoding="utf-8") == "keep me\n"
    # Nor is a link among its folders inside the working directory (outside it, links are the user's).
    outside = tmp_path.parent / f"{tmp_path.name}-outside"
    outside.mkdir()
    (tmp_path / "traces").symlink_to(outside)
    ran = bhrain([*scripted(tmp_path, ["done"]), "--input", "x", "--trace", "traces/t.json"], tmp_path)
    assert (ran.code, ran.out) == (2, "")
    assert ran.err == (
        f"error: cannot write the trace to traces/t.json: {tmp_path / 'traces'} is a symbolic link in the "
        "working directory, where a command may have put it; give --trace a file path in a writable "
        "directory\n"
    )
    assert list(outside.iterdir()) == []


def test_a_lone_surrogate_from_the_model_is_traced_as_sent_and_tracing_goes_on(tmp_path: Path) -> None:
    """ "\udcff" is valid JSON that any API or MCP server can send, but no UTF-8: every later trace write had
    failed, the trace frozen at status running and the run ending exit 1 (and an answer holding one was an
    internal error on stdout)."""
    odd = "echo kept # \udcff"
    args = scripted(
        tmp_path,
        [
            {"tool_calls": [call("bash", command=odd)]},
            {"tool_calls": [call("bash", command="echo after > after.txt")]},
            {"text": "done \ud83d"},
        ],
    )
    ran = bhrain([*args, "--input", "q", "--trace", "trace.json"], tmp_path)
    assert ran.code == 0, ran.err
    text = (tmp_path / "trace.json").read_text(encoding="utf-8")  # strict UTF-8: the escapes are ASCII
    trace = json.loads(text)
    commands = [c["input"]["command"] for i in trace["iterations"] for c in i["tool_calls"]]
    assert (trace["status"], commands) == ("done", [odd, "echo after > after.txt"])
    assert trace["result"] == "done \ud83d" and "\\udcff" in text
    assert ran.out == "done ?\n"  # stdout has no bytes for it either: replaced, not an internal error


def test_secrets_never_reach_logs_traces_or_output(tmp_path: Path) -> None:
    args = scripted(
        tmp_path, [{"tool_calls": [call("bash", command="echo token=$MY_SERVICE_TOKEN")]}, {"text": "echoed"}]
    )
    ran = bhrain(
        [*args, "--input", "q", "--trace", "t.json", "--json", "-vv"],
        tmp_path,
        env={"MY_SERVICE_TOKEN": "tok-very-secret-1234"},
    )
    everything = ran.out + ran.err + (tmp_path / "t.json").read_text()
    assert "tok-very-secret-1234" not in everything
    assert "[REDACTED:MY_SERVICE_TOKEN]" in (tmp_path / "t.json").read_text()


def test_input_files_and_stdin(tmp_path: Path) -> None:
    (tmp_path / "task.md").write_text("Task from a file.", encoding="utf-8")
    args = scripted(tmp_path, ["ok"])
    ran = bhrain([*args, "--input-file", "task.md", "--trace", "t.json"], tmp_path)
    assert ran.code == 0
    assert json.loads((tmp_path / "t.json").read_text())["messages"][0]["text"] == "Task from a file."
    piped = bhrain(
        [*scripted(tmp_path, ["ok"]), "--input", "Intro.", "--input-file", "-", "--trace", "t.json"],
        tmp_path,
        input="from stdin",
    )
    assert piped.code == 0
    assert (
        json.loads((tmp_path / "t.json").read_text())["messages"][0]["text"]
        == "Intro.\n\n=== stdin ===\nfrom stdin"
    )


def test_config_file_keys_relative_paths_and_flags_winning(tmp_path: Path) -> None:
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    write_script(conf_dir / "script.json", [{"tool_calls": [call("bash", command="rm -f x")]}, "config run"])
    (conf_dir / "bhrain.yaml").write_text(
        "atom: scripted\nscript: script.json\nskill: ask\nmax_iterations: 4\ntools: [bash]\n"
        "security:\n  permissions:\n    deny: ['Bash(rm:*)']\n",
        encoding="utf-8",
    )
    ran = bhrain(["run", "--config", "conf/bhrain.yaml", "--input", "q", "--json"], tmp_path)
    out = json.loads(ran.out)
    assert out["result"] == "config run" and out["skill"] == "ask"
    assert out["tool_calls"][0]["status"] == "denied" and ran.code == 2
    flags_win = bhrain(
        [
            "run",
            "--config",
            "conf/bhrain.yaml",
            "--input",
            "q",
            "--json",
            "--skill",
            "act",
            "--permissions",
            str(_allow_all(tmp_path)),
        ],
        tmp_path,
    )
    out = json.loads(flags_win.out)
    assert out["skill"] == "act" and out["tool_calls"][0]["status"] == "ok"


@pytest.mark.parametrize(
    ("trace", "problem"),
    [
        ("afile/t.json", "afile is not a directory"),
        (".", "it is a directory"),
        ("sub", "it is a directory"),
        ("/proc/t.json", "no such file or directory"),
    ],
)
def test_a_trace_path_that_cannot_be_written_is_refused_before_the_run_acts(
    tmp_path: Path, trace: str, problem: str
) -> None:
    (tmp_path / "afile").write_text("keep me\n", encoding="utf-8")
    (tmp_path / "sub").mkdir()
    act = scripted(tmp_path, [{"tool_calls": [call("write", file_path="hello.txt", content="hi")]}, "done"])
    ran = bhrain([*act, "--input", "x", "--trace", trace, "--json"], tmp_path)
    assert (ran.code, ran.out) == (2, "")
    assert ran.err == (
        f"error: cannot write the trace to {trace}: {problem}; "
        "give --trace a file path in a writable directory\n"
    )
    assert not (tmp_path / "hello.txt").exists()  # refused before the first model call
    assert (tmp_path / "afile").read_text(encoding="utf-8") == "keep me\n"


def test_a_trace_that_cannot_be_written_at_the_end_is_one_clean_line(tmp_path: Path) -> None:
    (tmp_path / "traces").mkdir()
    # The agent itself replaces the trace's folder with a file mid-run: the last write fails.
    breaking = {"tool_calls": [call("bash", command="rm -r traces && touch traces")]}
    ran = bhrain(
        [*scripted(tmp_path, [breaking, "done"]), "--input", "x", "--trace", "traces/t.json", "--json"],
        tmp_path,
    )
    assert ran.code == 1
    out = json.loads(ran.out)  # the result is still printed
    assert out["result"] == "done" and out["tool_calls"][0]["ok"] is True
    expected = "error: cannot write the trace to traces/t.json: traces is not a directory; check the disk"
    assert out["error"].startswith(expected)
    assert [line for line in ran.err.splitlines() if line.startswith("error:")] == [out["error"]]
    assert "internal error" not in ran.err and "Traceback" not in ran.err


@pytest.mark.parametrize(
    ("turn", "expected"),
    [
        ({"text": "hi", "usage": {"input_tokens": "abc"}}, "usage: input_tokens must be a whole number"),
        ({"text": "hi", "usage": {"output_tokens": -1}}, "usage: output_tokens must be a whole number"),
        ({"text": "hi", "delay_s": -1}, "delay_s must be a number of seconds, 0 or more, not -1"),
        ({"text": "hi", "delay_s": "soon"}, "delay_s must be a number of seconds"),
        ({"text": "hi", "stop_reason": 3}, "stop_reason must be a word such as end_turn"),
    ],
)
def test_bad_script_turns_are_refused_at_load(tmp_path: Path, turn: dict[str, Any], expected: str) -> None:
    ran = bhrain([*scripted(tmp_path, ["fine", turn]), "--input", "x"], tmp_path)
    assert ran.code == 2 and ran.out == ""
    assert ran.err.startswith(f"error: {tmp_path / 'script.json'}: turn 2: {expected}")
    assert len(ran.err.strip().splitlines()) == 1


def _allow_all(tmp_path: Path) -> Path:
    path = tmp_path / "allow.json"
    path.write_text('{"permissions": {"allow": ["Bash"]}}', encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("atom: scripted\nmax_iteration: 3\n", "config file {path}: max_iteration is not a known key"),
        ("max_iterations: lots\n", "config file {path}: max_iterations must be an integer, not str"),
        ("security:\n  permission: {}\n", "config file {path}: security.permission is not a known key"),
        (
            "security:\n  permissions:\n    deny: ['Bash(rm:*)']\n    allw: []\n",
            "config file {path}: security.permissions.allw is not a permissions key",
        ),
        ("retry: {max_retries: 2, delay: 1}\n", "config file {path}: retry.delay is not valid"),
        ("- not a mapping\n", "config file {path} must be a mapping of settings"),
        # 0 is refused as the --max-iterations flag refuses it, not silently replaced by the default 30
        ("max_iterations: 0\n", "config file {path}: max_iterations must be a positive integer, not 0"),
        ("context_window: -5\n", "config file {path}: context_window must be a positive integer, not -5"),
        ("timeout_s: 0\n", "config file {path}: timeout_s must be a positive number, not 0"),
        # NaN passes every check (each comparison with it is false) and then limits nothing: with max_cost
        # .nan the run spent past any budget, with bash_timeout_s .nan commands never timed out.
        ("max_cost: .nan\n", "config file {path}: max_cost must be a finite number, not nan"),
        ("bash_timeout_s: .nan\n", "config file {path}: bash_timeout_s must be a finite number, not nan"),
        ("timeout_s: .inf\n", "config file {path}: timeout_s must be a finite number, not inf"),
        ("temperature: .nan\n", "config file {path}: temperature must be a finite number, not nan"),
        ("retry: {max_delay_s: .nan}\n", "config file {path}: retry.max_delay_s must be a finite number"),
        (
            "retry: {max_retry_after_s: .inf}\n",
            "config file {path}: retry.max_retry_after_s must be a finite",
        ),
        (
            "retry: {max_retries: 1.5}\n",
            "config file {path}: retry.max_retries must be an integer, not float",
        ),
        ("retry: {base_delay_s: -1}\n", "config file {path}: retry.base_delay_s must be 0 or more, not -1"),
        (
            "memory: {strategy: truncate, trigger_ratio: .nan}\n",
            "memory option trigger_ratio must be a number",
        ),
        ("memory: {strategy: truncate, target_ratio: x}\n", "memory option target_ratio must be a number"),
        ("memory: {condense_chars: true}\n", "memory option condense_chars must be a positive whole number"),
        (
            "security: {behavior: {classifier: {timeout: .nan}}}\n",
            "{path}: security.behavior.classifier.timeout: input should be a finite number",
        ),
        (
            "security: {behavior: {brain: {provider: qwen, model: m, config: {timeout: .inf}}}}\n",
            "{path}: security.behavior.brain.config: timeout must be a finite number, got inf",
        ),
        # YAML and JSON spell a NUL ("\0", "\u0000"); no path holds one (workdir's was an internal error).
        ('workdir: "a\\0b"\n', "config file {path}: workdir holds a NUL character, which no path can hold"),
        ('trace: "t\\0.json"\n', "config file {path}: trace holds a NUL character"),
        ('input_files: ["a\\0b"]\n', "config file {path}: input_files holds a NUL character"),
        ('security: {permissions: "p\\0.json"}\n', "config file {path}: security.permissions holds a NUL"),
    ],
)
def test_bad_config_files_name_the_file_and_key(tmp_path: Path, content: str, expected: str) -> None:
    path = tmp_path / "bhrain.yaml"
    path.write_text(content, encoding="utf-8")
    ran = bhrain([*scripted(tmp_path, ["never"]), "--config", str(path), "--input", "x"], tmp_path)
    assert ran.code == 2
    assert expected.format(path=path) in ran.err
    assert len(ran.err.strip().splitlines()) == 1


def test_repo_and_role_are_accepted_and_ignored(tmp_path: Path) -> None:
    ran = bhrain(
        [*scripted(tmp_path, ["fine"]), "--repo", "bhrain", "--role", "reviewer", "--input", "q"], tmp_path
    )
    assert (ran.code, ran.out) == (0, "fine\n")


def test_behavior_block_in_config_plugs_into_the_loop(tmp_path: Path) -> None:
    write_script(
        tmp_path / "s.json",
        [
            {
                "tool_calls": [
                    call("bash", command="echo backup"),
                    call("database__execute", query="DELETE FROM t"),
                ]
            },
            "done",
        ],
    )
    (tmp_path / "dbtools.py").write_text(
        "from routedriver.brain.toolbox import Toolbox\n"
        "from routedriver.brain.tools.base import Tool, schema\n"
        "box = Toolbox('database', [Tool('database.execute', 'Run SQL.', "
        "schema({'query': {'type': 'string'}}, ('query',)), lambda a, c: 'ran ' + a['query'])])\n",
        encoding="utf-8",
    )
    (tmp_path / "bhrain.yaml").write_text(
        "atom: scripted\nscript: s.json\nskill: act\ntools: [bash]\ntoolboxes: [dbtools:box]\n"
        "security:\n  behavior:\n    rule_definitions:\n"
        "      - id: backup_first\n        trigger: [database.execute]\n        when: pre_tool\n"
        "        action: block\n        message: \"Back up before '{param:query}'.\"\n",
        encoding="utf-8",
    )
    ran = bhrain(
        ["run", "--config", "bhrain.yaml", "--input", "clean the table", "--json", "--trace", "t.json"],
        tmp_path,
        env={"PYTHONPATH": str(tmp_path)},
    )
    out = json.loads(ran.out)
    assert [c["status"] for c in out["tool_calls"]] == ["ok", "denied"], ran.err
    blocked = [m for m in json.loads((tmp_path / "t.json").read_text())["messages"] if m["role"] == "tool"][1]
    assert "Back up before 'DELETE FROM t'." in blocked["text"]


@pytest.mark.parametrize(
    ("flag", "what"),
    [
        ("--config", "config file"),
        ("--permissions", "permissions file"),
        ("--script", "script file"),
        ("--rubric", "rubric"),
    ],
)
def test_a_named_file_that_is_not_utf8_is_refused_in_one_line(tmp_path: Path, flag: str, what: str) -> None:
    bad = tmp_path / "latin1.yaml"
    bad.write_bytes("caf\xe9: 1\n".encode("latin-1"))
    args = scripted(tmp_path, ["never"])
    if flag == "--script":
        args[args.index("--script") + 1] = str(bad)
    else:
        args += [flag, str(bad)]
    if flag == "--rubric":
        args[args.index("--skill") + 1] = "review"
    ran = bhrain([*args, "--input", "x"], tmp_path)
    assert (ran.code, ran.err) == (
        2,
        f"error: {what} {bad}: line 1: not UTF-8 text (byte 4); save it as UTF-8\n",
    )


@pytest.mark.parametrize("where", ["flag", "config"])
def test_a_mistyped_skill_points_at_the_run_help_and_lists_the_skills(tmp_path: Path, where: str) -> None:
    (tmp_path / "c.yaml").write_text("skill: revew\n", encoding="utf-8")
    chosen = ["--skill", "revew"] if where == "flag" else ["--config", "c.yaml"]
    ran = bhrain(["run", *chosen, "--atom", "claude", "--input", "x"], tmp_path)  # no key: refused first
    assert (ran.code, ran.out) == (2, "")
    assert ran.err == (
        "error: unknown skill 'revew' (did you mean review?); the skills are act, ask, review; "
        "see bhrain run --help\n"
    )


def test_the_run_flags_name_every_skill() -> None:
    from routedriver.brain.skills import SKILLS
    from routedriver.cli.bhrain import run_command

    (skill,) = [p for p in run_command.params if p.name == "skill"]
    assert skill.metavar == f"[{'|'.join(SKILLS)}]"


def test_usage_errors_of_a_subcommand_point_at_its_own_help(tmp_path: Path) -> None:
    ran = bhrain(["run", "--version"], tmp_path)  # --version belongs to bhrain itself
    assert ran.code == 2 and ran.err.rstrip().endswith("; see bhrain run --help")
    assert bhrain(["fly"], tmp_path).err == "error: No such command 'fly'; see bhrain --help\n"


def test_an_input_file_that_is_no_file_or_too_large_is_refused_in_one_line(tmp_path: Path) -> None:
    # --input-file is read through userfile: a FIFO is never waited on, a device never read, and a file
    # larger than userfile.MAX_BYTES (8 MiB) refused before a byte is read; stdin is capped the same way.
    import os

    os.mkfifo(tmp_path / "fifo.md")
    (tmp_path / "zero.md").symlink_to("/dev/zero")
    with (tmp_path / "huge.md").open("wb") as handle:
        handle.truncate(20 << 30)  # 20 GiB, sparse
    (tmp_path / "dir.md").mkdir()
    cases = {
        "fifo.md": "error: input file fifo.md: a named pipe (FIFO), not a regular file; make it a regular",
        "zero.md": "error: input file zero.md: a symlink to /dev/zero, a character device, not a regular",
        "huge.md": "error: input file huge.md: more than 8,388,608 bytes (21,474,836,480); an input file may",
        "dir.md": "error: input file dir.md: a directory, not a regular file",
    }
    for name, says in cases.items():
        ran = bhrain([*scripted(tmp_path, ["ok"]), "--input-file", name], tmp_path, timeout=60)
        assert (ran.code, ran.out) == (2, ""), (name, ran.err)
        assert ran.err.startswith(says) and ran.err.count("\n") == 1, ran.err
    flood = bhrain([*scripted(tmp_path, ["ok"]), "--input-file", "-"], tmp_path, input="x" * ((8 << 20) + 1))
    assert (flood.code, flood.err) == (
        2,
        "error: --input-file -: stdin holds more than 8,388,608 bytes; give bhrain a smaller input\n",
    )
    fine = bhrain([*scripted(tmp_path, ["ok"]), "--input-file", "-"], tmp_path, input="caf\xe9 ok")
    assert fine.code == 0, fine.err


def test_an_mcp_server_that_prints_garbage_costs_one_line_and_bhrain_names_it(tmp_path: Path) -> None:
    """The MCP SDK logs every stdout line it cannot read with its traceback (12 lines each, on stderr), and
    the run goes on without the server anyway: the SDK's complaint is one line, and bhrain's names the
    server."""
    chatty = {"command": "sh", "args": ["-c", "echo garbage; echo more garbage; echo still; sleep 30"]}
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"chatty": chatty}}), encoding="utf-8")
    ran = bhrain(
        [*scripted(tmp_path, ["done"]), "--input", "x", "--sandbox", "off", "--mcp-config", str(config)],
        tmp_path,
        env={"MCP_TIMEOUT": "2000"},
    )
    assert (ran.code, ran.out) == (0, "done\n")
    assert "Traceback" not in ran.err
    lines = ran.err.splitlines()
    assert lines[0].startswith("bhrain: mcp: Failed to parse JSONRPC message from server (ValidationError: ")
    assert lines[1].startswith("bhrain: mcp server chatty failed to start: no answer within 2 s")
    assert len(lines) == 2
