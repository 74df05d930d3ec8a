"""`make demo` is the README's first promise: it must keep working, so the suite runs it."""

from __future__ import annotations

import sys
from pathlib import Path

from tests.conftest import run_cli

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_the_demo_drives_the_example_route_end_to_end(tmp_path: Path) -> None:
    ran = run_cli(
        [sys.executable, str(REPO_ROOT / "examples" / "demo.py"), "--keep", str(tmp_path / "demo")],
        REPO_ROOT,
        timeout=300,
    )
    assert ran.code == 0, ran.out[-3000:] + ran.err
    out = ran.out
    # The story's turning points, in order: a blocker, a refused robot approval, a human approval, a
    # behaviorci rejection, the end of the route, a green gate, a caught edit.
    markers = [
        "blockers exceed threshold (1 > 0)",
        "error: only humans can approve",
        "stone approved: 1.vision by Dana Human <dana@example.com>",
        "stone rejected: 3.prompt",
        "all stones passed",
        "route.verify ok: 4 stones (4 passed)",
        "stale      routes/launch/1.vision",
    ]
    positions = [out.find(marker) for marker in markers]
    assert all(p >= 0 for p in positions), dict(zip(markers, positions, strict=True))
    assert positions == sorted(positions)
    route = tmp_path / "demo" / "repo" / "routes" / "launch"
    passed = sorted(p.name.rsplit(".passed.", 1)[0] for p in route.glob(".route/*.passed.*"))
    assert passed == ["1.vision", "2.1.api", "2.1.cli", "3.prompt"]
