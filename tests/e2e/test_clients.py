"""The e2e suite's own contract: a client it cannot install fails the tests that need it (never a skip)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.e2e.clients import CLAUDE_CODE, installed


def test_a_client_that_cannot_be_installed_fails_the_test(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ROUTEDRIVER_E2E_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # no npm, no node
    with pytest.raises(
        pytest.fail.Exception, match=r"cannot install @anthropic-ai/claude-code@2\.1\.\d+: npm is not"
    ):
        installed(CLAUDE_CODE)
    assert not (tmp_path / "cache" / f"claude-code-{CLAUDE_CODE.version}").exists()
