"""Measuring the engine to build its latency profile (`kairos andes profile`).

The policy reasons with a latency model; on our own engine that model must come from our own
engine on this machine, not from the paper's GPUs. We time real forward passes: decode
iterations over a grid of batch sizes and context lengths, prefills over a range of prompt
lengths, and swap copies, then fit `LinearProfile` (non-negative least squares). The same
JSON feeds the engine's scheduler and the simulator, which is how the two are compared.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np
import torch

from kairos.andes.engine.attention import AttentionBatch
from kairos.andes.latency import LinearProfile, fit_profile

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


@torch.inference_mode()
def _forward(engine: LLMEngine, starts: list[int], lengths: list[int]) -> None:
    bs = engine.cache.block_size
    tables, nxt = [], 0
    for st, ln in zip(starts, lengths, strict=True):
        n = -(-(st + ln) // bs)
        tables.append(list(range(nxt, nxt + n)))
        nxt += n
    batch = AttentionBatch.build(starts, lengths, tables, bs, engine.device)
    positions = torch.cat([torch.arange(s, s + n) for s, n in zip(starts, lengths, strict=True)])
    vocab = engine.model.config.vocab_size
    ids = torch.randint(0, vocab, (int(sum(lengths)),), device=engine.device)
    engine.model(ids, positions.to(engine.device), batch, engine.cache.layers)


def measure(
    engine: LLMEngine, *, quick: bool = False, reps: int = 5
) -> tuple[np.ndarray, np.ndarray, float]:
    """Decode rows (batch, context tokens, s), prefill rows (tokens, s), swap s/token."""
    grid = QUICK if quick else FULL
    bs = engine.cache.block_size
    capacity = engine.config.num_gpu_blocks * bs
    limit = min(engine.max_model_len, engine.config.max_num_batched_tokens)
    dec: list[tuple[float, float, float]] = []
    for b in grid["batches"]:
        if b > engine.config.max_num_seqs:
            continue
        for c in grid["contexts"]:
            if b * (-(-(c + 1) // bs) * bs) > capacity or c >= engine.max_model_len:
                continue

            def decode(b: int = b, c: int = c) -> None:
                _forward(engine, [c] * b, [1] * b)

            dec.append((b, b * (c + 1), _median_time(decode, engine.device, reps)))
    pre: list[tuple[float, float]] = []
    for t in grid["prefills"]:
        if t <= limit:

            def prefill(t: int = t) -> None:
                _forward(engine, [0], [t])

            pre.append((t, _median_time(prefill, engine.device, reps)))
    n_blocks = min(engine.config.num_gpu_blocks, engine.config.num_cpu_blocks, 32)
    swap = 0.0
    if n_blocks:
        mapping = [(i, i) for i in range(n_blocks)]

        def round_trip() -> None:
            engine.cache.swap_out(mapping)
            engine.cache.swap_in(mapping)

        cycle = _median_time(round_trip, engine.device, reps)
        swap = cycle / 2 / (n_blocks * bs)
    return np.array(dec, dtype=np.float64), np.array(pre, dtype=np.float64), swap


def calibrate(engine: LLMEngine, *, quick: bool = False, reps: int | None = None) -> LinearProfile:
    """Fit a profile for this engine on this machine (quick: a few seconds, at startup)."""
    dec, pre, swap = measure(engine, quick=quick, reps=reps or (3 if quick else 7))
    cfg = engine.config
    return fit_profile(
        f"{engine.model_name}@{engine.device.type}",
        dec,
        pre,
        kv_capacity=cfg.num_gpu_blocks * cfg.block_size,
        swap_capacity=cfg.num_cpu_blocks * cfg.block_size,
        swap_s_per_token=swap,
        block_size=cfg.block_size,
    )
