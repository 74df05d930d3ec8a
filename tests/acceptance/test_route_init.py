"""route.init: a starter route in one command, from the installed console script, in real repositories.

Every template lints clean and every stone is a self-contained guide (seed 004 B1); nothing is ever
overwritten without --force, and every refusal comes before the first write.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import pytest

from tests.conftest import git, run_cli

TEMPLATES = ("feature", "minimal", "research")
GUIDE_PARTS = ("**What.**", "**Why.**", "**How.**", "**Watch out.**")


def snapshot(root: Path) -> dict[str, str]:
    """Every file under ``root`` (outside .git) with the sha256 of its bytes."""
    return {
        path.relative_to(root).as_posix(): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(root.rglob("*"))
        if path.is_file() and ".git" not in path.relative_to(root).parts
    }


def test_list_shows_every_template_on_one_line_each(tmp_path: Path) -> None:
    ran = run_cli(["route.init", "--list"], tmp_path)
    assert ran.code == 0 and ran.err == ""
    lines = ran.out.splitlines()
    assert [line.split()[0] for line in lines] == list(TEMPLATES)
    assert all(len(line.split(maxsplit=1)[1]) > 20 for line in lines)  # a real description each
    assert "(default)" in lines[0]
    assert list(tmp_path.iterdir()) == []  # listing writes nothing


@pytest.mark.parametrize("template", TEMPLATES)
def test_every_template_lints_clean_and_each_stone_is_a_guide(git_repo: Path, template: str) -> None:
    ran = run_cli(["route.init", "routes/work", "--template", template], git_repo)
    assert ran.code == 0, ran.err
    route = git_repo / "routes" / "work"
    written = sorted(line for line in ran.out.splitlines())
    assert written == sorted(f"routes/work/{p.name}" for p in route.iterdir())
    assert not any(p.name == "template.txt" for p in route.iterdir())
    assert "next:" in ran.err and "route.lint --route routes/work" in ran.err

    lint = run_cli(["route.lint", "--route", "routes/work"], git_repo)
    assert (lint.code, lint.out, lint.err) == (0, "ok\n", "")  # no error and no warning
    stones = sorted(route.glob("*.stone"))
    assert stones
    for stone in stones:
        text = stone.read_text(encoding="utf-8")
        positions = [text.find(part) for part in GUIDE_PARTS]
        assert all(p >= 0 for p in positions) and positions == sorted(positions), stone.name
        assert "{{" not in text  # the placeholder became the route's path
        name = stone.name.removesuffix(".stone")
        if "route.stone.set" in text:
            assert f"route.stone.set --route routes/work --stone {name} --as passed" in text

    got = run_cli(["route.stone.get", "--route", "routes/work", "--stone", "@next-one"], git_repo)
    assert got.code == 0 and got.out.startswith("1.")


def test_the_feature_template_has_the_promised_gates(git_repo: Path) -> None:
    assert run_cli(["route.init", "routes/feat"], git_repo).code == 0  # feature is the default
    route = git_repo / "routes" / "feat"
    assert sorted(p.name.removesuffix(".stone") for p in route.glob("*.stone")) == [
        "1.spec",
        "2.plan",
        "3.1.impl",
        "3.2.tests",
        "4.ship",
    ]
    import yaml

    guards = {
        p.name.removesuffix(".guard"): yaml.safe_load(p.read_text(encoding="utf-8"))
        for p in route.glob("*.guard")
    }
    approvals = sorted(name for name, guard in guards.items() if "approved?" in guard["judges"])
    assert approvals == ["2.plan", "4.ship"]  # a human looks at the plan and at what ships
    assert "pytest -q || exit 2" in guards["3.2.tests"]["judges"]
    for name, guard in guards.items():
        assert any(j.startswith("reviewed? --allow-blockers 0") for j in guard["judges"]), name
        for review in guard["reviews"]:
            # Sandboxed (docs/bhrain.md, Sandbox): a review reads what the robot it judges wrote.
            prefix = "bhrain run --skill review --atom claude --sandbox on --input-file $route/"
            assert review.startswith(prefix), review


def test_a_path_with_spaces_is_quoted_in_the_stones(git_repo: Path) -> None:
    ran = run_cli(["route.init", "my routes/a b", "--template", "minimal"], git_repo)
    assert ran.code == 0, ran.err
    text = (git_repo / "my routes" / "a b" / "1.task.stone").read_text(encoding="utf-8")
    assert "route.stone.set --route 'my routes/a b' --stone 1.task --as passed" in text


def test_the_route_in_the_stones_is_relative_to_the_top_level(git_repo: Path) -> None:
    (git_repo / "sub").mkdir()
    ran = run_cli(["route.init", "routes/x", "--template", "minimal"], git_repo / "sub")
    assert ran.code == 0, ran.err
    assert ran.out == "routes/x/1.task.stone\n"  # shown relative to where the user is
    text = (git_repo / "sub" / "routes" / "x" / "1.task.stone").read_text(encoding="utf-8")
    assert "--route sub/routes/x --stone 1.task" in text  # commands run from the top level


def test_it_refuses_to_overwrite_and_writes_nothing(git_repo: Path) -> None:
    assert run_cli(["route.init", "routes/r"], git_repo).code == 0
    spec = git_repo / "routes" / "r" / "1.spec.stone"
    spec.write_text("# my own spec stone\nWhat, why, how.\n", encoding="utf-8")
    before = snapshot(git_repo)
    for argv in (["route.init", "routes/r"], ["route.init", "routes/r", "--template", "research"]):
        ran = run_cli(argv, git_repo)
        assert ran.code == 2 and ran.out == ""
        assert ran.err.count("\n") == 1 and ran.err.startswith("error: routes/r")
        assert "--force" in ran.err
        assert snapshot(git_repo) == before
    assert run_cli(["route.init", "routes/r"], git_repo).err == (
        "error: routes/r/1.spec.guard exists (and 9 more of the template's files); choose another "
        "directory, or pass --force to overwrite the template's files\n"
    )

    (git_repo / "routes" / "r" / "notes.txt").write_text("keep me\n", encoding="utf-8")
    forced = run_cli(["route.init", "routes/r", "--force"], git_repo)
    assert forced.code == 0, forced.err
    assert "my own spec stone" not in spec.read_text(encoding="utf-8")
    assert (git_repo / "routes" / "r" / "notes.txt").read_text(encoding="utf-8") == "keep me\n"


def test_a_directory_holding_another_route_is_refused(git_repo: Path) -> None:
    route = git_repo / "routes" / "old"
    route.mkdir(parents=True)
    (route / "1.vision.stone").write_text("Write the vision.\n", encoding="utf-8")
    before = snapshot(git_repo)
    ran = run_cli(["route.init", "routes/old"], git_repo)
    assert ran.code == 2
    assert ran.err == (
        "error: routes/old already holds a route (1.vision.stone); choose a new directory, or pass --force "
        "to add the template's files to it\n"
    )
    assert snapshot(git_repo) == before


@pytest.mark.parametrize(
    "setup, argv, expected",
    [
        (
            lambda repo: (repo / "afile").write_text("x"),
            ["afile"],
            "error: afile exists and is not a directory",
        ),
        (lambda repo: None, ["r", "--template", "nope"], "error: unknown template 'nope'; templates: feat"),
        (lambda repo: None, ["r", "--template", "../feature"], "error: unknown template '../feature'"),
        (lambda repo: None, [], "error: missing DIR; name the route's directory"),
        (lambda repo: None, ["r", "--list"], "error: --list takes nothing else"),
        (
            lambda repo: (repo / "r").mkdir() or (repo / "r" / "1.spec.stone").mkdir(),
            ["r", "--force"],
            "error: r/1.spec.stone exists and is not a regular file",
        ),
        (
            lambda repo: (repo / "r").mkdir() or (repo / "r" / "1.spec.stone").symlink_to(repo / "README.md"),
            ["r", "--force"],
            "error: r/1.spec.stone exists and is not a regular file",
        ),
    ],
)
def test_bad_input_is_one_line_and_nothing_is_written(
    git_repo: Path, setup: object, argv: list[str], expected: str
) -> None:
    setup(git_repo)  # type: ignore[operator]
    before = snapshot(git_repo)
    ran = run_cli(["route.init", *argv], git_repo)
    assert ran.code == 2, ran.err
    assert ran.err.startswith(expected) and ran.err.count("\n") == 1, ran.err
    assert "Traceback" not in ran.err and ran.out == ""
    assert snapshot(git_repo) == before


def test_bind_binds_the_new_route_to_the_current_branch(git_repo: Path) -> None:
    git(git_repo, "switch", "-q", "-c", "feature/login")
    ran = run_cli(["route.init", "routes/login", "--bind"], git_repo)
    assert ran.code == 0, ran.err
    assert "bound routes/login to branch feature/login" in ran.out.splitlines()
    assert run_cli(["route.bind", "--get"], git_repo).out == "routes/login\n"
    assert "route.lint\n" in ran.err  # bound: the next steps leave out --route
    got = run_cli(["route.stone.get"], git_repo)  # no --route needed any more
    assert got.code == 0 and got.out.startswith("1.spec")


def test_bind_on_main_is_refused_before_anything_is_written(git_repo: Path) -> None:
    before = snapshot(git_repo)
    ran = run_cli(["route.init", "routes/login", "--bind"], git_repo)
    assert ran.code == 2
    assert ran.err.startswith("error: refusing to bind a route to main; bind on a work branch: git switch ")
    assert snapshot(git_repo) == before and not (git_repo / "routes").exists()


# ---------------------------------------------------------------- --claude-code

EXAMPLE_SETTINGS = Path(__file__).resolve().parents[2] / "examples/claude-code/.claude/settings.json"


def test_claude_code_writes_the_example_hooks_into_a_new_settings_file(git_repo: Path) -> None:
    (git_repo / "sub").mkdir()
    ran = run_cli(["route.init", "../routes/x", "--claude-code"], git_repo / "sub")
    assert ran.code == 0, ran.err
    written = json.loads((git_repo / ".claude" / "settings.json").read_text(encoding="utf-8"))
    assert written == json.loads(EXAMPLE_SETTINGS.read_text(encoding="utf-8"))  # the repository's top level
    assert "../.claude/settings.json: added hooks SessionStart, Stop, PreToolUse" in ran.out.splitlines()


def test_claude_code_merges_into_existing_settings_and_is_idempotent(git_repo: Path) -> None:
    settings = git_repo / ".claude" / "settings.json"
    settings.parent.mkdir()
    mine = {
        "permissions": {"allow": ["Bash(npm test)"], "deny": ["Read(.env)"]},
        "model": "claude-opus",
        "hooks": {
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "command", "command": "./scripts/check-bash.sh"}]}
            ],
            "PostToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "npm run fmt"}]}],
            # Already there with a full path: it counts, nothing is added for Stop.
            "Stop": [{"hooks": [{"type": "command", "command": ".venv/bin/route.drive --when hook.onStop"}]}],
        },
    }
    settings.write_text(json.dumps(mine, indent=4) + "\n", encoding="utf-8")
    ran = run_cli(["route.init", "--claude-code"], git_repo)  # hooks only: no DIR
    assert ran.code == 0, ran.err
    assert ran.out == ".claude/settings.json: added hooks SessionStart, PreToolUse\n"
    merged = json.loads(settings.read_text(encoding="utf-8"))
    assert merged["permissions"] == mine["permissions"] and merged["model"] == "claude-opus"
    hooks = merged["hooks"]
    assert hooks["PostToolUse"] == mine["hooks"]["PostToolUse"]  # type: ignore[index]
    assert hooks["Stop"] == mine["hooks"]["Stop"]  # type: ignore[index]
    assert hooks["PreToolUse"][0] == mine["hooks"]["PreToolUse"][0]  # type: ignore[index]  # theirs first
    assert hooks["PreToolUse"][1]["hooks"][0]["command"] == "route.bounce"
    assert hooks["SessionStart"][0]["hooks"][0]["command"] == "route.drive --when hook.onBoot"
    assert not (git_repo / "routes").exists()

    once = settings.read_bytes()
    again = run_cli(["route.init", "--claude-code"], git_repo)
    assert again.code == 0
    assert again.out == ".claude/settings.json: the route hooks are there already; nothing added\n"
    assert settings.read_bytes() == once


@pytest.mark.parametrize(
    "content, expected",
    [
        ('{"hooks": {"Stop": []},}\n', "error: .claude/settings.json: malformed JSON (Expecting property"),
        ("// my settings\n{}\n", "error: .claude/settings.json: line 1: malformed JSON (Expecting value at"),
        ('{"model": "a", "model": "b"}', "error: .claude/settings.json: key 'model' appears twice; fix it"),
        ("[]", "error: cannot add hooks to .claude/settings.json: it is not a JSON object"),
        ('{"hooks": []}', "error: cannot add hooks to .claude/settings.json: 'hooks' is not an object"),
        ('{"hooks": {"Stop": {}}}', "error: cannot add hooks to .claude/settings.json: 'hooks.Stop' is not"),
        (b'{"model": "\xff"}', "error: .claude/settings.json: line 1: not UTF-8 text"),
        ("FIFO", "error: .claude/settings.json: a named pipe (FIFO), not a regular file; fix it by hand"),
    ],
)
def test_settings_it_cannot_merge_are_refused_untouched_and_no_route_is_written(
    git_repo: Path, content: str | bytes, expected: str
) -> None:
    settings = git_repo / ".claude" / "settings.json"
    settings.parent.mkdir()
    if content == "FIFO":  # read through userfile: refused before it is opened, never waited on
        os.mkfifo(settings)
    elif isinstance(content, bytes):
        settings.write_bytes(content)
    else:
        settings.write_text(content, encoding="utf-8")
    git(git_repo, "switch", "-q", "-c", "work")
    before = snapshot(git_repo)
    ran = run_cli(["route.init", "routes/x", "--claude-code", "--bind"], git_repo)
    assert ran.code == 2
    assert ran.err.startswith(expected) and ran.err.count("\n") == 1, ran.err
    assert ran.out == ""
    assert snapshot(git_repo) == before  # neither the route, nor the binding, nor the settings


def test_claude_code_outside_git_is_refused(tmp_path: Path) -> None:
    ran = run_cli(["route.init", "r", "--claude-code"], tmp_path)
    assert ran.code == 2 and ran.err.startswith("error: --claude-code writes the repository's")
    assert list(tmp_path.iterdir()) == []


def test_route_init_has_a_version_and_a_help_line(tmp_path: Path) -> None:
    version = run_cli(["route.init", "--version"], tmp_path)
    assert version.code == 0 and re.match(r"route\.init, version \d", version.out)
    helped = run_cli(["route.init", "--help"], tmp_path)
    assert helped.code == 0 and "--claude-code" in helped.out and "--template NAME" in helped.out


def test_claude_code_widens_the_bounce_matcher_an_older_route_init_wrote(git_repo: Path) -> None:
    settings = git_repo / ".claude" / "settings.json"
    settings.parent.mkdir()
    older = json.loads(EXAMPLE_SETTINGS.read_text(encoding="utf-8"))
    older["hooks"]["PreToolUse"][0]["matcher"] = "Write|Edit|MultiEdit|NotebookEdit"  # before Bash was read
    mine = {"matcher": "Write|Edit", "hooks": [{"type": "command", "command": "route.bounce --route r"}]}
    older["hooks"]["PreToolUse"].append(mine)  # a matcher the user chose stays theirs
    settings.write_text(json.dumps(older), encoding="utf-8")
    ran = run_cli(["route.init", "--claude-code"], git_repo)
    assert ran.code == 0, ran.err
    assert ran.out == (
        ".claude/settings.json: route.bounce now also runs for PreToolUse matcher "
        "Write|Edit|MultiEdit|NotebookEdit|Bash\n"
    )
    groups = json.loads(settings.read_text(encoding="utf-8"))["hooks"]["PreToolUse"]
    assert [group["matcher"] for group in groups] == ["Write|Edit|MultiEdit|NotebookEdit|Bash", "Write|Edit"]
    again = run_cli(["route.init", "--claude-code"], git_repo)
    assert again.out == ".claude/settings.json: the route hooks are there already; nothing added\n"
