# ruff: noqa: E501 - expected output lines are kept whole, as the user sees them
"""route.lint: every problem a route has before anything runs, file by file (seed 004: a step without a
guide fails at creation, not at run time)."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import git
from tests.route.routes import make_route, review, run_route, write


def test_a_clean_route_prints_ok(git_repo: Path) -> None:
    make_route(
        git_repo,
        {"1.vision": "Write the vision.\n", "2.plan": "Plan.\n", "10.ship": "Ship.\n"},
        {"1.vision": f"reviews:\n  - {review('r1')}\njudges:\n  - reviewed?\n  - approved?\n"},
    )
    done = run_route(["route.lint", "--route", "route"], git_repo)
    assert (done.code, done.out, done.err) == (0, "ok\n", "")


def test_every_problem_class_is_listed_file_by_file(git_repo: Path) -> None:
    make_route(
        git_repo,
        {
            "1.vision": "Write the vision.\n",
            "01.vision": "The same stone again.\n",
            "2.Plan": "Plan.\n",
            "2.plan": "Plan again.\n",
            "3.empty": "",
            "4.blank": " \n\t\n",
            "notes": "no number\n",
            "5.guarded": "Guarded.\n",
            "6.unknown": "Unknown judge.\n",
            "7.yaml": "Bad YAML.\n",
            "8.tools": "Missing tools.\n",
        },
        {
            "5.guarded": "revews: []\n",
            "6.unknown": "judges:\n  - sure?\n",
            "7.yaml": "reviews: [unclosed\n",
            "8.tools": "reviews:\n  - no-such-reviewer --strict $route\njudges:\n  - ./tools/missing.sh\n  - 'test -f x'\n",
            "9.orphan": "judges:\n  - maybe?\n",
        },
    )
    done = run_route(["route.lint", "--route", "route"], git_repo)
    assert done.code == 2
    assert done.out.splitlines() == [
        "route/01.vision.stone: error: duplicate of 1.vision.stone (same numbers, same name); keep one",
        "route/1.vision.stone: error: duplicate of 01.vision.stone (same numbers, same name); keep one",
        "route/2.Plan.stone: error: duplicate of 2.plan.stone (same numbers, same name); keep one",
        "route/2.plan.stone: error: duplicate of 2.Plan.stone (same numbers, same name); keep one",
        "route/3.empty.stone: error: no instructions (the file is empty); write what to do, why and how",
        "route/4.blank.stone: error: no instructions (the file is only whitespace); write what to do, why and how",
        "route/5.guarded.guard: error: unknown key 'revews'; allowed: artifacts, inputs, judges, protect, reviews, timeout",
        "route/6.unknown.guard: error: judges[1]: unknown judge mechanism 'sure?'; built-ins: approved?, reviewed?",
        "route/7.yaml.guard: error: line 2: malformed YAML (expected ',' or ']', but got '<stream end>'); fix the "
        "YAML syntax",
        "route/8.tools.guard: warning: reviews[1]: program 'no-such-reviewer' is not on PATH (the command would "
        "fail when it runs)",
        f"route/8.tools.guard: warning: judges[1]: program './tools/missing.sh' is not an executable file "
        f"(commands run from {git_repo})",
        "route/9.orphan.guard: error: a guard without its stone; add 9.orphan.stone or remove the guard",
        "route/9.orphan.guard: error: judges[1]: unknown judge mechanism 'maybe?'; built-ins: approved?, reviewed?",
        "route/notes.stone: error: the name has no numeric prefix; rename it like 1.notes.stone",
    ]
    assert done.err == "error: 12 problems in route; fix each file named above\n"
    payload = json.loads(run_route(["route.lint", "--route", "route", "--json"], git_repo).out)
    assert payload["ok"] is False and len(payload["routes"][0]["problems"]) == 14


def test_warnings_alone_do_not_fail_and_overlapping_default_artifacts_are_noted(git_repo: Path) -> None:
    make_route(
        git_repo, {"1.a": "A.\n", "1.ab": "AB.\n", "2.b": "B.\n"}, {"2.b": "reviews: ['nope-tool x']\n"}
    )
    done = run_route(["route.lint", "--route", "route"], git_repo)
    assert done.code == 0
    assert done.out.splitlines() == [
        "route/1.a.stone: warning: its default artifacts ($route/1.a*.md) leave to 1.ab the files its default "
        "matches; if 1.a writes any of them, give it an artifacts: glob in its guard",
        "route/2.b.guard: warning: reviews[1]: program 'nope-tool' is not on PATH (the command would fail when "
        "it runs)",
        "ok (2 warnings)",
    ]


def test_lint_uses_the_bound_route_and_all_routes(git_repo: Path) -> None:
    make_route(git_repo, {"1.a": "A.\n"}, name="good")
    make_route(git_repo, {"1.a": ""}, name="bad")
    git(git_repo, "switch", "-q", "-c", "work")
    assert run_route(["route.bind", "--set", "good"], git_repo).code == 0
    assert run_route(["route.lint"], git_repo).out == "ok\n"
    everything = run_route(["route.lint", "--all"], git_repo)
    assert everything.code == 2
    assert (
        everything.out
        == "bad/1.a.stone: error: no instructions (the file is empty); write what to do, why and how\n"
    )
    missing = run_route(["route.lint", "--route", "nowhere"], git_repo)
    assert (missing.code, missing.err) == (
        2,
        "error: route not found: nowhere; check --route (a directory holding <name>.stone files)\n",
    )


def test_unprintable_names_and_non_utf8_files_are_errors(git_repo: Path) -> None:
    route = make_route(git_repo, {"1.ok": "fine\n", "2.tab\there": "x\n"})
    (route / "3.bytes.stone").write_bytes(b"\xff\xfe not utf-8\n")
    done = run_route(["route.lint", "--route", "route"], git_repo)
    assert done.code == 2
    assert done.out.splitlines() == [
        "route/2.tab\there.stone: error: the name has an unprintable character; rename it without it",
        "route/3.bytes.stone: error: line 1: not UTF-8 text (byte 1); save it as UTF-8",
    ]


def test_every_problem_of_one_guard_is_listed_while_commands_refuse_with_the_first(git_repo: Path) -> None:
    make_route(
        git_repo,
        {"1.a": "A.\n"},
        {"1.a": 'timeout: -1\nrevews: [x]\njudges:\n  - approvedd?\n  - ""\n  - reviewed?\n'},
    )
    done = run_route(["route.lint", "--route", "route"], git_repo)
    assert done.code == 2
    assert done.out.splitlines() == [
        "route/1.a.guard: error: unknown key 'revews'; allowed: artifacts, inputs, judges, protect, reviews, timeout",
        "route/1.a.guard: error: judges[1]: unknown judge mechanism 'approvedd?'; built-ins: approved?, reviewed?",
        "route/1.a.guard: error: judges[2]: empty command; write one or remove the entry",
        "route/1.a.guard: error: judges[3]: reviewed? needs reviews to read; add a command under reviews: or remove the judge",
        "route/1.a.guard: error: timeout: expected a positive number of seconds, got -1; write timeout: 1200",
    ]
    assert done.err == "error: 5 problems in route; fix each file named above\n"
    refused = run_route(["route.stone.set", "--route", "route", "--stone", "1.a", "--as", "passed"], git_repo)
    assert (refused.code, refused.out) == (2, "")
    assert refused.err == (
        "error: route/1.a.guard: unknown key 'revews'; allowed: artifacts, inputs, judges, protect, reviews, timeout\n"
    )


def test_a_guard_stops_at_a_yaml_syntax_error_and_a_wrong_reviews_list_is_not_echoed(git_repo: Path) -> None:
    make_route(
        git_repo,
        {"1.a": "A.\n", "2.b": "B.\n"},
        {
            "1.a": "timeout: -1\njudges: [\n",
            "2.b": "reviews: ['  ']\njudges: ['reviewed?', 3]\nartifacts: nope\n",
        },
    )
    done = run_route(["route.lint", "--route", "route"], git_repo)
    assert done.code == 2
    assert done.out.splitlines() == [
        "route/1.a.guard: error: line 3: malformed YAML (expected the node content, but found '<stream end>'); fix "
        "the YAML syntax",
        "route/2.b.guard: error: reviews[1]: empty command; write one or remove the entry",
        "route/2.b.guard: error: judges[2]: expected a string, got int; quote it",
        'route/2.b.guard: error: artifacts: expected a list of strings, got str; write artifacts: ["..."] or a '
        "'- item' list (artifacts: [] for none)",
    ]


def test_a_route_without_stones_and_a_repository_without_routes_are_not_ok(git_repo: Path) -> None:
    (git_repo / "empty").mkdir()
    done = run_route(["route.lint", "--route", "empty"], git_repo)
    assert (done.code, done.out, done.err) == (
        2,
        "empty: error: no stones in empty (no <name>.stone files); check --route\n",
        "error: 1 problem in empty; fix each file named above\n",
    )
    verified = run_route(["route.verify", "--route", "empty"], git_repo)
    assert verified.code == 2 and "no stones in empty (no <name>.stone files); check --route" in verified.out
    nothing = run_route(["route.lint", "--all"], git_repo)
    assert (nothing.code, nothing.out, nothing.err) == (
        2,
        "",
        "error: no routes in this repository (no *.stone files); add a route, or use --route\n",
    )
    assert run_route(["route.verify", "--all"], git_repo).err == nothing.err
    (git_repo / "afile").write_text("x\n")
    not_a_directory = run_route(["route.lint", "--route", "afile"], git_repo)
    assert (not_a_directory.code, not_a_directory.err) == (
        2,
        "error: route is not a directory: afile; check --route (a directory holding <name>.stone files)\n",
    )


def test_a_route_named_twice_is_linted_once(git_repo: Path) -> None:
    make_route(git_repo, {"1.a": ""})
    done = run_route(["route.lint", "--route", "route", "--route", "./route/", "--route", "route"], git_repo)
    assert (done.code, done.out, done.err) == (
        2,
        "route/1.a.stone: error: no instructions (the file is empty); write what to do, why and how\n",
        "error: 1 problem in route; fix each file named above\n",
    )
    payload = json.loads(
        run_route(["route.lint", "--route", "route", "--route", "route", "--json"], git_repo).out
    )
    assert [report["route"] for report in payload["routes"]] == ["route"]


def test_a_misnamed_stone_and_its_guard_are_each_checked_grouped_by_file(git_repo: Path) -> None:
    make_route(
        git_repo,
        {"notes": "", "1.a": "A.\n", "01.a": "Again.\n"},
        {"notes": "foo: 1\ntimeout: 0\n", "01.a": "judges: ['sure?']\n", "1.a": "protect: [3]\n"},
    )
    write(git_repo / "route" / "2.b.stone", "B.\n")
    (git_repo / "route" / "2.b.guard").write_bytes(b"judges: ['\xff']\n")
    write(git_repo / "route" / "3.c.stone", "C.\n")
    (git_repo / "route" / "3.c.guard").write_bytes(b"artifacts: []\r\njudges:\r\n  - approved?\r\n")  # fine
    write(git_repo / "route" / "4.d.stone", "D.\n")
    (git_repo / "route" / "4.d.guard").mkdir()  # not a stone's guard file, yet every command tries to read it
    done = run_route(["route.lint", "--route", "route"], git_repo)
    expected = [
        "route/01.a.guard: error: judges[1]: unknown judge mechanism 'sure?'; built-ins: approved?, reviewed?",
        "route/01.a.stone: error: duplicate of 1.a.stone (same numbers, same name); keep one",
        "route/1.a.guard: error: protect[1]: expected a string, got int; quote it",
        "route/1.a.stone: error: duplicate of 01.a.stone (same numbers, same name); keep one",
        "route/2.b.guard: error: line 1: not UTF-8 text (byte 11); save it as UTF-8",
        "route/4.d.guard: error: a directory, not a regular file; make it a regular guard",
        "route/notes.guard: error: unknown key 'foo'; allowed: artifacts, inputs, judges, protect, reviews, timeout",
        "route/notes.guard: error: timeout: expected a positive number of seconds, got 0; write timeout: 1200",
        "route/notes.stone: error: the name has no numeric prefix; rename it like 1.notes.stone",
        "route/notes.stone: error: no instructions (the file is empty); write what to do, why and how",
    ]
    assert (done.code, done.out.splitlines()) == (2, expected)
    assert run_route(["route.lint", "--route", "route"], git_repo).out == done.out  # the same order every run


def test_only_the_first_program_is_read_and_route_paths_are_checked_where_they_point(git_repo: Path) -> None:
    # A comment with an apostrophe or a heredoc after the first command is not quoting to be closed, and a
    # program under $route is looked for in the route (the command would run it from there).
    review_script = "reviews:\n  - |\n    # don't lint the body\n    sh $route/review.sh <<NOTE\n    it's $stone\n    NOTE\n"
    make_route(
        git_repo,
        {"1.a": "A.\n", "2.b": "B.\n"},
        {"1.a": review_script, "2.b": "judges:\n  - $route/missing.sh $stone\n"},
    )
    write(git_repo / "route" / "review.sh", "echo 'blockers: 0'\n")
    done = run_route(["route.lint", "--route", "route"], git_repo)
    assert done.out.splitlines() == [
        "route/2.b.guard: warning: judges[1]: program 'route/missing.sh' is not an executable file "
        f"(commands run from {git_repo})",
        "ok (1 warning)",
    ]


def test_the_first_program_is_read_by_the_bash_reader(git_repo: Path) -> None:
    # A redirection, a quoted assignment-like word or a subshell do not hide the program; a quote that is
    # never closed is named; a program computed at run time is not guessed at.
    reviews = [
        ">review.log nope-redirected $stone",
        "( nope-in-subshell )",
        "X=1 'nope-quoted' --flag",
        "echo 'never closed",
        "$REVIEWER $stone",
        "cat <<'EOF'\nit's fine\nEOF",
    ]
    make_route(git_repo, {"1.a": "A.\n"}, {"1.a": "reviews: " + json.dumps(reviews) + "\n"})
    done = run_route(["route.lint", "--route", "route"], git_repo)
    assert done.out.splitlines() == [
        "route/1.a.guard: warning: reviews[1]: program 'nope-redirected' is not on PATH (the command would fail "
        "when it runs)",
        "route/1.a.guard: warning: reviews[2]: program 'nope-in-subshell' is not on PATH (the command would fail "
        "when it runs)",
        "route/1.a.guard: warning: reviews[3]: program 'nope-quoted' is not on PATH (the command would fail when "
        "it runs)",
        "route/1.a.guard: warning: reviews[4]: cannot read it as shell words (unterminated single quote); check "
        "its quoting",
        "ok (4 warnings)",
    ]
