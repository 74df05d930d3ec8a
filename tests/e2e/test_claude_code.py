"""The real Claude Code CLI (npm ``@anthropic-ai/claude-code``, pinned in ``clients.py``) driving routes made
with ``route.init --claude-code``, against a scripted Anthropic Messages API on 127.0.0.1 (streamed, tool
inputs cut into ``input_json_delta`` chunks). The robot is scripted, but it reads what Claude Code sends it
(the tool results, the hook feedback) and every assertion about what "the model read" is made on the logged
request bodies.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

from tests.conftest import git
from tests.e2e.clients import run_claude
from tests.e2e.conftest import AnthropicServer, keep_stones, route_command, serving
from tests.e2e.model import Result, ScriptedModel, Seen, Steps, bash, say, use
from tests.fakes.llm_servers import Reply

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ROUTE_TOOLS = ("route_next", "route_status", "route_drive", "route_set_passed", "route_judge")
SPEC = """# Spec: a greeting

## Users
People running the tool from a terminal.

## Problem
It prints nothing.

## Change
It prints a greeting.

## Out of scope
Localisation.

## Acceptance criteria
1. `python3 -m app` prints `hello`.
"""
PLAN = """# Plan

## Steps
1. Add src/app/__main__.py printing hello.

## Tests
- test_greets

## Risks
None.
"""


def heredoc(path: str, text: str) -> str:
    return f"cat > {path} <<'EOF'\n{text}EOF"


def feedback(seen: Seen) -> str:
    """The Stop hook's reason as the model reads it (Claude Code wraps it as "Stop hook feedback:")."""
    head = "Stop hook feedback:\n"
    assert head in seen.said, f"no Stop hook feedback in request {seen.number}: {seen.said[-600:]!r}"
    return seen.said.split(head, 1)[1].split("\n</system-reminder>", 1)[0]


def ran(seen: Seen, *fragments: str) -> Result:
    """The last tool result, which must have succeeded and say every fragment."""
    result = seen.last
    assert not result.error, (seen.number, result)
    for fragment in fragments:
        assert fragment in result.text, (seen.number, fragment, result.text[:2000])
    return result


def refused(seen: Seen, reason: str) -> Result:
    """The last tool call was refused by a hook, and the model read the hook's reason: all of it, once, and
    not the hook's command line (which Claude Code shows only for a hook that exited 2)."""
    result = seen.last
    assert result.error, (seen.number, result)
    assert reason in result.text, (seen.number, reason, result.text)
    assert result.text.count(reason) == 1 and "[route.bounce]" not in result.text, result.text
    return result


def digest(directory: Path) -> dict[str, str]:
    return {
        str(path.relative_to(directory)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(directory.rglob("*"))
        if path.is_file() and path.name not in (".drive.state", ".session.state")  # the hooks' own state
    }


def test_the_robot_loop_over_bash_until_the_route_is_done(
    claude: Path, project: Path, tmp_path: Path
) -> None:
    keep_stones(project, "1.spec", "2.plan")
    guard = project / "routes" / "feature" / "2.plan.guard"
    kept = [
        line for line in guard.read_text().splitlines() if "approved?" not in line and "protect" not in line
    ]
    guard.write_text("\n".join(kept) + "\n", encoding="utf-8")  # the human: no approval gate on this route
    git(project, "commit", "-q", "-am", "no approval for the plan")

    def start(seen: Seen) -> Reply:
        # SessionStart: route.drive's guidance is in the model's context from the first request on.
        assert seen.mentions("route.drive: route routes/feature: 0 of 2 stones passed; next: 1.spec")
        return bash("route.stone.get --stone @next-one --say", "read the next stone")

    def write_spec(seen: Seen) -> Reply:
        ran(seen, "==> routes/feature/1.spec.stone (incomplete) <==", "Write `1.spec.md` next to this stone")
        return bash(heredoc("routes/feature/1.spec.md", SPEC), "write the spec")

    def sent_back(seen: Seen) -> Reply:
        reason = feedback(seen)
        assert reason.startswith("The route is not finished; keep going.\nroute routes/feature: 1 of 2")
        assert (
            "## 2.plan (needs-artifact)" in reason
            and "route.stone.set --route routes/feature --stone 2.plan" in reason
        )
        assert "[route.drive" not in seen.said  # the reason, not the hook's command line
        return bash("route.stone.get --stone @next-one --say", "read the next stone")

    robot = Steps(
        [
            start,
            write_spec,
            lambda seen: (ran(seen), bash("route.stone.set --stone 1.spec --as passed", "pass the stone"))[1],
            lambda seen: (ran(seen, "stone passed: 1.spec"), say("1.spec has passed."))[1],
            sent_back,
            lambda seen: (
                ran(seen, "==> routes/feature/2.plan.stone (incomplete) <=="),
                bash(heredoc("routes/feature/2.plan.md", PLAN), "write the plan"),
            )[1],
            lambda seen: (ran(seen), bash("route.stone.set --stone 2.plan --as passed", "pass the stone"))[1],
            lambda seen: (ran(seen, "stone passed: 2.plan"), say("Every stone has passed."))[1],
        ]
    )
    model = ScriptedModel(robot)
    with serving(AnthropicServer, model, tmp_path / "requests.jsonl") as server:
        run = run_claude(
            claude,
            project,
            tmp_path / "home",
            server.base_url,
            "Work through the route.",
            allowed_tools=["Bash"],
        )
    model.check()
    assert run.code == 0, run.stderr
    assert robot.taken == len(robot.steps) == len(model.turns)  # the Stop hook let it stop once done
    assert len(model.reviews) == 2  # each stone's bhrain review reached the scripted reviewer
    # The Stop hook's systemMessage: done, but the passes are not committed yet, so CI would not see them.
    assert "Stop says: route routes/feature: all 2 stones passed, but not committed: " in run.text()
    assert "route.verify fails what stands on them: commit them" in run.text()
    status = json.loads(route_command(project, "route.status", "--route", "routes/feature", "--json"))
    assert status["routes"][0]["complete"] is True


def test_a_route_that_waits_on_a_human(claude: Path, project: Path, tmp_path: Path) -> None:
    keep_stones(project, "1.spec", "2.plan")
    (project / "routes" / "feature" / "1.spec.md").write_text(SPEC, encoding="utf-8")

    def plan(seen: Seen) -> Reply:
        assert seen.mentions("## 2.plan (needs-artifact)")  # SessionStart: 1.spec passed already
        return bash(heredoc("routes/feature/2.plan.md", PLAN), "write the plan")

    def waits(seen: Seen) -> Reply:
        result = seen.last
        assert result.error and "Exit code 2" in result.text, result
        assert "route.stone.set --route routes/feature --stone 2.plan --as approved" in result.text
        return bash("route.stone.set --stone 2.plan --as approved", "approve it myself")

    def approval_refused(seen: Seen) -> Reply:
        result = seen.last
        assert result.error and "error: only humans can approve; a person runs route.stone.set" in result.text
        return say("2.plan waits for a human's approval.")

    robot = Steps(
        [
            plan,
            lambda seen: (ran(seen), bash("route.stone.set --stone 2.plan --as passed"))[1],
            waits,
            approval_refused,
        ]
    )
    model = ScriptedModel(robot)
    with serving(AnthropicServer, model, tmp_path / "requests.jsonl") as server:
        env = {"ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "sk-ant-e2e-dummy-key"}
        route_command(
            project, "route.stone.set", "--stone", "1.spec", "--as", "passed", env={**_env(), **env}
        )
        run = run_claude(
            claude,
            project,
            tmp_path / "home",
            server.base_url,
            "Go on with the route.",
            allowed_tools=["Bash"],
        )
    model.check()
    assert run.code == 0, run.stderr
    assert robot.taken == len(robot.steps) == len(model.turns)  # the Stop hook did not send it back
    assert "waiting for human approval of 2.plan" in run.text()  # its systemMessage, with the command
    assert not (project / "routes" / "feature" / ".route" / "2.plan.approved").exists()


def test_tampering_over_edit_write_and_bash_is_refused_and_the_model_reads_why(
    claude: Path, project: Path, tmp_path: Path
) -> None:
    route = project / "routes" / "feature"
    before = digest(route)
    guard, spec_marker = route / "1.spec.guard", route / ".route" / "1.spec.passed"
    attempts: list[tuple[Reply, str]] = [
        (
            use(
                "Edit",
                file_path=str(guard),
                old_string="--allow-blockers 0",
                new_string="--allow-blockers 99",
            ),
            "route.bounce: blocked routes/feature/1.spec.guard: guards (*.guard) are read-only templates",
        ),
        (
            use("Write", file_path=str(spec_marker), content="forged\n"),
            "route.bounce: blocked routes/feature/.route/1.spec.passed: files under a route's .route/",
        ),
        (
            bash("echo 'judges: []' > routes/feature/1.spec.guard"),
            "route.bounce: blocked routes/feature/1.spec.guard (a > redirection, in a Bash command): guards",
        ),
        (
            bash("sed -i 's/--allow-blockers 0/--allow-blockers 99/' routes/feature/1.spec.guard"),
            "route.bounce: blocked routes/feature/1.spec.guard (sed -i, in a Bash command): guards",
        ),
        (
            bash("cd routes/feature && rm -f 1.spec.stone"),
            "route.bounce: blocked routes/feature/1.spec.stone (rm, in a Bash command): stones (*.stone)",
        ),
        (
            bash("python3 -c \"open('routes/feature/1.spec.guard', 'w').write('judges: []')\""),
            "route.bounce: blocked this Bash command: it gives open('routes/feature/1.spec.guard', 'w')",
        ),
        (
            use("Write", file_path=str(project / "src" / "app.py"), content="print('early')\n"),
            "route.bounce: blocked src/app.py: it is protected by stone 2.plan of route routes/feature "
            "(protect: src/**) until that stone passes.",
        ),
        (
            bash("mkdir -p src && echo \"print('early')\" > src/app.py"),
            "route.bounce: blocked src/app.py (a > redirection, in a Bash command): it is protected by stone "
            "2.plan",
        ),
    ]
    expected: list[str] = []

    def attempt(index: int):  # type: ignore[no-untyped-def]
        def step(seen: Seen) -> Reply:
            if index:
                refused(seen, expected[index - 1])
            reply, reason = attempts[index]
            expected.append(reason)
            return reply

        return step

    def give_up(seen: Seen) -> Reply:
        refused(seen, expected[-1])
        return say("The route's files are not mine to change.")

    def sent_back(seen: Seen) -> Reply:
        assert feedback(seen).startswith("The route is not finished; keep going.")
        return say("I stop here.")

    robot = Steps([*(attempt(index) for index in range(len(attempts))), give_up, *([sent_back] * 3)])
    model = ScriptedModel(robot)
    with serving(AnthropicServer, model, tmp_path / "requests.jsonl") as server:
        run = run_claude(
            claude,
            project,
            tmp_path / "home",
            server.base_url,
            "Make the route pass, whatever it takes.",
            allowed_tools=["Bash", "Edit", "Write"],
        )
    model.check()
    assert run.code == 0, run.stderr
    assert robot.taken == len(robot.steps)  # three times sent back, then let go (--max-blocks 3)
    assert digest(route) == before, "a route file changed"
    assert not (project / "src").exists()


def test_the_mcp_loop_through_route_mcp(claude: Path, project: Path, tmp_path: Path) -> None:
    keep_stones(project, "1.spec")
    shutil.copy(EXAMPLES / "mcp" / ".mcp.json", project / ".mcp.json")
    git(project, "add", "-A")
    git(project, "commit", "-q", "-m", "route.mcp for the robot")
    spec = project / "routes" / "feature" / "1.spec.md"

    def first(seen: Seen) -> Reply:
        # route.mcp connected before the first request: its tools and its instructions are in it.
        for name in ROUTE_TOOLS:
            assert seen.mentions(f"mcp__route__{name}"), name
        assert seen.mentions("route.mcp drives a route: a directory of numbered stones")
        return use(
            "ToolSearch",
            query="select:mcp__route__route_next,mcp__route__route_set_passed,mcp__route__route_status",
        )

    def read_next(seen: Seen) -> Reply:
        return use("mcp__route__route_next")

    def write(seen: Seen) -> Reply:
        result = ran(seen, "Write `1.spec.md` next to this stone")
        # The guidance as text, not a JSON document: what --say prints, then the call that passes it.
        assert result.text.startswith("==> routes/feature/1.spec.stone (incomplete) <==\n# 1.spec")
        assert result.text.endswith(
            "when 1.spec's artifact is written: call route_set_passed with stone '1.spec'\n"
        )
        return use("Write", file_path=str(spec), content=SPEC)

    def set_passed(seen: Seen) -> Reply:
        ran(seen)
        return use("mcp__route__route_set_passed", stone="1.spec")

    def passed(seen: Seen) -> Reply:
        result = ran(seen, "routes/feature/.route/1.spec.guard.review.")
        assert result.text.startswith("stone passed: 1.spec\n"), result.text[:500]
        return use("mcp__route__route_status")

    def done(seen: Seen) -> Reply:
        board = json.loads(ran(seen).text)
        assert board["complete"] is True and board["passed"] == 1
        return say("The route is done.")

    robot = Steps([first, read_next, write, set_passed, passed, done])
    model = ScriptedModel(robot)
    with serving(AnthropicServer, model, tmp_path / "requests.jsonl") as server:
        run = run_claude(
            claude,
            project,
            tmp_path / "home",
            server.base_url,
            "Use the route tools to finish the route.",
            allowed_tools=["mcp__route", "Write", "ToolSearch", "Bash"],
            # claude -p waits about 2 s for MCP servers before its first request; route.mcp answers the
            # handshake in tens of milliseconds (bench_clients), but a CI machine under load has taken
            # longer. Waiting for it is the client's documented setting (docs/mcp.md, "Connecting").
            env={"CLAUDE_CODE_MCP_STARTUP_WAIT_MS": "60000"},
        )
    model.check()
    assert run.code == 0, run.stderr
    assert robot.taken == len(robot.steps) == len(model.turns)
    assert len(model.reviews) == 1
    init = run.of_type("system", "init")[0]
    assert {"name": "route", "status": "connected"}.items() <= init["mcp_servers"][0].items()


def test_bhrain_behave_blocks_a_destructive_command_and_the_model_reads_why(
    claude: Path, tmp_path: Path
) -> None:
    repo = tmp_path / "project"
    repo.mkdir()
    git(repo, "init", "-q")
    shutil.copytree(EXAMPLES / "claude-code-behavior" / ".claude", repo / ".claude")
    (repo / "build").mkdir()
    (repo / "build" / "out.o").write_text("object\n", encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "behavior rules")

    def blocked(seen: Seen) -> Reply:
        result = seen.last
        assert result.error and "[BEHAVIOR BLOCKED] confirm_destructive" in result.text, result
        assert "[bhrain behave" not in result.text, result.text  # the reason, not the hook's command line
        return say("I will ask before deleting build/.")

    robot = Steps([lambda seen: bash("rm -rf build", "clean the build"), blocked])
    model = ScriptedModel(robot)
    with serving(AnthropicServer, model, tmp_path / "requests.jsonl") as server:
        run = run_claude(
            claude,
            repo,
            tmp_path / "home",
            server.base_url,
            "Clean up the build output.",
            allowed_tools=["Bash"],
            env={"XDG_STATE_HOME": str(tmp_path / "state")},
        )
    model.check()
    assert run.code == 0, run.stderr
    assert robot.taken == len(robot.steps)
    assert (repo / "build" / "out.o").exists()


def _env() -> dict[str, str]:
    import os

    return dict(os.environ)
