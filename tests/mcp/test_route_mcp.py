"""``route.mcp`` as a real subprocess, driven by the official SDK's stdio client on real routes in git repos.

Every tool's answer is compared with what the matching ``route.*`` command prints, exits with and records.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.shared.exceptions import MCPError

from tests.conftest import run_cli
from tests.mcp.helpers import ancestor, model_reads, route_mcp, run, text, vision_route
from tests.route.routes import make_route, pass_records, review, runs, state_files, steer

pytestmark = pytest.mark.usefixtures("git_repo")


def test_initialize_lists_five_tools_with_strict_schemas_and_none_approves(git_repo: Path) -> None:
    vision_route(git_repo)

    async def go() -> Any:
        async with route_mcp(git_repo, "--route", "route") as session:
            return await session.list_tools()

    tools = {tool.name: tool for tool in run(go).tools}
    assert sorted(tools) == ["route_drive", "route_judge", "route_next", "route_set_passed", "route_status"]
    assert not [name for name in tools if "approv" in name]
    for tool in tools.values():
        assert tool.input_schema["type"] == "object"
        assert tool.input_schema["additionalProperties"] is False
        assert "route" in tool.input_schema["properties"]
    assert tools["route_set_passed"].input_schema["required"] == ["stone"]
    assert tools["route_judge"].input_schema["properties"]["mechanism"]["enum"] == ["reviewed?", "approved?"]
    assert tools["route_set_passed"].annotations.read_only_hint is False
    assert tools["route_next"].annotations.read_only_hint is True


def test_route_next_is_what_route_stone_get_says(git_repo: Path) -> None:
    make_route(git_repo, {"1.a": "First.\n", "2.1.x": "Tier x.\n", "2.1.y": "Tier y.\n"})
    (git_repo / "route" / "1.a.md").write_text("done\n", encoding="utf-8")
    assert (
        run_cli(["route.stone.set", "--route", "route", "--stone", "1.a", "--as", "passed"], git_repo).code
        == 0
    )

    async def go() -> tuple[Any, Any]:
        async with route_mcp(git_repo, "--route", "route") as session:
            one = await session.call_tool("route_next", {})
            every = await session.call_tool("route_next", {"selector": "@next-all"})
            return one, every

    one, every = run(go)
    for result, selector in ((one, "@next-one"), (every, "@next-all")):
        said = run_cli(["route.stone.get", "--route", "route", "--stone", selector, "--say"], git_repo)
        assert result.is_error is False and result.structured_content is None
        assert model_reads(result).startswith(said.out)  # the guidance, not a JSON document
    assert model_reads(one) == (
        "==> route/2.1.x.stone (incomplete) <==\nTier x.\n"
        "when 2.1.x's artifact is written: call route_set_passed with stone '2.1.x'\n"
    )
    assert "Tier x." in model_reads(every) and "Tier y." in model_reads(every)
    assert "with stone '2.1.x'\nwhen 2.1.y's artifact is written" in model_reads(every)


def test_route_set_passed_runs_the_guard_like_route_stone_set(git_repo: Path) -> None:
    route = vision_route(git_repo)

    async def go() -> tuple[Any, Any]:
        async with route_mcp(git_repo, "--route", "route") as session:
            first = await session.call_tool("route_set_passed", {"stone": "1.vision"})
            again = await session.call_tool("route_set_passed", {"stone": "1.vision"})
            return first, again

    first, again = run(go)
    assert first.is_error is False and first.structured_content is None
    assert model_reads(first).startswith("stone passed: 1.vision\n")
    marker = pass_records(route, "1.vision")[0].name
    assert f"route/.route/{marker}" in model_reads(first)  # the record files, named
    # The second call reuses everything, as a second route.stone.set would: the review ran once.
    assert runs(git_repo, "r1") == 1
    cli = run_cli(["route.stone.set", "--route", "route", "--stone", "1.vision", "--as", "passed"], git_repo)
    assert cli.code == 0 and cli.out == text(again) + "\n"
    assert pass_records(route, "1.vision")


def test_a_rejection_is_a_refused_tool_error_with_the_feedback_and_the_record_paths(git_repo: Path) -> None:
    route = vision_route(git_repo)
    steer(git_repo, "r1", out="## Blockers\n- the vision names no user\nblockers: 1\nnitpicks: 0\n")

    async def go() -> Any:
        async with route_mcp(git_repo, "--route", "route") as session:
            return await session.call_tool("route_set_passed", {"stone": "1.vision"})

    result = run(go)
    body = model_reads(result)
    assert result.is_error is True and result.structured_content is None
    first_line = body.splitlines()[0]
    assert first_line.startswith("refused: error: 1.vision rejected by 1 of 1 judge (j1 reviewed?: blockers")
    assert "- the vision names no user" in body  # the feedback the robot fixes
    records = [name for name in state_files(route) if ".guard.review." in name or ".guard.judge." in name]
    assert records and all(f"route/.route/{name}" in body for name in records)
    assert not pass_records(route, "1.vision")
    # The same line the command writes on stderr.
    cli = run_cli(["route.stone.set", "--route", "route", "--stone", "1.vision", "--as", "passed"], git_repo)
    assert cli.code == 2 and f"refused: {cli.err.strip()}" == first_line


def test_a_broken_review_is_a_malfunction_tool_error(git_repo: Path) -> None:
    route = vision_route(git_repo)
    steer(git_repo, "r1", exit_code=1)

    async def go() -> Any:
        async with route_mcp(git_repo, "--route", "route") as session:
            return await session.call_tool("route_set_passed", {"stone": "1.vision"})

    result = run(go)
    assert result.is_error is True
    assert model_reads(result).startswith("malfunction: error: 1.vision: review r1 failed with exit 1")
    assert result.structured_content is None
    assert not pass_records(route, "1.vision")


REFUSALS = [
    # (tool, arguments, the start of the answer)
    (
        "route_set_passed",
        {"stone": "2.plan"},
        "refused: error: 2.plan must wait: 1.vision, of a lower tier, ",
    ),
    ("route_set_passed", {"stone": "9.nope"}, "refused: error: no stone named '9.nope' in route; "),
    ("route_set_passed", {}, "refused: error: invalid arguments for route_set_passed: 'stone' is a required"),
    (
        "route_set_passed",
        {"stone": "1.vision", "as": "approved"},
        "refused: error: invalid arguments for route_set_passed: Additional properties are not allowed",
    ),
    (
        "route_set_passed",
        {"stone": 7},
        "refused: error: invalid arguments for route_set_passed: stone: 7 is not",
    ),
    (
        "route_judge",
        {"stone": "1.vision", "mechanism": "sure?"},
        "refused: error: invalid arguments for route_judge",
    ),
    (
        "route_judge",
        {"stone": "1.vision", "mechanism": "reviewed?", "allow_blockers": -1},
        "refused: error: invalid arguments for route_judge: allow_blockers: -1 is less than the minimum of 0",
    ),
    (
        "route_judge",
        {"stone": "1.vision", "mechanism": "approved?", "allow_blockers": 1},
        "refused: error: --allow-blockers and --allow-nitpicks apply only to reviewed?; drop them",
    ),
    (
        "route_next",
        {"selector": "*"},
        "refused: error: invalid arguments for route_next: selector: '*' is not one",
    ),
    ("route_next", {"route": "elsewhere"}, "refused: error: route not found: elsewhere"),
    (
        "route_approve",
        {"stone": "1.vision"},
        "refused: error: unknown tool 'route_approve'; tools: route_next",
    ),
]


def test_refusals_are_tool_errors_and_the_server_keeps_serving(git_repo: Path) -> None:
    route = vision_route(git_repo)
    before = state_files(route)

    async def go() -> tuple[list[Any], Any]:
        async with route_mcp(git_repo, "--route", "route") as session:
            answers = [await session.call_tool(name, arguments) for name, arguments, _ in REFUSALS]
            return answers, await session.call_tool("route_next", {})

    answers, after = run(go)
    for (name, arguments, start), result in zip(REFUSALS, answers, strict=True):
        assert result.is_error is True, (name, arguments)
        assert text(result).startswith(start), (name, arguments, text(result))
        assert "\n" not in text(result), "a refusal is one line"
        assert result.structured_content is None and model_reads(result) == text(result)
    assert after.is_error is False and "Write the vision." in text(after)
    assert state_files(route) == before, "nothing was written for a refused call"
    assert runs(git_repo, "r1") == 0


def test_a_stone_waiting_for_a_human_says_so_and_nothing_approves_it(git_repo: Path) -> None:
    route = vision_route(git_repo, guard="judges:\n  - approved?\n")

    async def go() -> tuple[Any, Any]:
        async with route_mcp(git_repo, "--route", "route") as session:
            set_result = await session.call_tool("route_set_passed", {"stone": "1.vision"})
            judged = await session.call_tool("route_judge", {"stone": "1.vision", "mechanism": "approved?"})
            return set_result, judged

    set_result, judged = run(go)
    for result in (set_result, judged):
        assert result.is_error is True
        said = model_reads(result)
        assert said.startswith("refused: error: ")
        gate = said.split("\n\n")[1]
        assert gate.startswith("needs a human: 1.vision waits for a human's approval")
        approve = "route.stone.set --route route --stone 1.vision --as approved"
        assert gate.endswith(f"A human runs, in a terminal: {approve}")
    assert not (route / ".route" / "1.vision.approved").exists()
    assert not pass_records(route, "1.vision")


def test_route_judge_reads_the_reviews_like_route_stone_judge(git_repo: Path) -> None:
    vision_route(git_repo)
    steer(git_repo, "r1", out="blockers: 0\nnitpicks: 3\n")

    async def go() -> tuple[Any, Any, Any]:
        async with route_mcp(git_repo, "--route", "route") as session:
            await session.call_tool("route_set_passed", {"stone": "1.vision"})
            strict = {"stone": "1.vision", "mechanism": "reviewed?", "allow_nitpicks": 2}
            lenient = {"stone": "1.vision", "mechanism": "reviewed?"}
            return (
                await session.call_tool("route_judge", strict),
                await session.call_tool("route_judge", lenient),
                await session.call_tool("route_judge", {**strict, "route": "route"}),
            )

    strict, lenient, explicit = run(go)
    judge = ["route.stone.judge", "--mechanism", "reviewed?", "--route", "route", "--stone", "1.vision"]
    cli = run_cli([*judge, "--allow-nitpicks", "2"], git_repo)
    assert strict.is_error is True and cli.code == 2
    assert model_reads(strict) == f"refused: {cli.err.strip()}\n\n{cli.out}"
    assert lenient.is_error is False and text(lenient) == run_cli(judge, git_repo).out
    assert text(explicit) == text(strict)


def test_route_drive_and_route_status(git_repo: Path) -> None:
    make_route(
        git_repo,
        {"1.vision": "Write the vision.\n", "2.1.api": "API.\n", "2.1.ui": "UI.\n", "3.ship": "Ship.\n"},
        {"2.1.api": f"reviews:\n  - {review('r1')}\njudges:\n  - reviewed?\n"},
    )
    for name in ("1.vision", "2.1.api"):
        (git_repo / "route" / f"{name}.md").write_text(f"# {name}\n", encoding="utf-8")
    assert (
        run_cli(
            ["route.stone.set", "--route", "route", "--stone", "1.vision", "--as", "passed"], git_repo
        ).code
        == 0
    )
    steer(git_repo, "r1", out="blockers: 2\nnitpicks: 0\n")
    assert (
        run_cli(
            ["route.stone.set", "--route", "route", "--stone", "2.1.api", "--as", "passed"], git_repo
        ).code
        == 2
    )

    async def go() -> tuple[Any, Any]:
        async with route_mcp(git_repo, "--route", "route") as session:
            return await session.call_tool("route_drive", {}), await session.call_tool("route_status", {})

    drive, status = run(go)
    assert drive.is_error is False and drive.structured_content is None
    said = run_cli(["route.drive", "--route", "route"], git_repo).out
    assert model_reads(drive) == said and "route.stone.set --route route --stone 2.1.api --as passed" in said
    document = status.structured_content
    assert json.loads(text(status)) == document == json.loads(model_reads(status))  # one board, either way
    # The same document route.status --json prints for the route.
    board = json.loads(run_cli(["route.status", "--route", "route", "--json"], git_repo).out)
    assert board["routes"] == [document]
    assert (document["passed"], document["total"], document["complete"]) == (1, 4, False)
    states = {stone["name"]: stone["state"] for stone in document["stones"]}
    assert states == {
        "1.vision": "passed",
        "2.1.api": "rejected",
        "2.1.ui": "needs-artifact",
        "3.ship": "blocked",
    }
    rejected = next(stone for stone in document["stones"] if stone["name"] == "2.1.api")
    assert "blockers exceed threshold (2 > 0)" in rejected["detail"]


def test_stones_are_resources_and_no_other_file_is(git_repo: Path) -> None:
    route = vision_route(git_repo)

    async def go() -> tuple[Any, str, list[str]]:
        async with route_mcp(git_repo, "--route", "route") as session:
            listed = await session.list_resources()
            read = await session.read_resource(listed.resources[0].uri)
            refused = []
            for uri in (
                (route / "1.vision.guard").as_uri(),
                (route / "1.vision.md").as_uri(),
                Path("/etc/passwd").as_uri(),
                (route / "sub" / ".." / "1.vision.stone").as_uri(),
            ):
                try:
                    await session.read_resource(uri)
                except MCPError as exc:
                    refused.append(exc.message)
            return listed, read.contents[0].text, refused

    listed, content, refused = run(go)
    assert [(r.name, r.uri) for r in listed.resources] == [
        ("1.vision", (route / "1.vision.stone").resolve().as_uri()),
        ("2.plan", (route / "2.plan.stone").resolve().as_uri()),
    ]
    assert content == "Write the vision.\n"
    assert len(refused) == 4 and all(message.startswith("error: unknown resource ") for message in refused)


def test_a_stone_too_large_to_read_is_an_error_answer_not_its_bytes(git_repo: Path) -> None:
    # The resource is read through userfile, as route.stone.get reads it: a stone larger than a person
    # writes (here one byte over the cap) is refused in one line; a FIFO swapped in is never waited on.
    route = vision_route(git_repo)
    with (route / "2.plan.stone").open("r+b") as handle:
        handle.truncate(8 * 1024 * 1024 + 1)  # sparse: nothing is read to refuse it

    async def go() -> tuple[str, str]:
        async with route_mcp(git_repo, "--route", "route") as session:
            uri = (route / "2.plan.stone").resolve().as_uri()
            try:
                await session.read_resource(uri)
            except MCPError as exc:
                refused = exc.message
            else:
                refused = ""
            read = await session.read_resource((route / "1.vision.stone").resolve().as_uri())
            return refused, read.contents[0].text

    refused, other = run(go)
    assert refused.startswith("error: stone ") and "2.plan.stone: more than 8,388,608 bytes" in refused
    assert "\n" not in refused
    assert other == "Write the vision.\n"  # the server goes on answering


def test_without_a_route_resources_are_empty_and_tools_say_what_to_do(git_repo: Path) -> None:
    vision_route(git_repo)

    async def go() -> tuple[Any, Any, Any]:
        async with route_mcp(git_repo) as session:
            listed = await session.list_resources()
            unbound = await session.call_tool("route_next", {})
            named = await session.call_tool("route_next", {"route": "route"})
            return listed, unbound, named

    listed, unbound, named = run(go)
    assert listed.resources == []
    assert text(unbound) == "refused: error: no route bound to this branch; use --route or route.bind --set"
    assert named.is_error is False and "Write the vision." in text(named)


def test_a_wrong_route_option_is_refused_in_one_line_before_serving(git_repo: Path) -> None:
    done = run_cli(["route.mcp", "--route", "nowhere"], git_repo, input="")
    assert done.code == 2
    assert done.err.startswith("error: route not found: nowhere") and done.err.count("\n") == 1
    assert done.out == ""


def test_an_idle_server_ends_when_the_client_closes_its_stdin(git_repo: Path) -> None:
    vision_route(git_repo)
    done = run_cli(["route.mcp", "--route", "route"], git_repo, input="", timeout=30)
    assert (done.code, done.out) == (0, "")


def _review_pid(repo: Path, name: str) -> int | None:
    path = repo / ".ctl" / f"{name}.pid"
    return int(path.read_text()) if path.exists() else None


def test_progress_is_reported_and_a_cancelled_call_stops_its_reviews_and_records_nothing(
    git_repo: Path,
) -> None:
    from tests.route.routes import alive, write

    route = vision_route(git_repo)
    write(git_repo / ".ctl" / "r1.sleep", "60")
    progress: list[tuple[float, str | None]] = []

    async def on_progress(value: float, total: float | None, message: str | None) -> None:
        progress.append((value, message))

    async def go() -> tuple[int, list[str], Any]:
        async with route_mcp(git_repo, "--route", "route") as session:
            with anyio.move_on_after(60) as deadline:
                async with anyio.create_task_group() as group:
                    group.start_soon(
                        lambda: session.call_tool(
                            "route_set_passed", {"stone": "1.vision"}, progress_callback=on_progress
                        )
                    )
                    while _review_pid(git_repo, "r1") is None or len(progress) < 2:
                        await anyio.sleep(0.05)
                    group.cancel_scope.cancel()  # the SDK sends notifications/cancelled for the call
            assert not deadline.cancelled_caught, "the review never started"
            pid = _review_pid(git_repo, "r1")
            assert pid is not None
            with anyio.fail_after(10):
                while alive(pid):
                    await anyio.sleep(0.05)
            recorded = state_files(route)
            # The same server goes on: the stone's lock is free, the review runs again and passes.
            (git_repo / ".ctl" / "r1.sleep").unlink()
            return pid, recorded, await session.call_tool("route_set_passed", {"stone": "1.vision"})

    pid, recorded, after = run(go)
    assert not alive(pid)
    assert [name for name in recorded if ".review." in name or name.endswith(".passed")] == []
    assert progress[0][0] < progress[-1][0], "progress only grows"
    assert any(message and "1.vision: 1 command of its guard running" in message for _, message in progress)
    assert after.is_error is False and text(after).startswith("stone passed: 1.vision")
    assert runs(git_repo, "r1") == 2


def test_cancelling_one_call_leaves_the_other_calls_reviews_running(git_repo: Path) -> None:
    from tests.route.routes import write

    guard = "reviews:\n  - {}\njudges:\n  - reviewed?\n"
    route = make_route(
        git_repo,
        {"1.a": "A.\n", "1.b": "B.\n"},
        {"1.a": guard.format(review("ra")), "1.b": guard.format(review("rb"))},
    )
    for name in ("1.a", "1.b"):
        (route / f"{name}.md").write_text(f"# {name}\n", encoding="utf-8")
    write(git_repo / ".ctl" / "ra.sleep", "60")
    write(git_repo / ".ctl" / "rb.sleep", "3")
    results: dict[str, Any] = {}

    async def go() -> None:
        async with route_mcp(git_repo, "--route", "route") as session:

            async def set_b() -> None:
                results["1.b"] = await session.call_tool("route_set_passed", {"stone": "1.b"})

            async with anyio.create_task_group() as outer:
                outer.start_soon(set_b)
                with anyio.fail_after(30):
                    async with anyio.create_task_group() as doomed:
                        doomed.start_soon(lambda: session.call_tool("route_set_passed", {"stone": "1.a"}))
                        while _review_pid(git_repo, "ra") is None or _review_pid(git_repo, "rb") is None:
                            await anyio.sleep(0.05)
                        doomed.cancel_scope.cancel()

    run(go)
    assert results["1.b"].is_error is False, text(results["1.b"])
    names = state_files(route)
    assert pass_records(route, "1.b") and not pass_records(route, "1.a")
    assert [name for name in names if name.startswith("1.a.guard.review")] == []
    assert [name for name in names if name.startswith("1.b.guard.review")] != []


def test_sigterm_stops_the_server_and_its_reviews(git_repo: Path) -> None:
    import os
    import signal

    from tests.route.routes import alive, write

    vision_route(git_repo)
    write(git_repo / ".ctl" / "r1.sleep", "60")
    errlog = git_repo.parent / "sigterm.stderr"

    closed: list[str] = []

    async def go() -> tuple[int, int]:
        async with route_mcp(git_repo, "--route", "route", errlog=errlog) as session:

            async def call() -> None:
                try:
                    result = await session.call_tool("route_set_passed", {"stone": "1.vision"})
                except MCPError as exc:  # the server went away under the call
                    closed.append(exc.message)
                else:  # or it still answered, in the moment between stopping the review and exiting
                    closed.append(text(result))

            async with anyio.create_task_group() as group:
                group.start_soon(call)
                with anyio.fail_after(30):
                    while _review_pid(git_repo, "r1") is None:
                        await anyio.sleep(0.05)
                review_pid = _review_pid(git_repo, "r1")
                assert review_pid is not None
                server = ancestor(review_pid, b"route.mcp")
                os.kill(server, signal.SIGTERM)
                with anyio.fail_after(10):
                    while alive(server) or alive(review_pid):
                        await anyio.sleep(0.05)
            return server, review_pid

    server, review_pid = run(go)
    assert not alive(server) and not alive(review_pid)
    assert closed[0] == "Connection closed" or closed[0].startswith(
        "malfunction: error: 1.vision: review r1 was stopped before it finished"
    ), closed
    assert errlog.read_text(encoding="utf-8").strip().splitlines()[-1] == "error: terminated"
    assert [name for name in state_files(git_repo / "route") if ".review." in name] == []
