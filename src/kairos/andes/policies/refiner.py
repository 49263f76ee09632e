"""The overhead-aware refiner (section 4.3, spec section 5).

Admitting a request costs everyone else time: its prefill (or restore) stalls the running
batch, and swapping its victims out takes a copy. The refiner walks the admit list in
priority order; for each candidate it picks the fewest lowest-priority preemption candidates
whose memory makes room, adds up the stall `o`, and commits only if the candidate's gain
exceeds the QoE the stall costs the requests that keep running. It stops at the first
candidate that does not pay for itself. Stalls accumulate across commits (the second
admission waits behind the first), so each candidate pays only for the stall it adds.

Loss of a running request j for a stall o is `Q_serve,j(now+o) - Q_wait,j(now+o)`: the QoE
it would have had by continuing minus what it has if nothing arrives for o seconds. Users
with enough buffered text lose nothing, which is exactly the slack Andes exploits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kairos.andes.gain import StreamState, qoe_at_horizon


@dataclass(frozen=True)
class Refinement:
    admit: list[int]
    preempt: list[int]


def _subset(state: StreamState, idx: np.ndarray) -> StreamState:
    return StreamState(
        *(
            getattr(state, f)[idx]
            for f in ("arrival", "ttft", "speed", "delivered", "lag", "lag_sum", "remaining_cap")
        )
    )


def stall_loss(state: StreamState, now: float, stall: float, tau: float) -> float:
    """Total QoE the given running requests lose if no token reaches them for `stall` s."""
    if stall <= 0 or len(state) == 0:
        return 0.0
    horizon = now + stall
    n = len(state)
    serve = qoe_at_horizon(state, horizon, np.full((n, 1), now + tau), np.array([tau]))[:, 0]
    wait = qoe_at_horizon(state, horizon, np.full((n, 1), np.inf), np.ones(1))[:, 0]
    return float(np.nansum(np.maximum(serve - wait, 0.0)))


def refine(
    state: StreamState,
    now: float,
    tau: float,
    gain: np.ndarray,
    priority: np.ndarray,
    blocks: np.ndarray,
    start_delay: np.ndarray,
    preempt_cost: np.ndarray,
    running: np.ndarray,
    admit: list[int],
    preempt: list[int],
    free_blocks: int,
) -> Refinement:
    """`admit` and `preempt` are indices into the snapshot arrays; returns the kept subsets."""
    victims_pool = sorted(preempt, key=lambda i: priority[i])  # lowest priority first
    kept_running = set(np.flatnonzero(running).tolist())
    free = free_blocks
    stall = 0.0
    out_admit: list[int] = []
    out_preempt: list[int] = []
    for a in sorted(admit, key=lambda i: -priority[i]):
        chosen: list[int] = []
        freed = 0
        for v in victims_pool:
            if free + freed >= blocks[a]:
                break
            chosen.append(v)
            freed += int(blocks[v])
        if free + freed < blocks[a]:
            break  # even preempting every candidate would not make room
        extra = float(start_delay[a] + preempt_cost[chosen].sum())
        survivors = np.array(sorted(kept_running - set(chosen)), dtype=np.int64)
        kept = _subset(state, survivors)
        loss = stall_loss(kept, now, stall + extra, tau) - stall_loss(kept, now, stall, tau)
        if gain[a] <= loss:
            break
        stall += extra
        free += freed - int(blocks[a])
        out_admit.append(a)
        out_preempt.extend(chosen)
        victims_pool = [v for v in victims_pool if v not in chosen]
        kept_running -= set(chosen)
    return Refinement(out_admit, out_preempt)
