"""What must hold under stress: timeouts, concurrent runs, kills, hostile names, and untouched definitions."""

from __future__ import annotations

import json
import os
import signal
import subprocess
from pathlib import Path

import pytest

from routedriver.route.guard import MAX_OUTPUT
from tests.conftest import run_cli
from tests.route.routes import (
    alive,
    definition_digest,
    make_route,
    pass_records,
    review,
    route_cmd,
    run_route,
    runs,
    state_files,
    stone_get,
    stone_set,
    wait_for,
    write,
)

BARRIER = """\
import pathlib, sys, time
control, me, expected = pathlib.Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
control.mkdir(exist_ok=True)
(control / f"arrived.{me}").write_text("")
deadline = time.monotonic() + 20
while len(list(control.glob("arrived.*"))) < expected:
    if time.monotonic() > deadline:
        print("not all reviews ran at once")
        sys.exit(1)
    time.sleep(0.01)
print("blockers: 0\\nnitpicks: 0")
"""


def test_a_timed_out_review_has_its_process_group_killed_and_is_a_malfunction(git_repo: Path) -> None:
    route = make_route(
        git_repo,
        {"1.x": "x\n"},
        {
            "1.x": (
                "timeout: 1\nreviews:\n"
                "  - 'mkdir -p .ctl; sleep 60 & echo $! > .ctl/child.pid; echo started; wait'\n"
                "judges: ['reviewed?']\n"
            )
        },
    )
    write(route / "1.x.md", "x\n")
    result = stone_set(git_repo, route, "1.x")
    assert result.code == 1
    assert result.err.startswith("error: 1.x: review r1 timed out after 1s; fix route/1.x.guard or")
    assert "review r1 timed out: mkdir -p .ctl; sleep 60" in result.out  # which command, on stdout
    child = int((git_repo / ".ctl" / "child.pid").read_text())
    wait_for(lambda: not alive(child), 10, "the review's background child to die")
    files = state_files(route)
    review_file = next(name for name in files if ".guard.review." in name)
    text = (route / ".route" / review_file).read_text()
    assert "status: timeout\n" in text and text.endswith("---\nstarted\n")  # partial output kept
    assert not any(".guard.judge." in name for name in files)


def test_reviews_run_in_parallel(git_repo: Path) -> None:
    write(git_repo / "tools" / "barrier.py", BARRIER)
    reviews = "".join(f"  - python3 tools/barrier.py .ctl r{index} 8\n" for index in range(1, 9))
    route = make_route(git_repo, {"1.x": "x\n"}, {"1.x": f"timeout: 60\nreviews:\n{reviews}"})
    write(route / "1.x.md", "x\n")
    result = stone_set(git_repo, route, "1.x", "--json")
    assert result.code == 0, result.out
    assert [r["status"] for r in json.loads(result.out)["reviews"]] == ["ok"] * 8


def test_concurrent_sets_on_one_stone_run_each_review_once(git_repo: Path) -> None:
    route = make_route(
        git_repo, {"1.x": "x\n"}, {"1.x": f"reviews: ['{review('r1')}']\njudges: ['reviewed?']\n"}
    )
    write(route / "1.x.md", "x\n")
    write(git_repo / ".ctl" / "r1.sleep", "1.5")
    argv = route_cmd("set", route, "--stone", "1.x", "--as", "passed", "--json")
    first = subprocess.Popen(argv, cwd=git_repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: (git_repo / ".ctl" / "r1.count").exists(), 30, "the first run's review to start")
    second = subprocess.Popen(argv, cwd=git_repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    outputs = [first.communicate(timeout=60), second.communicate(timeout=60)]
    assert first.returncode == second.returncode == 0, outputs
    assert runs(git_repo, "r1") == 1
    payloads = [json.loads(out) for out, _ in outputs]
    assert [p["reviews"][0]["reused"] for p in payloads] == [False, True]
    assert payloads[0]["reviews"][0]["path"] == payloads[1]["reviews"][0]["path"]


def test_a_run_killed_mid_review_leaves_nothing_trusted_and_the_rerun_resumes(git_repo: Path) -> None:
    route = make_route(
        git_repo,
        {"1.x": "x\n"},
        {"1.x": (f"reviews:\n  - {review('r1')}\n  - {review('r2')}\njudges: ['reviewed?']\n")},
    )
    write(route / "1.x.md", "x\n")
    write(git_repo / ".ctl" / "r2.sleep", "60")
    argv = route_cmd("set", route, "--stone", "1.x", "--as", "passed")
    victim = subprocess.Popen(argv, cwd=git_repo, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for(lambda: any(name.endswith(".r1.md") for name in state_files(route)), 30, "review r1's file")
    # Its count is written after its pid file: once it counts a run, the pid is there.
    wait_for(lambda: runs(git_repo, "r2") == 1, 30, "review r2 to start")
    victim.send_signal(signal.SIGKILL)
    victim.wait(timeout=10)
    os.killpg(int((git_repo / ".ctl" / "r2.pid").read_text()), signal.SIGKILL)  # the orphaned review
    assert not any(name.endswith(".r2.md") for name in state_files(route))
    assert "1.x.passed" not in state_files(route)

    (git_repo / ".ctl" / "r2.sleep").unlink()
    rerun = stone_set(git_repo, route, "1.x", "--json")
    assert rerun.code == 0, rerun.out
    payload = json.loads(rerun.out)
    assert [r["reused"] for r in payload["reviews"]] == [True, False]
    assert (runs(git_repo, "r1"), runs(git_repo, "r2")) == (1, 2)


HOSTILE = '1.it\'s "odd" $(touch pwned) `touch pwned` ünï ✓'


def test_hostile_stone_and_route_names_round_trip_and_never_execute(git_repo: Path) -> None:
    route = make_route(
        git_repo,
        {HOSTILE: "Do the odd thing.\n", "2.next": "n\n"},
        {
            HOSTILE: (
                'reviews:\n  - \'printf "%s\\n%s\\nblockers: 0\\nnitpicks: 0\\n" $stone "$route"\'\n'
                "  - \"printf '%s\\\\n' '$stone' \\\"$STONE\\\"; echo 'blockers: 0'; echo 'nitpicks: 0'\"\n"
                "judges:\n  - reviewed?\n  - 'test \"$(cat $route/$stone.md)\" = ok'\n"
            )
        },
        name="a route $(touch pwned) 'q'",
    )
    write(route / f"{HOSTILE}.md", "ok")
    assert stone_get(git_repo, route).out == f"{HOSTILE}\n"
    result = stone_set(git_repo, route, HOSTILE, "--json")
    assert result.code == 0, (result.out, result.err)
    payload = json.loads(result.out)
    first = (route / ".route" / Path(payload["reviews"][0]["path"]).name).read_text().split("---\n", 2)[2]
    assert first.splitlines()[:2] == [HOSTILE, route.name]
    second = (route / ".route" / Path(payload["reviews"][1]["path"]).name).read_text().split("---\n", 2)[2]
    assert second.splitlines()[:2] == [HOSTILE, HOSTILE]
    assert not list(git_repo.rglob("pwned")) and not (Path.cwd() / "pwned").exists()
    assert stone_get(git_repo, route).out == "2.next\n"
    approved = stone_set(git_repo, route, HOSTILE, as_="approved")
    assert approved.code == 0
    deleted = run_cli(route_cmd("del", route, "--stone", "2.next"), git_repo)
    assert deleted.out == "2.next\n"
    assert not list(git_repo.rglob("pwned"))


def test_only_del_ever_changes_stones_and_guards(git_repo: Path) -> None:
    route = make_route(
        git_repo,
        {"1.a": "a\n", "2.b": "b\n"},
        {"1.a": f"reviews: ['{review('r1')}']\njudges: ['reviewed?', 'approved?']\n"},
    )
    write(route / "1.a.md", "a\n")
    before = definition_digest(route)
    commands = [
        (route_cmd("get", route, "--say"), 0),
        (route_cmd("get", route, "--stone", "*", "--json"), 0),
        (route_cmd("set", route, "--stone", "1.a", "--as", "passed"), 2),
        (route_cmd("set", route, "--stone", "1.a", "--as", "approved"), 2),  # a robot: refused
        (route_cmd("set", route, "--stone", "1.a", "--as", "approved", "--human"), 0),
        (route_cmd("set", route, "--stone", "1.a", "--as", "passed"), 0),
        (route_cmd("set", route, "--stone", "2.b", "--as", "passed"), 2),
        (route_cmd("judge", route, "--stone", "1.a", "--mechanism", "reviewed?"), 0),
        (route_cmd("judge", route, "--stone", "1.a", "--mechanism", "approved?"), 0),
        (route_cmd("get", route, "--stone", "@next-all", "--say"), 0),
    ]
    for argv, code in commands:
        human = argv[-1] == "--human"  # an approval typed by a person at a terminal
        assert run_route(argv[:-1] if human else argv, git_repo, human=human).code == code, argv
        assert definition_digest(route) == before, argv
    assert run_cli(route_cmd("del", route, "--stone", "2.b"), git_repo).code == 0
    assert definition_digest(route) == {
        name: digest for name, digest in before.items() if name != "2.b.stone"
    }


# A review that answers SIGTERM with clean counts and exit 0, and otherwise (once .ctl/r1.sleep is gone)
# reports 3 blockers: a stopped run must never record its SIGTERM answer as the review.
TRAPS_TERM = (
    'trap \'echo "blockers: 0"; echo "nitpicks: 0"; exit 0\' TERM; echo run >> .ctl/r1.count; '
    "sleep \"$(cat .ctl/r1.sleep 2>/dev/null || echo 0)\" & wait; echo 'blockers: 3'; echo 'nitpicks: 0'"
)


@pytest.mark.parametrize(("signum", "said"), [(signal.SIGINT, "interrupted"), (signal.SIGTERM, "terminated")])
def test_a_stopped_run_records_no_review_it_killed_and_the_rerun_runs_them_again(
    git_repo: Path, signum: int, said: str
) -> None:
    quoted = TRAPS_TERM.replace('"', '\\"')
    route = make_route(
        git_repo,
        {"1.x": "x\n"},
        {"1.x": f"reviews:\n  - \"{quoted}\"\n  - {review('r2')}\njudges: ['reviewed?']\n"},
    )
    write(route / "1.x.md", "x\n")
    write(git_repo / ".ctl" / "r1.sleep", "60")
    write(git_repo / ".ctl" / "r2.sleep", "60")
    argv = route_cmd("set", route, "--stone", "1.x", "--as", "passed")
    victim = subprocess.Popen(argv, cwd=git_repo, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for(lambda: runs(git_repo, "r1") == 1 and runs(git_repo, "r2") == 1, 30, "both reviews")
    victim.send_signal(signum)  # what Ctrl-C (or a CI runner's cancel) sends to the installed script
    out, err = victim.communicate(timeout=30)
    assert (victim.returncode, out, err) == (128 + signum, "", f"error: {said}\n")
    assert not any(".guard." in name for name in state_files(route))  # nothing a later run could trust

    (git_repo / ".ctl" / "r1.sleep").unlink()
    (git_repo / ".ctl" / "r2.sleep").unlink()
    rerun = stone_set(git_repo, route, "1.x", "--json")
    assert rerun.code == 2, rerun.out  # the real r1 says 3 blockers
    payload = json.loads(rerun.out)
    assert [r["reused"] for r in payload["reviews"]] == [False, False]
    assert (runs(git_repo, "r1"), runs(git_repo, "r2")) == (2, 2)


def test_a_path_that_is_not_utf8_is_refused_in_one_line_naming_it(git_repo: Path) -> None:
    odd = os.fsdecode(b"\xff")  # the byte as Python holds it: a surrogate escape
    route = make_route(git_repo, {"1.a": "a\n"}, name="route")
    write(route / f"1.a.{odd}.md", "a\n")  # only an artifact's name is not UTF-8
    refused = stone_set(git_repo, route, "1.a")
    assert (refused.code, refused.out) == (2, "")
    assert refused.err == (
        "error: artifact path is not valid UTF-8: route/1.a.\\xff.md; "
        "rename it (and any directory in it) to a UTF-8 name\n"
    )

    strange = make_route(git_repo, {"1.a": "a\n"}, name=f"r{odd}")  # the route directory's own name
    write(strange / "1.a.md", "a\n")
    for argv in (
        route_cmd("set", strange, "--stone", "1.a", "--as", "passed"),
        route_cmd("get", strange),
        ["route.bind", "--set", str(strange)],
    ):
        done = run_cli(argv, git_repo)
        assert (done.code, done.out) == (2, ""), argv
        shown = f"{git_repo}/r\\xff"  # the undecodable byte as text, in the route's full path
        assert done.err.startswith(f"error: route path is not valid UTF-8: {shown}; rename it"), argv
    assert not (strange / ".route").exists()  # refused before anything was written


def test_a_review_longer_than_the_output_limit_keeps_its_counts_at_the_end(git_repo: Path) -> None:
    huge = "head -c 20000000 /dev/zero | tr '\\\\0' x; echo; echo 'blockers: 0'; echo 'nitpicks: 1'"
    route = make_route(
        git_repo, {"1.x": "x\n"}, {"1.x": f"reviews:\n  - \"{huge}\"\njudges: ['reviewed?']\n"}
    )
    write(route / "1.x.md", "x\n")
    result = stone_set(git_repo, route, "1.x", "--json")
    assert result.code == 0, (result.out, result.err)  # reviewed? found the counts after the cut
    path = route / ".route" / Path(json.loads(result.out)["reviews"][0]["path"]).name
    with path.open("rb") as handle:
        front = handle.read(2000).decode("utf-8", "replace")
        handle.seek(-100, os.SEEK_END)
        end = handle.read()
    assert "status: ok\n" in front
    dropped = int(front.split("stdout_dropped_bytes: ", 1)[1].split("\n", 1)[0])
    assert dropped == 20000000 + len("\nblockers: 0\nnitpicks: 1\n") - MAX_OUTPUT
    assert end.endswith(b"xxx\nblockers: 0\nnitpicks: 1\n")


# --route pointed at something no directory can be read from, and each command's one line for it.
UNREADABLE_ROUTES = [
    ("a loop of links", "loop", "error: cannot read route loop: Too many levels of symbolic links; "),
    # os.path.realpath recurses once per link: a robot's chain of 1,500 was a RecursionError (internal error)
    ("a chain of links", "l1500", "error: cannot read route l1500: Too many levels of symbolic links; "),
    (
        "a name too long for the system",
        "r" * 300,
        f"error: cannot read route {'r' * 300}: File name too long; ",
    ),
    ("a path through a file", "afile/route", "error: route not found: afile/route; "),
    ("a file", "afile", "error: route is not a directory: afile; "),
]


@pytest.mark.parametrize(
    ("what", "route", "said"), UNREADABLE_ROUTES, ids=[row[0] for row in UNREADABLE_ROUTES]
)
def test_a_route_that_cannot_be_read_is_refused_in_one_line_by_every_command(
    git_repo: Path, what: str, route: str, said: str
) -> None:
    (git_repo / "loop").symlink_to("loop")
    (git_repo / "route").mkdir()
    (git_repo / "l0").symlink_to("route")
    for number in range(1, 1501):
        (git_repo / f"l{number}").symlink_to(f"l{number - 1}")
    write(git_repo / "afile", "not a route\n")
    for argv in (
        ["route.stone.get", "--route", route, "--stone", "@next-one", "--say"],
        ["route.stone.set", "--route", route, "--stone", "1.a", "--as", "passed"],
        ["route.status", "--route", route],
        ["route.lint", "--route", route],
    ):
        done = run_cli(argv, git_repo)
        assert (done.code, done.out) == (2, ""), (what, argv, done.out)
        assert done.err.startswith(said) and done.err.count("\n") == 1, (what, argv, done.err)
    # The gate fails the route closed, on a line of its own (a symlinked route: in its own words).
    verified = run_cli(["route.verify", "--route", route], git_repo)
    assert verified.code == 2 and "internal error" not in verified.err, (what, verified.err)
    assert verified.out.startswith(f"broken     {route}/*: "), (what, verified.out)


def test_the_longest_stone_name_the_driver_allows_passes_and_one_byte_more_is_refused(git_repo: Path) -> None:
    from routedriver.route.store import MAX_STONE_NAME_BYTES

    longest = "1." + "é" * ((MAX_STONE_NAME_BYTES - 2) // 2) + "x" * ((MAX_STONE_NAME_BYTES - 2) % 2)
    assert len(longest.encode()) == MAX_STONE_NAME_BYTES
    guard = f"reviews:\n  - {review('r1')}\njudges:\n  - reviewed?\n"
    route = make_route(git_repo, {longest: "do it\n"}, {longest: guard})
    write(route / f"{longest}.md", "done\n")
    passed = stone_set(git_repo, route, longest)  # its review, judge and pass files are written
    assert passed.code == 0 and pass_records(route, longest), passed.err

    too_long = longest + "x"
    other = make_route(git_repo, {too_long: "do it\n"}, name="other")
    said = f"stone name is {MAX_STONE_NAME_BYTES + 1} bytes long, too long for the names of the driver's"
    for ran in (stone_get(git_repo, other), stone_set(git_repo, other, too_long)):
        assert (ran.code, ran.out) == (2, "") and ran.err.startswith(f"error: {said}"), ran.err
        assert ran.err.endswith(f"; shorten it to at most {MAX_STONE_NAME_BYTES} bytes\n"), ran.err
    linted = run_cli(["route.lint", "--route", "other"], git_repo)
    assert linted.code == 2 and f"error: the name is {MAX_STONE_NAME_BYTES + 1} bytes long" in linted.out
    docs = (Path(__file__).parents[2] / "docs" / "route.md").read_text(encoding="utf-8")
    assert f"`<name>` is at most {MAX_STONE_NAME_BYTES} bytes (UTF-8)" in docs  # what the user reads


def test_without_git_on_path_every_route_command_says_so_in_one_line(git_repo: Path, tmp_path: Path) -> None:
    """No git is not "not in a git repository": that would send the user looking for the wrong cause, and
    the gate must not take a missing git for an answer about the repository."""
    import shutil

    route = make_route(git_repo, {"1.a": "a\n", "2.b": "b\n"}, {})
    write(route / "1.a.md", "a\n")
    assert stone_set(git_repo, route, "1.a").code == 0  # so that get must ask git what 1.a's files hold
    empty = tmp_path / "bin-without-git"
    empty.mkdir()
    for argv in (
        ["route.stone.get", "--route", str(route), "--stone", "@next-one", "--say"],
        ["route.status"],
        ["route.drive", "--route", str(route)],
        ["route.bind", "--get"],
        ["route.lint", "--all"],
        ["route.verify", "--all"],
        ["route.verify", "--route", str(route)],
    ):
        program = shutil.which(argv[0])
        assert program is not None, argv
        done = run_cli([program, *argv[1:]], git_repo, env={"PATH": str(empty)})
        assert done.code == 2 and done.out == "", (argv, done)
        assert (
            done.err
            == "error: cannot run git (git: No such file or directory); install git, or put it on PATH\n"
        ), (
            argv,
            done.err,
        )
