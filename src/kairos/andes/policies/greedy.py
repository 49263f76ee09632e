"""Algorithm 1 of the paper (priority-based greedy packing), vectorised over batch sizes.

For every candidate batch size B at once: sort requests by priority (descending, stable so
ties keep the caller's order), take them while memory and count allow, and score the
selection by the sum of gains. As printed, packing stops at the first request that does not
fit (`skip=False`); `skip=True` passes over it and keeps filling.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Packing:
    batch: int  # the chosen B
    selected: np.ndarray  # boolean mask over requests
    objective: float  # sum of gains of the selection at B
    objectives: np.ndarray  # objective for every candidate B (for ablations and plots)


def batch_bounds(
    lengths: np.ndarray,
    capacity: int,
    tau: Callable[[np.ndarray], np.ndarray],
    fastest_speed: float,
    max_seqs: int,
) -> tuple[int, int]:
    """(B_min, B_max) of section 4.2.

    B_max: requests added shortest-context first until memory is full. B_min: the largest B
    whose per-stream token rate 1/τ(B) still keeps up with the fastest reader; batches
    smaller than that can never be better, since every stream would already be fast enough.
    """
    n = len(lengths)
    if n == 0:
        return 0, 0
    fits = int(np.searchsorted(np.cumsum(np.sort(lengths)), capacity, side="right"))
    b_max = max(1, min(fits, max_seqs, n))
    sizes = np.arange(1, b_max + 1)
    fast_enough = tau(sizes) <= 1.0 / fastest_speed
    b_min = int(sizes[fast_enough][-1]) if fast_enough.any() else 1
    return min(b_min, b_max), b_max


def candidate_batches(b_min: int, b_max: int, limit: int, keep: int | None = None) -> np.ndarray:
    """Every B in [b_min, b_max] when there are at most `limit`, else an even grid of `limit`
    of them (with both ends and `keep`, e.g. the current batch size)."""
    if b_max < b_min:
        return np.empty(0, dtype=np.int64)
    limit = max(limit, 2)
    if b_max - b_min + 1 <= limit:
        return np.arange(b_min, b_max + 1)
    grid = np.unique(np.rint(np.linspace(b_min, b_max, limit)).astype(np.int64))
    if keep is not None and b_min <= keep <= b_max:
        grid = np.unique(np.append(grid, keep))
    return grid


def greedy_pack(
    gains: np.ndarray,
    priority: np.ndarray,
    lengths: np.ndarray,
    capacity: int,
    batches: np.ndarray,
    *,
    skip: bool = False,
) -> Packing:
    """Pack for each B (column j of `gains`/`priority` belongs to `batches[j]`) and keep the best.

    Ties in objective go to the larger B: serving more at equal value costs nothing.
    """
    n, nb = gains.shape
    if nb == 0 or n == 0:
        return Packing(0, np.zeros(n, dtype=bool), 0.0, np.zeros(nb))
    # sorted along the contiguous axis (one row per B), then back to (n, nb): the same order,
    # a third faster than a strided sort down the columns
    order = np.argsort(np.ascontiguousarray(-priority.T), axis=1, kind="stable").T
    ordered_len = lengths[order]
    if skip:
        take = _skip_fill(ordered_len, capacity, batches)
    else:
        fits_mem = np.cumsum(ordered_len, axis=0) <= capacity
        first_misfit = np.where(fits_mem.all(axis=0), n, np.argmin(fits_mem, axis=0))
        count = np.minimum(first_misfit, batches)
        take = np.arange(n)[:, None] < count[None, :]
    ordered_gain = np.take_along_axis(gains, order, axis=0)
    objectives = (ordered_gain * take).sum(axis=0)
    best = int(np.flatnonzero(objectives >= objectives.max() - 1e-12)[-1])
    selected = np.zeros(n, dtype=bool)
    selected[order[take[:, best], best]] = True
    return Packing(int(batches[best]), selected, float(objectives[best]), objectives)


def _skip_fill(ordered_len: np.ndarray, capacity: int, batches: np.ndarray) -> np.ndarray:
    n, nb = ordered_len.shape
    take = np.zeros((n, nb), dtype=bool)
    for j in range(nb):
        used, count = 0, 0
        for i in range(n):
            if count >= batches[j]:
                break
            if used + ordered_len[i, j] <= capacity:
                take[i, j] = True
                used += int(ordered_len[i, j])
                count += 1
    return take
