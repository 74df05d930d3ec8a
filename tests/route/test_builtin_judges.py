"""The built-in judges are one table (``route.builtin_judges.BUILTINS``), and every part of the driver that
knows a built-in judge reads it. Two judges added to the table in-process, each with its function and nothing
else, are read by guards, route.stone.set, route.verify, route.stone.judge, route.stone.del, route.drive, the
command line's options and route.mcp's route_judge tool."""

from __future__ import annotations

import inspect
from collections.abc import Iterator
from pathlib import Path

import pytest

from routedriver.cli._plain import parse
from routedriver.cli.route_stone import judge_options
from routedriver.errors import Refused
from routedriver.mcp import route_tools
from routedriver.route import api, builtin_judges, drive, guardfile, hashing, stone_report, verify
from routedriver.route.builtin_judges import Builtin, Flag, JudgeSpecError, Reading
from routedriver.route.model import Verdict
from tests.conftest import git
from tests.route.routes import make_route, review, write


def _brief(reading: Reading, *, max_lines: int | None) -> Verdict:
    """A judge that reads reviews: each says what it has to say in at most ``max_lines`` lines."""
    longest = max((len(review.stdout.splitlines()) for review in reading.reviews), default=0)
    if max_lines is None or longest <= max_lines:
        return Verdict(
            "passed", f"brief ({longest} lines)", f"passed: true\nreason: brief ({longest} lines)\n"
        )
    reason = f"a review says it in {longest} lines (> {max_lines})"
    return Verdict("failed", reason, f"passed: false\nreason: {reason}\n")


def _signed_off(reading: Reading) -> Verdict:
    """A judge that needs a human: passes once there is an approval marker."""
    if reading.approval.marker is None:
        return Verdict("failed", "wait for a sign-off", "passed: false\nreason: wait for a sign-off\n")
    return Verdict("passed", "signed off", "passed: true\nreason: signed off\n")


BRIEF = Builtin(
    name="brief?",
    summary="says whether every review is short",
    flags=(Flag("--max-lines", "lines a review may take (default: any number).", None),),
    reads=("reviews",),
    needs_human=False,
    verify_as="forged",
    verdict=_brief,
)
SIGNED_OFF = Builtin(
    name="signed-off?",
    summary="says whether a human signed the stone off",
    flags=(),
    reads=("approval",),
    needs_human=True,
    verify_as="unapproved",
    verdict=_signed_off,
)


@pytest.fixture
def registered(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """BRIEF and SIGNED_OFF in the table, for this test only (judge lines read before or after are
    forgotten: ``parse_builtin`` caches what it read)."""
    builtin_judges.parse_builtin.cache_clear()
    monkeypatch.setattr(builtin_judges, "BUILTINS", (*builtin_judges.BUILTINS, BRIEF, SIGNED_OFF))
    yield
    builtin_judges.parse_builtin.cache_clear()


# ---------------------------------------------------------------- the table itself


@pytest.mark.parametrize("judge", builtin_judges.BUILTINS, ids=lambda judge: judge.name)
def test_each_judge_function_takes_a_reading_and_its_flags(judge: Builtin) -> None:
    parameters = list(inspect.signature(judge.verdict).parameters.values())
    assert [parameter.name for parameter in parameters[:1]] == ["reading"]
    keywords = {parameter.name for parameter in parameters[1:]}
    assert all(parameter.kind is inspect.Parameter.KEYWORD_ONLY for parameter in parameters[1:])
    assert keywords == {flag.keyword for flag in judge.flags}
    assert judge.name.endswith("?") and " " not in judge.name
    assert set(judge.reads) <= set(builtin_judges.JUDGE_INPUTS)


def test_the_judge_input_hash_covers_what_the_judges_read() -> None:
    """Every input a built-in reads is in the judge-input hash (a judge is asked again when it changes), and
    the hash covers nothing no judge reads."""
    read = {what for judge in builtin_judges.BUILTINS for what in judge.reads}
    assert read == set(builtin_judges.JUDGE_INPUTS)
    payload = inspect.signature(hashing.judge_input_hash).parameters
    assert list(payload) == ["review_input", "reviews", "approval_id"]  # JUDGE_INPUTS, in its order


def test_a_flag_belongs_to_one_judge() -> None:
    """route.stone.judge offers every judge's flags side by side: one flag, one judge."""
    flags = [flag.flag for judge in builtin_judges.BUILTINS for flag in judge.flags]
    assert len(flags) == len(set(flags))


# ---------------------------------------------------------------- a judge added to it


def test_a_registered_judge_is_read_in_a_guard(registered: None) -> None:
    spec = builtin_judges.parse_builtin("brief? --max-lines 3")
    assert spec is not None and spec.judge is BRIEF and spec.values == (("max_lines", 3),)
    assert builtin_judges.parse_builtin("brief? --max-lines=4") == (BRIEF, (("max_lines", 4),))
    assert builtin_judges.parse_builtin("brief?") == (BRIEF, (("max_lines", None),))
    with pytest.raises(
        JudgeSpecError, match=r"^brief\?: unknown flag '--allow-blockers'; allowed: --max-lines N$"
    ):
        builtin_judges.parse_builtin("brief? --allow-blockers 1")
    with pytest.raises(JudgeSpecError, match=r"built-ins: approved\?, brief\?, reviewed\?, signed-off\?$"):
        builtin_judges.parse_builtin("nope?")
    # It reads reviews: a guard must list some.
    check = guardfile.check_guard("judges: ['brief?']\n", Path("x.guard"), "x.guard", "1.x")
    assert [problem.line() for problem in check.problems] == [
        "error: x.guard: judges[1]: brief? needs reviews to read; "
        "add a command under reviews: or remove the judge"
    ]
    gate = guardfile.parse_guard("judges: ['signed-off?']\n", Path("y.guard"), "y.guard", "2.y")
    assert builtin_judges.gated(gate) and builtin_judges.gate_of(gate) is SIGNED_OFF


def test_the_command_line_and_route_mcp_offer_a_registered_judge(registered: None) -> None:
    options = {option.flag: option for option in judge_options()}
    assert options["--mechanism"].choices == ("reviewed?", "approved?", "brief?", "signed-off?")
    assert options["--mechanism"].metavar == "[reviewed?|approved?|brief?|signed-off?]"
    assert options["--max-lines"].dest == "max_lines" and options["--max-lines"].help.startswith("brief?: ")
    argv = ["--mechanism", "brief?", "--stone", "1.plan", "--max-lines", "2"]
    assert parse(judge_options(), argv) == {
        "mechanism": "brief?",
        "route_option": None,
        "stone": "1.plan",
        "allow_blockers": None,
        "allow_nitpicks": None,
        "max_lines": 2,
    }
    tool = route_tools.judge_tool()
    properties = tool.input_schema["properties"]
    assert properties["mechanism"]["enum"] == ["reviewed?", "approved?", "brief?", "signed-off?"]
    assert properties["max_lines"] == {
        "type": "integer",
        "minimum": 0,
        "description": "brief?: lines a review may take (default: any number).",
    }
    assert "brief? says whether every review is short" in tool.description


def _commit_all(repo: Path) -> None:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "work")


def test_a_registered_judge_passes_a_stone_and_verify_asks_it_again(
    registered: None, git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(git_repo)
    route = make_route(
        git_repo,
        {"1.plan": "Plan it.\n"},
        {"1.plan": f"reviews: ['{review('r1')}']\njudges: ['brief? --max-lines 3']\n"},
    )
    write(route / "1.plan.md", "the plan\n")
    result = api.set_passed(str(route), "1.plan")
    assert result.evaluation.outcome == "passed", stone_report.set_text(result)
    (judged,) = result.evaluation.judges
    assert (judged.record.status, judged.record.reason) == ("passed", "brief (2 lines)")
    _commit_all(git_repo)
    (check,) = verify.verify([str(route)], cwd=git_repo).checks
    assert (check.status, check.why) == ("passed", "passed and fresh (1 judge re-checked)")

    # route.stone.judge asks it with the flags given; a flag of another judge is refused.
    said = api.judge(str(route), "1.plan", "brief?", {"max_lines": 1})
    assert (said.status, said.reason) == ("failed", "a review says it in 2 lines (> 1)")
    with pytest.raises(Refused, match=r"--allow-blockers and --allow-nitpicks apply only to reviewed\?"):
        api.judge(str(route), "1.plan", "brief?", {"allow_blockers": 1})

    # A judge function that now says no to the same reviews: the recorded yes is not its own.
    stricter = BRIEF._replace(verdict=lambda reading, max_lines: _brief(reading, max_lines=1))
    monkeypatch.setattr(builtin_judges, "BUILTINS", (*builtin_judges.BUILTINS[:-2], stricter, SIGNED_OFF))
    builtin_judges.parse_builtin.cache_clear()
    (check,) = verify.verify([str(route)], cwd=git_repo).checks
    assert (check.status, check.why) == (
        "forged",
        "judge file j1 says brief? passed, but the reviews say failed: a review says it in 2 lines (> 1)",
    )


def test_a_registered_judge_that_needs_a_human_makes_a_gate(
    registered: None, git_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(git_repo)
    route = make_route(
        git_repo,
        {"1.plan": "Plan it.\n", "2.ship": "Ship it.\n"},
        {"1.plan": "judges: ['signed-off?']\n", "2.ship": "judges: ['signed-off?']\n"},
    )
    write(route / "1.plan.md", "the plan\n")
    result = api.set_passed(str(route), "1.plan")
    assert result.evaluation.outcome == "waiting"  # not rejected: nothing for the robot to fix
    assert stone_report.set_text(result).startswith("stone waiting for approval: 1.plan")
    guidance = drive.render(drive.guidance(str(route)))
    assert "checked by: signed-off? (a human approves)" in guidance
    with pytest.raises(Refused) as refused:
        api.delete("route", "2.ship")  # no artifact, but a human's gate
    assert refused.value.line() == (
        "error: cannot del; human gate; 2.ship: route/2.ship.guard judges signed-off?; a human removes a "
        "gate by editing the route (deleting its files), not through del"
    )
    answer = route_tools.judge_tool().run(str(route), {"stone": "1.plan", "mechanism": "signed-off?"})
    assert answer.error == "refused" and "needs a human: 1.plan waits for a human's approval" in answer.text
