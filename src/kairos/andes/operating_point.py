"""Where on a trace a run sits: a load that means the same on any trace.

A load factor is a share of the engine's sustainable rate, so it means the same thing on two
traces only if that rate is right for each. `kairos.andes.capacity.sustainable_rate` uses the
mean prompt and output; prefill attention is quadratic per prompt, so for a trace of long
prompts (thousands of tokens) the prefill of the mean prompt is far below the mean prefill,
and "load 0.6" is an overload there (every policy collapses). Here:

- `trace_sustainable_rate`: the same steady-state argument on the trace's whole length
  distribution: each request costs its own prefill, alone (the mean of `prefill_time(p_i)`),
  plus its output's share of decode iterations at the batch memory holds.
- `simulated_throughput`: the check, a short simulation: a sample of the trace's requests
  all waiting at t = 0 under FCFS, completed over the makespan (every prefill and every
  decode step paid, as in steady state; the last stragglers decode in small batches, so it
  reads a little low).
- `find_load`: the operating point. The paper reports FCFS at an average QoE of 0.88 on its
  trace; the experiments place a trace at the load factor where FCFS's average QoE is that
  target (regula falsi with the Illinois step on a QoE that falls with load), so every trace
  is compared at the same pressure, whatever its lengths.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from kairos.andes.latency import LatencyModel

PAPER_FCFS_QOE = 0.88  # E4's FCFS average QoE in the paper: the default operating point


def trace_sustainable_rate(
    latency: LatencyModel, prompts: np.ndarray, outputs: np.ndarray, max_num_seqs: int = 512
) -> float:
    """Requests/s an engine completes at steady state on this length mix (analytic)."""
    p = np.asarray(prompts, dtype=np.float64)
    o = np.asarray(outputs, dtype=np.float64)
    if p.size == 0 or p.size != o.size or (p <= 0).any() or (o <= 0).any():
        raise ValueError("prompt and output lengths must be equal-length, non-empty and > 0")
    avg_context = float(np.mean(p + o / 2.0))
    batch = max(1, min(max_num_seqs, int(latency.kv_capacity_tokens // avg_context)))
    tau = float(latency.decode_time(batch, batch * avg_context))
    prefill = float(np.mean(latency.prefill_time(p)))
    return 1.0 / (prefill + float(np.mean(o)) * tau / batch)


def simulated_throughput(
    latency: LatencyModel, prompts: np.ndarray, outputs: np.ndarray, sample: int = 300
) -> float:
    """Completions/s of FCFS with `sample` of these requests (evenly spaced picks) all
    waiting at t = 0, over the makespan."""
    from kairos.andes.policies.fcfs import FCFSPolicy
    from kairos.andes.simulator import simulate
    from kairos.workloads import Trace

    n = len(prompts)
    pick = np.linspace(0, n - 1, min(sample, n)).astype(np.int64)
    trace = Trace(
        arrivals=np.zeros(pick.size),
        prompt_tokens=np.asarray(prompts)[pick].astype(np.int64),
        output_tokens=np.asarray(outputs)[pick].astype(np.int64),
    )
    speeds = np.full(pick.size, 5.0)  # QoE is not read here; speeds only label requests
    res = simulate(FCFSPolicy(), latency, trace, speeds)
    makespan = max(r.finish_time for r in res.requests)
    return pick.size / makespan if makespan > 0 else float("nan")


@dataclass(frozen=True)
class LoadSearch:
    load: float  # the load factor found
    value: float  # the measured QoE there
    probes: list[tuple[float, float]]  # every (load, QoE) measured, in order
    converged: bool  # |value - target| <= tol


def find_load(
    qoe_at: Callable[[float], float],
    target: float,
    lo: float = 0.3,
    hi: float = 1.5,
    tol: float = 0.01,
    max_probes: int = 10,
) -> LoadSearch:
    """The load in [lo, hi] where `qoe_at` (falling with load) equals `target`, to `tol`.

    The bracket is widened (lo halved, hi doubled, a few times) when the target lies outside
    it. Not converging within `max_probes` returns the best probe with `converged` False.
    """
    probes: list[tuple[float, float]] = []

    def probe(x: float) -> float:
        y = qoe_at(x)
        probes.append((x, y))
        return y - target

    f_lo, f_hi = probe(lo), probe(hi)
    for _ in range(4):
        if f_lo < 0:  # too loaded even at lo
            hi, f_hi = lo, f_lo
            lo /= 2
            f_lo = probe(lo)
        elif f_hi > 0:  # not loaded enough at hi
            lo, f_lo = hi, f_hi
            hi *= 2
            f_hi = probe(hi)
        else:
            break
    side = 0

    def missed() -> bool:  # the measured values, not the Illinois-scaled ends
        return min(abs(y - target) for _, y in probes) > tol

    while len(probes) < max_probes and f_lo >= 0 >= f_hi and missed():
        x = hi - f_hi * (hi - lo) / (f_hi - f_lo) if f_hi != f_lo else (lo + hi) / 2
        x = min(max(x, lo + 1e-3 * (hi - lo)), hi - 1e-3 * (hi - lo))
        f_x = probe(x)
        if f_x >= 0:  # still at or above the target: the crossing is above x
            lo, f_lo = x, f_x
            if side == -1:
                f_hi /= 2  # Illinois: stop the same end from sticking
            side = -1
        else:
            hi, f_hi = x, f_x
            if side == 1:
                f_lo /= 2
            side = 1
    best = min(probes, key=lambda p: abs(p[1] - target))
    return LoadSearch(best[0], best[1], probes, abs(best[1] - target) <= tol)
