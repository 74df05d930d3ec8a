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
from routedriver.behaviorci.destination import Destination, check_writable, destination, write
from routedriver.behaviorci.errors import AllCasesErrored, OutputError
from routedriver.behaviorci.providers import make_provider
from routedriver.behaviorci.results import RunResult
from routedriver.behaviorci.runner import Cancellation, RunOptions, run_bundle
from routedriver.behaviorci.status import Status
from routedriver.fsutil import real_path


@dataclass(frozen=True)
class RunRequest:
    bundle: str
    provider: str | None = None
    model: str | None = None
    base_url: str | None = None  # the runner's, never the bundle's (see bundle.RUNNER_ONLY)
    api_key_env: str | None = None
    use_cache: bool = True
    cache_dir: str | None = None
    concurrency: int | None = None
    repeat: int | None = None


def cache_for(
    bundle: Bundle, request: RunRequest, environ: Mapping[str, str] | None = None
) -> ResponseCache | None:
    if not request.use_cache or not bundle.config.cache.enabled:
        return None
    if request.cache_dir:
        return ResponseCache(real_path(Path(request.cache_dir).expanduser()))
    return ResponseCache(default_cache_dir(environ))


def execute(request: RunRequest, status: Status, environ: Mapping[str, str] | None = None) -> RunResult:
    """Load and run a bundle. Configuration problems raise ``Refused`` subclasses before any call is made."""
    env = os.environ if environ is None else environ
    bundle = load_bundle(request.bundle)
    for warning in bundle.warnings:
        status.warn(f"behaviorci: warning: {warning}")
    config = bundle.config
    cancel = Cancellation()

    def on_retry(case_id: str, note: str) -> None:
        # A worker still finishing after Ctrl-C has nothing more to say.
        cancel.unless_cancelled(lambda: status.retry(case_id, note))

    provider = make_provider(
        config,
        name=request.provider,
        model=request.model,
        base_url=request.base_url,
        api_key_env=request.api_key_env,
        environ=env,
        on_retry=on_retry,
        sleep=cancel.sleep,  # retry backoff and mock latency end at once when the run stops
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
        result = run_bundle(bundle, provider, RunOptions(concurrency, repeat, cache, status.advance, cancel))
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
        "fix the provider settings (key, --base-url, model) or its availability and run again",
    )


def check_output_path(output: str) -> None:
    """Refuse an --output that cannot be written, before any call is made."""
    _output_destination(output)


def _output_destination(output: str) -> Destination:
    what = f"cannot write --output {output}"
    try:
        dest = destination(output)
    except IsADirectoryError:
        raise OutputError(f"--output {output} is a directory", "give a file path") from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        raise OutputError(f"{what}: {_reason(exc)}", "choose another path") from None
    problem = check_writable(dest)
    if problem is not None:
        raise OutputError(f"{what}: {problem}", "choose a writable path")
    return dest


def write_report(output: str, text: str) -> None:
    """Write the report to ``output``: through a symlink to its target, into a FIFO or device in place, else
    atomically (see ``destination``)."""
    dest = _output_destination(output)
    try:
        write(dest, text)
    except OSError as exc:
        raise OutputError(
            f"cannot write --output {output}: {_reason(exc)}", "choose a writable path"
        ) from None


def _reason(exc: BaseException) -> str:
    return (exc.strerror if isinstance(exc, OSError) else None) or str(exc)
