"""Shared measuring for ``make bench``: medians of wall time, and ratios against a baseline from the same run.

A benchmark script calls ``report(...)`` once per target; ``run_all.py`` runs every ``bench_*.py`` and exits
non-zero if any target is missed. Figures are only meaningful on a quiet machine.

Commands are timed as users run them: from a NON-editable install of this checkout (``installed()``, built
once into ``.venv/bench-installed`` and rebuilt when the source changes), not from make's editable ``.venv``,
whose import finder costs every start ~10 ms. ``bare_python()`` is that install's interpreter starting and
doing nothing: a clean interpreter, without the editable install's start-up hooks, so no ratio is flattered
by a slow baseline.
"""

from __future__ import annotations

import hashlib
import os
import resource
import shlex
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

BIN_DIR = Path(sys.executable).parent  # make's editable .venv
ROOT = Path(__file__).resolve().parents[2]
INSTALLED = ROOT / ".venv" / "bench-installed"  # a non-editable install of this checkout, as users make one
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
    bin_dir: Path | None = None,
) -> Callable[[], None]:
    """A callable that runs ``argv`` once (output discarded), for ``median_wall``; ``bin_dir`` (default:
    ``commands_dir()``) is put first on PATH, so what the command starts comes from the same install."""
    first = bin_dir or commands_dir()
    full_env = {**os.environ, "PATH": f"{first}{os.pathsep}{os.environ.get('PATH', '')}", **(env or {})}
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


def bare_python() -> Callable[[], None]:
    """``python -c pass`` with the installed commands' interpreter (a clean one): the baseline of every
    "vs bare python" figure, timed in the same rounds as what it is compared with (``interleaved``)."""
    return command([str(commands_dir() / "python"), "-c", "pass"])


def interleaved(
    runs: Mapping[str, Callable[[], object]], *, rounds: int = 15, cpu: dict[str, float] | None = None
) -> dict[str, float]:
    """Median seconds of each run, timed in rounds that run every one once (after one unmeasured round):
    A and B interleaved, so a busy moment on the machine falls on all of them alike. With ``cpu``, the
    median CPU seconds (user + system) of the processes each run waited for go there too: on a machine
    another job keeps busy they move far less than the wall time, which is the figure a user waits for."""
    for run in runs.values():
        run()
    samples: dict[str, list[float]] = {name: [] for name in runs}
    spent: dict[str, list[float]] = {name: [] for name in runs}
    for _ in range(rounds):
        for name, run in runs.items():
            before = _children_cpu()
            started = time.perf_counter()
            run()
            samples[name].append(time.perf_counter() - started)
            spent[name].append(_children_cpu() - before)
    if cpu is not None:
        cpu.update({name: statistics.median(values) for name, values in spent.items()})
    return {name: statistics.median(values) for name, values in samples.items()}


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def versus_bare(name: str, run: Callable[[], object], *, max_ratio: float, rounds: int = 15) -> None:
    """Report ``run`` against bare python start-up, the two interleaved."""
    walls = interleaved({"it": run, "bare": bare_python()}, rounds=rounds)
    report(name, walls["it"], walls["bare"], max_ratio=max_ratio)


_COMMANDS: list[Path] = []


def commands_dir() -> Path:
    """Where the timed console scripts are: the non-editable install, else (it cannot be built, the line
    printed says why) make's editable ``.venv``."""
    if not _COMMANDS:
        built, why_not = installed()
        if built is None:
            print(f"info   timing the editable .venv (no non-editable install: {why_not})", flush=True)
        _COMMANDS.append(built if built is not None else BIN_DIR)
    return _COMMANDS[0]


def _source_stamp(root: Path = ROOT) -> str:
    """sha256 over the package's files and pyproject.toml: the installed copy is rebuilt when it changes."""
    digest = hashlib.sha256()
    files = sorted(
        path
        for path in (root / "routedriver").rglob("*")
        if path.is_file() and "__pycache__" not in path.parts
    )
    for path in [*files, root / "pyproject.toml"]:
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def installed(source: Path = ROOT, target: Path = INSTALLED) -> tuple[Path | None, str]:
    """The bin directory of a non-editable install of the checkout at ``source``, built once into
    ``target``; or (None, why it could not be built). Its dependencies come from .venv's site-packages
    through a plain path entry (what pip would have put next to it, without a second download)."""
    bin_dir = target / "bin"
    stamp_file = target / ".source-stamp"
    stamp = _source_stamp(source)
    if (bin_dir / "route.verify").exists() and stamp_file.exists() and stamp_file.read_text() == stamp:
        return bin_dir, ""
    print(f"info   building the non-editable install in {target} ...", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-wheel-") as wheels:
        steps = [
            [sys.executable, "-m", "venv", "--clear", str(target)],
            [str(BIN_DIR / "pip"), "wheel", "-q", "--no-deps", "-w", wheels, str(source)],
        ]
        for step in steps:
            done = subprocess.run(step, capture_output=True, text=True, check=False, timeout=600)
            if done.returncode != 0:
                return None, f"{Path(step[0]).name} {step[1]} failed: {done.stderr.strip().splitlines()[-1:]}"
        wheel = next(Path(wheels).glob("routedriver-*.whl"))
        pip = [str(bin_dir / "pip"), "install", "-q", "--no-deps", "--force-reinstall", str(wheel)]
        done = subprocess.run(pip, capture_output=True, text=True, check=False, timeout=600)
        if done.returncode != 0:
            return None, f"pip install failed: {done.stderr.strip().splitlines()[-1:]}"
    purelib = subprocess.run(
        [str(bin_dir / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    (Path(purelib) / "zz_bench_dependencies.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    stamp_file.write_text(stamp)
    return bin_dir, ""


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
