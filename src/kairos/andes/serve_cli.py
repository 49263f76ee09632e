"""`kairos serve`: the Andes engine behind the OpenAI-compatible server.

Engine options (model, KV cache, policy, latency profile) and server options (address, key,
limits) in one command. With no `--profile` the engine measures itself for a few seconds at
startup; `kairos andes profile` writes a fuller profile to pass here and to the simulator.

The default model is the built-in one trained on Python's own documentation
(engine/builtin_training.py): trained on first use (about two minutes), then loaded from the
user's cache. `kairos andes train-builtin` trains it ahead and says where it lies.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Annotated, Any

import typer

from kairos.cli_utils import config_error, make_console, parse_assignments

console = make_console()


def serve_command(
    model: Annotated[
        str | None,
        typer.Option(
            help="Hugging Face checkpoint directory (Llama/Qwen2), or kairos-tiny-llama (the "
            "built-in model, trained on first use; default) or kairos-tiny-llama-random"
        ),
    ] = None,
    policy: Annotated[str, typer.Option(help="fcfs, sarathi, lqsf, andes or andes-dp")] = "andes",
    profile: Annotated[
        str | None, typer.Option(help="Latency profile JSON (default: calibrate at startup)")
    ] = None,
    host: Annotated[str, typer.Option(help="Interface to bind")] = "127.0.0.1",
    port: int = 8000,
    api_key: Annotated[
        str | None, typer.Option(envvar="KAIROS_API_KEY", help="Require this bearer key")
    ] = None,
    num_gpu_blocks: Annotated[int, typer.Option(help="KV cache blocks (16 tokens each)")] = 1024,
    num_cpu_blocks: Annotated[int, typer.Option(help="Host swap pool blocks")] = 512,
    max_model_len: Annotated[int, typer.Option(help="Prompt + output tokens per request")] = 2048,
    max_num_seqs: int = 64,
    max_waiting: Annotated[int, typer.Option(help="Queue length at which new requests get 429")] = (
        256
    ),
    max_body_bytes: int = 1 << 20,
    device: Annotated[str, typer.Option(help="auto, cpu, cuda, cuda:1 ...")] = "auto",
    dtype: Annotated[str, typer.Option(help="auto, float32, bfloat16, float16")] = "auto",
    seed: int = 0,
    andes: Annotated[
        list[str] | None, typer.Option(help="Andes policy option KEY=VALUE (repeatable)")
    ] = None,
    log_level: str = "info",
    shutdown_grace_s: Annotated[
        int, typer.Option(help="On SIGTERM, open streams get this long, then a final error event")
    ] = 5,
    decision_log: Annotated[
        Path | None,
        typer.Option(help="Write every scheduling decision here (JSON lines, as they are made)"),
    ] = None,
) -> None:
    """Serve a model with QoE-aware scheduling over an OpenAI-compatible API (and a chat page)."""
    from pydantic import ValidationError

    from kairos.andes.decisions import CODEC, SYSTEM
    from kairos.andes.engine.async_engine import AsyncEngine
    from kairos.andes.engine.builtin_training import cached_entry
    from kairos.andes.engine.config import BUILTIN_NAME, BUILTIN_RANDOM_NAME, EngineConfig
    from kairos.andes.engine.profiler import calibrated_engine
    from kairos.andes.server import serve
    from kairos.andes.server.app import create_app
    from kairos.andes.server.settings import ServerSettings
    from kairos.decisions import DecisionLog, DecisionLogError

    trained = model in (None, BUILTIN_NAME)
    try:
        engine_cfg = EngineConfig.model_validate(
            dict(
                model=None if trained or model == BUILTIN_RANDOM_NAME else model,
                model_name=BUILTIN_NAME if trained else None,
                policy=policy,
                policy_options=parse_assignments(andes, "--andes"),
                profile=profile,
                num_gpu_blocks=num_gpu_blocks,
                num_cpu_blocks=num_cpu_blocks,
                max_model_len=max_model_len,
                max_num_seqs=max_num_seqs,
                device=device,
                dtype=dtype,
                seed=seed,
            )
        )
        settings = ServerSettings.model_validate(
            dict(
                host=host,
                port=port,
                api_key=api_key,
                max_waiting=max_waiting,
                max_body_bytes=max_body_bytes,
                log_level=log_level,
                graceful_shutdown_s=shutdown_grace_s,
            )
        )
    except (ValidationError, ValueError, FileNotFoundError) as exc:
        console.print(f"[red]error:[/red] {config_error(exc)}", highlight=False)
        raise typer.Exit(2) from None
    log = None
    if decision_log is not None:  # opened first: a path it cannot write fails at once
        meta = {"mode": "serve", "engine": engine_cfg.model_dump(mode="json")}
        try:
            log = DecisionLog(decision_log, CODEC, SYSTEM, meta)
        except DecisionLogError as exc:
            console.print(f"[red]error:[/red] {exc}")
            raise typer.Exit(2) from None
    # trained here on first use (one intra-op thread: this thread keeps no OpenMP team),
    # its progress bar before the calibration's spinner
    weights = cached_entry() if trained else None
    try:
        # built (and calibrated) on the thread that will run it: one OpenMP team (async_engine.py)
        build = functools.partial(
            AsyncEngine.build, lambda: calibrated_engine(engine_cfg, **served_model(weights))
        )
        if profile is None:
            with console.status(
                "measuring the engine for its latency profile (seconds on an idle machine, "
                "a minute or more on a busy one; --profile FILE skips it)"
            ):
                served = build()
        else:
            served = build()
    except (ValidationError, ValueError, FileNotFoundError) as exc:
        if log is not None:
            log.close()
        console.print(f"[red]error:[/red] {config_error(exc)}", highlight=False)
        raise typer.Exit(2) from None
    engine = served.engine
    engine.driver.recorder = log  # from here: calibration's iterations are not the service's
    app = create_app(served, settings)
    url = f"http://{host}:{port}"
    console.print(
        f"[bold]kairos serve[/bold]: model [cyan]{engine.model_name}[/cyan] on {engine.device} "
        f"({engine.dtype}), policy [cyan]{policy}[/cyan], profile {engine.latency.name}\n"
        f"  chat page    {url}/\n  OpenAI API   {url}/v1  (models: {url}/v1/models)\n"
        f"  metrics      {url}/metrics"
        + (f"\n  decisions    {decision_log}" if log is not None else "")
    )
    try:
        serve(app, settings)
    finally:
        if log is not None:
            log.close()


def served_model(weights: Path | None) -> dict[str, Any]:
    """`LLMEngine`'s model and tokenizer for the trained built-in model; none otherwise (the
    engine then builds the checkpoint's, or the random built-in)."""
    if weights is None:
        return {}
    from kairos.andes.engine.tokenizer import ByteTokenizer
    from kairos.andes.engine.weights import load_checkpoint

    return {"model": load_checkpoint(weights), "tokenizer": ByteTokenizer()}


def train_builtin_command(
    retrain: Annotated[bool, typer.Option(help="Train again even when cached")] = False,
    out: Annotated[Path | None, typer.Option(help="Also write the numbers to this JSON")] = None,
) -> None:
    """Train the built-in model (`kairos serve`'s default) into the user's cache, or show the
    cached one: where it lies, its size, training time, final loss and load time."""
    import json

    from kairos.andes.engine.builtin_training import (
        cache_entry,
        describe,
        read_report,
        train_into_cache,
    )

    entry = cache_entry()
    report = None if retrain else read_report(entry)
    if report is None:
        report = train_into_cache()
    from kairos.report.results import provenance

    found = describe(report, entry) | {"provenance": provenance().model_dump()}
    numbers = json.dumps(found, indent=2)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(numbers + "\n")
    console.print_json(numbers)
