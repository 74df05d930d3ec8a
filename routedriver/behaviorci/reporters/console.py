"""The console report: plain text; Rich tables and colour only on a terminal with NO_COLOR unset.

It always ends with the route driver's verdict lines, ``passed: true|false`` and ``reason: …``, so a
guard's judge reads a failed threshold as "failed" rather than as exit code 1 ("malfunction").
"""

from __future__ import annotations

import io

from routedriver.behaviorci.results import CaseResult, RunResult, ThresholdResult, format_number

SHOWN_FAILURES = 10


def verdict_lines(result: RunResult) -> str:
    reason = " ".join(result.reason().split())
    return f"passed: {'true' if result.passed else 'false'}\nreason: {reason}\n"


def render_plain(result: RunResult, *, verbose: bool = False, quiet: bool = False) -> str:
    if quiet:
        return verdict_lines(result)
    lines = [f"behaviorci: {result.bundle_name}: {'PASSED' if result.passed else 'FAILED'}"]
    lines.extend(f"  {line}" for line in _summary(result))
    lines.append("thresholds:")
    lines.extend(f"  {_mark(t.passed)} {_threshold(t)}" for t in result.thresholds)
    failed = result.failed_cases
    if failed:
        lines.append(f"failed cases ({len(failed)}):")
        shown = failed if verbose else failed[:SHOWN_FAILURES]
        lines.extend(f"  ✗ {_case_label(result, case)}: {case.failure_summary()}" for case in shown)
        if len(failed) > len(shown):
            lines.append(f"  … and {len(failed) - len(shown)} more (--verbose lists all)")
    if verbose:
        lines.append("all cases:")
        lines.extend(f"  {_mark(case.passed)} {case.case.id}  {_case_stats(case)}" for case in result.cases)
    return "\n".join(lines) + "\n" + verdict_lines(result)


def render_rich(result: RunResult, *, verbose: bool = False, quiet: bool = False, width: int = 100) -> str:
    if quiet:
        return verdict_lines(result)

    # rich (~20 ms): only the console format on a terminal loads it
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=width, highlight=False)
    status = "[bold green]PASSED[/]" if result.passed else "[bold red]FAILED[/]"
    console.print(f"[bold]behaviorci[/]: {escape(result.bundle_name)}: {status}")
    for line in _summary(result):
        console.print(f"  [dim]{escape(line)}[/]")
    table = Table(title="thresholds", title_justify="left", show_edge=False)
    for column in ("", "metric", "required", "actual"):
        table.add_column(column)
    for t in result.thresholds:
        table.add_row(
            "[green]✓[/]" if t.passed else "[red]✗[/]",
            t.metric + (" (default)" if t.implicit else ""),
            f"{t.operator} {t.expected:g}",
            format_number(t.actual),
        )
    console.print(table)
    failed = result.failed_cases
    if failed:
        console.print(f"[bold red]failed cases ({len(failed)})[/]")
        shown = failed if verbose else failed[:SHOWN_FAILURES]
        for case in shown:
            console.print(
                f"  [red]✗[/] [bold]{escape(_case_label(result, case))}[/]: {escape(case.failure_summary())}"
            )
        if len(failed) > len(shown):
            console.print(f"  [dim]… and {len(failed) - len(shown)} more (--verbose lists all)[/]")
    if verbose:
        cases = Table(title="all cases", title_justify="left", show_edge=False)
        for column in ("", "id", "runs", "latency", "tokens"):
            cases.add_column(column)
        for case in result.cases:
            usage = case.usage
            cases.add_row(
                "[green]✓[/]" if case.passed else "[red]✗[/]",
                escape(case.case.id),
                f"{case.passed_runs}/{len(case.runs)}",
                _ms(case.latency_ms),
                f"{usage.input_tokens}/{usage.output_tokens}",
            )
        console.print(cases)
    return buffer.getvalue() + verdict_lines(result)


def _summary(result: RunResult) -> list[str]:
    metrics = result.metrics
    usage = result.usage
    runs = f" × {result.repeat} runs" if result.repeat > 1 else ""
    total = int(metrics["total_cases"])
    cache = (
        f"cache {result.cache_hits} hits, {result.cache_misses} misses"
        if result.cache_dir is not None
        else "cache off"
    )
    return [
        f"provider {result.provider} ({result.model}) · {total} cases{runs}"
        f" · concurrency {result.concurrency} · {_ms(result.duration_ms)}",
        f"cases: {int(metrics['passed_cases'])} passed, {int(metrics['failed_cases'])} failed"
        f" ({int(metrics['errored_cases'])} errored) · pass rate {metrics['pass_rate']:.1%}",
        f"tokens {usage.input_tokens} in, {usage.output_tokens} out"
        f" · latency avg {_ms(metrics['avg_latency_ms'])}, p95 {_ms(metrics['p95_latency_ms'])},"
        f" max {_ms(metrics['max_latency_ms'])} · {cache}",
    ]


def _threshold(t: ThresholdResult) -> str:
    default = " (default: no thresholds in the bundle)" if t.implicit else ""
    return f"{t.metric} {t.operator} {t.expected:g}: actual {format_number(t.actual)}{default}"


def _case_label(result: RunResult, case: CaseResult) -> str:
    return f"{case.case.id} ({result.dataset_path}:{case.case.line})"


def _case_stats(case: CaseResult) -> str:
    usage = case.usage
    return (
        f"{case.passed_runs}/{len(case.runs)} runs · {_ms(case.latency_ms)} · "
        f"{usage.input_tokens}/{usage.output_tokens} tokens"
    )


def _mark(ok: bool) -> str:
    return "✓" if ok else "✗"


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.0f} ms" if value < 10_000 else f"{value / 1000:.1f} s"
