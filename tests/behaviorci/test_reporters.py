"""Reporters: JSON keyed as 0.1.0, JUnit that parses, Markdown, the console verdict lines, colour rules."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

from routedriver.behaviorci.models import PROVIDERS
from routedriver.behaviorci.reporters import FORMATS
from routedriver.cli import behaviorci as cli
from tests.behaviorci.helpers import answer, invoke, one_error_line, write_bundle
from tests.conftest import BIN_DIR, run_cli
from tests.fakes.llm_servers import OpenAIServer, Reply

CASES = [
    {"id": "good", "input": {"question": "a"}, "mock_output": answer("yes")},
    {"id": "not-json", "input": {"question": "b"}, "mock_output": "plain words"},
    {
        "id": "fenced",
        "input": {"question": "c"},
        "mock_output": "Sure!\n```json\n" + answer("fenced") + "\n```\n",
    },
    {"id": "low", "input": {"question": "d"}, "mock_output": answer("meh", 0.1)},
]
CONFIG = {
    "output_contract": {"schema_path": "schema.json", "invariants": ["output.get('confidence', 0) > 0.5"]},
    "thresholds": [{"metric": "pass_rate", "operator": ">=", "value": 0.5}],
}


def _bundle(tmp_path: Path) -> Path:
    return write_bundle(tmp_path / "b", CONFIG, cases=CASES)


def test_json_report_keeps_0_1_0_keys_and_adds_ours(tmp_path: Path) -> None:
    result = invoke(["run", str(_bundle(tmp_path)), "--format", "json"])
    assert result.exit_code == 0
    report = json.loads(result.stdout)  # stdout is the report and nothing else
    for key in (
        "bundle",
        "passed",
        "summary",
        "thresholds",
        "cases",
        "provider",
        "model",
        "started_at",
        "completed_at",
        "duration_ms",
    ):
        assert key in report
    assert set(report["summary"]) == {
        "total_cases",
        "passed_cases",
        "failed_cases",
        "pass_rate",
        "duration_ms",
    }
    assert set(report["thresholds"]) == {"passed", "metrics", "results"}
    assert set(report["thresholds"]["results"][0]) == {"metric", "passed", "actual", "expected", "operator"}
    assert {"id", "passed", "latency_ms", "error"} <= set(report["cases"][0])
    assert (report["bundle"], report["passed"], report["summary"]["pass_rate"]) == ("test-bundle", True, 0.5)
    assert [c["passed"] for c in report["cases"]] == [True, False, True, False]
    assert report["usage"]["input_tokens"] > 0 and report["usage"]["output_tokens"] > 0
    assert set(report["latency"]) == {"avg_ms", "p50_ms", "p95_ms", "max_ms"}
    assert report["cache"]["hits"] == 0
    assert "output" not in report["cases"][0]


def test_json_verbose_has_outputs_and_evaluations(tmp_path: Path) -> None:
    result = invoke(["run", str(_bundle(tmp_path)), "--format", "json", "--verbose"])
    cases = {c["id"]: c for c in json.loads(result.stdout)["cases"]}
    assert cases["fenced"]["evaluation"]["schema_valid"] is True  # JSON inside a ```json fence is parsed
    assert cases["not-json"]["evaluation"]["schema_errors"] == ["output is not JSON"]
    low = cases["low"]["evaluation"]
    assert low["invariants_passed"] == {"output.get('confidence', 0) > 0.5": False}
    assert cases["good"]["output"] == answer("yes")


def test_junit_parses_with_one_testcase_per_case(tmp_path: Path) -> None:
    result = invoke(["run", str(_bundle(tmp_path)), "--format", "junit"])
    root = ET.fromstring(result.stdout)
    suite = root.find("testsuite")
    assert suite is not None
    testcases = suite.findall("testcase")
    assert [t.get("name") for t in testcases] == ["good", "not-json", "fenced", "low"]
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("4", "2", "0")
    failure = testcases[3].find("failure")
    assert failure is not None and "confidence" in (failure.get("message") or "")
    assert testcases[3].get("line") == "4"
    props = {p.get("name"): p.get("value") for p in suite.iter("property")}
    assert props["behaviorci.passed"] == "true"
    assert str(props["threshold.pass_rate"]).startswith(">= 0.5: actual 0.5 passed")


def test_junit_marks_errored_cases_as_errors(tmp_path: Path) -> None:
    bundle = write_bundle(
        tmp_path / "b",
        {
            "retries": 0,
            "thresholds": [],
            "provider": {"name": "mock", "fail_cases": ["q2"], "failure_status": 500},
        },
    )
    result = invoke(["run", str(bundle), "--format", "junit"])
    assert result.exit_code == 1
    suite = ET.fromstring(result.stdout).find("testsuite")
    assert suite is not None and suite.get("errors") == "1" and suite.get("failures") == "0"
    errored = [t for t in suite.findall("testcase") if t.find("error") is not None]
    assert [t.get("name") for t in errored] == ["q2"]


def test_markdown_report(tmp_path: Path) -> None:
    result = invoke(["run", str(_bundle(tmp_path)), "--format", "markdown"])
    text = result.stdout
    assert text.startswith("# BehaviorCI report: test-bundle\n")
    assert "**Status**: ✅ PASSED" in text
    assert "| pass_rate | >= 0.5 | 0.5 | ✅ |" in text
    assert "## Failed cases (2)" in text and "| not-json | 2 | schema: output is not JSON; invariant" in text
    assert "passed:" not in text  # only the console report carries verdict lines


def test_console_report_ends_with_the_verdict_lines(tmp_path: Path) -> None:
    result = invoke(["run", str(_bundle(tmp_path))])
    lines = result.stdout.splitlines()
    assert lines[0] == "behaviorci: test-bundle: PASSED"
    assert lines[-2:] == [
        "passed: true",
        "reason: 2/4 cases passed; thresholds met: pass_rate 0.5 meets >= 0.5",
    ]
    assert (
        "✗ low (" in result.stdout
        and "invariant `output.get('confidence', 0) > 0.5` is false" in result.stdout
    )
    # stderr is not a terminal here: no chatter (the project's contract), and never any on stdout.
    assert "behaviorci: running" not in result.stderr and "behaviorci: running" not in result.stdout
    quiet = invoke(["run", str(_bundle(tmp_path)), "--quiet"])
    assert quiet.stdout.splitlines() == lines[-2:]
    assert quiet.stderr == ""


def test_output_file_is_written_and_stdout_stays_empty(tmp_path: Path) -> None:
    target = tmp_path / "out" / "report.xml"
    target.parent.mkdir()
    target.write_text("old", encoding="utf-8")
    result = invoke(["run", str(_bundle(tmp_path)), "--format", "junit", "--output", str(target)])
    assert result.exit_code == 0
    assert result.stdout == ""
    ET.fromstring(target.read_text(encoding="utf-8"))
    assert "report written to" not in result.stderr  # chatter only on a terminal or with --verbose
    assert [p.name for p in target.parent.iterdir()] == ["report.xml"]  # no temp file left behind


def test_no_colour_when_stdout_is_not_a_terminal(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    done = subprocess.run(
        [str(BIN_DIR / "behaviorci"), "run", str(_bundle(tmp_path))],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0
    assert "\x1b[" not in done.stdout and "\x1b[" not in done.stderr


def _run_on_terminal(args: list[str], env: dict[str, str], *, stderr_too: bool) -> tuple[int, str, str]:
    primary, secondary = pty.openpty()
    try:
        proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=secondary,
            stderr=secondary if stderr_too else subprocess.PIPE,
            env=env,
        )
        os.close(secondary)
        chunks = []
        while True:
            try:
                chunk = os.read(primary, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            chunks.append(chunk)
        err = proc.stderr.read().decode() if proc.stderr else ""
        code = proc.wait(timeout=60)
    finally:
        os.close(primary)
    return code, b"".join(chunks).decode("utf-8", "replace"), err


def test_colour_and_progress_on_a_terminal_unless_no_color(tmp_path: Path) -> None:
    bundle = str(_bundle(tmp_path))
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env["TERM"] = "xterm-256color"
    code, out, _ = _run_on_terminal([str(BIN_DIR / "behaviorci"), "run", bundle], env, stderr_too=True)
    assert "behaviorci: running" in out  # stderr is the terminal too: the start line shows
    assert code == 0
    assert "\x1b[" in out  # Rich colour (and the progress bar) on the terminal
    assert "passed: true" in out and out.rstrip().splitlines()[-2].strip().endswith("passed: true")

    code, out, err = _run_on_terminal(
        [str(BIN_DIR / "behaviorci"), "run", bundle], {**env, "NO_COLOR": "1"}, stderr_too=False
    )
    assert code == 0
    assert "\x1b[" not in out
    assert out.replace("\r\n", "\n").endswith(
        "passed: true\nreason: 2/4 cases passed; thresholds met: pass_rate 0.5 meets >= 0.5\n"
    )
    assert "behaviorci: running" not in err  # stderr was a pipe in this run: no chatter there


def test_installed_command_json_is_valid_with_status_on_stderr_only_when_asked(tmp_path: Path) -> None:
    ran = run_cli(["behaviorci", "run", str(_bundle(tmp_path)), "-f", "json"], tmp_path)
    assert ran.code == 0
    assert json.loads(ran.out)["passed"] is True
    assert ran.err == ""  # stderr is not a terminal: a CI log gets the report and warnings, no chatter
    target = tmp_path / "report.json"
    ran = run_cli(
        ["behaviorci", "run", str(_bundle(tmp_path)), "-f", "json", "-v", "-o", str(target)], tmp_path
    )
    assert ran.code == 0 and ran.out == ""
    assert ran.err.startswith("behaviorci: running test-bundle: 4 cases with mock (mock-v1)")
    assert f"report written to {target}" in ran.err
    assert json.loads(target.read_text(encoding="utf-8"))["passed"] is True


def test_unwritable_characters_in_model_output_do_not_break_reports(tmp_path: Path) -> None:
    # A model's JSON can carry a lone surrogate ("\ud83d"), which no UTF-8 writer accepts, and control
    # characters, which XML cannot carry. The answer is kept with U+FFFD for the surrogate, in the report
    # and in the cache alike, and a rerun answered from the cache reports the same text.
    said = "caf\u00e9 \ud83d and \u0007 bell"
    kept = "caf\u00e9 \ufffd and \u0007 bell"
    bundle = write_bundle(
        tmp_path / "b",
        {
            "provider": {"name": "openai", "model": "gpt-test"},
            "retries": 0,
            "output_contract": {"invariants": ["len(raw_output) > 0"]},
        },
        cases=[{"id": "odd", "input": {"question": "a"}}],
        schema=None,
    )
    with OpenAIServer(responder=lambda request: Reply.text(said, model="gpt-\udc80x")) as server:
        env = {"OPENAI_API_KEY": "sk-test", "OPENAI_BASE_URL": server.base_url}
        cache = ["--cache-dir", str(tmp_path / "cache")]
        for fmt in ("json", "console", "markdown", "junit"):
            ran = run_cli(["behaviorci", "run", str(bundle), "-f", fmt, "-v", *cache], tmp_path, env=env)
            assert ran.code == 0, (fmt, ran.err)
            assert "Traceback" not in ran.err and "warning" not in ran.err
            if fmt == "json":
                assert json.loads(ran.out)["cases"][0]["output"] == kept
            if fmt == "junit":
                ET.fromstring(ran.out)
        out = tmp_path / "report.xml"
        result = invoke(["run", str(bundle), "-f", "junit", "-v", "-o", str(out), *cache], env=env)
        assert result.exit_code == 0, result.stderr
        ET.fromstring(out.read_text(encoding="utf-8"))
        assert len(server.requests) == 1  # one paid call; every rerun came from the cache
    (entry,) = (tmp_path / "cache").rglob("*.json")
    assert json.loads(entry.read_text(encoding="utf-8"))["text"] == kept


def test_unwritable_output_is_refused_before_the_run(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("x", encoding="utf-8")
    for target, problem in (
        (tmp_path / "a-file" / "r.json", "is not a directory"),
        (tmp_path, "is a directory"),
    ):
        result = invoke(["run", str(_bundle(tmp_path)), "-f", "json", "-v", "-o", str(target)])
        assert result.exit_code == 2
        line = one_error_line(result)
        assert str(target) in line and problem in line
        assert "behaviorci: running" not in result.stderr  # refused before any case ran


def test_the_command_offers_exactly_the_library_formats_and_providers() -> None:
    # The CLI keeps its own copies so that it starts without importing the reporters or pydantic.
    assert cli.FORMATS == FORMATS
    assert cli.PROVIDER_NAMES == PROVIDERS


def test_output_through_a_symlink_writes_its_target_and_keeps_the_link(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("keep\n", encoding="utf-8")
    link = tmp_path / "link.json"
    link.symlink_to("real.json")
    dangling = tmp_path / "dangling.json"
    dangling.symlink_to("made-by-the-run.json")
    for target in (link, dangling):
        ran = run_cli(
            ["behaviorci", "run", str(_bundle(tmp_path)), "-f", "json", "-q", "-o", str(target)], tmp_path
        )
        assert ran.code == 0, ran.err
        assert target.is_symlink()
        assert json.loads(target.read_text(encoding="utf-8"))["passed"] is True
    assert json.loads(real.read_text(encoding="utf-8"))["passed"] is True
    assert (tmp_path / "made-by-the-run.json").is_file()
    assert not [p.name for p in tmp_path.iterdir() if ".tmp-" in p.name]


def test_output_into_a_fifo_writes_to_its_reader(tmp_path: Path) -> None:
    import stat
    import threading

    fifo = tmp_path / "report.pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []

    def read() -> None:
        with open(fifo, "rb") as handle:  # blocks until the command opens the FIFO for writing
            received.append(handle.read())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    ran = run_cli(
        ["behaviorci", "run", str(_bundle(tmp_path)), "-f", "json", "-q", "-o", str(fifo)], tmp_path
    )
    reader.join(timeout=30)
    assert ran.code == 0, ran.err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # still a FIFO, not replaced by a regular file
    assert received and json.loads(received[0].decode("utf-8"))["passed"] is True


def _in_shell(script: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``script`` run by sh, so that it can close the command's stdout or stderr (``>&-``, ``2>&-``)."""
    return subprocess.run(["sh", "-c", script], cwd=cwd, capture_output=True, text=True, check=False)


def test_closed_stderr_or_stdout(tmp_path: Path) -> None:
    bundle = _bundle(tmp_path)
    quiet_err = _in_shell(f"behaviorci run '{bundle}' 2>&-", tmp_path)
    assert quiet_err.returncode == 0  # nothing to say on stderr is no reason to fail a passing bundle
    assert quiet_err.stdout.splitlines()[-2] == "passed: true"
    lost = _in_shell(f"behaviorci run '{bundle}' >&-", tmp_path)
    assert lost.returncode == 1  # the report would be lost: a malfunction, said before any call is made
    assert lost.stderr.startswith("error: stdout is closed") and lost.stderr.count("\n") == 1
    saved = _in_shell(f"behaviorci run '{bundle}' -f json -o report.json >&-", tmp_path)
    assert saved.returncode == 0, saved.stderr
    assert json.loads((tmp_path / "report.json").read_text(encoding="utf-8"))["passed"] is True
