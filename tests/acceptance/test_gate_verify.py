"""route.verify, the CI gate: every claim re-derived from files and git; forgeries, staleness and reports."""

from __future__ import annotations

import hashlib
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

from routedriver.route.verify_report import TRUSTED_CHECKOUT
from tests.conftest import TEST_EMAIL, git, run_cli
from tests.route.routes import runs, steer, write
from tests.route_gate.gate import (
    approve,
    approvers,
    commit_all,
    commit_marker,
    forge_pass,
    gated_route,
    lines_of,
    pass_all,
    route_set,
    ssh_signing,
    verify,
)


def state_digest(route: Path) -> dict[str, str]:
    return {
        path.name: hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted((route / ".route").iterdir())
        if path.is_file()
    }


def test_a_passed_route_verifies_and_verify_runs_nothing_and_writes_nothing(git_repo: Path) -> None:
    route = gated_route(git_repo)
    pass_all(git_repo, route)
    before = (state_digest(route), runs(git_repo, "r1"), runs(git_repo, "r2"))
    judged = (git_repo / ".ctl" / "judge.count").read_text()
    done = verify(git_repo, "--route", "route")
    assert done.code == 0, done.out + done.err
    assert lines_of(done) == {
        "route/1.vision": "passed: passed and fresh (2 judges re-checked)",
        "route/2.plan": "passed: passed and fresh (2 judges re-checked)",
        "route/3.ship": "passed: passed; its artifacts are unchanged",
    }
    assert done.out.endswith("route.verify ok: 3 stones (3 passed)\n") and done.err == TRUSTED_CHECKOUT + "\n"
    # No review or judge ran, nothing under .route/ changed, and the index was not rewritten.
    assert (state_digest(route), runs(git_repo, "r1"), runs(git_repo, "r2")) == before
    assert (git_repo / ".ctl" / "judge.count").read_text() == judged


def test_verify_imports_no_llm_sdk(git_repo: Path) -> None:
    route = gated_route(git_repo)
    pass_all(git_repo, route)
    probe = (
        "import sys\n"
        "from routedriver.cli.route_verify import VERIFY\n"
        "code = VERIFY.click().main(['--route', 'route'], standalone_mode=False)\n"
        "loaded = sorted(m for m in ('anthropic', 'openai', 'jinja2', 'git') if m in sys.modules)\n"
        "print(code, loaded)\n"
    )
    import sys

    done = run_cli([sys.executable, "-c", probe], git_repo)
    assert done.out.splitlines()[-1] == "0 []", done.out + done.err


def test_the_console_script_does_not_import_click_for_a_plain_command_line(git_repo: Path) -> None:
    route = gated_route(git_repo)
    pass_all(git_repo, route)
    probe = (
        "import atexit, sys\n"
        "atexit.register(lambda: print('click loaded:', 'click' in sys.modules, file=sys.stderr))\n"
        "sys.argv = ['route.verify', *sys.argv[1:]]\n"
        "from routedriver.cli.route_verify import main\n"
        "main()\n"
    )
    import sys

    plain = run_cli([sys.executable, "-c", probe, "--route", "route", "--json"], git_repo)
    assert plain.code == 0 and json.loads(plain.out)["ok"] is True, plain.err
    assert plain.err == f"{TRUSTED_CHECKOUT}\nclick loaded: False\n"
    helped = run_cli([sys.executable, "-c", probe, "--help"], git_repo)
    assert helped.code == 0 and "Usage: route.verify" in helped.out
    assert helped.err == "click loaded: True\n"


def test_an_edited_artifact_makes_the_pass_stale_and_names_the_artifact(git_repo: Path) -> None:
    route = gated_route(git_repo)
    pass_all(git_repo, route)
    write(route / "2.plan.md", "# Plan, changed after the pass\n")
    write(route / "2.plan.extra.md", "# a new file the default glob picks up\n")
    done = verify(git_repo, "--route", "route")
    assert done.code == 2
    assert lines_of(done)["route/2.plan"] == (
        "stale: artifacts changed since the pass: changed route/2.plan.md, added route/2.plan.extra.md"
    )
    assert lines_of(done)["route/1.vision"].startswith("passed")
    assert done.err.splitlines()[-1].startswith("error: 1 of 3 stones failed route.verify (stale); ")


def test_an_artifact_git_is_told_not_to_look_at_is_still_read(git_repo: Path) -> None:
    route = gated_route(git_repo)
    pass_all(git_repo, route)
    git(git_repo, "update-index", "--assume-unchanged", "route/2.plan.md")
    git(git_repo, "update-index", "--skip-worktree", "route/3.ship.md")
    write(route / "2.plan.md", "# Plan, changed after the pass\n")
    write(route / "3.ship.md", "# Ship, changed after the pass\n")
    assert git(git_repo, "diff-files", "--name-only") == ""  # git vouches for both: it does not look
    done = verify(git_repo, "--route", "route")
    assert done.code == 2
    for stone in ("2.plan", "3.ship"):
        stale = f"stale: artifacts changed since the pass: changed route/{stone}.md"
        assert lines_of(done)[f"route/{stone}"] == stale


def test_a_changed_guard_makes_the_pass_stale(git_repo: Path) -> None:
    route = gated_route(git_repo)
    pass_all(git_repo, route)
    guard = route / "2.plan.guard"
    guard.write_text(guard.read_text() + "  - 'test -s $route/2.plan.md'\n")
    done = verify(git_repo, "--route", "route")
    assert done.code == 2
    assert lines_of(done)["route/2.plan"] == "stale: the guard changed since the pass (route/2.plan.guard)"
    assert json.loads(verify(git_repo, "--route", "route", "--json").out)["stones"][1]["file"] == (
        "route/2.plan.guard"
    )
    assert route_set(git_repo, route, "2.plan").code == 0  # the robot re-runs the stone; fresh again
    assert lines_of(verify(git_repo, "--route", "route"))["route/2.plan"].startswith("uncommitted: ")
    commit_all(git_repo, "the guard changed; the stone passed again")
    assert verify(git_repo, "--route", "route").code == 0


def test_a_hand_edited_judge_file_is_caught(git_repo: Path) -> None:
    route = gated_route(git_repo)
    assert approve(git_repo, route, "1.vision").code == 0
    assert route_set(git_repo, route, "1.vision").code == 0
    steer(git_repo, "r2", out="blockers: 1\nnitpicks: 0\n- blocker: the plan has no dates\n")
    rejected = route_set(git_repo, route, "2.plan")
    assert rejected.code == 2
    # A robot turns the failing verdicts into passes and writes the pass record set would have written.
    state = route / ".route"
    judge_files = sorted(state.glob("2.plan.guard.judge.*.md"))
    for path in judge_files:
        path.write_text(path.read_text().replace("status: failed", "status: passed"))
    reviewed = next(path for path in judge_files if path.name.endswith(".j1.md"))
    text = reviewed.read_text()
    review_hash = re.search(r"^review_input_hash: (\w+)$", text, re.M)[1]  # type: ignore[index]
    judge_hash = re.search(r"^judge_input_hash: (\w+)$", text, re.M)[1]  # type: ignore[index]
    names = [path.name for path in sorted(state.glob("2.plan.guard.*.md"))]
    forge_pass(git_repo, route, "2.plan", review_hash, judge_hash, names)
    approvers(git_repo, TEST_EMAIL)
    commit_all(git_repo, "forged")
    done = verify(git_repo, "--route", "route", "--allow-incomplete")
    assert done.code == 2
    line = lines_of(done)["route/2.plan"]
    assert line.startswith("forged: judge file j1 says reviewed? passed, but the reviews say failed: ")
    assert "blockers exceed threshold (1 > 0)" in line


def test_missing_evidence_is_unproven(git_repo: Path) -> None:
    route = gated_route(git_repo)
    pass_all(git_repo, route)
    judge = next((route / ".route").glob("2.plan.guard.judge.*.j2.md"))
    git(git_repo, "rm", "-q", str(judge))
    done = verify(git_repo, "--route", "route")
    assert lines_of(done)["route/2.plan"] == (
        "unproven: no passed judge file for j2 (python3 tools/judge.py) at these hashes (were the .route/ "
        "files committed?)"
    )


def test_a_judge_file_whose_output_was_edited_is_caught(git_repo: Path) -> None:
    route = gated_route(git_repo)
    pass_all(git_repo, route)
    judge = next((route / ".route").glob("2.plan.guard.judge.*.j2.md"))
    judge.write_text(judge.read_text().replace("reason: the judge script is content", "reason: trust me"))
    done = verify(git_repo, "--route", "route")
    assert done.code == 2
    assert lines_of(done)["route/2.plan"].startswith(
        "forged: judge file j2 (python3 tools/judge.py) is not what the driver wrote"
    )


def test_a_hand_written_uncommitted_approval_is_forged(git_repo: Path) -> None:
    route = gated_route(git_repo)
    approvers(git_repo, TEST_EMAIL)
    commit_all(git_repo, "route")
    assert approve(git_repo, route, "1.vision", "--no-commit").code == 0  # written, never committed
    assert route_set(git_repo, route, "1.vision").code == 0
    done = verify(git_repo, "--route", "route", "--allow-incomplete")
    assert done.code == 2
    assert lines_of(done)["route/1.vision"].startswith(
        "forged: its approval marker was never committed (written by hand?); a human approves with: "
    )


def test_an_approval_committed_by_an_unlisted_author_is_forged(git_repo: Path) -> None:
    route = gated_route(git_repo)
    approvers(git_repo, "boss@example.com")
    commit_all(git_repo, "route")
    assert approve(git_repo, route, "1.vision", "--no-commit").code == 0
    commit_marker(git_repo, route, "1.vision", "approve", author="Robot <robot@example.com>")
    done = verify(git_repo, "--route", "route", "--allow-incomplete")
    assert done.code == 2
    assert re.fullmatch(
        r"forged: its approval was committed by robot@example\.com \(commit [0-9a-f]{12}\), who is not in "
        r"\.route-approvers; a listed approver runs, in a terminal: route\.stone\.set --route route --stone "
        r"1\.vision --as approved",
        lines_of(done)["route/1.vision"],
    )


def test_an_approval_edited_after_its_commit_or_naming_someone_else_is_forged(git_repo: Path) -> None:
    route = gated_route(git_repo)
    pass_all(git_repo, route)
    marker = route / ".route" / "1.vision.approved"
    original = marker.read_text()
    marker.write_text(original.replace("approved_at:", "note: edited\napproved_at:"))
    done = verify(git_repo, "--route", "route")
    assert "forged: its approval marker differs from what commit" in lines_of(done)["route/1.vision"]
    # Committed by a listed approver, but the marker names somebody else.
    marker.write_text(original.replace(f"approver_email: {TEST_EMAIL}", "approver_email: ghost@example.com"))
    commit_all(git_repo, "reword")
    done = verify(git_repo, "--route", "route")
    assert (
        "forged: its approval marker names ghost@example.com but commit" in lines_of(done)["route/1.vision"]
    )


def test_without_an_approvers_file_every_approval_fails_and_says_what_to_create(git_repo: Path) -> None:
    route = gated_route(git_repo)
    pass_all(git_repo, route)
    (git_repo / ".route-approvers").unlink()
    done = verify(git_repo, "--route", "route")
    assert done.code == 2
    assert lines_of(done)["route/1.vision"] == (
        "unapproved: no approvers file: create route/.route/approvers or .route-approvers at the repository "
        "root listing the emails of the people who may approve"
    )
    listed = write(git_repo / "elsewhere" / "approvers.txt", f"Test Human <{TEST_EMAIL}>  # the test human\n")
    assert verify(git_repo, "--route", "route", "--approvers", str(listed)).code == 0
    write(route / ".route" / "approvers", "someone@example.com\n")  # a route's own file comes first
    assert (
        "who is not in route/.route/approvers"
        in lines_of(verify(git_repo, "--route", "route"))["route/1.vision"]
    )


def test_an_approvers_line_hidden_behind_a_line_break_git_does_not_show_names_nobody(git_repo: Path) -> None:
    # `git show` and grep see one comment line; str.splitlines() would see a second one naming the approver.
    route = gated_route(git_repo)
    pass_all(git_repo, route)
    for hidden in ("\u2028", "\u2029", "\x85", "\r", "\x0b", "\x1c"):
        write(git_repo / ".route-approvers", f"# {TEST_EMAIL} left the team{hidden}{TEST_EMAIL}\n")
        line = lines_of(verify(git_repo, "--route", "route"))["route/1.vision"]
        assert line.startswith("unapproved: the approvers file .route-approvers lists nobody"), (hidden, line)
    write(git_repo / ".route-approvers", f"# the approvers\r\n{TEST_EMAIL}\r\n")  # CRLF: ordinary lines
    commit_all(git_repo, "approvers, CRLF")
    assert verify(git_repo, "--route", "route").code == 0


def test_require_signed_rejects_unsigned_and_accepts_ssh_signed_approvals(
    git_repo: Path, tmp_path: Path
) -> None:
    route = gated_route(git_repo)
    pass_all(git_repo, route)
    unsigned = verify(git_repo, "--route", "route", "--require-signed")
    assert unsigned.code == 2
    assert re.fullmatch(
        r"unapproved: its approval commit [0-9a-f]{12} has no signature; the approver turns on commit "
        r"signing \(git config commit\.gpgsign true\) and approves again, in a terminal: route\.stone\.set "
        r"--route route --stone 1\.vision --as approved",
        lines_of(unsigned)["route/1.vision"],
    )
    allowed = ssh_signing(git_repo, tmp_path)
    write(route / "1.vision.md", "# Vision v2\n")
    assert approve(git_repo, route, "1.vision").code == 0  # signed: the repo now has commit.gpgsign
    assert route_set(git_repo, route, "1.vision").code == 0
    commit_all(git_repo, "passed again")
    signed = verify(git_repo, "--route", "route", "--require-signed", "--allowed-signers", str(allowed))
    assert signed.code == 0, signed.out
    # A key the signers file trusts for a principal that is no approver's email (a bot's line, "ci-robot")
    # signs for nobody: the author field is typed by whoever commits.
    bot = write(tmp_path / "bot_signers", allowed.read_text().replace(TEST_EMAIL, "ci-robot", 1))
    as_bot = verify(git_repo, "--route", "route", "--require-signed", "--allowed-signers", str(bot))
    assert as_bot.code == 2
    assert re.match(
        r"unapproved: its approval commit [0-9a-f]{12} is signed by ci-robot, who is not in "
        r"\.route-approvers; a listed approver approves again, in a terminal: ",
        lines_of(as_bot)["route/1.vision"],
    )
    # Without a trusted signers file, git cannot verify the SSH signature.
    untrusted = write(tmp_path / "nobody", "")
    refused = verify(git_repo, "--route", "route", "--require-signed", "--allowed-signers", str(untrusted))
    assert refused.code == 2
    # A signature git cannot check keeps git's own words.
    assert re.match(
        r"unapproved: its approval commit [0-9a-f]{12} has no valid signature \(git verify-commit: .+\); the "
        r"approver approves again with a key the allowed signers trust, in a terminal: route\.stone\.set .+$",
        lines_of(refused)["route/1.vision"],
    )


def test_incomplete_stones_fail_unless_allowed_and_claims_must_still_hold(git_repo: Path) -> None:
    route = gated_route(git_repo, "other")
    strict = verify(git_repo, "--route", "other")
    assert lines_of(strict)["other/1.vision"] == "incomplete: not passed yet; waiting for human approval"
    route = gated_route(git_repo)
    assert approve(git_repo, route, "1.vision").code == 0
    assert route_set(git_repo, route, "1.vision").code == 0
    approvers(git_repo, TEST_EMAIL)
    commit_all(git_repo, "partial")
    strict = verify(git_repo, "--route", "route")
    assert strict.code == 2
    assert lines_of(strict)["route/1.vision"].startswith("passed: ")
    assert lines_of(strict)["route/2.plan"] == "incomplete: not passed yet"
    assert lines_of(strict)["route/3.ship"] == "incomplete: not passed yet"
    assert verify(git_repo, "--route", "route", "--allow-incomplete").code == 0
    write(route / "1.vision.md", "changed\n")
    assert (
        verify(git_repo, "--route", "route", "--allow-incomplete").code == 2
    )  # a claim that is no longer true


def test_json_and_junit_reports(git_repo: Path, tmp_path: Path) -> None:
    route = gated_route(git_repo)
    pass_all(git_repo, route)
    write(route / "3.ship.md", "changed\n")
    junit = tmp_path / "reports" / "verify.xml"
    done = verify(git_repo, "--route", "route", "--json", "--junit", str(junit))
    assert done.code == 2
    payload = json.loads(done.out)
    assert payload["ok"] is False and payload["counts"] == {"passed": 2, "stale": 1}
    assert [(s["stone"], s["status"], s["file"]) for s in payload["stones"]] == [
        ("1.vision", "passed", "route/1.vision.stone"),
        ("2.plan", "passed", "route/2.plan.stone"),
        ("3.ship", "stale", "route/3.ship.md"),
    ]
    root = ET.parse(junit).getroot()
    assert root.tag == "testsuites" and root.get("tests") == "3" and root.get("failures") == "1"
    cases = {case.get("name"): case for case in root.iter("testcase")}
    assert set(cases) == {"1.vision", "2.plan", "3.ship"}
    failure = cases["3.ship"].find("failure")
    assert failure is not None and failure.get("type") == "stale"
    assert failure.get("message") == "artifacts changed since the pass: changed route/3.ship.md"
    assert cases["1.vision"].find("failure") is None


def test_github_annotations_and_step_summary(git_repo: Path, tmp_path: Path) -> None:
    route = gated_route(git_repo)
    pass_all(git_repo, route)
    write(route / "2.plan.md", "# Plan, changed: with, commas\n")
    summary = write(tmp_path / "summary.md", "# earlier steps wrote this\n")
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)}
    done = verify(git_repo, "--route", "route", env=env)
    assert done.code == 2
    annotations = [line for line in done.out.splitlines() if line.startswith("::")]
    assert annotations == [
        "::error file=route/2.plan.md,title=route.verify stale%3A route/2.plan::"
        "artifacts changed since the pass: changed route/2.plan.md"
    ]
    text = summary.read_text()
    assert text.startswith(
        "# earlier steps wrote this\n### route.verify FAILED: 3 stones (2 passed, 1 stale)\n"
    )
    assert (
        "| ❌ | route | 2.plan | stale | artifacts changed since the pass: changed route/2.plan.md |" in text
    )
    assert "| ✅ | route | 1.vision | passed |" in text
    quiet = verify(git_repo, "--route", "route")  # outside GitHub Actions: no workflow commands
    assert not any(line.startswith("::") for line in quiet.out.splitlines())


def test_a_step_summary_that_cannot_be_appended_to_is_a_warning(git_repo: Path, tmp_path: Path) -> None:
    """The verdict, its annotations and its exit code stay what they are; the warning comes first on
    stderr."""
    route = gated_route(git_repo)
    pass_all(git_repo, route)
    write(route / "2.plan.md", "# Plan, changed\n")
    summary = write(tmp_path / "summary.md", "")
    written = verify(
        git_repo, "--route", "route", env={"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(summary)}
    )
    directory = tmp_path / "a directory"
    directory.mkdir()
    env = {"GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(directory)}
    done = verify(git_repo, "--route", "route", env=env)
    assert done.code == written.code == 2 and done.out == written.out
    assert done.err == "warning: cannot append to GITHUB_STEP_SUMMARY (Is a directory)\n" + written.err
    as_json = verify(git_repo, "--route", "route", "--json", env=env)
    assert as_json.code == 2 and json.loads(as_json.out)["ok"] is False
    assert as_json.err.startswith("warning: cannot append to GITHUB_STEP_SUMMARY (Is a directory)\n::error ")


def test_all_finds_every_route_including_untracked_ones(git_repo: Path) -> None:
    first = gated_route(git_repo, name="routes/one")
    pass_all(git_repo, first)
    second = write(git_repo / "routes" / "two words" / "1.only.stone", "Only.\n").parent
    write(second / "1.only.md", "done\n")
    assert route_set(git_repo, second, "1.only").code == 0  # untracked, not committed
    write(git_repo / "ignored" / "1.x.stone", "ignored\n")
    write(git_repo / ".gitignore", "ignored/\n")
    done = verify(git_repo, "--all")
    assert sorted(lines_of(done)) == [
        "routes/one/1.vision",
        "routes/one/2.plan",
        "routes/one/3.ship",
        "routes/two words/1.only",
    ]
    # Found, and passed in this work tree only: CI's checkout would not hold it, and the local gate says so.
    assert done.code == 2 and lines_of(done)["routes/two words/1.only"].startswith(
        "uncommitted: passed here, but not committed: routes/two words/.route/1.only.passed."
    )
    commit_all(git_repo, "the second route")
    assert verify(git_repo, "--all").code == 0


def test_bad_input_is_one_line(git_repo: Path) -> None:
    route = gated_route(git_repo)
    both = verify(git_repo, "--all", "--route", str(route))
    assert (both.code, both.err) == (2, "error: --all and --route exclude each other; give one of them\n")
    nothing = verify(git_repo)
    assert (nothing.code, nothing.err) == (
        2,
        "error: no route bound to this branch; use --route, --all or route.bind --set\n",
    )
    missing = verify(git_repo, "--route", "route", "--approvers", "nope.txt")
    assert (missing.code, missing.err) == (2, "error: --approvers nope.txt: no such file; check the path\n")
    # Command lines route.verify does not read itself go to click, which words them like every command.
    no_value = verify(git_repo, "--route")
    assert (no_value.code, no_value.err) == (
        2,
        "error: Option '--route' requires an argument; see route.verify --help\n",
    )
    typo = verify(git_repo, "--al")
    assert (
        typo.code == 2
        and typo.err.startswith("error: No such option '--al'")
        and "'--all'" in typo.err
        and typo.out == ""
    )
    a_directory = verify(git_repo, "--route", "route", "--approvers", str(route))
    assert a_directory.code == 2 and "is a directory" in a_directory.err
    shown = verify(git_repo, "--help")
    assert shown.code == 0 and "--require-signed" in shown.out and "--allowed-signers FILE" in shown.out
    # A gate pointed at a directory without stones must not pass with nothing checked.
    (git_repo / "docs").mkdir()
    for empty in ("docs", "", "."):
        done = verify(git_repo, f"--route={empty}")
        assert done.code == 2, (empty, done.out)
        assert "no stones in" in done.out and "check --route" in done.out
    write(route / "2.plan.guard", "revews: []\n")
    broken = verify(git_repo, "--route", "route")
    assert broken.code == 2
    assert lines_of(broken)["route/2.plan"].startswith("broken: route/2.plan.guard: unknown key 'revews'")
    assert git(git_repo, "status", "--porcelain")  # sanity: the repo is dirty, verify did not care


def test_a_shell_judge_verdict_flipped_by_hand_is_caught(git_repo: Path) -> None:
    from tests.route.routes import make_route

    route = make_route(
        git_repo, {"1.doc": "Write the doc.\n"}, {"1.doc": "judges:\n  - \"printf 'passed: false\\\\n'\"\n"}
    )
    write(route / "1.doc.md", "doc\n")
    assert route_set(git_repo, route, "1.doc").code == 2
    judge = next((route / ".route").glob("1.doc.guard.judge.*.j1.md"))
    judge.write_text(judge.read_text().replace("status: failed", "status: passed"))
    text = judge.read_text()
    hashes = [
        re.search(rf"^{key}: (\w+)$", text, re.M)[1] for key in ("review_input_hash", "judge_input_hash")
    ]  # type: ignore[index]
    forge_pass(git_repo, route, "1.doc", hashes[0], hashes[1], [judge.name])
    done = verify(git_repo, "--route", "route")
    assert lines_of(done)["route/1.doc"] == (
        "forged: judge file j1 (printf 'passed: false\\n') says passed, but its recorded output and exit "
        "code say failed: printed passed: false"
    )


def test_all_names_files_relative_to_where_it_runs_not_by_the_machines_path(git_repo: Path) -> None:
    # CI's logs should not show the runner's checkout path, and a path to fix should be one to type here.
    write(git_repo / "r" / "1.a.stone", "Write a.\n")
    write(git_repo / "r" / "1.a.guard", "judges: [\n")
    (git_repo / "sub").mkdir()
    for where, shown in ((git_repo, "r/1.a.guard"), (git_repo / "sub", "../r/1.a.guard")):
        done = run_cli(["route.verify", "--all"], where)
        assert done.code == 2
        assert lines_of(done)["r/1.a"].startswith(f"broken: {shown}: line 2: malformed YAML"), done.out
        assert str(git_repo) not in done.out
