"""What the Andes scheduler costs inside vLLM: its time per step beside vLLM's default
scheduler's, and both beside the time of one engine step of a real model on this machine.

    python -m benchmarks.bench_vllm_overhead --out DIR [--quick]

(vLLM's environment: `make vllm-test` builds it.) Two measurements in one run:

1. Scheduler time. vLLM's default `Scheduler` and `AndesScheduler` are built side by side
   without a model (`tests.andes.integrations.harness`: vLLM's own KV cache manager, a fake
   model that samples a fixed token), each given the same requests, and stepped alternately,
   one step each, so machine drift hits both alike. A step's time is `schedule()` plus
   `update_from_output()`, what the engine core calls around the model. Two states per batch
   size: `steady` (every request running and decoding, KV cache ample: the policy's
   triggers mostly stay quiet) and `contended` (half again as many requests waiting and a KV
   cache that fills as they decode: the knapsack solves every `solve_every` steps and vLLM
   preempts). The Andes policy's own `decide()` time and its solve count are reported too.
   As in vLLM's engine core, the heap built before the first request is frozen out of the
   garbage collector's way.
2. Model step time. The benchmark checkpoint (`vllm_stack`: 56M-parameter Llama, float32) in
   vLLM's CPU engine, in process (`LLMEngine.step()`: schedule, the model's forward pass,
   sampling, output processing), at the same number of running requests, decoding after a
   prompt of the same length; vLLM's scheduler time inside those steps is read as well.

The share is scheduler time over engine step time, at the median and at the 90th percentile
of the scheduler's steps (over the median engine step). The step of a bigger model (or the
same model at more context) is longer, so its share is smaller.
"""

from __future__ import annotations

import argparse
import gc
import time
from pathlib import Path
from typing import Any

import numpy as np

from kairos.report import print_table, write_result

SIZES = (64, 256)
PROMPT = 64  # prompt tokens per request
MAX_LEN = 1024
BLOCK = 16
SHOWN = (  # the printed table's columns; the result file has every column
    "running", "state", "scheduler", "sched_p50_ms", "sched_p90_ms", "model_step_p50_ms",
    "share_p50", "share_p90", "decide_p90_ms", "solves",
)  # fmt: skip


def _sched_classes() -> dict[str, type]:
    from vllm.v1.core.sched.scheduler import Scheduler

    from kairos.andes.integrations.vllm import AndesScheduler

    return {"default": Scheduler, "andes": AndesScheduler}


def scheduler_times(
    checkpoint: Path, running: int, steps: int, contended: bool
) -> dict[str, dict[str, Any]]:
    """Per scheduler: step times (s), and for Andes its `decide()` times and solve count."""
    from tests.andes.integrations.harness import make_scheduler, model_output, request

    waiting = running // 2 if contended else 0
    total = running + waiting
    # contended: five blocks per running request, so the cache fills as prompts of four
    # blocks grow by decoding; steady: room for every request's whole length
    blocks = running * 5 if contended else total * (MAX_LEN // BLOCK) + 1
    scheds = {
        name: make_scheduler(
            cls,
            checkpoint,
            blocks,
            max_num_seqs=running,
            max_num_batched_tokens=max(2048, running * PROMPT),
        )
        for name, cls in _sched_classes().items()
    }
    decide_s: list[float] = []
    policy = scheds["andes"].andes_policy
    inner = policy.decide

    def timed_decide(view: Any) -> Any:
        t = time.perf_counter()
        try:
            return inner(view)
        finally:
            decide_s.append(time.perf_counter() - t)

    policy.decide = timed_decide  # instrumentation only: the same call, timed
    # vLLM's engine core freezes its start-up heap before serving (`freeze_gc_heap`), so the
    # oldest generation's collections skip it; so does this process, once per case
    gc.unfreeze()
    gc.collect()
    gc.freeze()
    now = time.time()
    for sched in scheds.values():
        for i in range(total):
            sched.add_request(request(f"r{i}", PROMPT, MAX_LEN - PROMPT, now + i * 1e-3))
    times: dict[str, list[float]] = {name: [] for name in scheds}
    warm = 8  # prefill (chunked by the token budget) and a few decodes, not timed
    solves0 = 0
    for k in range(warm + steps):
        if k == warm:
            decide_s.clear()
            solves0 = policy.solves
        for name, sched in scheds.items():
            t0 = time.perf_counter()
            out = sched.schedule()
            t1 = time.perf_counter()
            mro = model_output(sched, out)
            t2 = time.perf_counter()
            sched.update_from_output(out, mro)
            t3 = time.perf_counter()
            if k >= warm:
                times[name].append((t1 - t0) + (t3 - t2))
    return {
        "default": {"step_s": np.array(times["default"])},
        "andes": {
            "step_s": np.array(times["andes"]),
            "decide_s": np.array(decide_s),
            "solves": policy.solves - solves0,
            "running_end": len(scheds["andes"].running),
        },
    }


def model_step_times(checkpoint: Path, sizes: tuple[int, ...], steps: int) -> dict[int, Any]:
    """Per batch size: vLLM CPU engine step times (s) while `size` requests decode, and the
    default scheduler's time inside those steps (in a fresh process: `vllm_engine_steps`)."""
    from benchmarks.vllm_engine_steps import decode_steps, in_child

    times = in_child(decode_steps, checkpoint, sizes, PROMPT, 8, steps)
    return {n: {k: np.array(v) for k, v in t.items()} for n, t in times.items()}


def _ms(x: np.ndarray, q: float) -> float:
    return float(np.percentile(x, q)) * 1e3 if x.size else float("nan")


def run(out_dir: Path, quick: bool = False) -> list[dict[str, Any]]:
    from benchmarks.vllm_stack import write_bench_checkpoint

    steps = 10 if quick else 60
    ckpt = write_bench_checkpoint(Path(out_dir) / "vllm_bench_checkpoint")
    sizes = SIZES
    model = model_step_times(ckpt, sizes, 6 if quick else 20)
    rows: list[dict[str, Any]] = []
    for size in sizes:
        m = model[size]
        step_p50 = float(np.median(m["step_s"])) * 1e3
        for contended in (False, True):
            t = scheduler_times(ckpt, size, steps, contended)
            for name in ("default", "andes"):
                s = t[name]["step_s"]
                row: dict[str, Any] = {
                    "running": size,
                    "state": "contended" if contended else "steady",
                    "scheduler": name,
                    "steps": int(s.size),
                    "sched_p50_ms": _ms(s, 50),
                    "sched_p90_ms": _ms(s, 90),
                    "model_step_p50_ms": step_p50,
                    "model_step_p10_ms": _ms(m["step_s"], 10),
                    "model_step_p90_ms": _ms(m["step_s"], 90),
                    "share_p50": _ms(s, 50) / step_p50,
                    "share_p90": _ms(s, 90) / step_p50,
                }
                if name == "andes":
                    d = t[name]["decide_s"]
                    row |= {
                        "decide_p50_ms": _ms(d, 50),
                        "decide_p90_ms": _ms(d, 90),
                        "decide_max_ms": float(d.max()) * 1e3 if d.size else float("nan"),
                        "solves": t[name]["solves"],
                        "running_end": t[name]["running_end"],
                    }
                rows.append(row)
        rows.append(
            {
                "running": size,
                "state": "model",
                "scheduler": "default, in the engine",
                "steps": int(m["step_s"].size),
                "sched_p50_ms": _ms(m["sched_s"], 50),
                "sched_p90_ms": _ms(m["sched_s"], 90),
                "model_step_p50_ms": step_p50,
                "model_step_p10_ms": _ms(m["step_s"], 10),
                "model_step_p90_ms": _ms(m["step_s"], 90),
                "share_p50": _ms(m["sched_s"], 50) / step_p50,
                "share_p90": _ms(m["sched_s"], 90) / step_p50,
            }
        )
    summary = {
        f"andes_share_p90_at_{size}_{state}": r["share_p90"]
        for r in rows
        if r["scheduler"] == "andes"
        for size, state in [(r["running"], r["state"])]
    }
    summary["andes_under_5pct"] = int(all(v < 0.05 for v in summary.values()))
    config = {
        "model": "benchmarks.vllm_stack.BENCH_MODEL (56M-parameter Llama, float32)",
        "prompt_tokens": PROMPT,
        "sizes": list(sizes),
        "steps": steps,
        "quick": quick,
    }
    write_result(out_dir, "vllm_overhead", config=config, rows=rows, summary=summary)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("results/bench"))
    parser.add_argument("--quick", action="store_true", help="fewer steps, for a smoke run")
    args = parser.parse_args()
    rows = run(args.out, args.quick)
    shown = [{k: r[k] for k in SHOWN if k in r} for r in rows]
    print_table(shown, title="Andes inside vLLM: scheduler time per step")


if __name__ == "__main__":
    main()
