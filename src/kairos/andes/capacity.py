"""How much load a deployment sustains, and the highest load that keeps QoE above a target.

`sustainable_rate` is the analytic throughput of an engine without bursts: each request costs
its prefill plus its share of decode iterations at the batch size memory allows,
`1 / (E[prefill] + E[output] * τ(B) / B)`. The experiments run the cyclic burst pattern at
`load_factor` times that rate (the paper sets the average rate to the throughput without
bursts; we leave headroom because the spec's TTFT target, prompt/5000 s, is about one
prefill, so any queueing at all shows in QoE).

`capacity` reads a measured QoE-vs-load curve and returns the highest load whose QoE, and
every lower load's, stays at or above the target (interpolating to the crossing).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kairos.andes.latency import LatencyModel

LOAD_FACTOR = 0.6


def sustainable_rate(
    latency: LatencyModel, prompt_mean: float, output_mean: float, max_num_seqs: int = 512
) -> float:
    """Requests/s the engine completes at steady state with no bursts (analytic)."""
    if prompt_mean <= 0 or output_mean <= 0:
        raise ValueError("prompt_mean and output_mean must be > 0")
    avg_context = prompt_mean + output_mean / 2.0
    batch = max(1, min(max_num_seqs, int(latency.kv_capacity_tokens // avg_context)))
    tau = float(latency.decode_time(batch, batch * avg_context))
    per_request = float(latency.prefill_time(prompt_mean)) + output_mean * tau / batch
    return 1.0 / per_request


def capacity(loads: Sequence[float], qoe: Sequence[float], target: float) -> float:
    """Highest load with average QoE >= target at it and at every lower load tested.

    Returns NaN when even the lowest load misses the target, and the highest load tested
    when none misses it (the true capacity is then at least that).
    """
    x = np.asarray(loads, dtype=np.float64)
    y = np.asarray(qoe, dtype=np.float64)
    order = np.argsort(x)
    x, y = x[order], y[order]
    if y.size == 0 or y[0] < target:
        return float("nan")
    miss = np.flatnonzero(y < target)
    if miss.size == 0:
        return float(x[-1])
    i = int(miss[0])  # first miss; y[i-1] >= target > y[i]
    frac = (y[i - 1] - target) / (y[i - 1] - y[i])
    return float(x[i - 1] + frac * (x[i] - x[i - 1]))
