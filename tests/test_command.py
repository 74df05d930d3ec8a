"""The shared CLI error contract: one line, the right exit code, no traceback."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from routedriver.cli._command import Command, Group
from routedriver.errors import Malfunction, Refused
from tests.conftest import run_cli


@click.command(cls=Command)
@click.option("--mode", type=click.Choice(["ok", "refuse", "break", "crash", "code"]), required=True)
def sample(mode: str) -> int:
    if mode == "refuse":
        raise Refused("artifact not found", "run route.stone.get --stone x --say to see instructions")
    if mode == "break":
        raise Malfunction("review command timed out after 5s")
    if mode == "crash":
        raise RuntimeError("boom\nsecond line")
    if mode == "code":
        return 2
    click.echo("fine")
    return 0


@click.group(cls=Group)
def tool() -> None:
    """A group."""


@tool.command()
@click.argument("name")
def hello(name: str) -> int:
    if not name:
        raise Refused("empty name")
    click.echo(f"hello {name}")
    return 0


@pytest.fixture
def runner(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return CliRunner()


def test_success_returns_zero_and_prints_result(runner: CliRunner) -> None:
    result = runner.invoke(sample, ["--mode", "ok"])
    assert result.exit_code == 0
    assert result.stdout == "fine\n"


def test_refused_is_one_line_exit_2(runner: CliRunner) -> None:
    result = runner.invoke(sample, ["--mode", "refuse"])
    assert result.exit_code == 2
    assert result.stderr == (
        "error: artifact not found; run route.stone.get --stone x --say to see instructions\n"
    )
    assert result.stdout == ""


def test_malfunction_exits_1(runner: CliRunner) -> None:
    result = runner.invoke(sample, ["--mode", "break"])
    assert result.exit_code == 1
    assert result.stderr == "error: review command timed out after 5s\n"


def test_usage_error_is_one_line_exit_2(runner: CliRunner) -> None:
    result = runner.invoke(sample, ["--mode", "nope"], prog_name="route.stone.get")
    assert result.exit_code == 2
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith("error: ")
    assert "see route.stone.get --help" in result.stderr


def test_unexpected_exception_has_no_traceback_and_writes_crash_log(
    runner: CliRunner, tmp_path: Path
) -> None:
    result = runner.invoke(sample, ["--mode", "crash"])
    assert result.exit_code == 1
    assert "Traceback" not in result.stderr
    assert len(result.stderr.splitlines()) == 1
    assert "internal error: RuntimeError: boom second line" in result.stderr
    log = tmp_path / "cache" / "routedriver" / "crash.log"
    assert "Traceback" in log.read_text()


def test_callback_return_value_is_the_exit_code(runner: CliRunner) -> None:
    assert runner.invoke(sample, ["--mode", "code"]).exit_code == 2


def test_group_subcommands_share_the_contract(runner: CliRunner) -> None:
    assert runner.invoke(tool, ["hello", "you"]).stdout == "hello you\n"
    result = runner.invoke(tool, ["hello", ""])
    assert (result.exit_code, result.stderr) == (2, "error: empty name\n")
    result = runner.invoke(tool, ["nosuch"])
    assert result.exit_code == 2
    assert result.stderr.startswith("error: No such command")


def test_help_exits_zero(runner: CliRunner) -> None:
    result = runner.invoke(tool, ["--help"])
    assert result.exit_code == 0
    assert "hello" in result.stdout


def test_a_deleted_working_directory_is_one_line_not_a_crash(tmp_path: Path) -> None:
    import subprocess
    import sys

    gone = tmp_path / "gone"
    gone.mkdir()
    script = (
        "import os, sys; os.chdir(sys.argv[1]); os.rmdir(sys.argv[1]); "
        "sys.argv = ['route.stone.get', '--route', 'r']; "
        "from routedriver.cli.route_stone import get_main; get_main()"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(gone)], capture_output=True, text=True, check=False
    )
    assert done.returncode == 1
    assert (
        done.stderr
        == "error: the current directory no longer exists; cd into an existing directory and run it again\n"
    )


def test_a_crash_with_undecodable_bytes_in_argv_still_gets_one_line_and_a_crash_log(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os
    import sys

    odd = os.fsdecode(b"r\xff")  # a path argument that is not UTF-8, as Python holds it
    monkeypatch.setattr(sys, "argv", ["sample", "--mode", "crash", odd])
    result = runner.invoke(sample, ["--mode", "crash"])
    assert result.exit_code == 1
    assert result.exception is None or isinstance(result.exception, SystemExit)  # the handler held
    assert len(result.stderr.splitlines()) == 1
    assert "internal error: RuntimeError: boom second line; details in" in result.stderr
    log = (tmp_path / "cache" / "routedriver" / "crash.log").read_text(encoding="utf-8")
    assert "--mode crash r\\udcff" in log and "Traceback" in log


def test_a_crash_log_that_cannot_be_written_is_left_out_not_a_second_crash(
    runner: CliRunner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "blocked").write_text("a file where the cache directory should be", encoding="utf-8")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "blocked"))
    result = runner.invoke(sample, ["--mode", "crash"])
    assert result.exit_code == 1
    assert result.stderr == "error: internal error: RuntimeError: boom second line\n"


# Every option or argument that names a path, as a user could give it: a loop of links, a name too long for
# the system. Each gets one line and exit 2, never an internal error (Path.resolve and pathlib's
# predicates raised for both; see tests/test_path_questions.py).
PATH_ARGUMENTS = [
    ["route.bind", "--set", "{}"],
    ["route.init", "{}"],
    ["route.verify", "--allowed-signers", "{}"],
    ["route.verify", "--approvers", "{}"],
    ["behaviorci", "run", "{}"],
    ["behaviorci", "validate", "{}"],
    ["behaviorci", "init", "{}"],
    ["bhrain", "run", "--skill", "ask", "--atom", "scripted", "--input-file", "{}"],
    ["bhrain", "run", "--skill", "ask", "--atom", "scripted", "--input", "hi", "--config", "{}"],
    *(
        ["bhrain", "run", "--skill", "review", "--atom", "scripted", "--input", "hi", flag, "{}"]
        for flag in ("--permissions", "--mcp-config", "--script", "--rubric", "--trace")
    ),
]


@pytest.mark.parametrize("argv", PATH_ARGUMENTS, ids=[" ".join(argv[:-1]) for argv in PATH_ARGUMENTS])
def test_a_path_that_cannot_be_looked_at_is_one_line_not_a_crash(git_repo: Path, argv: list[str]) -> None:
    (git_repo / "loop").symlink_to("loop")
    for path in ("loop", "n" * 300):
        done = run_cli([part.replace("{}", path) for part in argv], git_repo)
        assert done.code == 2, (argv, path, done)
        assert done.err.startswith("error: ") and done.err.count("\n") == 1, (argv, path, done.err)
        assert "internal error" not in done.err, (argv, path, done.err)
