"""An offline, deterministic stand-in for an LLM review: checks a Markdown artifact against the sections a
stone asks for and prints what a reviewer would, ending with the counts the reviewed? judge reads.

usage: python3 review.py FILE SECTION [SECTION ...]
"""

from __future__ import annotations

import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        print("usage: review.py FILE SECTION [SECTION ...]", file=sys.stderr)
        return 64
    text = Path(argv[0]).read_text(encoding="utf-8")
    headings = {line.lstrip("#").strip().lower() for line in text.splitlines() if line.startswith("#")}
    blockers = [f"missing section: {name}" for name in argv[1:] if name.lower() not in headings]
    nitpicks = [f"long line {number}" for number, line in enumerate(text.splitlines(), 1) if len(line) > 110]
    print(f"# Review of {argv[0]}\n")
    for item in blockers:
        print(f"- blocker: {item}")
    for item in nitpicks:
        print(f"- nitpick: {item}")
    print(f"\nblockers: {len(blockers)}\nnitpicks: {len(nitpicks)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
