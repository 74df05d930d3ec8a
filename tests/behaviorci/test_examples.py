"""The shipped examples keep working: the qa bundle passes under its mock as written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "behaviorci"


def test_qa_example_runs_and_shows_repeat(tmp_path: Path) -> None:
    assert run_cli(["behaviorci", "validate", str(EXAMPLES / "qa")], tmp_path).code == 0
    ran = run_cli(["behaviorci", "run", str(EXAMPLES / "qa"), "--format", "json", "--verbose"], tmp_path)
    assert ran.code == 0, ran.err
    report = json.loads(ran.out)
    cases = {case["id"]: case for case in report["cases"]}
    assert report["repeat"] == 3 and report["passed"] is True
    assert (cases["boiling-point"]["passed_runs"], cases["boiling-point"]["passed"]) == (2, True)
    assert cases["largest-planet"]["evaluation"]["schema_valid"] is True  # a fenced JSON answer


def test_following_the_examples_readme_leaves_the_checkout_clean(tmp_path: Path) -> None:
    """Every command block of examples/behaviorci/README.md, run as written from the top of a checkout,
    works and leaves no file in it (git sees nothing untracked or changed)."""
    import re
    import shutil

    from tests.conftest import git

    checkout = tmp_path / "checkout"
    shutil.copytree(EXAMPLES, checkout / "examples" / "behaviorci")
    git(checkout.parent, "init", "-q", str(checkout))
    git(checkout, "add", "-A")
    git(checkout, "commit", "-q", "-m", "the examples")
    temp = tmp_path / "tmp"
    temp.mkdir()
    readme = (EXAMPLES / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```sh\n(.*?)^```", readme, re.M | re.S)
    assert len(blocks) >= 2  # the qa bundle and the route
    for block in blocks:
        ran = run_cli(["bash", "-e", "-c", block], checkout, env={"TMPDIR": str(temp)})
        assert ran.code == 0, block + ran.out + ran.err
    assert git(checkout, "status", "--porcelain", "--untracked-files=all", "--ignored") == ""
    assert [p.name.rsplit(".passed.", 1)[0] for p in temp.glob("*/route/.route/*.passed.*")] == ["1.prompt"]
    assert (temp / "qa-report.xml").is_file()


# (route directory, stone) of every shipped route whose stone behaviorci judges
BEHAVIORCI_ROUTES = [("examples/demo/route", "3.prompt"), ("examples/behaviorci/route", "1.prompt")]
WEAK_BUNDLE = """name: mine
prompt_path: ../{stone}.md
dataset_path: dataset.jsonl
output_contract:
  invariants: ["len(raw_output) > 0"]
provider: {{name: mock, echo: true}}
"""


@pytest.mark.parametrize(("route", "stone"), BEHAVIORCI_ROUTES, ids=[r[0] for r in BEHAVIORCI_ROUTES])
def test_the_robot_does_not_write_the_bundle_it_is_judged_by(git_repo: Path, route: str, stone: str) -> None:
    """The example guards judge with the team's bundle: only the prompt is an artifact, so a robot that
    rewrites the bundle (its own invariants; before behaviorci refused them, its own server for CI's key)
    passes its stone locally, and the gate reports the bundle as a changed guard program."""
    import shutil

    from tests.conftest import git

    source = Path(__file__).resolve().parents[2] / route
    shutil.copytree(source / "behavior", git_repo / "r" / "behavior")
    for suffix in (".stone", ".guard"):  # the stone alone: the demo's others come first
        shutil.copy(source / f"{stone}{suffix}", git_repo / "r")
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "the route")
    base = git(git_repo, "rev-parse", "HEAD").strip()
    (git_repo / "r" / f"{stone}.md").write_text("a prompt that meets no contract\n", encoding="utf-8")
    weak = WEAK_BUNDLE.format(stone=stone)
    (git_repo / "r" / "behavior" / "bundle.yaml").write_text(weak, encoding="utf-8")
    ran = run_cli(["route.stone.set", "--route", "r", "--stone", stone, "--as", "passed"], git_repo)
    assert ran.code == 0, ran.out + ran.err  # the robot's bundle says yes
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "robot")
    ran = run_cli(["route.verify", "--route", "r", "--base", base], git_repo)
    assert ran.code == 2
    line = next(line for line in ran.out.splitlines() if line.split()[1:2] == [f"r/{stone}:"])
    assert line.startswith(f"policy-changed r/{stone}: policy changed: r/behavior/bundle.yaml changed"), line
