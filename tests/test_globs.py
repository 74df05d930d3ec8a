"""routedriver.globs: the one reading of a glob, checked on its own and through every part that uses it.

The first table runs against the module. The second is a real tree (hidden files, a name with a space, a
unicode name, letter case, brackets, a link to a file, a link to a directory and one to ``..``) read by the
three users: a guard's ``artifacts:`` (what ``route.stone.set`` records), ``protect:`` (what
``route.bounce`` blocks) and bhrain's ``glob`` tool (what it lists). The cross-checks play the adversary:
``fnmatch`` for one name, the module's two matchers against each other, ``pathspec``'s gitwildmatch for whole
paths, and patterns built to make a backtracking matcher hang.
"""

from __future__ import annotations

import fnmatch
import json
import os
import random
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from routedriver import globs
from routedriver.brain.tools.base import ToolContext
from routedriver.brain.tools.search import glob as glob_tool
from routedriver.cli.route_session import bounce_command
from routedriver.cli.route_stone import SET
from tests.conftest import Ran, git
from tests.route.routes import write
from tests.route_gate.gate import denied, pre_tool_event

# (pattern, path, covered): routedriver.globs.covers, the rule every user applies to files.
CASES = [
    # hidden names are names like any other
    ("src/**", "src/.env", True),
    ("src/**", "src/.github/ci.yml", True),
    ("src/*", "src/.env", True),
    ("*", ".hidden", True),
    ("**/*.py", ".venv/lib/x.py", True),
    ("**/.env", "a/b/.env", True),
    ("src/.*", "src/.env", True),
    ("src/.*", "src/env", False),
    ("?env", ".env", True),
    # ** at the start, in the middle, at the end
    ("**/a.py", "a.py", True),
    ("**/a.py", "x/y/a.py", True),
    ("**/a.py", "x/y/ba.py", False),
    ("src/**/*.md", "src/c.md", True),
    ("src/**/*.md", "src/a/b/c.md", True),
    ("src/**/*.md", "srcx/c.md", False),
    ("a/**/b", "a/b", True),
    ("a/**/b", "a/x/y/b", True),
    ("a/**/b", "a/x/y/bb", False),
    ("src/**", "src/a.py", True),
    ("src/**", "src/x/y/a.py", True),
    ("src/**", "srcx/a.py", False),
    ("src/**", "src", False),  # the directory itself is not a file below it
    ("**", "anything/at/all", True),
    ("**/**/x", "x", True),  # runs of ** are one
    ("a/**/b/**/c", "a/1/b/2/3/c", True),  # several **: the component walk
    ("a/**/b/**/c", "a/1/c/2/b", False),
    ("a**b", "aXYb", True),  # ** inside a name is *
    ("a**b", "aX/Yb", False),
    # * and ? stay within one name
    ("src/*.py", "src/a/b.py", False),
    ("src/*", "src/", True),
    ("docs/v?.md", "docs/v1.md", True),
    ("docs/v?.md", "docs/v10.md", False),
    ("a?b", "a/b", False),
    ("dir.with.dots/*", "dir.with.dots/f", True),
    ("dir.with.dots/*", "dirXwithXdots/f", False),
    # a trailing / : the directory's contents
    ("a/", "a/b", True),
    ("a/", "a/b/c", True),
    ("a/", "a", False),
    ("*/", "a/b", True),
    ("*/", "a", False),
    ("**/", "a", False),
    ("**/", "a/b", True),
    ("src/**/", "src/a", False),
    ("src/**/", "src/a/b", True),
    # brackets
    ("x[[]1].md", "x[1].md", True),
    ("x[1].md", "x[1].md", False),
    ("x[1].md", "x1.md", True),
    ("[!a].md", "b.md", True),
    ("[!a].md", "a.md", False),
    ("[^a].md", "b.md", True),  # ^ complements too, as in bash and git
    ("[^a].md", "a.md", False),
    ("[]a].md", "].md", True),
    ("[!]a].md", "].md", False),
    ("[a-c].md", "b.md", True),
    ("[z-a].md", "a.md", False),  # a reversed range matches nothing
    ("[a-c", "[a-c", True),  # a [ without ] is itself
    ("a[!b]c", "a/c", False),  # a complement never matches /
    ("a[+-0]c", "a/c", False),  # nor a range that spans it
    ("a[+-0]c", "a.c", True),
    ("[*]", "*", True),
    ("[*]", "x", False),
    # spaces, unicode, case: compared character for character
    ("src/my file.py", "src/my file.py", True),
    ("src/* file.py", "src/my file.py", True),
    ("src/caf?.py", "src/café.py", True),
    ("src/café.py", "src/cafe\u0301.py", False),  # NFC against NFD: different characters
    ("src/**", "src/日本/語.md", True),
    ("src/*.py", "src/A.PY", False),
    ("SRC/**", "src/a.py", False),
    ("[A-Z]*", "app", False),
    # POSIX classes, as bash and git match them (a guard's `for f in tools/check[[:digit:]].sh`)
    ("tools/check[[:digit:]].sh", "tools/check1.sh", True),
    ("tools/check[[:digit:]].sh", "tools/checkx.sh", False),
    ("che[[:alpha:]]k", "check", True),
    ("a[![:digit:]]", "a1", False),
    ("a[![:digit:]]", "ab", True),
    ("x[[:digit:]a]", "xa", True),
    ("[[:upper:][:punct:]]", "-", True),
    # leading ./, empty components, absolute globs, backslashes
    ("./src/*.py", "src/a.py", True),
    ("src//*.py", "src/a.py", True),
    ("/abs/*.txt", "/abs/a.txt", True),
    ("/abs/*.txt", "abs/a.txt", False),
    ("a\\*", "a\\b", True),  # a backslash is an ordinary character
    ("a\\*", "a*", False),
    ("", "", False),
]


@pytest.mark.parametrize(("pattern", "path", "expected"), CASES)
def test_one_rule(pattern: str, path: str, expected: bool) -> None:
    assert globs.covers(pattern, path) is expected
    # The component walk (used for globs with several **) agrees with the regular expression.
    glob = globs.parse(pattern).cover
    assert (len(glob.parts) in glob._step_all(path.split("/"))) is expected


def test_a_trailing_slash_names_directories_and_a_walk_says_where_to_look() -> None:
    glob = globs.parse("src/*/")
    assert glob.directories and glob.matches("src/pkg") and not glob.matches("src/pkg/a.py")
    assert glob.covers("src/pkg/a.py") and not glob.covers("src/pkg")
    assert (glob.head, glob.rest) == ("src", globs.parse("*/"))
    assert globs.parse("a[*]b/c?/d").head == "a*b" and globs.parse("/*.txt").head == "/"
    assert globs.parse("docs/x.md").rest is None and globs.parse("docs/x.md").head == "docs/x.md"
    below = globs.parse("src/**/tests/*.py")
    assert below.may_match_below("") and below.may_match_below("src") and below.may_match_below("src/a/b")
    assert not below.may_match_below("docs")
    assert not globs.parse("src/*.py").may_match_below("src/pkg")
    assert globs.parse("src/").may_cover_below("src/pkg") and not globs.parse("src/").may_match_below("src/x")


def test_escape_and_literal_are_inverse() -> None:
    for text in ("plain", "a*b?c[d]e", "[[]", "x[1]", "*"):
        escaped = globs.escape(text)
        assert globs.literal(escaped) == text and globs.matches(escaped, text)
        assert not globs.matches(escaped, text + "x")
    assert globs.literal("a*") is None and globs.literal("[ab]") is None


# ---------------------------------------------------------------- cross-checks


def test_one_name_is_read_as_fnmatch_reads_it() -> None:
    # Random components over the characters that matter; fnmatch reads [^…] as a class holding "^", the
    # one documented difference, so those are left out here (the table checks them).
    rng = random.Random(16)
    for _ in range(20_000):
        component = "".join(rng.choice("ab.*?[]!-z") for _ in range(rng.randint(0, 7)))
        name = "".join(rng.choice("ab.-z]![") for _ in range(rng.randint(0, 6)))
        expected = fnmatch.fnmatchcase(name, component)
        assert bool(globs.name_matcher(component)(name)) is expected, (component, name)


def test_the_regular_expression_and_the_component_walk_agree() -> None:
    rng = random.Random(3)
    pieces = ["**", "*", "a", "b", "a*", "?", "[ab]", ".x", "[!a]"]
    for _ in range(20_000):
        pattern = "/".join(rng.choice(pieces) for _ in range(rng.randint(1, 4)))
        glob = globs.parse(pattern)
        path = "/".join(rng.choice(["a", "b", "ab", ".x", "c"]) for _ in range(rng.randint(1, 5)))
        walked = len(glob.parts) in glob._step_all(path.split("/"))
        assert glob.matches(path) is walked, (pattern, path)


def test_whole_paths_agree_with_gitwildmatch_when_anchored() -> None:
    """pathspec (git's wildmatch) on a glob anchored with "/": a path matches there when it or a directory
    above it matches, so that is what is compared. Left out: reversed ranges (pathspec raises re.error) and
    globs ending in "**/" (pathspec, which cannot tell files from directories, takes every path below)."""
    import pathspec

    rng = random.Random(7)
    pieces = [
        "**",
        "*",
        "a",
        "b",
        "a*",
        "?",
        "[ab]",
        ".x",
        "[!a]",
        "[^a]",
        "x**",
        "[]a]",
        "[a-c]",
        "*a*",
        "é",
    ]
    names = ["a", "b", "ab", ".x", "c", "]", "xa", "!", "^", "é", "a b", "aa"]
    for _ in range(5_000):
        pattern = "/".join(rng.choice(pieces) for _ in range(rng.randint(1, 4))) + rng.choice(["", "/"])
        if pattern.endswith("**/"):
            continue
        parts = [rng.choice(names) for _ in range(rng.randint(1, 5))]
        spec = pathspec.GitIgnoreSpec.from_lines(["/" + pattern])
        ours = any(globs.covers(pattern, "/".join(parts[:end])) for end in range(1, len(parts) + 1))
        assert ours is spec.match_file("/".join(parts)), (pattern, parts)


def test_a_walk_is_never_told_to_skip_a_directory_holding_a_match() -> None:
    rng = random.Random(11)
    pieces = ["**", "*", "a", "b", "a*", ".x", "[ab]"]
    paths = {
        "/".join(rng.choice(["a", "b", ".x", "ab"]) for _ in range(rng.randint(1, 5))) for _ in range(300)
    }
    for _ in range(300):
        pattern = "/".join(rng.choice(pieces) for _ in range(rng.randint(1, 4))) + rng.choice(["", "/"])
        glob = globs.parse(pattern)
        for path in paths:
            parts = path.split("/")
            for depth in range(len(parts)):
                directory = "/".join(parts[:depth])
                if glob.matches(path):
                    assert glob.may_match_below(directory), (pattern, path, directory)
                if glob.covers(path):
                    assert glob.may_cover_below(directory), (pattern, path, directory)


def test_hostile_globs_and_paths_take_no_time() -> None:
    deep = "/".join(["a"] * 2_000) + "/z"  # a path as deep as PATH_MAX allows
    started = time.perf_counter()
    assert not globs.matches("**/a/**/a/**/a/**/a/**/a/**/b", deep)  # several **: the component walk
    assert globs.matches("**/a/**/a/**/z", deep)
    assert not globs.matches("**/b", deep)
    assert not globs.matches("*a*a*a*a*a*a*a*a*a*a*b", "a" * 250)  # atomic stars: no backtracking
    assert globs.parse("**/a/**/b/**/c").may_match_below(deep)
    assert time.perf_counter() - started < 2.0


# ---------------------------------------------------------------- through every user, on a real tree

FILES = [
    "top.py",
    ".hidden.py",
    ".env",
    "src/app.py",
    "src/.env",
    "src/App.PY",
    "src/my file.py",
    "src/café.py",
    "src/x[1].md",
    "src/b.md",
    "src/.github/ci.yml",
    "src/pkg/mod.py",
    "src/pkg/.cache/c.py",
    "docs/a.md",
    "docs/sub/b.md",
]
LINKED_FILE = "src/filelink.py"  # -> app.py: a link to a file is a file
LINKED_DIRS = ["src/up", "src/docs"]  # -> .. and -> ../docs: never entered by a wildcard (artifacts: refused)
SRC_FILES = [path for path in FILES if path.startswith("src/")] + [LINKED_FILE]
SRC_DIRS = ["src/.github", "src/pkg", "src/pkg/.cache", *LINKED_DIRS]

# (pattern, the files it covers: what artifacts: finds and protect: blocks, what the glob tool lists)
DISK = [
    ("src/**", SRC_FILES, SRC_FILES + SRC_DIRS),
    (
        "src/*",
        [path for path in SRC_FILES if path.count("/") == 1],
        [path for path in SRC_FILES + SRC_DIRS if path.count("/") == 1],
    ),
    ("src/.*", ["src/.env"], ["src/.env", "src/.github"]),
    (
        "**/*.py",
        ["top.py", ".hidden.py", "src/app.py", "src/my file.py", "src/café.py", "src/pkg/mod.py"]
        + ["src/pkg/.cache/c.py", LINKED_FILE],
        None,
    ),
    ("**/.env", [".env", "src/.env"], None),
    ("**/.cache/*", ["src/pkg/.cache/c.py"], None),
    ("src/pkg/", ["src/pkg/mod.py", "src/pkg/.cache/c.py"], ["src/pkg/"]),
    (
        "src/*/",
        ["src/.github/ci.yml", "src/pkg/mod.py", "src/pkg/.cache/c.py"],
        ["src/.github/", "src/docs/", "src/pkg/", "src/up/"],
    ),
    (
        "src/**/",
        ["src/.github/ci.yml", "src/pkg/mod.py", "src/pkg/.cache/c.py"],
        ["src/.github/", "src/docs/", "src/pkg/", "src/pkg/.cache/", "src/up/"],
    ),
    ("src/[a-c]*", ["src/app.py", "src/b.md", "src/café.py"], None),
    ("src/[!a-z]*", ["src/.env", "src/App.PY"], ["src/.env", "src/.github", "src/App.PY"]),
    ("src/[^a-z]*", ["src/.env", "src/App.PY"], ["src/.env", "src/.github", "src/App.PY"]),
    ("src/x[[]1].md", ["src/x[1].md"], None),
    ("src/x[1].md", [], None),
    ("src/my file.py", ["src/my file.py"], None),
    ("src/caf?.py", ["src/café.py"], None),
    ("src/App.PY", ["src/App.PY"], None),
    ("src/app.PY", [], None),
    ("src/a**", ["src/app.py"], None),
    ("src/[z-a]*", [], None),
    ("docs/**", ["docs/a.md", "docs/sub/b.md"], ["docs/a.md", "docs/sub", "docs/sub/b.md"]),
    ("**/b.md", ["src/b.md", "docs/sub/b.md"], None),
    ("*.py", ["top.py", ".hidden.py"], None),
]
IDS = [row[0] for row in DISK]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    repo = tmp_path_factory.mktemp("globs") / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    for path in FILES:
        write(repo / path, f"{path}\n")
    (repo / LINKED_FILE).symlink_to("app.py")
    (repo / "src/up").symlink_to("..")  # a loop: a walk that followed it would never end
    (repo / "src/docs").symlink_to("../docs")
    write(repo / ".git/hooks/x.py", "git's own\n")  # never entered by a wildcard
    write(repo / "route/1.art.stone", "Make the files.\n")
    write(repo / "route/1.prot.stone", "Guard the files.\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "tree")
    saved = os.getcwd()
    os.chdir(repo)
    try:
        yield repo
    finally:
        os.chdir(saved)


@pytest.mark.parametrize(("pattern", "covered", "listed"), DISK, ids=IDS)
def test_artifacts_are_the_files_a_glob_covers(
    tree: Path, pattern: str, covered: list[str], listed: list[str] | None
) -> None:
    write(tree / "route/1.art.guard", f"artifacts: [{json.dumps(pattern)}]\n")
    done = CliRunner().invoke(
        SET.click(), ["--route", "route", "--stone", "1.art", "--as", "passed", "--json"]
    )
    if any(globs.parse(pattern).may_cover_below(link) for link in LINKED_DIRS):
        # A wildcard that would walk into a symlinked directory: the stone cannot be hashed, named so.
        assert done.exit_code == 2, done.stdout
        assert " is a symlink to a directory (" in done.stderr, done.stderr
        assert done.stderr.startswith(("error: src/up ", "error: src/docs ")), done.stderr
        return
    if not covered:
        assert done.exit_code == 2 and "artifact not found" in done.stderr, done.stderr
        return
    if LINKED_FILE in covered:  # covered, and so refused: a pass takes no symlinked artifact
        assert done.exit_code == 2, done.stdout
        assert done.stderr.startswith(f"error: artifact {LINKED_FILE} is a symlink (to app.py): "), (
            done.stderr
        )
        return
    assert done.exit_code == 0, done.stderr
    assert json.loads(done.stdout)["artifacts"] == sorted(covered)
    # route.verify's way (the Survey, one listing per directory for every stone) finds the same.
    from routedriver import gitops
    from routedriver.route.load import load_route
    from routedriver.route.state import Survey

    repo = gitops.find_repo(tree)
    assert repo is not None
    route = load_route(tree / "route")
    stone = route.stone("1.art")
    assert stone is not None
    assert sorted(Survey(route, repo, tree).artifacts(stone)) == sorted(covered)


@pytest.mark.parametrize(("pattern", "covered", "listed"), DISK, ids=IDS)
def test_protect_blocks_exactly_the_files_a_glob_covers(
    tree: Path, pattern: str, covered: list[str], listed: list[str] | None
) -> None:
    write(tree / "route/1.prot.guard", f"artifacts: []\nprotect: [{json.dumps(pattern)}]\n")
    blocked = set()
    for path in FILES:
        done = CliRunner().invoke(
            bounce_command, ["--route", "route"], input=pre_tool_event(tree, "Write", path)
        )
        assert (done.exit_code, done.stderr) == (0, ""), done.stderr
        if denied(Ran(done.exit_code, done.stdout, done.stderr)):
            assert "protected by stone 1.prot" in done.stdout, done.stdout
            blocked.add(path)
    assert blocked == {path for path in covered if path != LINKED_FILE}


@pytest.mark.parametrize(("pattern", "covered", "listed"), DISK, ids=IDS)
def test_the_glob_tool_lists_what_a_glob_matches(
    tree: Path, pattern: str, covered: list[str], listed: list[str] | None
) -> None:
    outcome = glob_tool({"pattern": pattern}, ToolContext(tree))
    expected = sorted(covered if listed is None else listed)
    if not expected:
        assert outcome.output == f"no files match {pattern!r} under ."
    else:
        assert outcome.output.splitlines() == expected


def test_a_write_through_a_linked_directory_is_judged_where_it_lands(tree: Path) -> None:
    write(tree / "route/1.prot.guard", "artifacts: []\nprotect: ['docs/**']\n")
    through = CliRunner().invoke(
        bounce_command, ["--route", "route"], input=pre_tool_event(tree, "Write", "src/docs/a.md")
    )
    assert "blocked docs/a.md" in denied(Ran(through.exit_code, through.stdout, through.stderr))
    write(tree / "route/1.prot.guard", "artifacts: []\nprotect: ['src/**']\n")
    linked = CliRunner().invoke(
        bounce_command, ["--route", "route"], input=pre_tool_event(tree, "Write", LINKED_FILE)
    )
    assert "blocked src/app.py" in denied(Ran(linked.exit_code, linked.stdout, linked.stderr))  # in src


def test_own_artifacts_are_exempt_by_the_same_rule(tree: Path) -> None:
    # A stone that produces src/** may write src/.env while it protects src/: the exemption covers hidden
    # files exactly as artifacts: finds them, so a file it may write is also a file its pass is hashed over.
    write(tree / "route/1.prot.guard", "artifacts: ['src/**']\nprotect: ['src/', '**/.env']\n")
    cases = (("src/.env", False), (".env", True), ("src/pkg/.cache/c.py", False), ("docs/a.md", False))
    for path, refused in cases:
        done = CliRunner().invoke(
            bounce_command, ["--route", "route"], input=pre_tool_event(tree, "Write", path)
        )
        assert bool(denied(Ran(done.exit_code, done.stdout, done.stderr))) == refused, (path, done.stdout)


def test_a_wildcard_never_enters_another_routes_driver_files(git_repo: Path) -> None:
    # A route kept inside another stone's artifact directory: its markers are not that stone's output,
    # although a wildcard matches hidden names.
    from routedriver.route.artifacts import find_artifacts
    from routedriver.route.load import load_route
    from routedriver.route.model import Guard

    write(git_repo / "route/1.a.stone", "A.\n")
    write(git_repo / "docs/a.md", "a\n")
    write(git_repo / "docs/.notes.md", "n\n")
    write(git_repo / "docs/r2/1.x.stone", "X.\n")
    write(git_repo / "docs/r2/.route/1.x.passed.0123456789abcdef", "---\n---\n")
    route = load_route(git_repo / "route")
    stone = route.stone("1.a")
    assert stone is not None
    for pattern in ("docs/**", "docs/", "**/*"):
        guard = Guard(path=git_repo / "route/1.a.guard", artifacts=(pattern,), reviews=(), judges=())
        found = [
            path.relative_to(git_repo).as_posix() for path in find_artifacts(route, stone, guard, git_repo)
        ]
        assert [path for path in found if path.startswith("docs/")] == ["docs/.notes.md", "docs/a.md"], (
            pattern
        )
    named = Guard(path=git_repo / "route/1.a.guard", artifacts=("docs/r2/.route/*",), reviews=(), judges=())
    assert len(find_artifacts(route, stone, named, git_repo)) == 1  # named literally, it is a path like any


def test_stone_globs_read_names_by_the_same_rule(git_repo: Path) -> None:
    from routedriver.route.load import load_route
    from routedriver.route.select import match_names

    for name in ("1.a", "2.b", "3.1.x", "3.2.y"):
        write(git_repo / f"route/{name}.stone", "Do it.\n")
    route = load_route(git_repo / "route")
    assert [stone.name for stone in match_names(route, "3.*")] == ["3.1.x", "3.2.y"]
    assert [stone.name for stone in match_names(route, "[^3]*")] == ["1.a", "2.b"]
    assert [stone.name for stone in match_names(route, "[!3]*")] == ["1.a", "2.b"]


def test_read_rules_hide_hidden_files_the_glob_tool_now_lists(tmp_path: Path) -> None:
    # The glob tool reaches hidden names; bhrain's Read deny rules (gitignore-style, Claude Code's syntax)
    # must never be narrower than that reach.
    from routedriver.brain.permissions.rules import policy_from_block

    for path in ("src/a.py", "src/.env", "secrets/.key", "secrets/.d/k", "x/.env", ".env"):
        write(tmp_path / path, "s\n")
    rules = policy_from_block(
        {"deny": ["Read(secrets/**)", "Read(**/.env)"]}, base_dir=tmp_path, workdir=tmp_path, where="p"
    )
    context = ToolContext(tmp_path, readable=rules.read_filter())
    shown = glob_tool({"pattern": "**"}, context).output.splitlines()
    assert shown == ["src", "src/a.py", "x", "[skipped: 4 paths the permission rules protect]"]
