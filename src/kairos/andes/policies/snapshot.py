"""The arrays a knapsack policy needs, gathered once per decision from the view.

Ongoing requests are ordered running first (in admission order), then swapped, then waiting
(queue order): stable sorts downstream keep that order among equal priorities, which is a
bias toward keeping running requests running.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kairos.andes.gain import StreamState
from kairos.andes.policy import SchedulerView
from kairos.andes.request import RequestView, Status
from kairos.andes.request_table import rows_of


@dataclass(frozen=True)
class Snapshot:
    requests: list[RequestView]
    state: StreamState
    running: np.ndarray  # bool
    swapped: np.ndarray  # bool
    blocks: np.ndarray  # KV blocks needed to run one more step (l_i, in blocks)
    context: np.ndarray  # context tokens
    start_delay: np.ndarray  # seconds before the next token can be produced
    needs_decode: np.ndarray  # bool: the next token needs a decode step after the delay
    restore_mode_swap: np.ndarray  # bool: preempting this request would swap (cheaper)
    swap_cost: np.ndarray  # seconds to swap this request's KV one way
    recompute_cost: np.ndarray  # seconds to rebuild its KV by a prefill
    cpu_blocks_free: int  # room in the swap pool now


def take_snapshot(view: SchedulerView, prefer_swap: bool) -> Snapshot:
    reqs = [*view.running, *view.swapped, *view.waiting]
    n = len(reqs)
    lat = view.latency
    # one pass over the Python objects (the scheduler's mirror, or the objects of a view
    # built without one), then everything is numpy
    table = view.table.rows(reqs) if view.table is not None else rows_of(reqs)
    status, ctx, computed = table[:, 0], table[:, 1], table[:, 2]
    running = status == Status.RUNNING
    swapped = status == Status.SWAPPED
    state = StreamState(
        arrival=table[:, 3],
        ttft=table[:, 4],
        speed=table[:, 5],
        delivered=table[:, 6],
        lag=table[:, 7],
        lag_sum=table[:, 8],
        remaining_cap=table[:, 9],
    )
    swap_t = lat.swap_time(ctx)
    recompute_t = lat.prefill_time(ctx)
    # a waiting request's start delay: its own prefill (of what it has not computed yet,
    # attending over what it has), alone in an iteration
    prefill_t = lat.prefill_time(ctx - computed, computed)
    start = np.where(running, 0.0, np.where(swapped, swap_t, prefill_t))
    use_swap = (swap_t < recompute_t) if prefer_swap else np.zeros(n, dtype=bool)
    return Snapshot(
        requests=reqs,
        state=state,
        running=running,
        swapped=swapped,
        blocks=-(-(ctx.astype(np.int64) + 1) // view.block_size),
        context=ctx,
        start_delay=start,
        needs_decode=running | swapped,
        restore_mode_swap=np.asarray(use_swap, dtype=bool),
        swap_cost=swap_t,
        recompute_cost=recompute_t,
        cpu_blocks_free=view.free_cpu_blocks,
    )
