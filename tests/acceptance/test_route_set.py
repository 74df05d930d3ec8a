"""route.stone.set (seed usecases 2, 4, 5, 7, 8): artifacts, reviews, judges, approvals and their files."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.conftest import BIN_DIR
from tests.route.routes import (
    make_route,
    pass_records,
    passed_record,
    review,
    run_route,
    runs,
    state_files,
    steer,
    stone_get,
    stone_set,
    write,
)

GATED = (
    "reviews:\n  - {review}\njudges:\n  - reviewed? --allow-blockers 0 --allow-nitpicks 2\n  - approved?\n"
)
H16 = "[0-9a-f]{16}"


def gated_route(repo: Path) -> Path:
    route = make_route(
        repo,
        {"1.vision": "Write the vision.\n", "2.next": "Next.\n"},
        {"1.vision": GATED.format(review=review("r1"))},
    )
    write(route / "1.vision.md", "# Vision\n")
    return route


def test_no_guard_passes_when_a_versioned_artifact_exists(git_repo: Path) -> None:
    route = make_route(git_repo, {"1.vision": "Write it.\n", "2.next": "Next.\n"})
    missing = stone_set(git_repo, route, "1.vision")
    assert (missing.code, missing.out) == (2, "")
    # The hint keeps the --route the user typed (issue 14), so it runs as printed.
    assert missing.err == (
        f"error: artifact not found; run route.stone.get --route {route} --stone 1.vision --say to see "
        "instructions\n"
    )
    assert not (route / ".route").exists()  # a refusal leaves nothing behind
    write(route / "1.vision.v1.i1.md", "# Vision v1\n")
    done = stone_set(git_repo, route, "1.vision")
    assert done.code == 0, done.err
    assert done.out.startswith("stone passed: 1.vision\n")
    assert passed_record(route, "1.vision") is not None
    assert stone_get(git_repo, route).out == "2.next\n"


def test_a_default_glob_does_not_claim_the_artifact_of_a_stone_with_a_longer_name(git_repo: Path) -> None:
    route = make_route(git_repo, {"3.plan": "Plan.\n", "3.plan-details": "Details.\n"})
    write(route / "3.plan-details.md", "details\n")
    refused = stone_set(git_repo, route, "3.plan")  # 3.plan*.md matches it, but it is 3.plan-details's
    assert refused.code == 2 and "artifact not found" in refused.err
    assert not (route / ".route").exists()
    write(route / "3.plan.v1.md", "plan\n")
    passed = json.loads(stone_set(git_repo, route, "3.plan", "--json").out)
    assert passed["artifacts"] == ["route/3.plan.v1.md"]


def test_artifact_globs_ignore_driver_files(git_repo: Path) -> None:
    route = make_route(git_repo, {"1.a": "a\n"}, {"1.a": "artifacts: ['$route/*']\n"})
    write(route / ".route" / "1.a.md", "not an artifact\n")
    refused = stone_set(git_repo, route, "1.a")  # only 1.a.stone and 1.a.guard match '*': both excluded
    assert refused.code == 2 and "artifact not found" in refused.err
    write(route / "sub" / "1.a.md", "dirs are not files\n")
    write(route / "out.txt", "an artifact\n")
    passed = json.loads(stone_set(git_repo, route, "1.a", "--json").out)
    assert passed["outcome"] == "passed"
    assert passed["artifacts"] == ["route/out.txt"]


def test_guarded_stone_writes_review_and_judge_files_and_passes_after_approval(git_repo: Path) -> None:
    route = gated_route(git_repo)
    steer(git_repo, "r1", out="# Review\nblockers: 0\nnitpicks: 1\n- nitpick: a typo\n")
    rejected = stone_set(git_repo, route, "1.vision")
    assert rejected.code == 2
    names = state_files(route)
    reviews = [name for name in names if ".guard.review." in name]
    judges = [name for name in names if ".guard.judge." in name]
    assert len(reviews) == 1 and re.fullmatch(rf"1\.vision\.guard\.review\.i1\.{H16}\.r1\.md", reviews[0])
    assert sorted(judges) == judges and len(judges) == 2
    assert re.fullmatch(rf"1\.vision\.guard\.judge\.i1p1\.{H16}\.{H16}\.j1\.md", judges[0])
    assert judges[1].endswith(".j2.md")
    # The rejection: usecase 4's message, feedback on stdout and the path of every file of the evaluation.
    assert "wait for human approval" in rejected.out
    for name in reviews + judges:
        assert f"route/.route/{name}" in rejected.out  # relative to the top level, as route.verify says
    # Only the human gate said no: the stone waits for a person; there is nothing to fix.
    assert rejected.out.startswith("stone waiting for approval: 1.vision (every other judge passed)\n")
    # Said once (it used to read "waits for human approval: wait for human approval"), with what to run.
    assert rejected.err == (
        "error: 1.vision: wait for human approval; a human runs, at a terminal: "
        f"route.stone.set --route {route} --stone 1.vision --as approved\n"
    )
    assert passed_record(route, "1.vision") is None
    # The review file: front matter then the command's stdout verbatim (usecase 8).
    text = (route / ".route" / reviews[0]).read_text()
    assert text.endswith("---\n# Review\nblockers: 0\nnitpicks: 1\n- nitpick: a typo\n")
    assert f"command: {review('r1')}\n" in text and "status: ok\n" in text

    approved = stone_set(git_repo, route, "1.vision", as_="approved")
    assert approved.code == 0, approved.err
    assert (route / ".route" / "1.vision.approved").is_file()
    passed = stone_set(git_repo, route, "1.vision")
    assert passed.code == 0, passed.err
    assert runs(git_repo, "r1") == 1  # the review was reused
    assert f"review r1 reused ok: route/.route/{reviews[0]}" in passed.out
    assert re.search(
        rf"judge j2 fresh passed: .*1\.vision\.guard\.judge\.i1p2\.{H16}\.{H16}\.j2\.md", passed.out
    )
    assert passed_record(route, "1.vision") is not None
    assert stone_get(git_repo, route).out == "2.next\n"


def test_review_gate_thresholds(git_repo: Path) -> None:
    route = make_route(
        git_repo,
        {"1.doc": "Write the doc.\n"},
        {
            "1.doc": (
                f"reviews: ['{review('r1')}']\njudges: ['reviewed? --allow-blockers 0 --allow-nitpicks 2']\n"
            )
        },
    )
    write(route / "1.doc.md", "v1\n")
    steer(git_repo, "r1", out="## Blockers\n- the doc has no audience\n\nblockers: 1\nnitpicks: 0\n")
    one_blocker = stone_set(git_repo, route, "1.doc")
    assert one_blocker.code == 2
    assert "reason: blockers exceed threshold (1 > 0)" in one_blocker.out
    assert "- the doc has no audience" in one_blocker.out  # the review's feedback reaches the robot

    write(route / "1.doc.md", "v2\n")
    steer(git_repo, "r1", out="blockers: 0\nnitpicks: 3\n- nitpick: a\n- nitpick: b\n- nitpick: c\n")
    three_nits = stone_set(git_repo, route, "1.doc")
    assert three_nits.code == 2
    assert "reason: nitpicks exceed threshold (3 > 2)" in three_nits.out
    assert "nitpicks exceed threshold (3 > 2)" in three_nits.err

    write(route / "1.doc.md", "v3\n")
    steer(git_repo, "r1", out="blockers: 0\nnitpicks: 1\n")
    fine = stone_set(git_repo, route, "1.doc")
    assert fine.code == 0, fine.out
    assert runs(git_repo, "r1") == 3


def test_composed_judges_are_and(git_repo: Path) -> None:
    route = gated_route(git_repo)
    steer(git_repo, "r1", out="blockers: 0\nnitpicks: 0\n")
    not_approved = stone_set(git_repo, route, "1.vision")
    assert not_approved.code == 2 and "wait for human approval" in not_approved.out
    assert passed_record(route, "1.vision") is None

    assert stone_set(git_repo, route, "1.vision", as_="approved").code == 0
    write(route / "1.vision.md", "# Vision, rewritten\n")
    steer(git_repo, "r1", out="blockers: 2\nnitpicks: 0\n- blocker: no goals\n")
    blocked = stone_set(git_repo, route, "1.vision")
    assert blocked.code == 2
    assert "blockers exceed threshold (2 > 0)" in blocked.out and "- blocker: no goals" in blocked.out
    # Issue 3: the approval was for the earlier content; the robot hears about both problems.
    assert "wait for human approval (an approval exists, but for older content" in blocked.out
    assert "changed route/1.vision.md" in blocked.out
    assert passed_record(route, "1.vision") is None

    write(route / "1.vision.md", "# Vision, fixed\n")
    steer(git_repo, "r1", out="blockers: 0\nnitpicks: 0\n")
    assert stone_set(git_repo, route, "1.vision").code == 2  # reviewed, but this content is not approved
    assert stone_set(git_repo, route, "1.vision", as_="approved").code == 0
    both = stone_set(git_repo, route, "1.vision")
    assert both.code == 0, both.out
    assert passed_record(route, "1.vision") is not None


def test_judge_commands_print_verdicts_or_are_read_by_exit_code(git_repo: Path) -> None:
    route = make_route(
        git_repo,
        {"1.x": "x\n"},
        {"1.x": (f"judges:\n  - {review('j1')}\n  - {review('j2')}\n  - {review('j3')}\n")},
    )
    write(route / "1.x.md", "x\n")
    steer(git_repo, "j1", out="passed: false\nreason: coverage 40% < 80%\n", exit_code=0)  # verdict wins
    steer(git_repo, "j2", out="3 tests failed\n", exit_code=2)
    steer(git_repo, "j3", out="all good\n", exit_code=0)
    result = stone_set(git_repo, route, "1.x", "--json")
    assert result.code == 2
    payload = json.loads(result.out)
    assert payload["outcome"] == "rejected"
    assert [(j["status"], j["reason"]) for j in payload["judges"]] == [
        ("failed", "coverage 40% < 80%"),
        ("failed", "exit 2: 3 tests failed"),
        ("passed", "exit 0: all good"),
    ]
    judge_file = route / ".route" / Path(payload["judges"][0]["path"]).name
    assert judge_file.read_text().endswith("---\npassed: false\nreason: coverage 40% < 80%\n")

    steer(git_repo, "j1", out="passed: true\nreason: coverage 90%\n")
    steer(git_repo, "j2", out="crashed\n", exit_code=3)
    broken = stone_set(git_repo, route, "1.x")
    assert broken.code == 1
    assert broken.err.startswith("error: 1.x: judge j2 malfunctioned")
    assert "exit 3" in broken.err
    assert runs(git_repo, "j3") == 1  # passed before with the same inputs: reused

    steer(git_repo, "j2", out="passed: true\n", exit_code=0)
    fixed = stone_set(git_repo, route, "1.x")
    assert fixed.code == 0, fixed.out
    assert (runs(git_repo, "j1"), runs(git_repo, "j2"), runs(git_repo, "j3")) == (2, 3, 1)  # passed: reused


def test_commands_run_from_the_top_level_with_route_stone_hash(git_repo: Path) -> None:
    route = make_route(
        git_repo,
        {"1.x": "x\n"},
        {
            "1.x": (
                'reviews:\n  - \'printf "%s|%s|%s|%s|%s|%s\\nblockers: 0\\nnitpicks: 0\\n"'
                ' "$PWD" "$ROUTE" "$STONE" "$HASH" $route $hash\'\n'
            )
        },
        name="deep/route dir",
    )
    write(route / "1.x.md", "x\n")
    sub = git_repo / "deep"
    result = stone_set(sub, Path("route dir"), "1.x", "--json")
    assert result.code == 0, result.err
    payload = json.loads(result.out)
    # Files are named from the repository's top level, as route.verify names them, wherever set runs.
    assert payload["reviews"][0]["path"].startswith("deep/route dir/.route/")
    text = (git_repo / payload["reviews"][0]["path"]).read_text()
    body = text.split("---\n", 2)[2]
    cwd, env_route, env_stone, env_hash, arg_route, arg_hash = body.splitlines()[0].split("|")
    assert Path(cwd) == git_repo
    assert env_route == arg_route == "deep/route dir"
    assert env_stone == "1.x"
    # $hash is spelled as the review file's name spells it (issue 14: one hash, one spelling).
    assert env_hash == arg_hash == payload["review_input_hash"][:16]
    assert f".{arg_hash}.r1.md" in payload["reviews"][0]["path"]


def test_json_in_every_outcome(git_repo: Path) -> None:
    route = gated_route(git_repo)
    refused = stone_set(git_repo, route, "2.next", "--json")
    assert refused.code == 2
    assert json.loads(refused.out) == {
        "route": str(route),
        "stone": "2.next",
        "outcome": "refused",
        "error": (
            "error: 2.next must wait: 1.vision, of a lower tier, is incomplete; finish the stones before it "
            f"first (see route.stone.get --route {route} --stone @next-one --say)"
        ),
    }
    rejected = json.loads(stone_set(git_repo, route, "1.vision", "--json").out)
    assert rejected["outcome"] == "waiting" and rejected["marker"] is None
    assert [(r["position"], r["reused"], r["status"]) for r in rejected["reviews"]] == [(1, False, "ok")]
    assert [(j["position"], j["reused"], j["status"]) for j in rejected["judges"]] == [
        (1, False, "passed"),
        (2, False, "failed"),
    ]
    assert len(rejected["review_input_hash"]) == len(rejected["judge_input_hash"]) == 64
    approved = json.loads(stone_set(git_repo, route, "1.vision", "--json", as_="approved").out)
    assert approved["outcome"] == "approved" and approved["marker"].endswith(".route/1.vision.approved")
    passed = json.loads(stone_set(git_repo, route, "1.vision", "--json").out)
    assert passed["outcome"] == "passed"
    assert re.fullmatch(r".*\.route/1\.vision\.passed\.[0-9a-f]{16}", passed["marker"])
    assert [j["reused"] for j in passed["judges"]] == [False, False]


def test_malformed_guard_and_unknown_stone_are_refused(git_repo: Path) -> None:
    route = make_route(
        git_repo,
        {"1.x": "x\n", "2.y": "y\n"},
        {"1.x": "reviews: [a]\njudges:\n  - 'sure?'\n", "2.y": "revews: []\n"},
    )
    write(route / "1.x.md", "x\n")
    write(route / "2.y.md", "y\n")
    bad_judge = stone_set(git_repo, route, "1.x")
    assert (bad_judge.code, bad_judge.err) == (
        2,
        (
            f"error: {route}/1.x.guard: judges[1]: unknown judge mechanism 'sure?'; "
            "built-ins: approved?, reviewed?\n"
        ),
    )
    bad_key = stone_set(git_repo, route, "2.y")
    assert bad_key.err == (
        f"error: {route}/2.y.guard: unknown key 'revews'; "
        "allowed: artifacts, inputs, judges, protect, reviews, timeout\n"
    )
    unknown = stone_set(git_repo, route, "3.z")
    assert unknown.code == 2 and unknown.err.startswith("error: no stone named '3.z' in ")


def test_a_passed_stone_edited_and_rejected_is_no_longer_passed(git_repo: Path) -> None:
    route = make_route(
        git_repo,
        {"1.doc": "Write the doc.\n", "2.next": "n\n"},
        {"1.doc": f"reviews: ['{review('r1')}']\njudges: ['reviewed?']\n"},
    )
    write(route / "1.doc.md", "good\n")
    assert stone_set(git_repo, route, "1.doc").code == 0
    passed = passed_record(route, "1.doc")
    assert passed is not None
    assert stone_get(git_repo, route).out == "2.next\n"
    write(route / "1.doc.md", "worse\n")
    steer(git_repo, "r1", out="blockers: 1\nnitpicks: 0\n")
    assert stone_set(git_repo, route, "1.doc").code == 2
    # The pass of the good content stays as history; for this content the stone is not passed.
    assert [path.name for path in pass_records(route, "1.doc")] == [passed.name]
    assert stone_get(git_repo, route).out == "1.doc\n"
    assert stone_get(git_repo, route, "--stone", "1.doc").out == "1.doc\tstale\n"
    # A malfunction on edited content also withdraws the pass: nobody evaluated that content.
    write(route / "1.doc.md", "good again\n")
    steer(git_repo, "r1", out="blockers: 0\nnitpicks: 0\n")
    assert stone_set(git_repo, route, "1.doc").code == 0
    write(route / "1.doc.md", "edited once more\n")
    steer(git_repo, "r1", exit_code=9)
    assert stone_set(git_repo, route, "1.doc").code == 1
    assert stone_get(git_repo, route, "--stone", "1.doc").out == "1.doc\tstale\n"


def test_a_guard_with_no_artifacts_is_a_pure_gate(git_repo: Path) -> None:
    route = make_route(
        git_repo,
        {"9.ship": "Ship when a human says so.\n"},
        {"9.ship": "artifacts: []\njudges:\n  - approved?\n"},
    )
    waiting = stone_set(git_repo, route, "9.ship")
    assert waiting.code == 2 and "wait for human approval" in waiting.out
    assert stone_set(git_repo, route, "9.ship", as_="approved").code == 0
    assert stone_set(git_repo, route, "9.ship").code == 0
    assert stone_get(git_repo, route).out == "all stones passed\n"


def test_outside_git_commands_run_from_the_current_directory(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    route = make_route(
        plain,
        {"1.x": "x\n"},
        {"1.x": "reviews:\n  - 'pwd; echo $route; echo blockers: 0; echo nitpicks: 0'\n"},
    )
    write(route / "1.x.md", "x\n")
    result = stone_set(plain, Path("route"), "1.x", "--json")
    assert result.code == 0, result.err
    payload = json.loads(result.out)
    assert payload["artifacts"] == ["route/1.x.md"]
    body = (route / ".route" / Path(payload["reviews"][0]["path"]).name).read_text().split("---\n", 2)[2]
    assert body.splitlines()[:2] == [str(plain), "route"]


def test_guards_find_this_installs_commands_without_an_activated_venv(git_repo: Path) -> None:
    route = make_route(
        git_repo,
        {"1.x": "x\n"},
        {"1.x": "judges:\n  - route.stone.judge --mechanism approved? --route $route --stone $stone\n"},
    )
    write(route / "1.x.md", "x\n")
    bare_path = {"PATH": "/usr/bin:/bin"}
    argv = [str(BIN_DIR / "route.stone.set"), "--route", str(route), "--stone", "1.x", "--as", "passed"]
    waiting = run_route(argv, git_repo, env=bare_path)
    assert waiting.code == 2, waiting.err  # the judge ran and said no (not 127: command not found)
    assert "reason: wait for human approval" in waiting.out
    assert stone_set(git_repo, route, "1.x", as_="approved").code == 0
    assert run_route(argv, git_repo, env=bare_path).code == 0
