"""Every guard example in the docs (README.md, docs/*.md) lints clean as written, and every bhrain review in
them runs as written: the real anthropic client, pointed at the fake Messages API server, reviews the
artifact's content (a review given the artifact's path as its text would not see it)."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from tests.conftest import run_cli
from tests.fakes.llm_servers import AnthropicServer, Recorded, Reply
from tests.route.routes import make_route, write

REPO_ROOT = Path(__file__).resolve().parents[2]
DOCS = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
# A fenced block, also one indented inside a list item (its closing fence has the same indent).
FENCE = re.compile(r"^(?P<indent>[ ]*)```[\w-]*\n(?P<body>.*?)^(?P=indent)```[ ]*$", re.M | re.S)
GUARD_KEY = re.compile(r"^(?:reviews|judges):", re.M)


def guard_examples() -> list[tuple[str, str]]:
    """(``file:line``, the YAML as a user would copy it) for every fenced block that is a guard."""
    found = []
    for doc in DOCS:
        text = doc.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            body = textwrap.dedent(match["body"])
            if GUARD_KEY.search(body):
                line = text.count("\n", 0, match.start()) + 1
                found.append((f"{doc.relative_to(REPO_ROOT)}:{line}", body))
    return found


EXAMPLES = guard_examples()


def test_the_guard_examples_are_found_where_the_docs_have_them() -> None:
    files = {where.split(":")[0] for where, _ in EXAMPLES}
    assert {"README.md", "docs/route.md", "docs/bhrain.md", "docs/behaviorci.md"} <= files
    assert len([where for where in EXAMPLES if where[0].startswith("docs/route.md")]) >= 2


@pytest.mark.parametrize("where, guard", EXAMPLES, ids=[where for where, _ in EXAMPLES])
def test_every_guard_example_lints_clean(git_repo: Path, where: str, guard: str) -> None:
    make_route(git_repo, {"1.vision": "Write the vision.\n"}, {"1.vision": guard}, name="routes/demo")
    ran = run_cli(["route.lint", "--route", "routes/demo"], git_repo)
    assert (ran.code, ran.out, ran.err) == (0, "ok\n", ""), f"{where}:\n{guard}\n{ran.out}{ran.err}"


def bhrain_reviews() -> list[str]:
    import yaml

    commands = []
    for _, guard in EXAMPLES:
        for review in yaml.safe_load(guard).get("reviews", []):
            if review.startswith("bhrain ") and review not in commands:
                commands.append(review)
    return commands


REVIEWS = bhrain_reviews()


def test_the_docs_show_bhrain_reviews() -> None:
    assert len(REVIEWS) >= 2


@pytest.mark.parametrize("command", REVIEWS)
def test_every_bhrain_review_in_the_docs_runs_as_written(git_repo: Path, command: str) -> None:
    guard = f"reviews:\n  - {json.dumps(command)}\njudges:\n  - reviewed?\n"  # JSON: a YAML string
    route = make_route(git_repo, {"1.vision": "Write the vision.\n"}, {"1.vision": guard}, name="routes/demo")
    marker = "The vision names its users: small teams."
    for name in {"1.vision.md", *re.findall(r"\$route/([\w.-]+\.md)", command)}:
        write(route / name, f"# {name}\n{marker}\n")

    def review(recorded: Recorded) -> Reply:
        return Reply.text("Looks fine.\nblockers: 0\nnitpicks: 0\n")

    with AnthropicServer(responder=review) as server:
        ran = run_cli(
            ["route.stone.set", "--route", "routes/demo", "--stone", "1.vision", "--as", "passed"],
            git_repo,
            env={"ANTHROPIC_API_KEY": "sk-test-key", "ANTHROPIC_BASE_URL": server.base_url},
            timeout=300,
        )
        requests = [json.dumps(r.json) for r in server.requests if r.json is not None]
    assert ran.code == 0, f"{command}\n{ran.out}{ran.err}"
    assert requests and marker in requests[0]  # the artifact's content reached the model
