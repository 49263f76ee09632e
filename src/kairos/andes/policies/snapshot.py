"""The arrays a knapsack policy needs, gathered once per decision from the view.

Ongoing requests are ordered running first (in admission order), then swapped, then waiting
(queue order): stable sorts downstream keep that order among equal priorities, which is a
bias toward keeping running requests running.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kairos.andes.gain import StreamState
from kairos.andes.kv_blocks import blocks_for
from kairos.andes.policies.base import SchedulerView
from kairos.andes.request import Request, Status


@dataclass(frozen=True)
class Snapshot:
    requests: list[Request]
    state: StreamState
    running: np.ndarray  # bool
    swapped: np.ndarray  # bool
    blocks: np.ndarray  # KV blocks needed to run one more step (l_i, in blocks)
    context: np.ndarray  # context tokens
    start_delay: np.ndarray  # seconds before the next token can be produced
    needs_decode: np.ndarray  # bool: the next token needs a decode step after the delay
    restore_mode_swap: np.ndarray  # bool: preempting this request would swap (cheaper)
    preempt_cost: np.ndarray  # seconds the preemption itself costs (swap-out; 0 for recompute)


def take_snapshot(view: SchedulerView, prefer_swap: bool) -> Snapshot:
    reqs = [*view.running, *view.swapped, *view.waiting]
    n = len(reqs)
    lat = view.latency
    status = np.fromiter((r.status for r in reqs), dtype=np.int64, count=n)
    ctx = np.fromiter((r.context_len for r in reqs), dtype=np.float64, count=n)
    running = status == Status.RUNNING
    swapped = status == Status.SWAPPED
    state = StreamState(
        arrival=np.fromiter((r.qoe.arrival for r in reqs), dtype=np.float64, count=n),
        ttft=np.fromiter((r.qoe.ttft for r in reqs), dtype=np.float64, count=n),
        speed=np.fromiter((r.qoe.speed for r in reqs), dtype=np.float64, count=n),
        delivered=np.fromiter((r.qoe.k for r in reqs), dtype=np.float64, count=n),
        lag=np.fromiter((r.qoe.lag for r in reqs), dtype=np.float64, count=n),
        lag_sum=np.fromiter((r.qoe.lag_sum for r in reqs), dtype=np.float64, count=n),
        remaining_cap=np.fromiter((r.remaining_cap for r in reqs), dtype=np.float64, count=n),
    )
    to_compute = np.fromiter((r.to_compute for r in reqs), dtype=np.float64, count=n)
    swap_t = lat.swap_time(ctx)
    recompute_t = lat.prefill_time(ctx)
    start = np.where(running, 0.0, np.where(swapped, swap_t, lat.prefill_time(to_compute)))
    use_swap = prefer_swap & (swap_t < recompute_t) if prefer_swap else np.zeros(n, dtype=bool)
    return Snapshot(
        requests=reqs,
        state=state,
        running=running,
        swapped=swapped,
        blocks=np.fromiter(
            (blocks_for(int(c) + 1, view.block_size) for c in ctx), dtype=np.int64, count=n
        ),
        context=ctx,
        start_delay=start,
        needs_decode=running | swapped,
        restore_mode_swap=np.asarray(use_swap, dtype=bool),
        preempt_cost=np.where(use_swap, swap_t, 0.0),
    )
