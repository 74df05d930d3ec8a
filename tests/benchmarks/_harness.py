"""Shared measuring for ``make bench``: medians of wall time, and ratios against a baseline from the same run.

A benchmark script calls ``report(...)`` once per target; ``run_all.py`` runs every ``bench_*.py`` and exits
non-zero if any target is missed. Figures are only meaningful on a quiet machine.
"""

from __future__ import annotations

import os
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

BIN_DIR = Path(sys.executable).parent
RESULTS: list[Result] = []


@dataclass(frozen=True)
class Result:
    name: str
    value: float
    baseline: float
    ratio: float
    target: str
    ok: bool


def median_wall(fn: Callable[[], object], *, repeat: int = 15, warmup: int = 2) -> float:
    """Median seconds of ``fn()`` over ``repeat`` runs after ``warmup`` unmeasured runs."""
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples)


def command(
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    stdin: str | None = None,
    check: bool = True,
) -> Callable[[], None]:
    """A callable that runs ``argv`` once (output discarded), for ``median_wall``."""
    full_env = {**os.environ, "PATH": f"{BIN_DIR}{os.pathsep}{os.environ.get('PATH', '')}", **(env or {})}
    # Start-up is what we measure: let Python cache bytecode as it does on a normal install (some sandboxes
    # set PYTHONDONTWRITEBYTECODE, which makes every start recompile the package from source).
    full_env.pop("PYTHONDONTWRITEBYTECODE", None)

    def go() -> None:
        done = subprocess.run(
            list(argv),
            cwd=cwd,
            env=full_env,
            input=stdin,
            text=True,
            stdin=None if stdin is not None else subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            check=False,
        )
        if check and done.returncode not in (0,):
            raise SystemExit(
                f"benchmark command failed ({done.returncode}): {shlex.join(argv)}\n{done.stderr}"
            )

    return go


def bare_python(repeat: int = 15) -> float:
    """Median wall of ``python -c pass`` with this venv's interpreter: the start-up every command pays."""
    return median_wall(command([sys.executable, "-c", "pass"]), repeat=repeat)


def report(
    name: str,
    value: float,
    baseline: float,
    *,
    max_ratio: float | None = None,
    min_ratio: float | None = None,
    unit: str = "s",
) -> Result:
    """Print one line and remember it: ``name: value (baseline …) ratio R target ≤ X ok|MISSED``."""
    ratio = value / baseline if baseline else float("inf")
    ok = (max_ratio is None or ratio <= max_ratio) and (min_ratio is None or ratio >= min_ratio)
    target = " and ".join(
        part
        for part in (
            f"≤ {max_ratio:g}×" if max_ratio is not None else "",
            f"≥ {min_ratio:g}×" if min_ratio is not None else "",
        )
        if part
    )
    result = Result(name, value, baseline, ratio, target, ok)
    RESULTS.append(result)
    print(
        f"{'ok    ' if ok else 'MISSED'} {name}: {_fmt(value, unit)} vs baseline {_fmt(baseline, unit)}"
        f" = {ratio:.2f}× (target {target})",
        flush=True,
    )
    return result


def report_absolute(name: str, value: float, *, max_value: float, unit: str = "s") -> Result:
    """For targets stated in absolute terms (e.g. '≤ 2 s wall'); still printed with the same shape."""
    ok = value <= max_value
    result = Result(name, value, max_value, value / max_value, f"≤ {_fmt(max_value, unit)}", ok)
    RESULTS.append(result)
    print(
        f"{'ok    ' if ok else 'MISSED'} {name}: {_fmt(value, unit)} (target ≤ {_fmt(max_value, unit)})",
        flush=True,
    )
    return result


def exit_code() -> int:
    return 0 if all(result.ok for result in RESULTS) else 1


def _fmt(value: float, unit: str) -> str:
    if unit == "s":
        return f"{value * 1000:.1f} ms" if value < 1 else f"{value:.2f} s"
    if unit == "us":
        return f"{value:.1f} µs"
    return f"{value:.3g} {unit}"
