"""Andes inside vLLM under E2-shaped bursts: `vllm serve` with the Andes scheduler against
vLLM's default scheduler, and kairos's own engine with Andes against FCFS at the same load.

    python -m benchmarks.bench_vllm_bursts --out DIR [--quick] [--seeds N]

(vLLM's environment: `make vllm-test` builds it.) Four real servers on one checkpoint (the
56M-parameter benchmark model, `vllm_stack`): `vllm serve` with vLLM's default scheduler and
with `--scheduler-cls kairos.andes.integrations.vllm.AndesScheduler`, and `kairos serve` with
`--policy fcfs` and `--policy andes`. All stay up; `kairos bench` drives one at a time over
HTTP with the same cyclic-burst trace per seed (E2's arrival shape, `cyclic_burst`: intensity
2.8, bursts of 35% of the cycle) and scores every stream from the client's own token
timestamps with kairos's QoE (`kairos.andes.qoe.qoe_at`): first token due after 1 s, then
the reader preset's mean speed. The order of the four rotates from seed to seed, so drift on
the shared machine hits each alike. The KV cache is small and the same size in tokens in
both engines (vLLM `--num-gpu-blocks-override`, kairos `--num-gpu-blocks`, no host swap
pool), so bursts contend for memory and the baselines lose QoE.

The Andes scheduler inside vLLM plans with a latency profile of the engine it schedules:
vLLM's CPU engine timed in process on this machine with the served cache shape and fitted as
kairos's profiler fits its own engine (`vllm_stack.fit_vllm_profile`). `kairos serve`
calibrates its own engine at startup, and its Andes runs with the options Andes has inside
vLLM (preemption priced as recompute, chunked prefill).

Reported per server: average QoE, share of requests at QoE >= 0.95, TTFT p50/p99, output
throughput, preemptions (means over seeds); per engine the per-seed paired ratio Andes /
baseline of average QoE (geometric mean, 95% t-interval, seed count), and whether vLLM's gain
lies inside the interval of kairos's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from contextlib import ExitStack
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from kairos.report import print_table, write_result
from kairos.report.stats import paired_ratio

SERVERS = ("vllm-default", "vllm-andes", "kairos-fcfs", "kairos-andes")
PAIRS = {"vllm": ("vllm-andes", "vllm-default"), "kairos": ("kairos-andes", "kairos-fcfs")}
KAIROS_BLOCK = 16
PREEMPTIONS = {"vllm": "vllm:num_preemptions_total", "kairos": "kairos_andes_preemptions_total"}
WARM_SEED = 10_000  # the warm-up burst's trace, never a measured seed's
METRICS = ("avg_qoe", "share_qoe_095", "ttft_p50_s", "ttft_p99_s", "output_tok_s", "preemptions")


@dataclass(frozen=True)
class BurstLoad:
    """The workload and the servers' shape. `rate` is the trace's average over the cycle
    (req/s); the burst runs at `intensity` times it for `burst_duration` of each cycle."""

    rate: float = 1.3
    intensity: float = 2.8
    burst_duration: float = 0.35
    cycle_s: float = 30.0
    prompt_scale: float = 0.1
    output_scale: float = 0.4
    max_prompt_tokens: int = 128
    max_output_tokens: int = 200
    kv_tokens: int = 2048  # 64 vLLM blocks of 32
    max_num_seqs: int = 32
    max_len: int = 512
    ttft_s: float = 1.0


QUICK = BurstLoad(cycle_s=15.0)


def _bench_config(load: BurstLoad, url: str, seed: int, speed: float, vllm: bool) -> Any:
    from kairos.andes.client.bench import BenchConfig

    xargs = {"qoe_ttft_s": load.ttft_s, "qoe_tokens_per_s": speed}
    return BenchConfig(
        base_url=url,
        workload="cyclic",
        rate=load.rate,
        intensity=load.intensity,
        burst_duration=load.burst_duration,
        cycle_s=load.cycle_s,
        duration_s=load.cycle_s,
        dataset="sharegpt",
        prompt_scale=load.prompt_scale,
        output_scale=load.output_scale,
        max_prompt_tokens=load.max_prompt_tokens,
        max_output_tokens=load.max_output_tokens,
        qoe_ttft_s=load.ttft_s,
        qoe_tokens_per_s=speed,
        # the client scores with the same QoE it sends: to vLLM in `vllm_xargs` (kairos's
        # own `qoe` body field is not sent there: vLLM would only warn that it ignores it)
        send_qoe=not vllm,
        extra_body={"vllm_xargs": xargs} if vllm else {},
        continuous_usage_stats=True,
        seed=seed,
        out=None,
        plots=False,
    )


def _start(
    stack: ExitStack, out: Path, ckpt: Path, profile: Path, load: BurstLoad
) -> dict[str, str]:
    """The four servers, up until `stack` closes; URLs by name."""
    from tests.andes.integrations.server import ANDES, BLOCK, VALIDATOR, vllm_server

    andes = {"andes": {"profile": str(profile), "qoe": {"ttft_s": load.ttft_s}}}
    vllm_args: dict[str, tuple[str, ...]] = {
        "vllm-default": (),
        "vllm-andes": (
            "--scheduler-cls", ANDES, "--logits-processors", VALIDATOR,
            "--additional-config", json.dumps(andes),
        ),
    }  # fmt: skip
    urls = {
        name: stack.enter_context(
            vllm_server(
                ckpt,
                out / f"{name}.log",
                *extra,
                blocks=load.kv_tokens // BLOCK,
                max_len=load.max_len,
                max_num_seqs=load.max_num_seqs,
            )
        )
        for name, extra in vllm_args.items()
    }
    for policy in ("fcfs", "andes"):
        urls[f"kairos-{policy}"] = stack.enter_context(_kairos_server(ckpt, out, load, policy))
    return urls


def _kairos_server(ckpt: Path, out: Path, load: BurstLoad, policy: str) -> Any:
    """`kairos serve` on the checkpoint with the vLLM servers' cache in tokens and no swap
    pool; Andes with the options it has inside vLLM."""
    from tests.andes.integrations.server import server_process

    from kairos.andes.integrations.settings import KNAPSACK_DEFAULTS
    from kairos.runtime.ports import free_port

    port = free_port()
    options = KNAPSACK_DEFAULTS if policy == "andes" else {}
    cmd = [
        sys.executable, "-m", "kairos", "serve", "--model", str(ckpt), "--policy", policy,
        "--port", str(port), "--device", "cpu", "--dtype", "float32",
        "--num-gpu-blocks", str(load.kv_tokens // KAIROS_BLOCK), "--num-cpu-blocks", "0",
        "--max-model-len", str(load.max_len), "--max-num-seqs", str(load.max_num_seqs),
        "--log-level", "warning",
        *(a for k, v in options.items() for a in ("--andes", f"{k}={json.dumps(v)}")),
    ]  # fmt: skip
    return server_process(cmd, out / f"kairos-{policy}.log", f"http://127.0.0.1:{port}")


def _run_one(load: BurstLoad, url: str, server: str, seed: int, speed: float) -> dict[str, Any]:
    """One server on one seed's trace: its row."""
    from tests.andes.integrations.server import metric

    from kairos.andes.client.bench import run_bench

    engine = server.split("-")[0]
    before = metric(url, PREEMPTIONS[engine])
    result = asyncio.run(run_bench(_bench_config(load, url, seed, speed, engine == "vllm")))
    s = result.summary
    row = {
        "server": server,
        "seed": seed,
        "requests": s["requests"],
        "failed": s["failed"],
        "avg_qoe": s["avg_qoe"],
        "share_qoe_095": s["share_qoe_095"],
        "ttft_p50_s": s["median_ttft_ms"] / 1e3,
        "ttft_p99_s": s["p99_ttft_ms"] / 1e3,
        "output_tok_s": s["output_throughput"],
        "duration_s": s["duration_s"],
        "preemptions": metric(url, PREEMPTIONS[engine]) - before,
    }
    return row


def measure(out: Path, load: BurstLoad, seeds: int) -> list[dict[str, Any]]:
    """The four servers on every seed's trace, one at a time, in an order that rotates per
    seed. Returns the rows."""
    from benchmarks.vllm_stack import fit_vllm_profile, write_bench_checkpoint
    from kairos.andes.integrations.qoe_args import preset_speed

    out.mkdir(parents=True, exist_ok=True)
    ckpt = write_bench_checkpoint(out.parent / "vllm_bench_checkpoint")  # shared by both benches
    profile = fit_vllm_profile(
        ckpt,
        out / "vllm_engine_profile.json",
        kv_tokens=load.kv_tokens,
        max_num_seqs=load.max_num_seqs,
        max_len=load.max_len,
    )
    speed = preset_speed("reader")
    runs: list[dict[str, Any]] = []
    with ExitStack() as stack:
        urls = _start(stack, out, ckpt, profile, load)
        # a fresh server's first steps of each batch shape set up CPU kernels: one short
        # burst per server, on another seed, before anything is measured
        warm = replace(load, cycle_s=min(10.0, load.cycle_s))
        for server in SERVERS:
            _run_one(warm, urls[server], server, WARM_SEED, speed)
        for seed in range(seeds):
            turn = seed % len(SERVERS)
            for server in SERVERS[turn:] + SERVERS[:turn]:
                row = _run_one(load, urls[server], server, seed, speed)
                _say(row)
                runs.append(row)
    return runs


def _say(row: dict[str, Any]) -> None:
    print(
        f"seed {row['seed']} {row['server']}: avg QoE {row['avg_qoe']:.3f}, "
        f"TTFT p99 {row['ttft_p99_s']:.1f} s, failed {row['failed']}",
        flush=True,
    )


def summarize(runs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Per server: means over seeds; per engine: the paired Andes / baseline QoE ratio."""
    table: list[dict[str, Any]] = []
    for server in SERVERS:
        mine = [r for r in runs if r["server"] == server]
        if not mine:
            continue
        row: dict[str, Any] = {"server": server, "seeds": len(mine)}
        for key in METRICS:
            row[key] = float(np.mean([r[key] for r in mine]))
        row["failed"] = sum(r["failed"] for r in mine)
        table.append(row)
    summary: dict[str, Any] = {}
    for engine, (ours, base) in PAIRS.items():
        by_seed = {(r["server"], r["seed"]): r["avg_qoe"] for r in runs}
        seeds = sorted(s for (srv, s) in by_seed if srv == ours and (base, s) in by_seed)
        if not seeds:
            continue
        ratio = paired_ratio(
            [by_seed[(ours, s)] for s in seeds], [by_seed[(base, s)] for s in seeds]
        )
        summary |= {f"{engine}_{k}": v for k, v in ratio.columns("gain").items()}
        summary[f"{engine}_gain_ratios"] = ratio.ratios
    if "vllm_gain" in summary and "kairos_gain" in summary:
        summary["vllm_gain_within_kairos_ci"] = int(
            summary["kairos_gain_lo"] <= summary["vllm_gain"] <= summary["kairos_gain_hi"]
        )
    default = [r["avg_qoe"] for r in table if r["server"] == "vllm-default"]
    if default:
        summary["vllm_default_loses_qoe"] = int(default[0] < 0.95)
    return table, summary


def run(out_dir: Path, quick: bool = False, seeds: int = 5) -> list[dict[str, Any]]:
    load = QUICK if quick else BurstLoad()
    seeds = 1 if quick else seeds
    config = asdict(load) | {
        "seeds": seeds,
        "quick": quick,
        "model": "benchmarks.vllm_stack.BENCH_MODEL (56M-parameter Llama, float32)",
        "kairos": "kairos serve (its own engine, calibrated at startup) on the same checkpoint",
    }
    runs = measure(Path(out_dir) / "vllm_bursts", load, seeds)
    table, summary = summarize(runs)
    write_result(
        out_dir, "vllm_bursts", config=config, rows=runs, summary=summary | {"table": table}
    )
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("results/bench"))
    parser.add_argument("--quick", action="store_true", help="one short seed, for a smoke run")
    parser.add_argument("--seeds", type=int, default=5, help="paired seeds (default 5)")
    args = parser.parse_args()
    if args.seeds < 2 and not args.quick:
        parser.error("--seeds: a confidence interval needs at least 2 seeds")
    table = run(args.out, args.quick, args.seeds)
    print_table(table, title="Andes inside vLLM: E2-shaped bursts")


if __name__ == "__main__":
    main()
