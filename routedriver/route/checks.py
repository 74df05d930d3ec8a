"""One line of ``route.verify``'s answer: a stone's status and why (``StoneCheck``), and every status there
is. ``route.verify`` makes them, ``route.policy`` and ``route.recheck`` (which it runs) amend them and
``verify_report`` shows them: all of them import this module, so none needs ``route.verify`` itself.
"""

from __future__ import annotations

from typing import NamedTuple

STATUSES = (
    "passed",
    "incomplete",
    "stale",
    "unproven",
    "unapproved",
    "policy-changed",
    "uncommitted",  # passed in this work tree, but on files no commit holds: CI's checkout would not pass it
    "rejected",  # --recheck: CI's own run of the guard did not pass it
    "forged",
    "broken",
    "malfunction",  # --recheck: a review or judge broke in CI (verify exits 1 when nothing else failed)
    "unbound",  # --require-bound: a file the pull request changes that no pass binds ("stone": the path)
)


UNBOUND = "unbound"  # a file's line, not a stone's (route.bound): reports count them apart


class StoneCheck(NamedTuple):
    route: str  # the route relative to the top-level (the cwd outside git)
    stone: str
    status: str  # one of STATUSES
    why: str
    file: str  # the file a reader should look at, relative to the top-level

    def ok(self, allow_incomplete: bool) -> bool:
        return self.status == "passed" or (allow_incomplete and self.status == "incomplete")
