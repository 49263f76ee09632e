"""The anti-starvation rule: no user waits for a token much longer than their TTFT target.

Andes ranks requests by QoE gain per unit of memory. A long prompt needs much memory and a
long prefill, so under sustained load it can lose every ranking and wait minutes for its
first token while FCFS would have served it in seconds (docs/andes.md has the measured
waits). The rule (AndesConfig `starvation_*`) bounds how far a request can
fall behind the rest of the queue:

- *starved*: not running, its user left without text for more than `after` TTFT targets
  (2) and for more than `vs_queue` (2) times the mean such wait of every request not
  running. The second condition makes the bound relative: under a burst every request
  waits long, as under FCFS; only the ones Andes keeps passing over are starved.
- the oldest `limit` (1) starved requests that the knapsack selected go first in the
  admission order, ahead of everything else it admits (the refiner may not drop them). The
  mechanism admits in order and stops at the first misfit, like FCFS at its queue's head.
- a starved request the knapsack did not select (it does not fit beside what Andes keeps)
  is not forced: forcing it blocked admission behind it whenever memory was full, which
  cost E2 at intensity 2.0 0.11-0.16 of average QoE (docs/andes.md, item 15).
  `AndesConfig.starvation_boost` ranks starved requests first in the knapsack too, so it
  makes room for them by preemption.

So the rule bounds waits that come from Andes' ordering (a compute-bound queue, E4), not
waits for memory under a burst, where FCFS's own waits are long too.

"Left without text" is measured from when the user's buffer ran out: the next token was due
at `a + T0 + k/s` and the user runs `D_k` late already, so the wait counts from
`a + T0 + k/s + D_k` (for a request that has no token yet, from its TTFT target). A
preempted user with buffered text is therefore not starved while the text lasts: pausing
such users is what Andes is for.
"""

from __future__ import annotations

import numpy as np

from kairos.andes.gain import StreamState


def starved(
    state: StreamState,
    now: float,
    running: np.ndarray,
    after: float | None,
    limit: int | None = None,
    vs_queue: float | None = None,
) -> list[int]:
    """Indices of the starved requests, oldest arrival first, at most `limit`: not running,
    overdue by more than `after` TTFT targets and (with `vs_queue`) by more than `vs_queue`
    times the mean overdue time of every request not running. None when `after` is None."""
    if after is None:
        return []
    buffer_empty = state.arrival + state.ttft + state.delivered / state.speed + state.lag
    late = np.maximum(now - buffer_empty, 0.0)
    overdue = (late > after * state.ttft) & ~running
    if vs_queue is not None and overdue.any():
        overdue &= late > vs_queue * float(late[~running].mean())
    idx = np.flatnonzero(overdue)
    return idx[np.argsort(state.arrival[idx], kind="stable")][:limit].tolist()


def put_first(admit: list[int], first: list[int]) -> list[int]:
    """`first`, then the rest of `admit` in its own order."""
    if not first:
        return admit
    seen = set(first)
    return [*first, *(i for i in admit if i not in seen)]
