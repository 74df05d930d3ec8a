"""route.status: the board, through the installed command, in real repositories. It must say what
route.drive and route.verify say, stone by stone, in every format."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import TEST_EMAIL
from tests.route.routes import make_route, review, run_route, steer, write
from tests.route_gate import mermaid
from tests.route_gate.gate import (
    approve,
    approvers,
    gated_route,
    lines_of,
    pass_all,
    route_set,
    verify,
)


def status(repo: Path, *args: str) -> dict[str, object]:
    done = run_route(["route.status", *args, "--json"], repo)
    assert done.code == 0, done.err
    payload = json.loads(done.out)
    assert isinstance(payload, dict)
    return payload


def states(repo: Path, route: str = "route") -> dict[str, tuple[str, str]]:
    (board,) = status(repo, "--route", route)["routes"]  # type: ignore[misc]
    return {stone["name"]: (stone["state"], stone["detail"]) for stone in board["stones"]}


def board_route(repo: Path) -> Path:
    """Every state at once: 1 passed; 2.1.a stale; 2.1.b rejected; 2.1.c malfunction; 2.1.d needs an
    artifact; 2.1.e ready; 2.1.f waits for approval; 3 blocked."""
    guard = f"reviews: ['{review('r1')}']\njudges: ['reviewed?']\n"
    route = make_route(
        repo,
        {
            "1.start": "s\n",
            "2.1.a": "a\n",
            "2.1.b": "b\n",
            "2.1.c": "c\n",
            "2.1.d": "d\n",
            "2.1.e": "e\n",
            "2.1.f": "f\n",
            "3.end": "e\n",
        },
        {
            "2.1.a": guard,
            "2.1.b": f"reviews: ['{review('rb')}']\njudges: ['reviewed?']\n",
            "2.1.c": "judges: ['sh -c \"echo no such tool >&2; exit 7\"']\n",
            "2.1.f": f"reviews: ['{review('r1')}']\njudges: ['reviewed?', 'approved?']\n",
        },
    )
    for stone in ("1.start", "2.1.a", "2.1.b", "2.1.c", "2.1.e", "2.1.f", "3.end"):
        write(route / f"{stone}.md", f"{stone}\n")
    approvers(repo, TEST_EMAIL)
    assert route_set(repo, route, "1.start").code == 0
    steer(repo, "r1", out="blockers: 0\nnitpicks: 2\n")
    assert route_set(repo, route, "2.1.a").code == 0
    write(route / "2.1.a.md", "edited after the pass\n")
    steer(repo, "rb", out="blockers: 1\nnitpicks: 0\n- blocker: no tests\n")
    assert route_set(repo, route, "2.1.b").code == 2
    assert route_set(repo, route, "2.1.c").code == 1
    assert route_set(repo, route, "2.1.f").code == 2
    return route


def test_the_board_shows_every_state_with_its_reason(git_repo: Path) -> None:
    board_route(git_repo)
    found = states(git_repo)
    assert {name: state for name, (state, _) in found.items()} == {
        "1.start": "passed",
        "2.1.a": "stale",
        "2.1.b": "rejected",
        "2.1.c": "malfunction",
        "2.1.d": "needs-artifact",
        "2.1.e": "ready",
        "2.1.f": "waiting-for-approval",
        "3.end": "blocked",
    }
    assert found["2.1.a"][1] == "artifacts changed since the pass: changed route/2.1.a.md"
    assert "blockers exceed threshold (1 > 0)" in found["2.1.b"][1]
    assert "exit 7" in found["2.1.c"][1]
    assert found["3.end"][1] == "2.1.a comes first"
    payload = status(git_repo, "--route", "route")
    (board,) = payload["routes"]  # type: ignore[misc]
    assert (board["passed"], board["total"], board["complete"]) == (1, 8, False)
    by_name = {stone["name"]: stone for stone in board["stones"]}
    assert by_name["3.end"]["blocked_by"] == "2.1.a"
    assert by_name["2.1.a"]["review"]["blockers"] == 0 and by_name["2.1.a"]["review"]["nitpicks"] == 2
    assert by_name["2.1.b"]["review"]["blockers"] == 1
    assert set(by_name["1.start"]) == {
        "name",
        "tier",
        "state",
        "detail",
        "blocked_by",
        "file",
        "review",
        "approval",
    }
    assert by_name["2.1.a"]["tier"] == "2.1" and by_name["2.1.a"]["file"] == "route/2.1.a.stone"


def test_the_board_agrees_with_route_verify_and_route_drive(git_repo: Path) -> None:
    route = gated_route(git_repo)
    pass_all(git_repo, route)
    write(route / "2.plan.md", "# Plan, changed\n")
    checked = lines_of(verify(git_repo, "--route", "route"))
    for name, (state, detail) in states(git_repo).items():
        verdict, _, why = checked[f"route/{name}"].partition(": ")
        assert state == verdict, name
        if state == "stale":
            assert detail == why
    drive = run_route(["route.drive", "--route", "route", "--json"], git_repo)
    guided = {stone["name"]: stone["state"] for stone in json.loads(drive.out)["next"]}
    assert guided == {"2.plan": "stale"}


def test_who_approved_and_when_and_for_which_content(git_repo: Path) -> None:
    route = gated_route(git_repo)
    assert approve(git_repo, route, "1.vision").code == 0
    (board,) = status(git_repo, "--route", "route")["routes"]  # type: ignore[misc]
    approval = board["stones"][0]["approval"]
    assert (approval["email"], approval["current"]) == (TEST_EMAIL, True)
    assert approval["at"].endswith("Z")
    write(route / "1.vision.md", "# Vision v2\n")
    (board,) = status(git_repo, "--route", "route")["routes"]  # type: ignore[misc]
    assert board["stones"][0]["approval"]["current"] is False
    text = run_route(["route.status", "--route", "route"], git_repo).out
    assert f"{TEST_EMAIL} " in text and "(older content)" in text


def test_piped_text_is_a_plain_table_with_a_progress_line(git_repo: Path) -> None:
    route = gated_route(git_repo)
    pass_all(git_repo, route)
    done = run_route(["route.status", "--route", "route"], git_repo)
    assert done.code == 0 and "\x1b[" not in done.out
    lines = done.out.splitlines()
    assert lines[0].split() == ["tier", "stone", "state", "detail", "review", "approved"]
    assert lines[1].split()[:3] == ["1", "1.vision", "passed"]
    assert lines[-1] == "route route: all 3 stones passed"
    every = run_route(["route.status", "--all"], git_repo)
    assert every.out == done.out


def test_markdown_holds_a_table_and_a_mermaid_flowchart_that_parses(git_repo: Path) -> None:
    board_route(git_repo)
    done = run_route(["route.status", "--route", "route", "--markdown"], git_repo)
    assert done.code == 0
    assert done.out.startswith("### route route: 1 of 8 stones passed\n\n| tier | stone | state |")
    (block,) = mermaid.blocks(done.out)
    chart = mermaid.parse(block)
    assert chart.direction == "LR"
    assert [len(members) for members in chart.subgraphs.values()] == [1, 6, 1]  # tiers 1, 2.1, 3
    assert chart.edges == [("t0", "t1"), ("t1", "t2")]
    assert sorted(chart.nodes.values())[0] == "1.start: passed"
    assert chart.classes["st_stale"] == ["s1"]


@pytest.mark.parametrize(
    "name",
    ['1.say "hi"', "1.a|b", "1.<b>", "1.x`y`", "1.end", "1.#35;", "1.[red]x"],
)
def test_hostile_stone_names_stay_inside_their_cells_and_labels(git_repo: Path, name: str) -> None:
    make_route(git_repo, {name: "do it\n", "2.next": "n\n"})
    done = run_route(["route.status", "--route", "route", "--markdown"], git_repo)
    assert done.code == 0, done.err
    table = [line for line in done.out.splitlines() if line.startswith("| 1 |")]
    assert len(table) == 1 and table[0].count(" | ") == 5  # the name's pipe is escaped
    chart = mermaid.parse(mermaid.blocks(done.out)[0])
    assert f"{name}: needs-artifact" in chart.nodes.values()
    plain = run_route(["route.status", "--route", "route"], git_repo).out
    assert name in plain


def test_a_route_that_is_not_there_is_one_line(git_repo: Path) -> None:
    done = run_route(["route.status", "--route", "nowhere"], git_repo)
    assert (done.code, done.out) == (2, "")
    assert done.err.startswith("error: route not found: nowhere; ")
    both = run_route(["route.status", "--route", "x", "--all"], git_repo)
    assert both.code == 2 and both.err == "error: --all and --route exclude each other; give one of them\n"


def _on_a_terminal(argv: list[str], cwd: Path, env: dict[str, str]) -> str:
    """What a command writes to a terminal 100 columns wide (its stdout a pseudo-terminal)."""
    import fcntl
    import os
    import pty
    import struct
    import subprocess
    import termios

    controller, terminal = pty.openpty()
    fcntl.ioctl(terminal, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 100, 0, 0))
    full_env = {key: value for key, value in os.environ.items() if key != "NO_COLOR"} | env
    done = subprocess.run(argv, cwd=cwd, stdout=terminal, stderr=subprocess.PIPE, env=full_env, timeout=60)
    os.close(terminal)
    chunks = []
    try:
        while chunk := os.read(controller, 65536):
            chunks.append(chunk)
    except OSError:  # the terminal side is closed: all of it was read
        pass
    os.close(controller)
    assert done.returncode == 0, done.stderr
    return b"".join(chunks).decode("utf-8")


def test_on_a_terminal_the_board_is_a_coloured_table_and_no_color_keeps_the_table(git_repo: Path) -> None:
    gated_route(git_repo)
    argv = ["route.status", "--route", "route"]
    coloured = _on_a_terminal(argv, git_repo, {"TERM": "xterm-256color"})
    plain = _on_a_terminal(argv, git_repo, {"TERM": "xterm-256color", "NO_COLOR": "1"})
    colour = re.compile(r"\x1b\[[\d;]*?(?:3[0-7]|38;)")  # a foreground colour; NO_COLOR keeps bold and dim
    assert colour.search(coloured) and not colour.search(plain)
    for shown in (coloured, plain):
        text = re.sub(r"\x1b\[[\d;]*m", "", shown)
        assert "1.vision" in text and "route route: 0 of 3 stones passed" in text
        assert 60 < max(len(line.rstrip("\r")) for line in text.splitlines()) <= 100  # the terminal's width
