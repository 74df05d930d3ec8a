"""route.verify asks ``git check-attr`` only when git tracks a ``.gitattributes``: which paths say so."""

from __future__ import annotations

import pytest

from routedriver import gitops
from routedriver.route import verify


def snapshot(*paths: str) -> gitops.IndexSnapshot:
    return gitops.IndexSnapshot(dict.fromkeys(paths, "0" * 40), frozenset())


@pytest.mark.parametrize(
    "paths",
    [
        (".gitattributes",),
        ("a.md", "docs/.gitattributes", "z.md"),
        ("a.md", "deep/er/.gitattributes"),
        ("x.gitattributes",),  # a name that merely ends so costs the check, nothing more
    ],
)
def test_a_tracked_gitattributes_anywhere_is_found(paths: tuple[str, ...]) -> None:
    assert verify._attributes_tracked(snapshot(*paths))


@pytest.mark.parametrize(
    "paths",
    [
        (),
        ("a.md", "b.md"),
        (".gitattributes.bak", "docs/.gitattributes/x.md"),  # in a name or a directory, not at its end
        ("gitattributes",),
    ],
)
def test_paths_that_do_not_end_in_gitattributes_are_not(paths: tuple[str, ...]) -> None:
    assert not verify._attributes_tracked(snapshot(*paths))


def test_an_unreadable_index_counts_as_tracking_one() -> None:
    assert verify._attributes_tracked(None)
