"""Algorithm 1 of the paper (priority-based greedy packing), vectorised over batch sizes.

For every candidate batch size B: take requests by priority (descending, stable so ties keep
the caller's order) while memory and count allow, and score the selection by the sum of
gains (policies/pack_kernel.py). As printed, packing stops at the first request that does not
fit (`skip=False`); `skip=True` passes over it and keeps filling.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from kairos.andes.policies import pack_kernel
from kairos.andes.policies.scratch import Scratch


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
    scratch: Scratch | None = None,
) -> Packing:
    """Pack for each B (column j of `gains`/`priority` belongs to `batches[j]`) and keep the best.

    Ties in objective go to the larger B: serving more at equal value costs nothing.
    """
    n, nb = gains.shape
    if nb == 0 or n == 0:
        return Packing(0, np.zeros(n, dtype=bool), 0.0, np.zeros(nb))
    if nb == 1:
        return _pack_one(gains[:, 0], priority[:, 0], lengths, capacity, int(batches[0]), skip)
    work = scratch or Scratch()
    picks = work.take("picks", (nb, min(n, int(batches.max()))), np.int64)
    counts = np.empty(nb, dtype=np.int64)
    objectives = np.empty(nb, dtype=np.float64)
    pack_kernel.pack_columns(
        gains,
        priority,
        lengths,
        capacity,
        batches,
        skip,
        pack_kernel.SHUFFLED,
        picks,
        counts,
        objectives,
    )
    best = _best(objectives)
    selected = np.zeros(n, dtype=bool)
    selected[picks[best, : counts[best]]] = True
    return Packing(int(batches[best]), selected, float(objectives[best]), objectives)


def _pack_one(
    gains: np.ndarray,
    priority: np.ndarray,
    lengths: np.ndarray,
    capacity: int,
    batch: int,
    skip: bool,
) -> Packing:
    """A single B, the plain way: numpy sums one column pairwise, not one addition at a time
    as `pack_columns` does, and a single B's objective is that sum."""
    order = np.argsort(-priority, kind="stable")
    ordered_len = lengths[order]
    if skip:
        take = np.zeros(len(order), dtype=bool)
        used, count = 0, 0
        for pos, length in enumerate(ordered_len.tolist()):
            if count >= batch:
                break
            if used + length <= capacity:
                used, count = used + length, count + 1
                take[pos] = True
    else:  # a prefix of the order: up to the first misfit or B
        fits = np.cumsum(ordered_len) <= capacity
        first_misfit = len(order) if fits.all() else int(np.argmin(fits))
        take = np.arange(len(order)) < min(first_misfit, batch)
    objective = (gains[order] * take).sum()
    selected = np.zeros(len(order), dtype=bool)
    selected[order[take]] = True
    return Packing(batch, selected, float(objective), np.array([objective]))


def _best(objectives: np.ndarray) -> int:
    """The largest B whose objective ties the best: serving more at equal value costs nothing."""
    return int(np.flatnonzero(objectives >= objectives.max() - 1e-12)[-1])
