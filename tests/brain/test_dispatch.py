"""The dispatcher: the call order of one response's tools, secrets that round-trip, output bounds, crashes."""

from __future__ import annotations

import json
import os
import re
import shutil
import sys
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from routedriver.brain.dispatch import NOTICE_SLACK, Dispatcher, call_groups
from routedriver.brain.hooks import ALLOW, HookVerdict, LoopHook, ToolEvent
from routedriver.brain.loop import Limits
from routedriver.brain.permissions.guard import NoPrompter, PermissionHook
from routedriver.brain.permissions.rules import policy_from_block
from routedriver.brain.redact import Redactor
from routedriver.brain.toolbox import Toolbox, ToolRegistry
from routedriver.brain.tools import builtin_tools
from routedriver.brain.tools.base import Tool, ToolContext, ToolSettings, schema
from routedriver.errors import Interrupted
from routedriver.llm.types import ToolCall
from tests.brain.helpers import (
    bhrain,
    call,
    default_registry,
    make_loop,
    scripted_run,
    tool_results,
    write_script,
)
from tests.fakes.llm_servers import AnthropicServer, Recorded, Reply

SECRET = "sk-test-longsecret"


# -- call order ----------------------------------------------------------------------------------------------
def test_many_edits_of_one_file_in_one_response_all_land_in_call_order(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("".join(f"value_{n} = 0\n" for n in range(10)), encoding="utf-8")
    edits = [
        call("edit", file_path="app.py", old_string=f"value_{n} = 0", new_string=f"value_{n} = {n + 1}")
        for n in range(10)
    ]
    loop, scripted = make_loop(tmp_path, [{"tool_calls": edits}, {"text": "done"}])
    result = loop.run("set them all")
    assert (tmp_path / "app.py").read_text() == "".join(f"value_{n} = {n + 1}\n" for n in range(10))
    assert [c.status for c in result.tool_calls] == ["ok"] * 10
    results = tool_results(scripted, 2)
    assert all(f"value_{n} = {n + 1}" in text for n, text in enumerate(results))


def test_a_write_then_a_read_of_the_same_file_run_in_call_order(tmp_path: Path) -> None:
    loop, scripted = make_loop(
        tmp_path,
        [
            {
                "tool_calls": [
                    call("write", file_path="gen.txt", content="generated\n"),
                    call("read", file_path="./gen.txt"),
                    call("edit", file_path="gen.txt", old_string="generated", new_string="edited"),
                    call("read", file_path="gen.txt"),
                ]
            },
            {"text": "done"},
        ],
    )
    loop.run("generate")
    results = tool_results(scripted, 2)
    assert "generated" in results[1] and "edited" not in results[1]
    assert "edited" in results[3]


def test_calls_naming_no_common_file_run_together(tmp_path: Path) -> None:
    # Every call must be running at once for the barrier to open: bash, a custom tool and edits of two
    # different files do not wait for one another (the issue: all calls of one response run concurrently).
    barrier = threading.Barrier(3, timeout=10)

    def meet(args: Mapping[str, Any], ctx: ToolContext) -> str:
        barrier.wait()
        return "met"

    box = Toolbox("sync", [Tool("meet", "a mutating custom tool", schema({}), meet)])
    (tmp_path / "a.txt").write_text("a\n")
    (tmp_path / "b.txt").write_text("b\n")
    loop, scripted = make_loop(
        tmp_path,
        [
            {
                "tool_calls": [
                    call("meet"),
                    call("meet"),
                    call("meet"),
                    call("edit", file_path="a.txt", old_string="a", new_string="A"),
                    call("edit", file_path="b.txt", old_string="b", new_string="B"),
                ]
            },
            {"text": "done"},
        ],
        registry=ToolRegistry([box, Toolbox("files", builtin_tools(["files"], ToolSettings(tmp_path)))]),
    )
    result = loop.run("go")
    assert [c.status for c in result.tool_calls] == ["ok"] * 5
    assert tool_results(scripted, 2)[:3] == ["met"] * 3
    assert (tmp_path / "a.txt").read_text() == "A\n" and (tmp_path / "b.txt").read_text() == "B\n"


def test_call_groups_split_only_where_a_file_is_shared_and_changed() -> None:
    def tool(name: str, read_only: bool) -> Tool:
        return Tool(name, name, schema({}), lambda args, ctx: "", read_only)

    read, write, bash = tool("read", True), tool("write", False), tool("bash", False)
    order = [
        (read, {"file_path": "a"}),
        (read, {"path": "./a"}),  # two reads of one file: together
        (bash, {}),
        (write, {"file_path": "b"}),
        (write, {"file_path": "a"}),  # changes a file read in this group: waits
        (bash, {}),
        (read, {"file_path": "a"}),  # reads a file written in this group: waits
        (write, {"file_path": "b"}),
    ]
    runnable = [(i, t, ToolCall(f"c{i}", t.name, args)) for i, (t, args) in enumerate(order)]
    assert [[i for i, _, _ in group] for group in call_groups(runnable)] == [[0, 1, 2, 3], [4, 5], [6, 7]]


def test_two_edits_of_one_file_by_two_names_both_land(tmp_path: Path) -> None:
    """``z.txt`` and the link ``l.txt -> z.txt`` are one file: the edits wait for each other (grouped by the
    real path too, not only the name as written), so neither is lost. The file is large, so that two edits
    run together would overlap (each reads, then writes the whole file)."""
    (tmp_path / "z.txt").write_text("AAA\n" + "x" * 8_000_000 + "\nBBB\n", encoding="utf-8")
    (tmp_path / "l.txt").symlink_to("z.txt")
    loop, _ = make_loop(
        tmp_path,
        [
            {
                "tool_calls": [
                    call("edit", file_path="z.txt", old_string="AAA", new_string="A-EDITED"),
                    call("edit", file_path="l.txt", old_string="BBB", new_string="B-EDITED"),
                ]
            },
            {"text": "done"},
        ],
    )
    assert [c.status for c in loop.run("go").tool_calls] == ["ok", "ok"]
    text = (tmp_path / "z.txt").read_text(encoding="utf-8")
    assert text.startswith("A-EDITED\n") and text.endswith("\nB-EDITED\n")
    runnable = [
        (i, Tool("edit", "edit", schema({}), lambda args, ctx: "", False), ToolCall(f"c{i}", "edit", args))
        for i, args in enumerate([{"file_path": "z.txt"}, {"file_path": "l.txt"}])
    ]
    real = {i: {"file_path": str(tmp_path / "z.txt")} for i in range(2)}
    assert [[i for i, _, _ in group] for group in call_groups(runnable, real)] == [[0], [1]]


# -- secrets round-trip --------------------------------------------------------------------------------------
def test_only_placeholders_shown_to_the_model_are_mapped_back_exactly() -> None:
    redactor = Redactor({"ANTHROPIC_API_KEY": SECRET, "OTHER_TOKEN": "tok-not-shown-99"})
    assert redactor.restore("[REDACTED:ANTHROPIC_API_KEY]") == "[REDACTED:ANTHROPIC_API_KEY]"  # not shown yet
    assert redactor.text(f"log {SECRET}") == "log [REDACTED:ANTHROPIC_API_KEY]"  # logs do not count
    assert redactor.restore("[REDACTED:ANTHROPIC_API_KEY]") == "[REDACTED:ANTHROPIC_API_KEY]"
    assert redactor.shown(f"KEY={SECRET}") == "KEY=[REDACTED:ANTHROPIC_API_KEY]"
    sent = {
        "content": "KEY=[REDACTED:ANTHROPIC_API_KEY] [REDACTED:OTHER_TOKEN] [REDACTED:ANTHROPIC_API_KEY ]",
        "list": ["[REDACTED:ANTHROPIC_API_KEY]", 3, None],
    }
    assert redactor.restore(sent) == {
        "content": f"KEY={SECRET} [REDACTED:OTHER_TOKEN] [REDACTED:ANTHROPIC_API_KEY ]",
        "list": [SECRET, 3, None],
    }


def test_a_placeholder_found_literally_in_a_file_is_never_mapped_back() -> None:
    redactor = Redactor({"ANTHROPIC_API_KEY": SECRET})
    redactor.shown(SECRET)
    redactor.note_raw("docs: keys appear as [REDACTED:ANTHROPIC_API_KEY] in traces")
    assert redactor.restore("[REDACTED:ANTHROPIC_API_KEY]") == "[REDACTED:ANTHROPIC_API_KEY]"
    redactor.shown(SECRET)  # seeing the real secret again does not make the placeholder unambiguous
    assert redactor.restore("[REDACTED:ANTHROPIC_API_KEY]") == "[REDACTED:ANTHROPIC_API_KEY]"


def test_extra_secrets_get_distinct_placeholders() -> None:
    redactor = Redactor({}, extra=("first-secret", "second-secret"))
    assert redactor.shown("first-secret second-secret") == "[REDACTED:secret] [REDACTED:secret_2]"
    assert redactor.restore("[REDACTED:secret_2] [REDACTED:secret]") == "second-secret first-secret"


class _Recorder(LoopHook):
    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []

    def pre_tool(self, event: ToolEvent) -> HookVerdict:
        self.seen.append(dict(event.params))
        return ALLOW


def test_the_secret_goes_back_only_where_the_tool_takes_it_and_the_hooks_see_what_it_gets(
    tmp_path: Path,
) -> None:
    (tmp_path / ".env").write_text(f"ANTHROPIC_API_KEY={SECRET}\nDEBUG=0\n", encoding="utf-8")
    hook = _Recorder()
    written = "ANTHROPIC_API_KEY=[REDACTED:ANTHROPIC_API_KEY]\nDEBUG=1\n"
    loop, scripted = make_loop(
        tmp_path,
        [
            {"tool_calls": [call("read", file_path=".env")]},
            {"tool_calls": [call("write", file_path=".env", content=written)]},
            {"tool_calls": [call("bash", command="grep -cF '[REDACTED:ANTHROPIC_API_KEY]' .env")]},
            {"text": "done"},
        ],
        hooks=[hook],
        redactor=Redactor({"ANTHROPIC_API_KEY": SECRET}),
    )
    result = loop.run("turn debug on")
    assert (tmp_path / ".env").read_text() == f"ANTHROPIC_API_KEY={SECRET}\nDEBUG=1\n"
    assert tool_results(scripted, 2) == ["ANTHROPIC_API_KEY=[REDACTED:ANTHROPIC_API_KEY]\nDEBUG=0\n"]
    # bash takes no secrets: it got the placeholder, which the file does not hold
    assert "stdout:\n0\n" in tool_results(scripted, 4)[0]
    assert hook.seen[2]["command"] == "grep -cF '[REDACTED:ANTHROPIC_API_KEY]' .env"
    # the hooks (the permission rules) check exactly what write got; the records keep the placeholder
    assert hook.seen[1]["content"] == f"ANTHROPIC_API_KEY={SECRET}\nDEBUG=1\n"
    assert result.tool_calls[1].input["content"] == written
    assert SECRET not in json.dumps([m.text for m in result.messages])


def test_a_file_read_and_written_back_keeps_its_secret_through_the_real_sdk(tmp_path: Path) -> None:
    """The model writes `.env` back from a redacted read: the key must stay, not become the placeholder."""
    (tmp_path / ".env").write_text(f"ANTHROPIC_API_KEY={SECRET}\nDEBUG=0\n", encoding="utf-8")

    def responder(request: Recorded) -> Reply:
        results = [
            b
            for m in request.json["messages"]
            if m["role"] == "user" and isinstance(m["content"], list)
            for b in m["content"]
            if b.get("type") == "tool_result"
        ]
        if not results:
            return Reply.tool_calls([("read", {"file_path": ".env"})], ids=["call_read"])
        if len(results) == 1:
            content = results[0]["content"]
            text = content if isinstance(content, str) else "".join(p["text"] for p in content)
            changed = text.replace("DEBUG=0", "DEBUG=1")
            return Reply.tool_calls([("write", {"file_path": ".env", "content": changed})], ids=["call_w"])
        return Reply.text("debug is on")

    with AnthropicServer(validate=True) as server:
        server.responder = responder
        ran = bhrain(
            ["run", "--skill", "act", "--atom", "claude", "--base-url", server.base_url]
            + ["--input", "turn debug on", "--trace", "t.json", "--json"],
            tmp_path,
            env={"ANTHROPIC_API_KEY": SECRET},
        )
    assert ran.code == 0, ran.err
    assert (tmp_path / ".env").read_text() == f"ANTHROPIC_API_KEY={SECRET}\nDEBUG=1\n"
    assert len(server.requests) == 3
    assert all(SECRET.encode() not in r.body for r in server.requests)  # the model never got the value
    trace = (tmp_path / "t.json").read_text()
    assert SECRET not in trace + ran.out + ran.err
    assert "ANTHROPIC_API_KEY=[REDACTED:ANTHROPIC_API_KEY]\\nDEBUG=1" in trace  # the write as it was sent


# -- output bounds -------------------------------------------------------------------------------------------
def _cut_counts(text: str) -> int:
    """Everything a result says was left out, in characters or bytes."""
    return sum(
        int(n.replace(",", ""))
        for notice in re.findall(r"\[[a-z]+ truncated: ([^\]]*)\]", text)
        for n in re.findall(r"([\d,]+) (?:more )?(?:characters|bytes)", notice)
    )


def test_bash_keeps_its_stderr_and_the_true_truncated_count(tmp_path: Path) -> None:
    script = write_script(
        tmp_path / "s.json",
        [
            {"tool_calls": [call("bash", command="seq 1 100000; echo IMPORTANT-ERROR >&2; exit 1")]},
            {"text": "done"},
        ],
    )
    ran = bhrain([*scripted_run(script), "--input", "x", "--trace", "t.json"], tmp_path)
    assert ran.code == 0, ran.err
    output = json.loads((tmp_path / "t.json").read_text())["iterations"][0]["tool_calls"][0]["output"]
    assert output.rstrip().endswith("stderr:\nIMPORTANT-ERROR")
    assert "exit code: 1" in output and "[output truncated" not in output
    total = len("".join(f"{n}\n" for n in range(1, 100_001)))
    assert _cut_counts(output) >= total - 30_000  # it says (about) how much of the 589 kB was not shown


def test_a_large_read_says_how_much_it_left_out(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("x" * 150_000, encoding="utf-8")
    loop, scripted = make_loop(
        tmp_path, [{"tool_calls": [call("read", file_path="big.txt")]}, {"text": "done"}]
    )
    loop.run("read it")
    (result,) = tool_results(scripted, 2)
    read = next(t for t in builtin_tools(["files"], ToolSettings(workdir=tmp_path)) if t.name == "read")
    own = read.run({"file_path": "big.txt"}, ToolContext(tmp_path)).output  # type: ignore[union-attr]
    assert len(own) > 30_000 and "truncated" in own[30_000:]  # the read bounded itself, with a notice
    assert result == own  # which reaches the model whole, not cut again


def test_a_tool_that_does_not_bound_its_output_is_cut_at_the_limit(tmp_path: Path) -> None:
    sizes = {"small": 1_000 + NOTICE_SLACK, "large": 5_000}

    def dump(args: Mapping[str, Any], ctx: ToolContext) -> str:
        return "y" * sizes[args["size"]]

    box = Toolbox("x", [Tool("dump", "dump", schema({"size": {"type": "string"}}), dump)])
    loop, scripted = make_loop(
        tmp_path,
        [{"tool_calls": [call("dump", size="small"), call("dump", size="large")]}, {"text": "done"}],
        registry=ToolRegistry([box]),
        limits=Limits(max_output_chars=1_000),
    )
    loop.run("dump")
    small, large = tool_results(scripted, 2)
    assert small == "y" * (1_000 + NOTICE_SLACK)  # within the slack: passed on whole
    notice = "\n[output truncated: 4,000 more characters not shown (limit 1,000)"
    assert large.startswith("y" * 1_000 + notice)


# -- broken tools --------------------------------------------------------------------------------------------
def test_a_tool_calling_sys_exit_becomes_an_error_result(tmp_path: Path) -> None:
    def quit_(args: Mapping[str, Any], ctx: ToolContext) -> str:
        sys.exit(3)

    def fine(args: Mapping[str, Any], ctx: ToolContext) -> str:
        return "fine"

    box = Toolbox(
        "x",
        [Tool("quit", "exits", schema({}), quit_, True), Tool("fine", "works", schema({}), fine, True)],
    )
    loop, scripted = make_loop(
        tmp_path,
        [
            {"tool_calls": [call("quit")]},
            {"tool_calls": [call("quit"), call("fine")]},  # also from a pool thread
            {"text": "it exited; moving on"},
        ],
        registry=ToolRegistry([box]),
    )
    result = loop.run("try it")
    message = "tool quit failed: SystemExit: the tool tried to end the process (exit code 3)"
    assert tool_results(scripted, 2) == [message]
    assert tool_results(scripted, 3) == [message, "fine"]
    assert result.exit_code == 0 and result.text == "it exited; moving on"


def test_a_stop_signal_inside_a_tool_is_not_a_tool_failure_and_nothing_else_runs(tmp_path: Path) -> None:
    ran: list[str] = []

    def stopped(args: Mapping[str, Any], ctx: ToolContext) -> str:
        raise Interrupted()  # what the CLI's SIGINT handler raises in the thread running the tool

    def record(args: Mapping[str, Any], ctx: ToolContext) -> str:
        ran.append(args["label"])
        return "ran"

    box = Toolbox(
        "x",
        [
            Tool("stopped", "is stopped", schema({}), stopped, True),
            Tool("record", "records", schema({"label": {"type": "string"}}, ("label",)), record, True),
        ],
    )
    seen: list[list[str]] = []
    loop, scripted = make_loop(
        tmp_path,
        [
            {"tool_calls": [call("record", label="first")]},
            {"tool_calls": [call("stopped")]},
            {"tool_calls": [call("record", label="later")]},
            {"text": "done"},
        ],
        registry=ToolRegistry([box]),
        on_iteration=lambda loop, record: seen.append([c.status for c in record.calls]),
    )
    with pytest.raises(Interrupted):
        loop.run("go")
    assert ran == ["first"] and len(scripted.requests) == 2  # no later tool call, no later model call
    assert seen == [["ok"], ["interrupted"]]  # the stopped iteration is still told (the trace shows it)
    assert [r.status for r in loop.records] == ["ok", "interrupted"]


def test_a_keyboard_interrupt_without_the_cli_stops_the_commands_the_tools_run(tmp_path: Path) -> None:
    pid_file = tmp_path / "sleeper.pid"

    def ctrl_c(args: Mapping[str, Any], ctx: ToolContext) -> str:
        deadline = time.monotonic() + 20
        while not (pid_file.exists() and pid_file.read_text().strip()):
            assert time.monotonic() < deadline, "bash never started"
            time.sleep(0.01)
        raise KeyboardInterrupt  # as Python raises it for Ctrl-C when no handler of ours is set

    registry = default_registry(tmp_path, ("bash",))
    registry.add(Toolbox("keys", [Tool("ctrl_c", "presses Ctrl-C", schema({}), ctrl_c, True)]))
    loop, _ = make_loop(
        tmp_path,
        [{"tool_calls": [call("bash", command=f"echo $$ > {pid_file.name}; sleep 30"), call("ctrl_c")]}, "x"],
        registry=registry,
    )
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        loop.run("go")
    loop.close()
    assert time.monotonic() - started < 10
    assert [r.status for r in loop.records] == ["interrupted", "interrupted"]
    group = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):  # the whole group is gone (nothing left to signal)
        os.killpg(group, 0)


# -- the files a call touches are the files its check saw ----------------------------------------------------
class Swapper:
    """A thread that calls ``swap(n)`` until stopped: an adversary turning names into symlinks and back as
    fast as it can, as a sandboxed bash command of the same response could."""

    def __init__(self, swap: Any) -> None:
        self.swap, self.stop, self.errors = swap, threading.Event(), list[BaseException]()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        n = 0
        try:
            while not self.stop.is_set():
                self.swap(n)
                n += 1
        except BaseException as exc:  # noqa: BLE001 - the test reports it
            self.errors.append(exc)

    def __enter__(self) -> Swapper:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()
        assert not self.errors, f"the adversary's swap failed: {self.errors[0]!r}"


def _guarded_dispatcher(tmp_path: Path, **block: Any) -> Dispatcher:
    rules = policy_from_block(block, base_dir=tmp_path, workdir=tmp_path, where="test")
    hooks = [PermissionHook([rules], NoPrompter())]
    return Dispatcher(default_registry(tmp_path, ("files",)), hooks, tmp_path, Limits(), Redactor({}))


def test_a_name_swapped_for_a_symlink_after_the_check_is_never_read_through(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("SECRET=hunter2\n", encoding="utf-8")
    (tmp_path / "z").write_text("harmless\n", encoding="utf-8")
    dispatcher = _guarded_dispatcher(tmp_path, deny=["Read(./.env)"])

    def swap(n: int) -> None:  # z: a harmless file, then a link to .env, then a file again …
        spare = tmp_path / f"spare{n % 2}"
        if n % 2:
            spare.write_text("harmless\n", encoding="utf-8")
        else:
            spare.symlink_to(".env")
        os.replace(spare, tmp_path / "z")
        time.sleep(0.0002)  # each state holds a while: the checks see both

    outputs = []
    with Swapper(swap):
        # 1.5 s of tries, and on until one read got through (z was a file throughout its check and read).
        started = time.monotonic()
        while time.monotonic() < started + 1.5 or "harmless\n" not in outputs:
            assert time.monotonic() < started + 60, "no read ever got through"
            records = dispatcher.run([ToolCall("c1", "read", {"file_path": "z"})], "", 1)[1]
            outputs.append(records[0].output)
    assert not [o for o in outputs if "hunter2" in o]


def test_a_path_swapped_for_a_symlink_after_the_check_is_never_written_through(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text("original\n", encoding="utf-8")
    work = tmp_path / "work"
    (work / "d").mkdir(parents=True)
    dispatcher = _guarded_dispatcher(work, deny=[f"Write(/{outside}/**)", f"Edit(/{outside}/**)"])

    def swap(n: int) -> None:  # d: a directory, then a link to outside/; victim.txt: a file, then a link
        if n % 2:
            (work / "d").unlink()
            while True:
                try:
                    (work / "parked").rename(work / "d")
                    break
                except OSError:  # a write made d again while it was gone
                    shutil.rmtree(work / "d", ignore_errors=True)
            (work / "spare").symlink_to(outside / "victim.txt")
        else:
            (work / "d").rename(work / "parked")
            while True:
                try:
                    (work / "d").symlink_to(outside)
                    break
                except FileExistsError:  # a write made d again while it was gone
                    shutil.rmtree(work / "d", ignore_errors=True)
            (work / "spare").write_text("mine\n", encoding="utf-8")
        os.replace(work / "spare", work / "victim.txt")

    statuses = set()
    with Swapper(swap):
        # 1.5 s of tries, and on until a write got through (the names were what the check saw).
        started = time.monotonic()
        while time.monotonic() < started + 1.5 or "ok" not in statuses:
            assert time.monotonic() < started + 60, "no write ever got through"
            calls = [
                ToolCall("c1", "write", {"file_path": "d/victim.txt", "content": "OVERWRITTEN\n"}),
                ToolCall("c2", "write", {"file_path": "victim.txt", "content": "OVERWRITTEN\n"}),
                ToolCall("c3", "edit", {"file_path": "victim.txt", "old_string": "\n", "new_string": "!\n"}),
            ]
            statuses.update(r.status for r in dispatcher.run(calls, "", 1)[1])
    assert [p.name for p in outside.iterdir()] == ["victim.txt"]
    assert (outside / "victim.txt").read_text(encoding="utf-8") == "original\n"
