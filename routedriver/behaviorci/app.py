"""The commands' core: load, build the provider and cache, run, and decide the exit code.

The CLI parses flags and prints; everything between is here, so it can be called from Python too.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from routedriver.behaviorci.bundle import Bundle, load_bundle
from routedriver.behaviorci.cache import ResponseCache, default_cache_dir
from routedriver.behaviorci.errors import AllCasesErrored, OutputError
from routedriver.behaviorci.providers import make_provider
from routedriver.behaviorci.results import RunResult
from routedriver.behaviorci.runner import RunOptions, run_bundle
from routedriver.behaviorci.status import Status


@dataclass(frozen=True)
class RunRequest:
    bundle: str
    provider: str | None = None
    model: str | None = None
    use_cache: bool = True
    cache_dir: str | None = None
    concurrency: int | None = None
    repeat: int | None = None


def cache_for(
    bundle: Bundle, request: RunRequest, environ: Mapping[str, str] | None = None
) -> ResponseCache | None:
    settings = bundle.config.cache
    if not request.use_cache or not settings.enabled:
        return None
    if request.cache_dir:
        return ResponseCache(Path(request.cache_dir).expanduser().resolve())
    if settings.dir:
        return ResponseCache(bundle.resolve(settings.dir))
    return ResponseCache(default_cache_dir(environ))


def execute(request: RunRequest, status: Status, environ: Mapping[str, str] | None = None) -> RunResult:
    """Load and run a bundle. Configuration problems raise ``Refused`` subclasses before any call is made."""
    env = os.environ if environ is None else environ
    bundle = load_bundle(request.bundle)
    config = bundle.config
    provider = make_provider(
        config, name=request.provider, model=request.model, environ=env, on_retry=status.retry
    )
    concurrency = request.concurrency or config.effective_concurrency
    repeat = request.repeat or config.repeat
    cache = cache_for(bundle, request, env)
    runs = len(bundle.cases) * repeat
    times = f" × {repeat} runs" if repeat > 1 else ""
    status.say(
        f"behaviorci: running {config.name}: {len(bundle.cases)} cases{times} with {provider.name}"
        f" ({provider.model}), concurrency {min(concurrency, runs)}"
    )
    status.start_progress(runs)
    try:
        result = run_bundle(bundle, provider, RunOptions(concurrency, repeat, cache, status.advance))
    finally:
        status.stop_progress()
    if cache is not None and cache.write_errors:
        status.warn(
            f"behaviorci: warning: {cache.write_errors} answers could not be cached in {cache.directory}"
        )
    return result


def all_errored_error(result: RunResult) -> AllCasesErrored:
    first = result.cases[0].error or "unknown error"
    return AllCasesErrored(
        f"every case errored ({len(result.cases)} cases), so nothing was tested; first error: {first}",
        "fix the provider settings (key, base_url, model) or its availability and run again",
    )


def check_output_path(output: str) -> None:
    """Refuse an --output that cannot be written, before any call is made."""
    target = Path(output)
    what = f"cannot write --output {output}"
    if target.is_dir():
        raise OutputError(f"--output {output} is a directory", "give a file path")
    # atomic_write creates missing directories, so the first existing ancestor is what must allow writing.
    parent = target.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise OutputError(f"{what}: {parent} is not a directory", "choose another path")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OutputError(f"{what}: {parent} is not writable", "choose a writable path")


def write_report(output: str, text: str) -> None:
    from routedriver.fsutil import atomic_write

    try:
        atomic_write(output, text)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise OutputError(f"cannot write --output {output}: {reason}", "choose a writable path") from None
