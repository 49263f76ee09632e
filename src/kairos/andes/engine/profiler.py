"""Measuring the engine to build its latency profile (`kairos andes profile`).

The policy reasons with a latency model; on our own engine that model must come from our own
engine on this machine, not from the paper's GPUs. We time real forward passes: decode
iterations over a grid of batch sizes and context lengths, prefills over a range of prompt
lengths (alone, and several prompts in one iteration, so the fit costs attention per prompt),
and swap copies, then fit `LinearProfile` (non-negative least squares). The same
JSON feeds the engine's scheduler and the simulator, which is how the two are compared.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from kairos.andes.engine.api import QoESpec, SamplingParams
from kairos.andes.engine.config import EngineConfig
from kairos.andes.latency import LinearProfile, fit_profile, prefill_row
from kairos.andes.policies.fcfs import FCFSPolicy
from kairos.andes.scheduler import Scheduler, SchedulerConfig

if TYPE_CHECKING:
    from kairos.andes.engine.engine import LLMEngine

QUICK = {"batches": (1, 4, 16, 32), "contexts": (32, 256), "prefills": (16, 64, 256, 512)}
FULL = {
    "batches": (1, 2, 4, 8, 16, 32, 48, 64),
    "contexts": (64, 256, 512, 1024),
    "prefills": (16, 32, 64, 128, 256, 512, 1024, 2048),
}


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def _median_time(fn: Callable[[], object], device: torch.device, reps: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(reps):
        _sync(device)
        t0 = time.perf_counter()
        fn()
        _sync(device)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _timed_steps(engine: LLMEngine, prompts: list[int], steps: int) -> list[tuple[int, int, float]]:
    """Run requests with these prompt lengths for `steps` iterations through `engine.step()`;
    (context tokens in the iteration, the longest context, seconds) per iteration, the
    first being the prefill and the second the first decode (a new batch: it regathers)."""
    vocab = min(engine.model.config.vocab_size, 256)
    params = SamplingParams(max_tokens=steps + 1, temperature=0, ignore_eos=True)
    qoe = QoESpec(ttft_s=1.0, tokens_per_s=5.0)
    ids = []
    for n in prompts:
        rid = f"profile-{time.monotonic_ns()}"
        engine.add_request(rid, torch.randint(0, vocab, (n,)).tolist(), params, qoe)
        ids.append(rid)
    rows = []
    for _ in range(steps):
        lens = [engine.seqs[r].request.context_len for r in ids if r in engine.seqs]
        _sync(engine.device)
        t0 = time.perf_counter()
        engine.step()
        _sync(engine.device)
        rows.append((sum(lens), max(lens, default=0), time.perf_counter() - t0))
    for rid in ids:
        engine.abort(rid)
    return rows


def measure(
    engine: LLMEngine, *, quick: bool = False, reps: int | None = None
) -> tuple[np.ndarray, np.ndarray, float, np.ndarray]:
    """Decode rows (batch, context tokens, s), prefill rows (summed tokens, summed attention
    pairs, s: `prefill_row`), swap s/token, and regather rows (batch, context tokens,
    batch x longest context, s).

    Times whole `engine.step()` calls on real requests under FCFS (scheduling, input
    preparation, the forward pass, sampling and bookkeeping), because that is what one
    iteration costs a stream; the policy's own decision time is added by the simulator.
    Decode rows are iterations that keep the last iteration's batch; the first decode after
    the prefill (a new batch) is a regather row.
    """
    grid = QUICK if quick else FULL
    reps = reps or (3 if quick else 7)
    cfg = engine.config
    saved = engine.latency
    # The measurement's requests are not the server's: its counters (finished, aborted,
    # predicted and actual busy time) go back to what they were once it is done.
    saved_counters = engine.counters
    engine.counters = type(saved_counters)()
    engine.scheduler = Scheduler(
        FCFSPolicy(),
        saved,
        SchedulerConfig(max_num_seqs=cfg.max_num_seqs, max_num_batched_tokens=1 << 30),
        num_gpu_blocks=cfg.num_gpu_blocks,
        num_cpu_blocks=cfg.num_cpu_blocks,
    )
    bs = cfg.block_size
    capacity = cfg.num_gpu_blocks * bs
    limit = engine.max_model_len
    dec: list[tuple[float, float, float]] = []
    pre: list[tuple[float, float, float]] = []
    regather: list[tuple[float, float, float, float]] = []
    try:
        _timed_steps(engine, [16], 3)  # warm-up
        for b in grid["batches"]:
            # the grid's contexts, and contexts that fill the cache to 30/60/90% at this
            # batch size: the regime a small cache serves in, where the fit must be good
            fill = {int(capacity * f / (1.2 * b)) for f in (0.3, 0.6, 0.9)}
            for c in sorted(set(grid["contexts"]) | {c for c in fill if c >= 8}):
                # contexts spread around c, as a real batch's are (the cost of padding shows)
                spread = np.linspace(0.25 * c, 1.75 * c, b) if b > 1 else np.array([c])
                prompts = [max(1, int(x)) for x in spread]
                need = sum(-(-(x + reps + 2) // bs) * bs for x in prompts)
                if b > cfg.max_num_seqs or need > capacity or max(prompts) + reps + 2 > limit:
                    continue
                rows = _timed_steps(engine, prompts, reps + 2)
                dec += [(b, ctx, s) for ctx, _, s in rows[2:]]
                ctx, longest, s = rows[1]
                regather.append((b, ctx, b * longest, s))
        for t in grid["prefills"]:
            if t + 2 > min(limit, capacity):
                continue
            for _ in range(reps):
                pre.append(prefill_row([t], seconds=_timed_steps(engine, [t], 1)[0][2]))
            if t >= 64:  # several prompts in one iteration: linear on the sum, attention each
                parts = [t // 8, t // 4, t // 4, t - t // 8 - 2 * (t // 4)]
                pre.append(prefill_row(parts, seconds=_timed_steps(engine, parts, 1)[0][2]))
    finally:
        engine.use_latency(saved)
        engine.counters = saved_counters
    n_blocks = min(cfg.num_gpu_blocks, cfg.num_cpu_blocks, 32)
    swap = 0.0
    if n_blocks:
        mapping = [(i, i) for i in range(n_blocks)]

        def round_trip() -> None:
            engine.cache.swap_out(mapping)
            engine.cache.swap_in(mapping)

        swap = _median_time(round_trip, engine.device, reps) / 2 / (n_blocks * bs)
    return (
        np.array(dec, dtype=np.float64),
        np.array(pre, dtype=np.float64),
        swap,
        np.array(regather, dtype=np.float64),
    )


def calibrate(engine: LLMEngine, *, quick: bool = False, reps: int | None = None) -> LinearProfile:
    """Fit a profile for this engine on this machine (quick: a few seconds, at startup)."""
    return fit(engine, *measure(engine, quick=quick, reps=reps))


def fit(
    engine: LLMEngine, dec: np.ndarray, pre: np.ndarray, swap: float, regather: np.ndarray
) -> LinearProfile:
    """The profile of `engine` from what `measure` returned."""
    cfg = engine.config
    return fit_profile(
        f"{engine.model_name}@{engine.device.type}",
        dec,
        pre,
        kv_capacity=cfg.num_gpu_blocks * cfg.block_size,
        swap_capacity=cfg.num_cpu_blocks * cfg.block_size,
        swap_s_per_token=swap,
        block_size=cfg.block_size,
        regather_samples=regather,
    )


def calibrated_engine(config: EngineConfig, **kwargs: Any) -> LLMEngine:
    """An engine with a latency profile: the config's (or the one passed as `latency=`), else
    one measured now on this machine (a few seconds). Measuring runs real iterations, so it
    happens here, before serving, and never inside the engine's constructor."""
    from kairos.andes.engine.cpu import build_engine

    engine = build_engine(config, **kwargs)
    if engine.provisional:
        engine.use_latency(calibrate(engine, quick=True))
    return engine
