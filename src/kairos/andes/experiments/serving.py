# ruff: noqa: RUF012  (Settings is a pydantic model: its list defaults are copied per instance)
"""The real stack against its own simulator: `kairos bench` on `kairos serve`, fcfs vs andes.

1. Measure the engine on this machine (`kairos andes profile`) and size the workload to the
   fitted profile's analytic capacity: a cyclic burst whose average rate is `load_factor` of
   the sustainable rate, ShareGPT lengths scaled down for a small CPU model.
   An offline measurement misses what serving costs (the HTTP event loop shares the process
   with the engine, the client shares the machine), so a short calibration run under the same
   load but another seed reads the engine's drift from `/metrics` (iteration wall time over
   the profile's prediction) and the profile is scaled by it.
2. For each policy, start `kairos serve` in its own process (so the client never competes
   with the engine for the GIL), replay the same workload with `kairos bench` over HTTP, and
   score every stream's QoE from the chunk times the client saw.
3. Simulate each policy on exactly the requests the client sent (send times, prompt lengths
   the server reported, output lengths, QoE parameters) with the fitted profile, and compare
   average QoE: the simulator is only trustworthy if it predicts the real system.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
from pydantic import Field

from kairos.cli_utils import Settings
from kairos.experiments import ExperimentContext, experiment
from kairos.experiments.publish import publish
from kairos.report import save_cdf_plot


class ServingConfig(Settings):
    policies: list[str] = ["fcfs", "andes"]
    num_gpu_blocks: int = 64  # a small KV cache: the memory-bound regime of the paper
    num_cpu_blocks: int = 256
    max_model_len: int = 1024
    max_num_seqs: int = 64
    load_factor: float = Field(0.6, gt=0)
    # an explicit average rate (req/s) instead of load_factor x the fitted capacity: a fixed
    # workload whatever the profile measured (the load then depends on the machine's speed)
    rate: float | None = Field(None, gt=0)
    intensity: float = 2.8
    burst_duration: float = 0.35
    cycle_s: float = 60.0
    span_s: float = 120.0
    dataset: str = "sharegpt"
    prompt_scale: float = 0.05
    output_scale: float = 0.5
    max_prompt_tokens: int = 400
    max_output_tokens: int = 400
    profile_quick: bool = False
    # the calibration run's length and cycle (one whole cycle of the run's shape: a shorter,
    # compressed burst read a lower drift than the run then had); 0: the offline profile
    calibration_s: float = Field(60.0, ge=0)
    port: int = 8391
    seed: int = 0
    andes: dict[str, Any] = Field(default_factory=dict)


def _engine_args(cfg: ServingConfig) -> dict[str, Any]:
    return dict(
        num_gpu_blocks=cfg.num_gpu_blocks,
        num_cpu_blocks=cfg.num_cpu_blocks,
        max_model_len=cfg.max_model_len,
        max_num_seqs=cfg.max_num_seqs,
        seed=cfg.seed,
    )


def fit_engine_profile(cfg: ServingConfig, path: Path) -> Any:
    from kairos.andes.engine.config import EngineConfig
    from kairos.andes.engine.cpu import build_engine
    from kairos.andes.engine.profiler import calibrate

    # measure with the served cache: the profiler's grid then covers the batches and
    # contexts that fit it, where the served engine runs
    engine = build_engine(EngineConfig(device="cpu", profile=None, **_engine_args(cfg)))
    profile = calibrate(engine, quick=cfg.profile_quick)  # describes the served cache
    path.parent.mkdir(parents=True, exist_ok=True)
    profile.save(path)
    return profile


def bench_config(cfg: ServingConfig, rate: float, out: Path, policy: str) -> Any:
    from kairos.andes.client.bench import BenchConfig

    return BenchConfig(
        base_url=f"http://127.0.0.1:{cfg.port}",
        workload="cyclic",
        rate=rate,
        intensity=cfg.intensity,
        burst_duration=cfg.burst_duration,
        cycle_s=cfg.cycle_s,
        duration_s=cfg.span_s,
        dataset=cfg.dataset,
        prompt_scale=cfg.prompt_scale,
        output_scale=cfg.output_scale,
        max_prompt_tokens=cfg.max_prompt_tokens,
        max_output_tokens=cfg.max_output_tokens,
        continuous_usage_stats=True,
        seed=cfg.seed,
        out=out,
        name=f"serving_{policy}",
        plots=False,
    )


def workload_rate(cfg: ServingConfig, profile: Any) -> float:
    """`rate` if given, else `load_factor` x the fitted profile's sustainable rate for the
    workload's mean lengths."""
    if cfg.rate is not None:
        return cfg.rate
    from kairos.andes.capacity import sustainable_rate
    from kairos.andes.client.bench_workload import build_workload

    probe = bench_config(cfg, 1.0, Path("."), "probe").model_copy(
        update={"duration_s": 3000.0, "out": None}
    )
    reqs = build_workload(probe)
    prompt = float(np.mean([r.prompt_tokens + 1 for r in reqs]))  # + <bos>
    output = float(np.mean([r.max_tokens for r in reqs]))
    return cfg.load_factor * sustainable_rate(profile, prompt, output, cfg.max_num_seqs)


def _log_tail(log: Path) -> str:
    return log.read_text(errors="replace")[-2000:] if log.exists() else ""


def serve(
    cfg: ServingConfig, policy: str, profile_path: Path, log: Path
) -> subprocess.Popen[bytes]:
    """`kairos serve` in a child process, its stderr in `log` (a pipe nobody reads while the
    bench runs would block the server once full, and a crash would leave no trace)."""
    from kairos.andes.engine.config import BUILTIN_RANDOM_NAME  # profiled by fit_engine_profile

    args = [sys.executable, "-m", "kairos", "serve", "--model", BUILTIN_RANDOM_NAME]
    args += ["--policy", policy]
    args += ["--profile", str(profile_path), "--port", str(cfg.port), "--device", "cpu"]
    args += ["--log-level", "warning", "--max-waiting", "100000"]
    for key, value in _engine_args(cfg).items():
        args += [f"--{key.replace('_', '-')}", str(value)]
    for key, value in cfg.andes.items():
        args += ["--andes", f"{key}={value}"]
    with log.open("wb") as err:
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"kairos serve exited early: {_log_tail(log)}")
        try:
            if httpx.get(f"http://127.0.0.1:{cfg.port}/health", timeout=1).status_code == 200:
                return proc
        except httpx.HTTPError:
            time.sleep(0.2)
    proc.kill()
    raise RuntimeError("kairos serve did not become healthy within 120 s")


def metric(cfg: ServingConfig, name: str) -> float:
    text = httpx.get(f"http://127.0.0.1:{cfg.port}/metrics", timeout=5).text
    for line in text.splitlines():
        if line.startswith(f"kairos_andes_{name} "):
            return float(line.split()[-1])
    return float("nan")


def serving_drift(cfg: ServingConfig, rate: float, profile_path: Path, out: Path) -> float:
    """Iteration wall time over the profile's prediction, under load (another seed)."""
    from kairos.andes.client.bench import run_bench

    calib = cfg.model_copy(update={"seed": cfg.seed + 1000})
    bench = bench_config(calib, rate, out, "calibration").model_copy(
        update={"duration_s": cfg.calibration_s, "cycle_s": cfg.calibration_s}
    )
    proc = serve(calib, "fcfs", profile_path, out / "serve_calibration.log")
    try:
        asyncio.run(run_bench(bench))
        real = metric(cfg, "iteration_seconds_total")
        predicted = metric(cfg, "iteration_predicted_seconds_total")
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    return real / predicted


def simulate_records(cfg: ServingConfig, policy: str, profile: Any, records: list[Any]) -> Any:
    """The simulator on exactly the requests the client sent."""
    from kairos.andes.engine.config import EngineConfig
    from kairos.andes.policies.registry import make_policy
    from kairos.andes.request import Request
    from kairos.andes.scheduler import SchedulerConfig
    from kairos.andes.simulator import Simulator

    engine_cfg = EngineConfig(**_engine_args(cfg))
    sim = Simulator(
        make_policy(policy, **cfg.andes),
        profile,
        SchedulerConfig(
            max_num_seqs=engine_cfg.max_num_seqs,
            max_num_batched_tokens=engine_cfg.max_num_batched_tokens,
            chunk_size=engine_cfg.chunk_size,
        ),
        count_decision_time=True,  # the engine pays for the policy's decisions too
    )
    for r in records:
        prompt = r.usage_prompt_tokens or r.prompt_tokens + 1
        req = Request(
            request_id=str(r.index),
            arrival=float(r.send_s),
            prompt_len=int(prompt),
            max_tokens=int(r.max_tokens),
            ttft_s=float(r.ttft_target_s),
            tokens_per_s=float(r.tokens_per_s),
        )
        sim.add(req, int(r.max_tokens))
    return sim.run()


@experiment(
    "andes",
    "serving",
    "Real engine under kairos bench: andes vs fcfs, and the simulator's prediction",
    ServingConfig,
    # the full profile grid even here: on the served 64-block cache it takes seconds, and the
    # quick grid's few points fitted a flat, 3x too slow decode model there
    quick={"span_s": 60.0, "cycle_s": 60.0, "calibration_s": 30.0},
)
def serving(cfg: ServingConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    from kairos.andes.client.bench import run_bench

    profile_path = ctx.out_dir / "serving_profile.json"
    profile = fit_engine_profile(cfg, profile_path)
    rate = workload_rate(cfg, profile)
    drift = 1.0
    if cfg.calibration_s > 0:
        drift = serving_drift(cfg, rate, profile_path, ctx.out_dir)
        profile = profile.scaled(drift)
        profile.save(profile_path)
        rate = workload_rate(cfg, profile)  # capacity as served, not as measured offline
    rows: list[dict[str, Any]] = []
    curves: dict[str, list[float]] = {}
    for policy in cfg.policies:
        log = ctx.out_dir / f"serve_{policy}.log"
        proc = serve(cfg, policy, profile_path, log)
        try:
            result = asyncio.run(run_bench(bench_config(cfg, rate, ctx.out_dir, policy)))
            if proc.poll() is not None:
                raise RuntimeError(
                    f"kairos serve --policy {policy} exited ({proc.returncode}) during the"
                    f" bench: {_log_tail(log)}"
                )
            preempted = metric(cfg, "preemptions_total")
            run_drift = metric(cfg, "iteration_seconds_total") / metric(
                cfg, "iteration_predicted_seconds_total"
            )
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        ok = [r for r in result.requests if r.ok]
        measured = np.array([r.qoe for r in ok])
        sim = simulate_records(cfg, policy, profile, ok)
        predicted = sim.qoe()
        # diagnostic: the same simulation with the speed this run actually had (the machine
        # is shared; a load change after calibration shows up here, not in the strict column)
        rerun = simulate_records(cfg, policy, profile.scaled(run_drift), ok).qoe()
        curves[f"{policy} measured"] = measured.tolist()
        curves[f"{policy} simulated"] = predicted.tolist()
        rows.append(
            {
                "policy": policy,
                "requests": len(result.requests),
                "failed": len(result.requests) - len(ok),
                "rate_req_s": rate,
                "measured_avg_qoe": float(measured.mean()),
                "simulated_avg_qoe": float(predicted.mean()),
                "abs_error": abs(float(measured.mean()) - float(predicted.mean())),
                "run_drift": run_drift,
                "simulated_avg_qoe_at_run_speed": float(rerun.mean()),
                "measured_qoe95_share": float((measured >= 0.95).mean()),
                "simulated_qoe95_share": float((predicted >= 0.95).mean()),
                "measured_mean_ttft_s": float(np.nanmean([r.ttft_s for r in ok])),
                "simulated_mean_ttft_s": float(np.nanmean(sim.ttft())),
                "preemptions_per_request": preempted / max(1, len(result.requests)),
                "simulated_preemptions_per_request": float(sim.preemptions().mean()),
            }
        )
    by = {r["policy"]: r for r in rows}
    summary: dict[str, Any] = {
        "max_abs_error": max(r["abs_error"] for r in rows),
        "serving_drift": drift,
    }
    if "andes" in by and "fcfs" in by:
        summary["andes_over_fcfs_measured"] = (
            by["andes"]["measured_avg_qoe"] / by["fcfs"]["measured_avg_qoe"]
        )
        summary["andes_over_fcfs_simulated"] = (
            by["andes"]["simulated_avg_qoe"] / by["fcfs"]["simulated_avg_qoe"]
        )
    publish(ctx, "serving", cfg, rows, "serving: measured (kairos bench) vs simulated", summary)
    save_cdf_plot(
        ctx.out_dir / "serving_qoe_cdf.png",
        curves,
        xlabel="QoE",
        title="QoE CDF: real engine vs simulator",
    )
    return rows
