"""Built-in tools on real files and real bash: seed 000 usecases 3 and 4, boundary 3."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from routedriver.brain.dispatch import resolved_paths
from routedriver.brain.hooks import ToolOutcome
from routedriver.brain.tools import builtin_tools, parse_tool_sets, search
from routedriver.brain.tools.base import Tool, ToolContext, ToolSettings, argument_problem
from routedriver.brain.tools.search import open_directory, open_regular
from routedriver.errors import Refused
from routedriver.llm.types import ToolCall
from tests.brain.helpers import bhrain, call, make_loop, scripted_run, tool_results, write_script


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
    assert run(t["grep"], tmp_path, pattern="^TODO").output == (
        "b.md:2:TODO later\nsrc/a.py:2:TODO: fix\n[skipped: 1 binary file]"
    )
    assert run(t["grep"], tmp_path, pattern="TODO", path="src").output == "src/a.py:2:TODO: fix"
    assert run(t["grep"], tmp_path, pattern="nothing-matches").output.startswith("no matches")
    bad = run(t["grep"], tmp_path, pattern="(unclosed")
    assert not bad.ok and "invalid regular expression" in bad.output


def test_grep_gives_up_on_a_pattern_that_backtracks_without_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search past the call's time budget ends the call with an error the model reads, not a run that
    hangs (the budget is shortened here; the signal test in test_signals.py stops such a search too)."""
    monkeypatch.setattr(search, "GREP_SECONDS", 1.0)
    (tmp_path / "f.txt").write_text("a" * 80 + "b\n", encoding="utf-8")
    started = time.monotonic()
    slow = run(tools(tmp_path)["grep"], tmp_path, pattern="(a|aa)+$", path="f.txt")
    assert time.monotonic() - started < 10
    assert not slow.ok and slow.output.startswith("grep gave up after 1 s in f.txt"), slow.output


def test_edit_keeps_bytes_that_are_not_utf8_and_refuses_to_mix_encodings(tmp_path: Path) -> None:
    t = tools(tmp_path)
    latin1 = tmp_path / "l.txt"
    latin1.write_bytes(b"caf\xe9\nold\n")
    result = run(t["edit"], tmp_path, file_path="l.txt", old_string="old", new_string="new")
    assert result.ok and "caf\ufffd" in result.output  # shown as U+FFFD, written back as it was
    assert latin1.read_bytes() == b"caf\xe9\nnew\n"
    mixed = run(t["edit"], tmp_path, file_path="l.txt", old_string="new", new_string="né")
    assert not mixed.ok and "not UTF-8" in mixed.output and "iconv" in mixed.output
    unmatched = run(t["edit"], tmp_path, file_path="l.txt", old_string="caf\ufffd", new_string="cafe")
    assert not unmatched.ok and "not valid UTF-8" in unmatched.output
    assert latin1.read_bytes() == b"caf\xe9\nnew\n"


def test_edit_keeps_crlf_line_endings(tmp_path: Path) -> None:
    t = tools(tmp_path)
    crlf = tmp_path / "c.txt"
    crlf.write_bytes(b"one\r\ntwo\r\nthree\r\n")
    assert run(t["edit"], tmp_path, file_path="c.txt", old_string="two", new_string="2").ok
    assert crlf.read_bytes() == b"one\r\n2\r\nthree\r\n"
    # A model writes "\n" between lines; the file's own endings are matched and kept.
    multi = run(t["edit"], tmp_path, file_path="c.txt", old_string="2\nthree", new_string="2\n3\nfour")
    assert multi.ok and "     3\t3\n     4\tfour" in multi.output
    assert crlf.read_bytes() == b"one\r\n2\r\n3\r\nfour\r\n"


def test_write_and_edit_change_a_symlinks_target_and_keep_the_link(tmp_path: Path) -> None:
    t = tools(tmp_path)
    real, link = tmp_path / "real.txt", tmp_path / "link.txt"
    real.write_text("old\n", encoding="utf-8")
    link.symlink_to("real.txt")
    assert run(t["edit"], tmp_path, file_path="link.txt", old_string="old", new_string="new").ok
    assert link.is_symlink() and real.read_text() == "new\n"
    assert run(t["write"], tmp_path, file_path="link.txt", content="written\n").ok
    assert link.is_symlink() and real.read_text() == "written\n"


# A file tool touches the path the permission check resolved (ToolContext.resolved), never what a name leads
# to after a concurrent call made it a symlink: (tool, arguments). z and d are swapped for links to a
# protected file and directory between the check and the call.
SWAPPED_AFTER_THE_CHECK = [
    ("read", {"file_path": "z"}),
    ("read", {"file_path": "d/f.txt"}),
    ("write", {"file_path": "z", "content": "OVERWRITTEN\n"}),
    ("write", {"file_path": "d/f.txt", "content": "OVERWRITTEN\n"}),
    ("write", {"file_path": "d/new.txt", "content": "created\n"}),
    ("edit", {"file_path": "z", "old_string": "SECRET", "new_string": "x"}),
    ("edit", {"file_path": "d/f.txt", "old_string": "SECRET", "new_string": "x"}),
    ("grep", {"pattern": "SECRET", "path": "z"}),
    ("grep", {"pattern": "SECRET", "path": "d"}),
    ("glob", {"pattern": "*", "path": "d"}),
]


@pytest.mark.parametrize(("name", "arguments"), SWAPPED_AFTER_THE_CHECK)
def test_a_file_tool_refuses_a_name_swapped_for_a_link_after_the_check(
    tmp_path: Path, name: str, arguments: dict[str, str]
) -> None:
    work, protected = tmp_path / "work", tmp_path / "protected"
    (work / "d").mkdir(parents=True)
    protected.mkdir()
    (work / "z").write_text("harmless\n", encoding="utf-8")
    (work / "d/f.txt").write_text("harmless\n", encoding="utf-8")
    (protected / "z.txt").write_text("SECRET\n", encoding="utf-8")
    (protected / "f.txt").write_text("SECRET\n", encoding="utf-8")
    resolved = resolved_paths(work, ToolCall("c1", name, arguments))  # as the loop resolves it for the check
    (work / "z").unlink()
    (work / "z").symlink_to(protected / "z.txt")
    (work / "d").rename(work / "parked")
    (work / "d").symlink_to(protected)
    outcome = tools(work)[name].run(arguments, ToolContext(work, resolved=resolved))
    assert isinstance(outcome, ToolOutcome)
    assert not outcome.ok and "changed after the permission check" in outcome.output
    assert "SECRET" not in outcome.output.replace("'SECRET'", "")
    assert sorted(p.name for p in protected.iterdir()) == ["f.txt", "z.txt"]
    assert all(p.read_text() == "SECRET\n" for p in protected.iterdir())


def test_the_file_tools_open_a_checked_path_following_no_symlink(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "real/f.txt").write_text("x\n", encoding="utf-8")
    (tmp_path / "dir").symlink_to("real")
    (tmp_path / "file").symlink_to("real/f.txt")
    handle, _ = open_regular(str(tmp_path / "real/f.txt"))
    with handle:
        assert handle.read() == b"x\n"
    for path in (tmp_path / "file", tmp_path / "dir/f.txt"):  # a race the name check did not see: refused
        with pytest.raises(OSError):
            open_regular(str(path))
    with pytest.raises(OSError):
        open_directory(str(tmp_path / "dir/sub"), create=True)
    assert not (tmp_path / "real/sub").exists()


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o664), (0o077, 0o644), (0o022, 0o755)])
def test_write_and_edit_keep_the_files_mode_whatever_the_umask(tmp_path: Path, umask: int, mode: int) -> None:
    t = tools(tmp_path)
    path = tmp_path / "f.txt"
    path.write_text("old\n", encoding="utf-8")
    path.chmod(mode)
    previous = os.umask(umask)
    try:
        assert run(t["edit"], tmp_path, file_path="f.txt", old_string="old", new_string="new").ok
        assert os.stat(path).st_mode & 0o7777 == mode
        assert run(t["write"], tmp_path, file_path="f.txt", content="written\n").ok
        assert os.stat(path).st_mode & 0o7777 == mode
    finally:
        os.umask(previous)
    assert path.read_text() == "written\n"


def test_a_read_only_file_is_refused_and_left_alone(tmp_path: Path) -> None:
    t = tools(tmp_path)
    path = tmp_path / "ro.txt"
    path.write_text("old\n", encoding="utf-8")
    path.chmod(0o444)
    edited = run(t["edit"], tmp_path, file_path="ro.txt", old_string="old", new_string="new")
    written = run(t["write"], tmp_path, file_path="ro.txt", content="new\n")
    for result in (edited, written):
        assert not result.ok and result.output.startswith("ro.txt is read-only (mode 444)")
    assert path.read_text() == "old\n" and os.stat(path).st_mode & 0o777 == 0o444


def test_read_shows_a_range_of_lines_and_says_where_to_go_on(tmp_path: Path) -> None:
    t = tools(tmp_path)
    (tmp_path / "n.txt").write_text("".join(f"line {n}\n" for n in range(1, 11)), encoding="utf-8")
    middle = t["read"].run({"file_path": "n.txt", "offset": 4, "limit": 2}, ToolContext(tmp_path))
    assert (
        isinstance(middle, ToolOutcome)
        and middle.ok
        and middle.output == ("line 4\nline 5\n\n[lines 4-5 shown; the file goes on: read with offset=6]")
    )
    assert run(t["read"], tmp_path, file_path="n.txt", offset=9).output == "line 9\nline 10\n"
    past = run(t["read"], tmp_path, file_path="n.txt", offset=11)
    assert not past.ok and "has 10 lines" in past.output
    assert not run(t["read"], tmp_path, file_path="n.txt", offset=0).ok


def test_read_of_a_huge_file_reads_only_what_it_shows(tmp_path: Path) -> None:
    # A sparse 2 GB file with a text head: reading it whole would need gigabytes, showing 30 KB needs little.
    # The peak is the child's own (VmHWM, of the memory exec gave it): getrusage's ru_maxrss would also count
    # the pytest worker it was forked from, whatever size earlier tests left that at.
    script = (
        "import sys\n"
        "from pathlib import Path\n"
        "from routedriver.brain.tools.base import ToolContext\n"
        "from routedriver.brain.tools.files import read\n"
        "path = Path(sys.argv[1])\n"
        "with path.open('wb') as f:\n"
        "    f.write(b'log line\\n' * 10_000)\n"
        "    f.truncate(2 * 1024**3)\n"
        "out = read({'file_path': str(path)}, ToolContext(path.parent, max_output_chars=30_000))\n"
        "assert out.ok and len(out.output) < 31_000 and 'output truncated' in out.output, out.output[-300:]\n"
        "peak = next(line for line in open('/proc/self/status') if line.startswith('VmHWM:'))\n"
        "print(int(peak.split()[1]) // 1024)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path / "huge.log")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) < 300  # megabytes of peak memory, for a 2 GB file


def test_glob_and_grep_do_not_follow_directory_symlinks(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src/a.py").write_text("needle\n", encoding="utf-8")
    (tmp_path / "src/up").symlink_to("..")
    (tmp_path / "src/link.py").symlink_to("a.py")  # a link to a file is a file: listed and searched
    t = tools(tmp_path)
    assert run(t["glob"], tmp_path, pattern="**/*.py").output == "src/a.py\nsrc/link.py"
    assert run(t["glob"], tmp_path, pattern="src/*").output == "src/a.py\nsrc/link.py\nsrc/up"
    assert run(t["grep"], tmp_path, pattern="needle").output == "src/a.py:1:needle\nsrc/link.py:1:needle"


def test_glob_matches_hidden_names_like_any_other_and_starts_at_literal_parts(tmp_path: Path) -> None:
    # routedriver.globs's one rule: a wildcard matches a name starting with "." (protect: and the robot's
    # other tools reach hidden files, so the listing does too); .git is never entered.
    names = ("a.py", ".hidden.py", ".github/ci.py", "pkg/b.py", "pkg/.cache/c.py", "docs/x.md", ".git/h.py")
    for name in names:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("", encoding="utf-8")
    t = tools(tmp_path)
    assert run(t["glob"], tmp_path, pattern="**/*.py").output == (
        ".github/ci.py\n.hidden.py\na.py\npkg/.cache/c.py\npkg/b.py"
    )
    assert run(t["glob"], tmp_path, pattern=".*/*.py").output == ".github/ci.py"
    assert run(t["glob"], tmp_path, pattern="pkg/**/*.py").output == "pkg/.cache/c.py\npkg/b.py"
    assert run(t["glob"], tmp_path, pattern="*/").output == ".github/\ndocs/\npkg/"
    assert run(t["glob"], tmp_path, pattern="docs/x.md").output == "docs/x.md"
    assert run(t["glob"], tmp_path, pattern=".git/*.py").output == ".git/h.py"  # named: entered
    assert run(t["glob"], tmp_path, pattern=f"{tmp_path}/pkg/*.py").output == f"{tmp_path}/pkg/b.py"
    assert run(t["glob"], tmp_path, pattern=".").output == "."
    assert not run(t["glob"], tmp_path, pattern="").ok


def test_grep_searches_files_of_any_size_and_says_what_it_skipped(tmp_path: Path) -> None:
    with (tmp_path / "big.log").open("w", encoding="utf-8") as f:
        f.write("filler\n" * 400_000 + "NEEDLE\n")  # 2.8 MB: over the old 2 MB cut-off
        f.write("x" * 3_000_000 + " NEEDLE in a long line\nafter\n")  # one line longer than a read block
    (tmp_path / "blob.bin").write_bytes(b"NEEDLE\x00")
    os.mkfifo(tmp_path / "pipe")  # opening it to read would block: skipped, not read
    t = tools(tmp_path)
    named = run(t["grep"], tmp_path, pattern="NEEDLE", path="big.log")
    assert named.ok and named.data["count"] == 2
    assert named.output.startswith("big.log:400001:NEEDLE\nbig.log:400002:xxx")
    everywhere = run(t["grep"], tmp_path, pattern="^after$|^NEEDLE$")
    assert everywhere.output == (
        "big.log:400001:NEEDLE\nbig.log:400003:after\n[skipped: 1 binary file, 1 FIFO, socket or device]"
    )
    binary = run(t["grep"], tmp_path, pattern="NEEDLE", path="blob.bin")
    assert binary.output == "no matches for 'NEEDLE' in blob.bin [skipped: 1 binary file]"


def test_read_refuses_fifos_and_devices_instead_of_hanging(tmp_path: Path) -> None:
    # In a child with a time and memory limit: reading a FIFO would block forever, /dev/zero never ends.
    os.mkfifo(tmp_path / "pipe")
    script = (
        "import resource, sys\n"
        "from pathlib import Path\n"
        "from routedriver.brain.tools.base import ToolContext\n"
        "from routedriver.brain.tools.files import read, write\n"
        "resource.setrlimit(resource.RLIMIT_AS, (2 * 1024**3, 2 * 1024**3))\n"
        "ctx = ToolContext(Path(sys.argv[1]))\n"
        "for name in ('pipe', '/dev/zero'):\n"
        "    print(read({'file_path': name}, ctx).output)\n"
        "print(write({'file_path': 'pipe', 'content': 'x'}, ctx).output)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "pipe is not a regular file (a FIFO, socket or device); read only reads files "
        "(head -c N in bash reads part of one)",
        "/dev/zero is not a regular file (a FIFO, socket or device); read only reads files "
        "(head -c N in bash reads part of one)",
        "pipe is not a regular file (a FIFO, socket or device); write and edit only change regular files",
    ]


def test_cli_glob_over_symlink_loops_and_grep_of_a_big_named_file(tmp_path: Path) -> None:
    # The audit's reproductions: two links to ".." made glob run until killed; grep skipped a 2.8 MB log.
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    (repo / "src/a.py").write_text("x\n", encoding="utf-8")
    (repo / "src/up").symlink_to("..")
    (repo / "src/up2").symlink_to("..")
    (repo / "big.log").write_text("filler\n" * 400_000 + "NEEDLE\n", encoding="utf-8")
    turns = [
        {"tool_calls": [call("glob", pattern="**/*.py"), call("grep", pattern="NEEDLE", path="big.log")]},
        {"text": "done"},
    ]
    script = write_script(tmp_path / "s.json", turns)
    trace = tmp_path / "t.json"
    ran = bhrain(
        [*scripted_run(script, skill="ask"), "--input", "x", "--trace", str(trace)], repo, timeout=60
    )
    assert ran.code == 0, ran.err
    outputs = [c["output"] for c in json.loads(trace.read_text())["iterations"][0]["tool_calls"]]
    assert outputs == ["src/a.py", "big.log:400001:NEEDLE"]


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


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity", "1e999"])
def test_a_model_cannot_turn_off_the_bash_timeout_with_nan_or_infinity(tmp_path: Path, number: str) -> None:
    """Python's JSON parser reads NaN, Infinity and 1e999 (infinity) from a provider. A NaN timeout made
    ``min(timeout, maximum)`` NaN: the command ran with no timeout at all, past the 600 s maximum."""
    raw = '{"command": "echo ran > ran.txt", "timeout": NUMBER}'.replace("NUMBER", number)
    loop, scripted = make_loop(tmp_path, [{"tool_calls": [{"name": "bash", "raw_arguments": raw}]}, "done"])
    assert loop.run("go").exit_code == 0
    (said,) = tool_results(scripted, 2)
    assert said.startswith("malformed tool call to bash: argument 'timeout' must be a finite number, not ")
    assert not (tmp_path / "ran.txt").exists()
    # The tool itself, asked directly, refuses NaN too (every comparison with it is false).
    assert "positive" in run(tools(tmp_path)["bash"], tmp_path, command="true", timeout=float("nan")).output


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


def test_a_chain_of_symlinks_too_long_to_resolve_is_an_error_result_not_the_end_of_the_run(
    tmp_path: Path,
) -> None:
    """1,500 links, l1500 -> … -> l0: Python 3.11's realpath recursed once per link, and the RecursionError
    ended the run as an internal error. Each tool that names the path gets an error result and the run goes
    on (with a Read deny rule, so that the permission rules look at the path too)."""
    (tmp_path / "l0").write_text("hi\n", encoding="utf-8")
    for number in range(1, 1501):
        (tmp_path / f"l{number}").symlink_to(f"l{number - 1}")
    (tmp_path / "perms.json").write_text(json.dumps({"permissions": {"deny": ["Read(./.env)"]}}))
    script = write_script(
        tmp_path / "s.json",
        [
            {
                "tool_calls": [
                    call("read", file_path="l1500"),
                    call("grep", pattern="hi", path="l1500"),
                    call("write", file_path="l1500", content="x"),
                ]
            },
            {"text": "done"},
        ],
    )
    ran = bhrain(
        [*scripted_run(script), "--input", "go", "--permissions", "perms.json", "--sandbox", "off", "--json"],
        tmp_path,
    )
    assert ran.code == 0, ran.err
    calls = json.loads(ran.out)["tool_calls"]
    assert [c["status"] for c in calls] == ["error"] * 3
    assert (tmp_path / "l0").read_text(encoding="utf-8") == "hi\n"
