"""The shipped examples keep working: the qa bundle passes under its mock as written."""

from __future__ import annotations

import json
from pathlib import Path

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
