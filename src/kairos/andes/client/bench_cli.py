"""The `kairos bench` command: options mirror `BenchConfig`; importing this module does nothing.

Register it on the root app with `app.command("bench")(bench_command)`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

import typer

from kairos.cli_utils import config_error


def _fail(message: str) -> typer.Exit:
    from rich.console import Console

    Console(stderr=True).print(f"[red]error:[/red] {message}", highlight=False, soft_wrap=True)
    return typer.Exit(2)


def bench_command(
    base_url: Annotated[str, typer.Option(help="Server root (with or without /v1).")] = (
        "http://127.0.0.1:8000"
    ),
    endpoint: Annotated[str, typer.Option(help="completions or chat")] = "completions",
    model: Annotated[str | None, typer.Option(help="Default: first of GET /v1/models.")] = None,
    api_key: Annotated[
        str | None, typer.Option(help="Bearer token (default: $OPENAI_API_KEY).")
    ] = None,
    workload: Annotated[str, typer.Option(help="cyclic, poisson, azure or burstgpt")] = "cyclic",
    trace: Annotated[
        Path | None, typer.Option(help="Trace CSV (azure: default the shared 1-h trace).")
    ] = None,
    rate: Annotated[
        float | None, typer.Option(help="Average req/s (synthetic, default 1; trace: rescale).")
    ] = None,
    time_scale: Annotated[
        float | None, typer.Option(help="Trace: multiply timestamps (2 = half the rate).")
    ] = None,
    intensity: Annotated[float, typer.Option(help="Cyclic: burst rate / average rate.")] = 2.0,
    burst_duration: Annotated[float, typer.Option(help="Cyclic: share of a cycle in burst.")] = (
        0.35
    ),
    cycle_s: Annotated[float | None, typer.Option(help="Cyclic: cycle length (default run).")] = (
        None
    ),
    duration_s: Annotated[
        float | None, typer.Option(help="Seconds of arrivals (synthetic 60; trace: a cut).")
    ] = None,
    trace_start_s: Annotated[float, typer.Option(help="Trace: start of the window (s).")] = 0.0,
    num_requests: Annotated[int | None, typer.Option(help="Keep the first N requests.")] = None,
    dataset: Annotated[
        str, typer.Option(help="Synthetic lengths: sharegpt, arxiv, coding, azure.")
    ] = "sharegpt",
    prompt_scale: Annotated[float, typer.Option(help="Multiply prompt lengths.")] = 1.0,
    output_scale: Annotated[float, typer.Option(help="Multiply output lengths.")] = 1.0,
    max_prompt_tokens: Annotated[int | None, typer.Option(help="Clip prompt lengths.")] = None,
    max_output_tokens: Annotated[int | None, typer.Option(help="Clip output lengths.")] = None,
    chars_per_token: Annotated[
        float, typer.Option(help="Prompt characters per token (1 = byte-level tokenizer).")
    ] = 1.0,
    profile: Annotated[str, typer.Option(help="QoE speeds: reader or listener.")] = "reader",
    prefill_tokens_per_s: Annotated[
        float, typer.Option(help="TTFT target = max(prompt / this, 1 s).")
    ] = 5000.0,
    qoe_ttft_s: Annotated[float | None, typer.Option(help="Fixed TTFT target (s).")] = None,
    qoe_tokens_per_s: Annotated[float | None, typer.Option(help="Fixed speed (tok/s).")] = None,
    qoe_field: Annotated[
        bool, typer.Option("--qoe-field/--no-qoe-field", help="Send the `qoe` body field.")
    ] = True,
    ignore_eos: Annotated[bool, typer.Option("--ignore-eos/--no-ignore-eos")] = True,
    temperature: Annotated[float, typer.Option(help="Sampling temperature.")] = 0.0,
    continuous_usage_stats: Annotated[
        bool, typer.Option(help="Ask for usage in every chunk (vLLM) to count tokens per chunk.")
    ] = False,
    extra_body: Annotated[
        str | None, typer.Option(help="JSON object merged into every request body.")
    ] = None,
    goodput: Annotated[
        list[str] | None, typer.Option(help="SLO KEY:MS, KEY in ttft, tpot, e2el (repeatable).")
    ] = None,
    max_concurrency: Annotated[int | None, typer.Option(help="Cap on requests in flight.")] = None,
    request_timeout_s: Annotated[float, typer.Option(help="Per-request time limit (s).")] = 600.0,
    seed: Annotated[int, typer.Option(help="Seed of arrivals, lengths, prompts, speeds.")] = 0,
    out: Annotated[Path, typer.Option(help="Result folder.")] = Path("results/bench-client"),
    name: Annotated[str | None, typer.Option(help="Result file stem.")] = None,
    plots: Annotated[bool, typer.Option("--plots/--no-plots")] = True,
) -> None:
    """Load an OpenAI-compatible server with a workload and report QoE, TTFT, TPOT, ITL, E2EL."""
    import asyncio

    from kairos.andes.client.bench import BenchConfig, BenchError, run_bench
    from kairos.andes.client.bench_report import parse_goodput, table_rows
    from kairos.report import print_table

    try:
        slos = parse_goodput(goodput)
    except ValueError as exc:
        raise typer.BadParameter(str(exc), param_hint="--goodput") from None
    body: dict[str, Any] = {}
    if extra_body:
        try:
            body = json.loads(extra_body)
        except json.JSONDecodeError as exc:
            raise typer.BadParameter(f"not JSON: {exc}", param_hint="--extra-body") from None
        if not isinstance(body, dict):
            raise typer.BadParameter("must be a JSON object", param_hint="--extra-body")
    if trace is not None and not trace.is_file():
        raise _fail(f"trace file not found: {trace}")
    fields: dict[str, Any] = {
        "base_url": base_url,
        "endpoint": endpoint,
        "model": model,
        "api_key": api_key,
        "workload": workload,
        "trace": trace,
        "rate": rate,
        "time_scale": time_scale,
        "intensity": intensity,
        "burst_duration": burst_duration,
        "cycle_s": cycle_s,
        "duration_s": duration_s,
        "trace_start_s": trace_start_s,
        "num_requests": num_requests,
        "dataset": dataset,
        "prompt_scale": prompt_scale,
        "output_scale": output_scale,
        "max_prompt_tokens": max_prompt_tokens,
        "max_output_tokens": max_output_tokens,
        "chars_per_token": chars_per_token,
        "profile": profile,
        "prefill_tokens_per_s": prefill_tokens_per_s,
        "qoe_ttft_s": qoe_ttft_s,
        "qoe_tokens_per_s": qoe_tokens_per_s,
        "send_qoe": qoe_field,
        "ignore_eos": ignore_eos,
        "temperature": temperature,
        "continuous_usage_stats": continuous_usage_stats,
        "extra_body": body,
        "goodput": slos,
        "max_concurrency": max_concurrency,
        "request_timeout_s": request_timeout_s,
        "seed": seed,
        "out": out,
        "name": name,
        "plots": plots,
    }
    try:
        cfg = BenchConfig(**fields)
    except ValueError as exc:
        raise _fail(config_error(exc)) from None
    try:
        result = asyncio.run(run_bench(cfg, progress=_progress()))
    except BenchError as exc:
        raise _fail(str(exc)) from None
    print_table(table_rows(result.summary), title=f"kairos bench: {result.model} ({workload})")
    if result.json_path is not None:
        typer.echo(f"result: {result.json_path}")
    for plot in result.plots:
        typer.echo(f"plot: {plot}")
    if result.summary["completed"] == 0:
        first = next(r.error for r in result.requests if r.error is not None)
        typer.echo(f"error: no request completed; the first failure: {first}", err=True)
        raise typer.Exit(1)


def _progress() -> Callable[[int, int], None]:
    """A callback printing a progress line every 10% of the requests (no live display)."""
    step: dict[str, int] = {"next": 0}

    def report(done: int, total: int) -> None:
        if done >= step["next"] or done == total:
            typer.echo(f"  {done}/{total} requests done", err=True)
            step["next"] = done + max(1, total // 10)

    return report
