"""The feature template's guards run as written: its bhrain reviews (the real anthropic client, pointed at the
fake Messages API server) and its `pytest -q || exit 2` judge (a real pytest run in the repository)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import run_cli
from tests.fakes.llm_servers import AnthropicServer, Recorded, Reply
from tests.route.routes import record_pass

BLOCKED = "Blockers:\n- a TODO is left in the text\n\nNitpicks:\n- none\n\nblockers: 1\nnitpicks: 0\n"
CLEAN = "Blockers:\n- none\n\nNitpicks:\n- none\n\nblockers: 0\nnitpicks: 0\n"


def reviewer(recorded: Recorded) -> Reply:
    """A model that blocks any artifact holding a TODO."""
    return Reply.text(BLOCKED if "TODO" in json.dumps(recorded.json) else CLEAN)


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def test_the_feature_templates_review_and_test_judges_run_as_written(git_repo: Path) -> None:
    assert run_cli(["route.init", "routes/f"], git_repo).code == 0
    route = git_repo / "routes" / "f"
    with AnthropicServer(responder=reviewer) as server:
        env = {"ANTHROPIC_API_KEY": "sk-test-key", "ANTHROPIC_BASE_URL": server.base_url}

        def set_passed(stone: str) -> tuple[int, str, str]:
            ran = run_cli(
                ["route.stone.set", "--route", "routes/f", "--stone", stone, "--as", "passed"],
                git_repo,
                env=env,
                timeout=300,
            )
            return ran.code, ran.out, ran.err

        write(route / "1.spec.md", "# Spec\n## Users\nTODO: say who\n")
        code, out, err = set_passed("1.spec")
        assert code == 2, out + err  # a rejection the robot can fix, not a malfunction
        assert "blockers exceed threshold (1 > 0)" in out
        reviewed = [r for r in server.requests if r.path.endswith("/messages")]
        assert reviewed and "1.spec.md" in json.dumps(reviewed[0].json)

        write(route / "1.spec.md", "# Spec\n## Users\nTeams who lose their notes.\n")
        code, out, err = set_passed("1.spec")
        assert code == 0, out + err

        # The test judge: failing tests are a rejection with pytest's output as feedback (exit 2), not a
        # malfunction (a bare pytest would exit 1).
        write(git_repo / "src" / "notes.py", "def count(text):\n    return len(text.split())\n")
        write(
            git_repo / "tests" / "test_notes.py",
            "import sys, pathlib\n"
            "sys.path.insert(0, str(pathlib.Path(__file__).parents[1] / 'src'))\n"
            "from notes import count\n\n"
            "def test_count():\n    assert count('a b c') == 4\n",
        )
        write(route / "3.2.tests.md", "| criterion | test |\n|---|---|\n| 1 | tests/test_notes.py |\n")
        # The stones of lower tiers first (a route is walked a tier at a time): recorded as passed with the
        # driver's own functions, since what is tried here is the test judge.
        for earlier in ("2.plan", "3.1.impl"):
            record_pass(route, earlier)
        code, out, err = set_passed("3.2.tests")
        assert code == 2, out + err
        assert "pytest -q || exit 2: failed" in out and "1 failed" in out

        write(
            git_repo / "tests" / "test_notes.py",
            (git_repo / "tests" / "test_notes.py").read_text(encoding="utf-8").replace("== 4", "== 3"),
        )
        code, out, err = set_passed("3.2.tests")
        assert code == 0, out + err
    passed = {p.name.rsplit(".passed.", 1)[0] for p in (route / ".route").glob("*.passed.*")}
    assert passed == {"1.spec", "2.plan", "3.1.impl", "3.2.tests"}
