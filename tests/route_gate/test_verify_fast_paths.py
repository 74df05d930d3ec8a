"""route.verify's fast paths give the same answers as the plain ones they stand in for (issue 3, Speed).

Each test compares a shortcut with the straightforward rule it replaces, on real git repositories and files
where the shortcut depends on them: the index listing cut at fixed offsets, ``.route/`` names grouped by stone
in one pass, artifact globs answered from one listing per directory, the canonical JSON of the
review-input hash joined by hand, a marker's manifest read only when asked, and git queries started early.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from routedriver import gitops, globs
from routedriver.route import frontmatter, hashing, store
from routedriver.route.artifacts import Listings, default_glob_files, find_artifacts
from routedriver.route.guardfile import load_guard
from routedriver.route.load import load_route
from routedriver.route.model import Guard, default_owner
from routedriver.route.state import Survey
from tests.conftest import git
from tests.route.routes import write

# ---------------------------------------------------------------- the index listing


def _stage_by_loop(output: str) -> dict[str, str]:
    """What ``git ls-files -v --stage -z`` says, read entry by entry: ``{path: id}`` of stage-0 regular files
    git compares with the work tree (tag ``H``: not assume-unchanged, not skip-worktree)."""
    staged = {}
    for record in output.split("\0"):
        meta, tab, path = record.partition("\t")
        if tab:
            tag, mode, blob_id, stage = meta.split(" ")
            if tag == "H" and stage == "0" and mode in ("100644", "100755"):
                staged[path] = blob_id
    return staged


def _listing(repo: Path) -> str:
    return git(repo, "ls-files", "-v", "--stage", "-z")


@pytest.mark.parametrize("object_format", ["sha1", "sha256"])
def test_the_index_listing_is_cut_at_fixed_offsets_only_when_every_entry_fits(
    tmp_path: Path, object_format: str
) -> None:
    repo = tmp_path / object_format
    repo.mkdir()
    git(repo, "init", "-q", f"--object-format={object_format}")
    write(repo / "a.md", "a\n")
    write(repo / "dir with space" / "b\tc.md", "tab in the name\n")
    write(repo / "x.sh", "#!/bin/sh\n").chmod(0o755)
    git(repo, "add", "-A")
    plain = _listing(repo)
    assert gitops._parse_stage(plain, object_format) == _stage_by_loop(plain)
    assert set(gitops._parse_stage(plain, object_format)) == {"a.md", "dir with space/b\tc.md", "x.sh"}
    # A symlink and a submodule entry: not regular files, so the entry-by-entry reading decides.
    os.symlink("a.md", repo / "link.md")
    git(repo, "add", "link.md")
    blob = git(repo, "rev-parse", ":a.md").strip()
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{blob},sub")
    mixed = _listing(repo)
    assert gitops._parse_stage(mixed, object_format) == _stage_by_loop(mixed)
    assert "link.md" not in gitops._parse_stage(mixed, object_format)
    assert gitops._parse_stage("", object_format) == {}
    # Entries git does not compare with the work tree: the entry-by-entry reading leaves them out.
    git(repo, "update-index", "--assume-unchanged", "a.md")
    git(repo, "update-index", "--skip-worktree", "x.sh")
    flagged = _listing(repo)
    untouched = "dir with space/b\tc.md"
    expected = {untouched: gitops._parse_stage(plain, object_format)[untouched]}
    assert gitops._parse_stage(flagged, object_format) == _stage_by_loop(flagged) == expected


def test_a_merge_conflict_in_the_index_is_read_entry_by_entry(git_repo: Path) -> None:
    write(git_repo / "c.md", "base\n")
    git(git_repo, "add", "c.md")
    git(git_repo, "commit", "-q", "-m", "base")
    git(git_repo, "switch", "-q", "-c", "side")
    write(git_repo / "c.md", "side\n")
    git(git_repo, "commit", "-q", "-am", "side")
    git(git_repo, "switch", "-q", "main")
    write(git_repo / "c.md", "main\n")
    git(git_repo, "commit", "-q", "-am", "main")
    git(git_repo, "merge", "-q", "side", check=False)  # conflicts: stages 1, 2 and 3 of c.md
    conflicted = _listing(git_repo)
    assert "\t" in conflicted and " 2\tc.md" in conflicted
    assert gitops._parse_stage(conflicted, "sha1") == _stage_by_loop(conflicted)
    assert "c.md" not in gitops._parse_stage(conflicted, "sha1")


# ---------------------------------------------------------------- .route/ names by stone


def test_state_files_are_grouped_by_stone_exactly_like_the_per_stone_listing() -> None:
    h1, h2 = "0123456789abcdef", "fedcba9876543210"
    names = [
        f"1.a.guard.review.i1.{h1}.r1.md",
        f"1.a.guard.review.i2.{h2}.r1.md",
        f"1.a.guard.judge.i1p1.{h1}.{h2}.j1.md",
        f"1.a.guard.judge.i1p2.{h1}.{h2}.j2.md",
        f"1.a.b.guard.review.i1.{h1}.r1.md",  # stone 1.a.b, not 1.a
        f"2.x.guard.review.y.guard.review.i3.{h1}.r2.md",  # a stone named 2.x.guard.review.y
        f"2.x.guard.judge.i1p1.{h1}.{h2}.j1.md.bak",  # not a judge file of anyone
        f"3.z.guard.review.i1.{h1[:15]}.r1.md",  # short hash: not a review file
        "1.a.passed",
        f"1.a.passed.{h1}",
        f"1.a.b.passed.{h2}",  # stone 1.a.b
        f"1.a.passed.{h1}.md",  # not a pass record
        "1.a.approved",
        ".gitignore",
    ]
    grouped = store.files_by_stone(names)
    stones = {"1.a", "1.a.b", "2.x", "2.x.guard.review.y", "3.z", "1"}
    for stone in stones | set(grouped):
        files = grouped.get(stone, store.StoneFiles([], [], []))
        assert files.reviews == store.review_files(names, stone), stone
        assert files.judges == store.judge_files(names, stone), stone
        assert files.passes == store.pass_files(names, stone), stone
    assert sorted(grouped) == ["1.a", "1.a.b", "2.x.guard.review.y"]


# ---------------------------------------------------------------- artifact globs


def _plainly(repo: Path, patterns: tuple[str, ...]) -> set[str]:
    """The files a straightforward reading of the rule gives, walking the whole work tree: a file (a link to
    one counts) whose path relative to the top-level a glob covers (``globs.covers``), never a ``.stone`` or
    ``.guard`` file, nothing under a ``.route/``, ``.git`` never entered."""
    found = set()
    for directory, dirs, files in os.walk(repo):
        dirs[:] = [name for name in dirs if name != ".git"]
        for name in files + dirs:  # a link to a directory is listed with the directories, and not entered
            path = os.path.join(directory, name)
            relative = os.path.relpath(path, repo).replace(os.sep, "/")
            if not os.path.isfile(path) or name.endswith((".stone", ".guard")):
                continue
            if ".route" not in relative.split("/") and any(globs.covers(p, relative) for p in patterns):
                found.add(relative)
    return found


@pytest.mark.parametrize(
    "patterns",
    [
        ("$route/art/*.md",),
        ("$route/art/*",),
        ("$route/art/.*",),
        ("$route/*/*.md", "$route/art/**/*.md"),
        ("$route/.route/*", "$route/art/[a-c]*.md", "$route/art/?.md"),
        ("art2/*.md", "$route/missing/*.md"),
    ],
)
def test_artifact_globs_find_from_listings_what_a_walk_of_the_whole_tree_finds(
    git_repo: Path, patterns: tuple[str, ...]
) -> None:
    route_dir = git_repo / "route"
    write(route_dir / "1.s.stone", "Do it.\n")
    art = route_dir / "art"
    for name in ("a.md", "b.md", "c.md", "d.md", "e.txt", ".hidden.md", "x.stone", "y.guard"):
        write(art / name, f"{name}\n")
    write(art / "sub" / "deep.md", "deep\n")
    write(git_repo / "art2" / "top.md", "top\n")
    write(route_dir / ".route" / "1.s.passed", "---\n---\n")
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "artifacts")
    # Now the work tree differs from the index in every way a glob could notice.
    write(art / "b.md", "modified\n")  # tracked, modified
    (art / "c.md").unlink()  # tracked, deleted
    write(art / "untracked.md", "new\n")  # untracked
    write(art / "ignored.md", "ignored but present\n")  # ignored: a glob still sees it
    write(git_repo / ".gitignore", "route/art/ignored.md\n")
    (art / "dir.md").mkdir()  # a directory whose name matches
    os.symlink("a.md", art / "link.md")  # a link to a file counts
    os.symlink("nowhere.md", art / "broken.md")  # a broken link does not
    (art / "d.md").unlink()
    (art / "d.md").mkdir()  # a tracked file replaced by a directory
    route = load_route(route_dir)
    stone = route.stone("1.s")
    assert stone is not None
    guard = Guard(path=route_dir / "1.s.guard", artifacts=patterns, reviews=(), judges=())
    found = {hashing.relative_posix(path, git_repo) for path in find_artifacts(route, stone, guard, git_repo)}
    assert found == _plainly(git_repo, tuple(p.replace("$route", "route") for p in patterns))
    assert found  # every case finds something, so the comparison says something


@pytest.mark.parametrize(
    ("filename", "owner"),
    [
        ("3.plan.md", "3.plan"),
        ("3.plan-d.md", "3.plan"),  # starts with 3.plan-d, not 3.plan-details
        ("3.plan-details.md", "3.plan-details"),
        ("3.plan-details.v2.md", "3.plan-details"),
        ("1.a.md", "1.a"),  # too short for 1.a.m's default (1.a.m*.md)
        ("1.a.m.md", "1.a.m"),
        ("3.plan.txt", None),  # the default matches *.md only
        ("3.pla.md", None),
        ("notes.md", None),
    ],
)
def test_the_default_glob_owner_is_the_longest_name_that_fits(filename: str, owner: str | None) -> None:
    names = {"1.a", "1.a.m", "3.plan", "3.plan-details"}
    assert default_owner(filename, names) == owner


def test_a_default_glob_leaves_files_to_the_stone_with_the_longer_name_on_every_path(git_repo: Path) -> None:
    route_dir = git_repo / "route"
    for name in ("1.a", "1.a.m", "3.plan", "3.plan-details", "3.plan.v", "4.x"):
        write(route_dir / f"{name}.stone", "Do it.\n")
    write(route_dir / "1.a.m.guard", "artifacts: ['notes/*.md']\n")  # its default glob still names its files
    files = [
        "1.a.md",  # too short for 1.a.m's default (1.a.m*.md): 1.a's
        "1.a.m.md",
        "1.a.mx.md",
        "3.plan.md",
        "3.plan-d.md",  # starts with 3.plan-d, not 3.plan-details: 3.plan's
        "3.plan-details.md",
        "3.plan-details.v2.md",
        "3.plan.v1.md",  # 3.plan.v's: its name is the longest that fits
        "4.x.md",
    ]
    for name in files:
        write(route_dir / name, f"{name}\n")
    git(git_repo, "add", "-A")
    git(git_repo, "commit", "-q", "-m", "route")
    write(route_dir / "3.plan-details.v3.md", "untracked\n")
    repo = gitops.find_repo(git_repo)
    assert repo is not None
    route = load_route(route_dir)
    survey = Survey(route, repo, git_repo)  # what get, set and verify ask: the default glob from the listing
    owned = {}
    for stone in route.stones:
        guard = load_guard(route, stone)
        slow = {
            hashing.relative_posix(path, git_repo) for path in find_artifacts(route, stone, guard, git_repo)
        }
        assert set(survey.artifacts(stone)) == slow
        owned[stone.name] = sorted(path.removeprefix("route/") for path in slow)
    # route.stone.get's way: every stone's default files from one pass over the route's listing.
    defaults = default_glob_files(route, Listings())
    assert {name: found for name, found in defaults.items() if name != "1.a.m"} == {
        name: found for name, found in owned.items() if name != "1.a.m"
    }
    assert defaults["1.a.m"] == ["1.a.m.md", "1.a.mx.md"]  # its default glob's, were its guard not to set one
    assert owned == {
        "1.a": ["1.a.md"],
        "1.a.m": [],  # its guard's glob finds nothing; 1.a.m.md and 1.a.mx.md are still not 1.a's
        "3.plan": ["3.plan-d.md", "3.plan.md"],
        "3.plan-details": ["3.plan-details.md", "3.plan-details.v2.md", "3.plan-details.v3.md"],
        "3.plan.v": ["3.plan.v1.md"],
        "4.x": ["4.x.md"],
    }
    # A glob written in a guard is taken as written, even when it reads like the default.
    stone = route.stone("3.plan")
    assert stone is not None
    written = Guard(
        path=route_dir / "3.plan.guard", artifacts=("$route/${stone}*.md",), reviews=(), judges=()
    )
    assert len(find_artifacts(route, stone, written, git_repo)) == 6


# ---------------------------------------------------------------- the review-input hash


@pytest.mark.parametrize(
    "pairs",
    [
        [],
        [("a.md", "0" * 40)],
        [("dir with space/ü é.md", "1" * 40), ("z.md", "2" * 40)],
        [('quote".md', "3" * 40)],
        [("back\\slash.md", "4" * 40)],
        [("tab\there.md", "5" * 40), ("new\nline.md", "6" * 40)],
        [("del\x7f.md", "7" * 40), ("sep\u2028.md", "8" * 40), ("nul\x00.md", "9" * 40)],
    ],
)
def test_the_review_input_json_is_byte_for_byte_canonical_json(pairs: list[tuple[str, str]]) -> None:
    assert hashing.pairs_json(pairs) == hashing.canonical_json([list(pair) for pair in pairs]).encode("utf-8")
    ids = dict(pairs)
    reference = hashing.sha256_hex(hashing.canonical_json(sorted([path, cid] for path, cid in ids.items())))
    assert hashing.review_input_hash(ids) == reference


# ---------------------------------------------------------------- markers


def _manifest_by_document(text: str) -> tuple[tuple[str, str], ...]:
    parsed = frontmatter.parse_document(text)
    assert parsed is not None
    entries = []
    for value in parsed[0].get("artifact", ()):
        content_id, _, path = value.partition(" ")
        if path:
            entries.append((path, content_id))
    return tuple(sorted(entries))


def test_a_marker_reads_its_manifest_only_when_asked_and_means_the_same(tmp_path: Path) -> None:
    from routedriver.route.model import Route

    route = Route.at(tmp_path, ".", ())
    manifest = {f"dir/{index:03}.md": f"{index:040x}" for index in range(50)}
    manifest["with space.md"] = "a" * 40
    path = store.write_approved(route, "1.s", "b" * 64, manifest)
    text = path.read_text()
    # Lines the driver does not write, but a hand or a merge might: each must mean what the general rule says.
    odd = text.replace(
        "approved_at:",
        'artifact: "e'
        + "e" * 39
        + ' quoted.md"\nartifact:   f'
        + "f" * 39
        + " spaced.md  \nartifact: nopath\napproved_at:",
    )
    for body in (text, odd):
        path.write_text(body)
        marker = store.read_marker(path, "1.s")
        assert marker is not None
        assert marker.artifacts == _manifest_by_document(body)
        assert marker.manifest == dict(_manifest_by_document(body))
    assert marker.manifest["quoted.md"] == "e" * 40 and marker.manifest["spaced.md"] == "f" * 40
    assert "nopath" not in str(marker.artifacts)


def test_a_marker_with_a_conflict_among_its_artifact_lines_does_not_parse(tmp_path: Path) -> None:
    from routedriver.route.model import Route

    route = Route.at(tmp_path, ".", ())
    manifest = {f"{index:03}.md": f"{index:040x}" for index in range(20)}
    path = store.write_approved(route, "1.s", "b" * 64, manifest)
    lines = path.read_text().split("\n")
    middle = next(index for index, line in enumerate(lines) if line.startswith("artifact: ")) + 5
    for bad in ("<<<<<<< HEAD", "=======", " artifact: 1 x.md", "artifact : 1 x.md", ""):
        path.write_text("\n".join([*lines[:middle], bad, *lines[middle:]]))
        assert frontmatter.parse_document(path.read_text()) is None, bad
        assert store.read_marker(path, "1.s") is None, bad


# ---------------------------------------------------------------- relative paths


@pytest.mark.parametrize(
    "path",
    [
        "/w/repo/a",
        "/w/repo/.route/1.a.passed",
        "/w/repo/.hidden/.x",
        "/w/repo/...",
        "/w/repo/..b/c",
        "/w/repo/a/./b",
        "/w/repo/a/../b",
        "/w/repo/a//b",
        "/w/repo/a/",
        "/w/repo/a/..",
        "/w/repo/.",
        "/w/repo",
        "/w/repo2/x",
        "/w/other/x",
    ],
)
def test_relative_paths_cut_as_strings_are_what_relpath_says(path: str) -> None:
    expected = Path(os.path.relpath(path, "/w/repo")).as_posix()
    assert hashing.relative_posix(path, "/w/repo") == expected
    assert (
        hashing.relative_posix(Path(path), Path("/w/repo"))
        == Path(os.path.relpath(Path(path), "/w/repo")).as_posix()
    )
    assert list(hashing._by_relative([path], Path("/w/repo"))) == [expected]
