"""Pure parts of the gate: approvers files, manifests, report escaping (path globs: tests/test_globs.py)."""

from __future__ import annotations

import pytest

from routedriver.errors import Refused
from routedriver.route import frontmatter, manifest, verify_report
from routedriver.route.checks import StoneCheck
from routedriver.route.provenance import emails_in, parse_approvers, principal_covers
from routedriver.route.verify import VerifyReport


def test_approvers_files_take_emails_names_and_comments() -> None:
    text = (
        "# release managers\nalice@example.com\n\nBob Builder <BOB@Example.com>  # on call\n"
        "  carol@x.org \nnot an email\n"
    )
    assert parse_approvers(text) == frozenset({"alice@example.com", "bob@example.com", "carol@x.org"})
    assert emails_in("Alice <alice@example.com> [ultimate]") == {"alice@example.com"}
    assert emails_in("") == set()


@pytest.mark.parametrize(
    ("patterns", "email", "expected"),
    [
        ("*@example.com", "ada@example.com", True),
        ("*@example.com", "ADA@Example.COM", True),
        ("*@example.com", "ada@example.org", False),
        ("*@example.com", "ada@sub.example.com.evil.org", False),
        ("ad?@example.com", "ada@example.com", True),
        ("ad?@example.com", "adam@example.com", False),
        ("bob@x.org,*@example.com", "ada@example.com", True),
        ("*@example.com,!eve@example.com", "eve@example.com", False),
        ("a.b@example.com", "aXb@example.com", False),  # a dot is a dot, not any character
        ("", "ada@example.com", False),
    ],
)
def test_allowed_signers_principal_patterns(patterns: str, email: str, expected: bool) -> None:
    assert principal_covers(patterns, email) is expected


def test_manifest_changes_read_like_a_person_would_say_them() -> None:
    before = {"a.md": "1", "b.md": "2", "c.md": "3"}
    after = {"a.md": "1", "b.md": "9", "d.md": "4"}
    assert manifest.changes(before, after) == ["changed b.md", "added d.md", "removed c.md"]
    assert manifest.describe(before, before) == ""
    many = {f"{index}.md": "x" for index in range(8)}
    assert manifest.describe({}, many, limit=2) == "added 0.md, added 1.md (+6 more)"


def test_markers_round_trip_the_manifest_and_approver(tmp_path: object) -> None:
    fields = [("stone", "1.a"), ("approver_name", ""), ("artifact", "abc a b.md"), ("approved_at", "t")]
    parsed = frontmatter.parse_document(frontmatter.render_document(fields))
    assert (
        parsed is not None and parsed[0]["approver_name"] == [""] and parsed[0]["artifact"] == ["abc a b.md"]
    )


def test_annotations_escape_what_github_would_misread() -> None:
    check = StoneCheck("r", "1.a", "stale", "changed a,b.md: 100%\nsecond line", "r/a,b.md")
    report = VerifyReport((check,), allow_incomplete=False, require_signed=False)
    assert verify_report.github_annotations(report) == [
        "::error file=r/a%2Cb.md,title=route.verify stale%3A r/1.a::changed a,b.md: 100%25\\nsecond line"
    ]
    summary = verify_report.step_summary(report)
    # The newline shown as \n, and its backslash escaped for Markdown.
    assert "| ❌ | r | 1.a | stale | changed a,b.md: 100%\\\\nsecond line |" in summary


def test_incomplete_is_ok_only_when_allowed() -> None:
    check = StoneCheck("r", "1.a", "incomplete", "not passed yet", "r/1.a.stone")
    assert not VerifyReport((check,), False, False).ok
    allowed = VerifyReport((check,), True, False)
    assert allowed.ok and "| ⏳ | r | 1.a | incomplete |" in verify_report.step_summary(allowed)
    assert "<skipped " in verify_report.junit(allowed)


def test_a_guard_with_a_list_as_a_key_is_a_one_line_refusal() -> None:
    from pathlib import Path

    from routedriver.route.guardfile import parse_guard

    with pytest.raises(Refused) as caught:
        parse_guard("? [a]\n: b\n", Path("g"), "r/1.a.guard", "1.a")
    assert caught.value.line().startswith("error: r/1.a.guard: line 1: malformed YAML (a key that is a list")
