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

from kairos.andes.gain import StreamState, served_grid


@dataclass
class VictimCost:
    """What preempting a request really costs the engine: a swap out now and back in later,
    or, when swapping is not chosen or the swap pool is full, a full recompute later.

    The paper counts only the cost paid at preemption time (0 for recompute). The restore is
    paid too, as a stall for everyone running then, and without it the refiner happily
    trades cheap-looking recompute preemptions for thrash.
    """

    swap: np.ndarray
    recompute: np.ndarray
    use_swap: np.ndarray
    blocks: np.ndarray
    cpu_free: int
    round_trip: bool = True

    def take(self, i: int) -> float:
        if self.use_swap[i] and self.blocks[i] <= self.cpu_free:
            self.cpu_free -= int(self.blocks[i])
            return float(self.swap[i]) * (2.0 if self.round_trip else 1.0)
        return float(self.recompute[i]) if self.round_trip else 0.0


@dataclass(frozen=True)
class Refinement:
    admit: list[int]
    preempt: list[int]


def stall_losses(state: StreamState, now: float, stalls: np.ndarray, tau: float) -> np.ndarray:
    """(N, K): QoE each request loses if no token reaches it for `stalls[k]` seconds: served
    every `tau` from now on, against nothing, both judged at now + stalls[k]."""
    n, k = len(state), len(stalls)
    horizons = now + np.asarray(stalls, dtype=np.float64)
    loss, serve = np.empty((n, k)), np.empty((n, k))
    start, decode = np.zeros(n), np.ones(n, dtype=bool)
    served_grid(state, now, horizons, start, decode, np.full(k, tau), loss, serve)
    return np.where(horizons[None, :] > now, loss, 0.0)


def refine(
    state: StreamState,
    now: float,
    tau: float,
    gain: np.ndarray,
    priority: np.ndarray,
    blocks: np.ndarray,
    start_delay: np.ndarray,
    victim_cost: VictimCost,
    running: np.ndarray,
    admit: list[int],
    preempt: list[int],
    free_blocks: int,
) -> Refinement:
    """`admit` and `preempt` are indices into the snapshot arrays; returns the kept subsets.

    The victims and stall of each step do not depend on the losses, so the whole walk is
    planned first and the losses of every step are evaluated in one vectorised call.
    """
    pool = np.asarray(preempt, dtype=np.int64)
    victims_pool = pool[np.argsort(priority[pool], kind="stable")].tolist()  # lowest first
    free = free_blocks
    plan: list[tuple[int, list[int]]] = []
    extras: list[float] = []
    cands = np.asarray(admit, dtype=np.int64)
    for a in cands[np.argsort(-priority[cands], kind="stable")].tolist():
        chosen: list[int] = []
        freed = 0
        for v in victims_pool:
            if free + freed >= blocks[a]:
                break
            chosen.append(v)
            freed += int(blocks[v])
        if free + freed < blocks[a]:
            break  # even preempting every candidate would not make room
        plan.append((a, chosen))
        extras.append(float(start_delay[a]) + sum(victim_cost.take(v) for v in chosen))
        free += freed - int(blocks[a])
        victims_pool = [v for v in victims_pool if v not in chosen]
    if not plan:
        return Refinement([], [])
    run_idx = np.flatnonzero(running)
    stalls = np.concatenate([[0.0], np.cumsum(extras)])
    losses = stall_losses(_subset(state, run_idx), now, stalls, tau)  # (R, K+1)
    # step at which each running request is preempted (it stops counting from then on)
    gone_at = np.full(len(running), len(plan), dtype=np.int64)
    for step, (_, chosen) in enumerate(plan):
        gone_at[chosen] = step
    alive = gone_at[run_idx][:, None] > np.arange(len(plan))[None, :]  # (R, K)
    added = ((losses[:, 1:] - losses[:, :-1]) * alive).sum(axis=0)
    out_admit: list[int] = []
    out_preempt: list[int] = []
    for step, (a, chosen) in enumerate(plan):
        if gain[a] <= added[step]:
            break
        out_admit.append(a)
        out_preempt.extend(chosen)
    return Refinement(out_admit, out_preempt)


def _subset(state: StreamState, idx: np.ndarray) -> StreamState:
    return StreamState(
        *(
            getattr(state, f)[idx]
            for f in ("arrival", "ttft", "speed", "delivered", "lag", "lag_sum", "remaining_cap")
        )
    )
