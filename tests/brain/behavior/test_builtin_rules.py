"""The 14 built-in rules: the seed's trigger, phase, action and threshold for each, and each one firing
(and not firing) on real call sequences, with bhrain's and Claude Code's tool names."""

from __future__ import annotations

from pathlib import Path

import pytest

from routedriver.brain.behavior.names import ToolMatcher
from tests.brain.behavior.helpers import Session, engine_from, fired, resolved_from

SEED_TABLE = {
    # id: (a trigger the seed names, when, action)
    "read_before_edit": ("edit", "pre_tool", "warn"),
    "read_before_write_existing": ("write", "pre_tool", "warn"),
    "search_before_read": ("read", "pre_tool", "warn"),
    "verify_after_edit": ("edit", "post_tool", "remind"),
    "test_after_changes": ("write", "post_tool", "remind"),
    "no_bash_for_files": ("bash", "pre_tool", "warn"),
    "no_blind_exploration": ("bash", "pre_tool", "warn"),
    "confirm_destructive": ("bash", "pre_tool", "block"),
    "plan_before_execute": ("*", "pre_tool", "warn"),
    "web_search_when_unknown": ("*", "on_text", "warn"),
    "delegate_complex": ("*", "post_tool", "remind"),
    "delegate_large_reads": ("read", "post_tool", "remind"),
    "max_sequential_same_tool": ("*", "pre_tool", "warn"),
    "always_lint_check": ("edit", "post_tool", "warn"),
}


def only(rule_id: str, cwd: Path | str = "/work/repo", **settings: int | bool) -> Session:
    """A session where exactly one built-in rule is on, its first turn started."""
    session = Session(engine_from({"rules": {rule_id: True, **settings}}, cwd=cwd))
    session.turn()
    return session


def test_all_fourteen_rules_match_the_seed_table() -> None:
    rules = {rule["id"]: rule for rule in resolved_from({"profile": "dev"})["rules"]}
    assert set(rules) == set(SEED_TABLE)
    for rule_id, (trigger, when, action) in SEED_TABLE.items():
        rule = rules[rule_id]
        assert (rule["when"], rule["action"]) == (when, action), rule_id
        if trigger == "*":
            assert rule["trigger"] == ["*"], rule_id
        else:
            assert ToolMatcher(rule["trigger"]).matches(trigger), rule_id
        assert rule["description"], rule_id


def test_seed_thresholds_are_the_defaults() -> None:
    resolved = resolved_from({"rules": {"search_before_read": True}})
    assert {
        key: resolved["settings"][key]
        for key in ("max_blind_reads", "changes_before_test_reminder", "max_sequential_same_tool")
    } == {"max_blind_reads": 3, "changes_before_test_reminder": 3, "max_sequential_same_tool": 8}


@pytest.mark.parametrize(
    ("read", "edit"),
    [("read", "edit"), ("Read", "Edit"), ("filesystem.read", "filesystem__edit"), ("Read", "MultiEdit")],
)
def test_read_before_edit(read: str, edit: str) -> None:
    session = only("read_before_edit")
    decision, _ = session.call(edit, file_path="src/app.py", old_string="a", new_string="b")
    assert fired(decision) == ["read_before_edit"]
    assert "src/app.py" in decision.notes[0] and decision.notes[0].startswith("[BEHAVIOR WARNING]")
    session.call(read, file_path="/work/repo/src/app.py")  # an absolute spelling of the same file
    decision, _ = session.call(edit, file_path="src/app.py", old_string="a", new_string="b")
    assert fired(decision) == []


def test_read_before_write_existing(tmp_path: Path) -> None:
    (tmp_path / "exists.txt").write_text("old\n", encoding="utf-8")
    session = only("read_before_write_existing", cwd=tmp_path)
    assert fired(session.pre("write", file_path="new.txt", content="x")) == []
    assert fired(session.pre("Write", file_path="exists.txt", content="x")) == ["read_before_write_existing"]
    session.call("read", file_path="exists.txt")
    assert fired(session.pre("write", file_path="exists.txt", content="x")) == []


def test_search_before_read_after_max_blind_reads() -> None:
    session = only("search_before_read")
    for index in range(3):
        decision, _ = session.call("read", file_path=f"f{index}.py")
        assert fired(decision) == [], index
    decision, _ = session.call("read", file_path="f3.py")
    assert fired(decision) == ["search_before_read"]
    assert "3 reads without a search" in decision.notes[0]
    session.call("grep", pattern="needle")  # a search resets the streak of blind reads
    assert fired(session.call("read", file_path="f4.py")[0]) == []


def test_search_before_read_threshold_from_settings() -> None:
    session = only("search_before_read", max_blind_reads=1)
    assert fired(session.call("Read", file_path="a.py")[0]) == []
    assert fired(session.call("Read", file_path="b.py")[0]) == ["search_before_read"]


def test_verify_after_edit_reminds_after_the_tool() -> None:
    session = only("verify_after_edit")
    decision, notes = session.call("edit", file_path="a.py", old_string="x", new_string="y")
    assert fired(decision) == []
    assert fired(notes) == ["verify_after_edit"]
    assert notes[0].startswith("[BEHAVIOR REMINDER]") and "'a.py'" in notes[0]
    assert session.call("read", file_path="a.py")[1] == ()


def test_test_after_changes_and_the_test_run_resets() -> None:
    session = only("test_after_changes")
    assert session.call("edit", file_path="a.py", old_string="x", new_string="y")[1] == ()
    assert session.call("write", file_path="b.py", content="z")[1] == ()
    notes = session.call("Edit", file_path="a.py", old_string="y", new_string="z")[1]
    assert fired(notes) == ["test_after_changes"]
    assert notes[0].startswith("[BEHAVIOR REMINDER] test_after_changes: 3 changes")
    session.call("bash", command="cd src && python -m pytest -q tests/")
    assert session.state.counters["changes_since_test"] == 0
    assert session.call("edit", file_path="a.py", old_string="z", new_string="w")[1] == ()


@pytest.mark.parametrize(
    ("command", "warned"),
    [
        ("cat src/app.py", True),
        ("head -50 log.txt", True),
        ("tail -f out.log", True),
        ("less x", True),
        ("sed -i 's/a/b/' f.py", True),
        ("awk '{print $1}' data.csv", True),
        ("bat README.md", True),
        ("more notes.txt", True),
        ("perl -pi -e 's/a/b/' f.py", True),
        ("git log | head -5", True),
        ("cd src && cat a.py", True),
        ("pytest -q", False),
        ("git status", False),
        ("echo concatenate", False),
        ("python -m catalog", False),
        ("ls src", False),
    ],
)
def test_no_bash_for_files(command: str, warned: bool) -> None:
    session = only("no_bash_for_files")
    assert fired(session.pre("Bash", command=command)) == (["no_bash_for_files"] if warned else [])


@pytest.mark.parametrize(
    ("command", "warned"),
    [
        ("find . -name '*.py'", True),
        ("find .", True),
        ("ls -lRa", True),
        ("ls -R src", True),
        ("tree", True),
        ("tree -L 3", True),
        ("dir /s", True),
        ("find src -name x", False),
        ("ls -la", False),
        ("ls -lr", False),
        ("git ls-tree HEAD", False),
    ],
)
def test_no_blind_exploration(command: str, warned: bool) -> None:
    session = only("no_blind_exploration")
    assert fired(session.pre("bash", command=command)) == (["no_blind_exploration"] if warned else [])


@pytest.mark.parametrize(
    ("command", "blocked"),
    [
        ("rm -rf build", True),
        ("rm -fr build", True),
        ("rm -Rf /tmp/x", True),
        ("rm -r -f build", True),
        ("rm --recursive --force build", True),
        ("sudo rm -rf /", True),
        ("git reset --hard HEAD~1", True),
        ("git push --force origin main", True),
        ("git push -f", True),
        ("git clean -fd", True),
        ("git clean -fdx", True),
        ("psql -c 'DROP TABLE users'", True),
        ("echo 'drop database prod' | mysql", True),
        ("sqlite3 db 'truncate table logs'", True),
        ("rm build/a.o", False),
        ("rm -f a.o", False),
        ("rm -r build", False),
        ("git reset --soft HEAD~1", False),
        ("git push origin main", False),
        ("git push --force-with-lease", False),
        ("git clean -n", False),
        ("ls -rf", False),
        ("git status; rm -f x; ls -r", False),
        # the flags must be words of the same command: a newline ends it, a line continuation does not
        ("rm -f a.o\ngrep -r TODO .", False),
        ("rm -f \\\n  -r build", True),
        ("rm build -rf", True),
        ("/bin/rm -rf x", True),
        ("x=$(rm -rf y)", True),
        ("git status\ngit reset --hard", True),
        ("git reset\n--hard", False),
        ("git push origin main\necho -f", False),
        ("git push -uf origin main", True),
        ("git clean -d --force", True),
        ("git clean -d\nrm -f x", False),
        ("git log --oneline; git reset --mixed", False),
        # read as the permission guard reads commands: what runs, not what the text mentions
        ("git -C . reset --hard", True),
        ("git -c user.name=x --no-pager push -f", True),
        ("sudo -u root -- rm -r -f /srv", True),
        ("timeout 5 env X=1 rm -rf build", True),
        ("bash -c 'cd x && rm -rf build'", True),
        ("$'\\x72\\x6d' -rf build", True),
        ("\\rm -rf build", True),
        ("find . -name build -exec rm -rf {} +", True),
        ("echo 'rm -rf build'", False),
        ("git commit -m 'git reset --hard was wrong'", False),
        ("grep -r 'rm -rf' .", False),
    ],
)
def test_confirm_destructive_blocks(command: str, blocked: bool) -> None:
    session = only("confirm_destructive")
    decision = session.pre("bash", command=command)
    assert decision.block is blocked
    if blocked:
        assert decision.reason.startswith("[BEHAVIOR BLOCKED] confirm_destructive:")
        assert command[:50] in decision.reason


@pytest.mark.parametrize(
    ("name", "command", "blocked"),
    [
        # Long commands take linear time; the flags are found however far they are.
        ("rm words then flags", "rm " * 2000 + "-rf build", True),
        ("rm words printed", "echo " + "rm " * 2000 + "-rf build", False),
        ("rm words only", "rm " * 2000, False),
        ("3000 rm -f lines", "\n".join(f"rm -f file_{n}.o" for n in range(3000)), False),
        ("git reset words then --hard", "git reset " * 2000 + "--hard", True),
        ("git push words", "git push " * 2000 + "origin", False),
        ("git clean words then flags", "git clean " * 2000 + "-f -d", True),
    ],
)
def test_confirm_destructive_on_long_commands(name: str, command: str, blocked: bool) -> None:
    assert only("confirm_destructive").pre("bash", command=command).block is blocked, name


def test_a_blocked_call_is_not_counted() -> None:
    session = only("confirm_destructive")
    session.pre("bash", command="rm -rf /")
    assert session.state.tool_calls_this_turn == 0
    assert session.state.violations[-1]["rule"] == "confirm_destructive"


def test_plan_before_execute() -> None:
    session = only("plan_before_execute")
    assert fired(session.call("grep", text="", pattern="x")[0]) == ["plan_before_execute"]
    assert fired(session.call("grep", text="", pattern="y")[0]) == []  # only the first call of a turn
    session.turn("next task")
    assert fired(session.call("grep", text="Let me search for the handler.", pattern="x")[0]) == []
    session.turn("third task")
    session.engine.on_text(session.state, "I will start by reading the config.")
    assert fired(session.call("read", text="", file_path="a")[0]) == []


def test_web_search_when_unknown() -> None:
    session = only("web_search_when_unknown")
    notes = session.engine.on_text(session.state, "I'm not sure which version added this flag.")
    assert fired(notes) == ["web_search_when_unknown"]
    assert session.engine.on_text(session.state, "The flag exists since 2.0.") == ()
    session.call("WebSearch", query="flag release notes")
    assert session.engine.on_text(session.state, "I don't know yet.") == ()


def test_delegate_complex_at_exactly_eight_calls() -> None:
    session = only("delegate_complex")
    reminders = [session.call("grep" if index % 2 else "glob", pattern=str(index))[1] for index in range(10)]
    assert [index + 1 for index, notes in enumerate(reminders) if notes] == [8]
    assert "8 tool calls in this turn" in reminders[7][0]


def test_delegate_large_reads_after_five_in_a_row() -> None:
    session = only("delegate_large_reads")
    notes = [session.call("read", file_path=f"f{index}")[1] for index in range(6)]
    assert [index + 1 for index, item in enumerate(notes) if item] == [5, 6]
    session.call("grep", pattern="x")
    assert session.call("read", file_path="g")[1] == ()


def test_max_sequential_same_tool() -> None:
    session = only("max_sequential_same_tool")
    decisions = [session.call("bash", command=f"echo {index}")[0] for index in range(9)]
    assert [index + 1 for index, item in enumerate(decisions) if item.fired] == [8, 9]
    assert "bash 8 times in a row" in decisions[7].notes[0]


def test_max_sequential_same_tool_threshold_and_streak_breaks() -> None:
    session = only("max_sequential_same_tool", max_sequential_same_tool=3)
    assert [bool(session.call("glob", pattern="*")[0].fired) for _ in range(3)] == [False, False, True]
    session.call("grep", pattern="x")
    assert not session.call("glob", pattern="*")[0].fired


def test_always_lint_check() -> None:
    session = only("always_lint_check")
    clean = session.call(
        "edit",
        file_path="a.py",
        old_string="a",
        new_string="b",
        data={"lint": [{"severity": "warning", "message": "W1"}]},
    )[1]
    assert clean == ()
    notes = session.call(
        "write",
        file_path="a.py",
        content="x",
        data={"lint": [{"severity": "error", "message": "E999 syntax"}]},
    )[1]
    assert fired(notes) == ["always_lint_check"] and notes[0].startswith("[BEHAVIOR WARNING]")
