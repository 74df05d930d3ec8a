"""Built-in tools on real files and real bash: seed 000 usecases 3 and 4, boundary 3."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from routedriver.brain.hooks import ToolOutcome
from routedriver.brain.tools import builtin_tools, parse_tool_sets
from routedriver.brain.tools.base import Tool, ToolContext, ToolSettings, argument_problem
from routedriver.errors import Refused


def tools(workdir: Path, **settings: object) -> dict[str, Tool]:
    found = builtin_tools(["files", "bash"], ToolSettings(workdir=workdir, **settings))  # type: ignore[arg-type]
    return {t.name: t for t in found}


def run(tool: Tool, workdir: Path, limit: int = 30_000, **args: object) -> ToolOutcome:
    result = tool.run(args, ToolContext(workdir, max_output_chars=limit))
    assert isinstance(result, ToolOutcome)
    return result


# -- files ---------------------------------------------------------------------------------------------------
def test_read_returns_contents_and_errors_say_what_to_do(tmp_path: Path) -> None:
    t = tools(tmp_path)
    (tmp_path / "a.txt").write_text("line one\nline two\n", encoding="utf-8")
    assert run(t["read"], tmp_path, file_path="a.txt") == ToolOutcome(
        True, "line one\nline two\n", {"bytes": 18, "truncated_chars": 0}
    )
    missing = run(t["read"], tmp_path, file_path="nope.txt")
    assert not missing.ok and missing.output.startswith("file not found: nope.txt; check the path")
    assert "is a directory" in run(t["read"], tmp_path, file_path=".").output
    (tmp_path / "bin").write_bytes(b"\x00\x01\x02")
    assert "binary file" in run(t["read"], tmp_path, file_path="bin").output
    assert run(t["read"], tmp_path, file_path=str(tmp_path / "a.txt")).ok  # absolute paths work too


def test_read_truncates_large_files_with_a_notice(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("x" * 5000, encoding="utf-8")
    result = run(tools(tmp_path)["read"], tmp_path, limit=1000, file_path="big.txt")
    assert result.ok and result.output.startswith("x" * 1000)
    assert "[output truncated: 4,000 more characters not shown (limit 1,000)" in result.output
    assert "grep" in result.output


def test_write_creates_directories_and_replaces_atomically(tmp_path: Path) -> None:
    t = tools(tmp_path)
    created = run(t["write"], tmp_path, file_path="deep/dir/new.txt", content="hello\n")
    assert created.ok and created.output == "created deep/dir/new.txt: 6 bytes, 1 lines"
    assert (tmp_path / "deep/dir/new.txt").read_text() == "hello\n"
    script = tmp_path / "run.sh"
    script.write_text("old", encoding="utf-8")
    script.chmod(0o755)
    assert run(t["write"], tmp_path, file_path="run.sh", content="new").output.startswith("overwrote run.sh")
    assert script.read_text() == "new" and os.stat(script).st_mode & 0o777 == 0o755
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name]


def test_edit_replaces_one_exact_occurrence_and_shows_the_result(tmp_path: Path) -> None:
    t = tools(tmp_path)
    path = tmp_path / "code.py"
    path.write_text("def f():\n    return 1\n\ndef g():\n    return 1\n", encoding="utf-8")
    result = run(
        t["edit"],
        tmp_path,
        file_path="code.py",
        old_string="def g():\n    return 1",
        new_string="def g():\n    return 2",
    )
    assert result.ok
    assert path.read_text().endswith("def g():\n    return 2\n")
    assert "     5\t    return 2" in result.output
    twice = run(t["edit"], tmp_path, file_path="code.py", old_string="return", new_string="yield")
    assert not twice.ok and "occurs 2 times" in twice.output
    absent = run(t["edit"], tmp_path, file_path="code.py", old_string="return 3", new_string="x")
    assert not absent.ok and "not found" in absent.output
    assert "identical" in run(t["edit"], tmp_path, file_path="code.py", old_string="a", new_string="a").output
    assert (
        "file not found" in run(t["edit"], tmp_path, file_path="no.py", old_string="a", new_string="b").output
    )


def test_glob_finds_paths_and_skips_vcs_directories(tmp_path: Path) -> None:
    for name in ("src/a.py", "src/pkg/b.py", "docs/c.md", ".git/d.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("", encoding="utf-8")
    t = tools(tmp_path)
    assert run(t["glob"], tmp_path, pattern="**/*.py").output == "src/a.py\nsrc/pkg/b.py"
    assert run(t["glob"], tmp_path, pattern="*.py", path="src").output == "src/a.py"
    none = run(t["glob"], tmp_path, pattern="*.rs")
    assert none.ok and none.output == "no files match '*.rs' under ."
    assert not run(t["glob"], tmp_path, pattern="*", path="missing").ok


def test_grep_returns_paths_line_numbers_and_lines(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src/a.py").write_text("import os\nTODO: fix\nx = 1\n", encoding="utf-8")
    (tmp_path / "b.md").write_text("no todo here\nTODO later\n", encoding="utf-8")
    (tmp_path / "blob.bin").write_bytes(b"TODO\x00")
    t = tools(tmp_path)
    assert run(t["grep"], tmp_path, pattern="^TODO").output == "b.md:2:TODO later\nsrc/a.py:2:TODO: fix"
    assert run(t["grep"], tmp_path, pattern="TODO", path="src").output == "src/a.py:2:TODO: fix"
    assert run(t["grep"], tmp_path, pattern="nothing-matches").output.startswith("no matches")
    bad = run(t["grep"], tmp_path, pattern="(unclosed")
    assert not bad.ok and "invalid regular expression" in bad.output


# -- bash ----------------------------------------------------------------------------------------------------
def test_bash_captures_stdout_stderr_and_exit_code(tmp_path: Path) -> None:
    result = run(tools(tmp_path)["bash"], tmp_path, command="echo out; echo err >&2; pwd")
    assert result.ok
    assert result.output == f"exit code: 0\nstdout:\nout\n{tmp_path}\n\nstderr:\nerr\n"
    assert result.data["exit_code"] == 0


def test_bash_failure_returns_error_output_and_the_exit_code(tmp_path: Path) -> None:
    result = run(tools(tmp_path)["bash"], tmp_path, command="ls /definitely/missing")
    assert not result.ok
    assert result.data["exit_code"] == 2 and "exit code: 2" in result.output
    assert "No such file" in result.output


def test_bash_timeout_kills_the_process_group_and_keeps_partial_output(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    started = time.monotonic()
    result = run(
        tools(tmp_path)["bash"],
        tmp_path,
        command=f"echo started; (echo $BASHPID > {pidfile}; exec sleep 60) & sleep 30",
        timeout=0.5,
    )
    assert time.monotonic() - started < 10
    assert not result.ok and result.data["timed_out"]
    assert result.output.startswith("timed out after 0.5 s")
    assert "started" in result.output
    child = int(pidfile.read_text())
    deadline = time.monotonic() + 5  # the kill was sent; give init a moment to reap the orphan
    while _alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(child)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(") ")[-1].startswith("Z"))


def test_bash_timeout_is_capped_by_the_configured_maximum(tmp_path: Path) -> None:
    bash = tools(tmp_path, bash_max_timeout_s=0.3)["bash"]
    result = run(bash, tmp_path, command="sleep 5", timeout=100)
    assert result.data["timed_out"] and "timed out after 0.3 s" in result.output
    assert "positive" in run(bash, tmp_path, command="true", timeout=0).output


def test_bash_large_output_is_truncated_with_a_notice_that_suggests_narrowing(tmp_path: Path) -> None:
    result = run(tools(tmp_path)["bash"], tmp_path, limit=2000, command="seq 1 100000")
    assert result.ok
    assert len(result.output) < 2600
    assert "[stdout truncated:" in result.output and "more not shown" in result.output
    assert "head, tail or grep" in result.output


def test_tool_sets_parse_and_refuse_unknown_names() -> None:
    assert parse_tool_sets("files, bash") == ["files", "bash"]
    assert parse_tool_sets("none") == []
    with pytest.raises(Refused) as caught:  # an unknown tool set must be refused
        parse_tool_sets("files,shell")
    assert "unknown tool set shell" in caught.value.line() and "files, bash, websearch" in caught.value.line()


def test_read_only_sets_keep_only_reading_tools(tmp_path: Path) -> None:
    names = [
        t.name for t in builtin_tools(["files", "websearch"], ToolSettings(workdir=tmp_path), read_only=True)
    ]
    assert names == ["read", "glob", "grep", "websearch"]


def test_argument_checks_catch_what_models_get_wrong() -> None:
    spec = {
        "type": "object",
        "properties": {"n": {"type": "integer"}, "s": {"type": "string"}},
        "required": ["s"],
        "additionalProperties": False,
    }
    assert argument_problem(spec, {"s": "x", "n": 3}) is None
    assert argument_problem(spec, {"n": 3}) == "missing required argument: s"
    assert argument_problem(spec, {"s": "x", "extra": 1}) == "unknown argument: extra"
    assert argument_problem(spec, {"s": 5}) == "argument 's' must be string, not int"
    assert argument_problem(spec, {"s": "x", "n": True}) == "argument 'n' must be integer, not boolean"
