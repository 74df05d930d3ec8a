"""``make bench``: run every tests/benchmarks/bench_*.py (or those named on the command line) and summarize.

Each script prints its own lines through ``_harness.report`` and exits non-zero when a target is missed.
A name may pick parts of a script that has them: ``bench_route:get,uncommitted`` runs only those two
(``make bench BENCH_ARGS='bench_route:uncommitted bench_verify'``).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str]) -> int:
    wanted: dict[str, list[str]] = {}
    for arg in argv:
        name, _, parts = arg.partition(":")
        wanted[name.removesuffix(".py")] = [part for part in parts.split(",") if part]
    scripts = sorted(p for p in HERE.glob("bench_*.py") if not wanted or p.stem in wanted)
    if not scripts or len(scripts) < len(wanted):
        print(f"error: no benchmark matches {' '.join(argv)}; see {HERE}", file=sys.stderr)
        return 2
    failed = []
    for script in scripts:
        print(f"== {script.stem}", flush=True)
        argv_parts = wanted.get(script.stem, [])
        code = subprocess.run(
            [sys.executable, str(script), *argv_parts], cwd=HERE.parent.parent, check=False
        ).returncode
        if code != 0:
            failed.append(script.stem)
    print()
    print("all benchmark targets met" if not failed else f"targets missed in: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
