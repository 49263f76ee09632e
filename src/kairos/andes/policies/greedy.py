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

from kairos.andes.policies.rowsort import stable_argsort_rows
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
    # one row per B: sorted, gathered and summed along the contiguous axis
    # (fresh (n, nb) temporaries are costly, see kairos.andes.gain: make as few as possible)
    work = scratch or Scratch()
    order = stable_argsort_rows(np.negative(priority.T, out=work.take("keys", (nb, n))))
    # no B takes more than max(batches) requests, so only that prefix of each order (and the
    # one after it, to see a misfit) is read: except a single B, whose sum numpy takes
    # pairwise over the whole column, and the skip variant, which may pass over misfits
    k = n if skip or nb == 1 else min(n, int(batches.max()) + 1)
    head = order[:, :k]
    ordered_len = np.take(lengths, head, out=work.take("lengths", (nb, k), lengths.dtype))
    if skip:
        take = _skip_fill(ordered_len.T, capacity, batches)
        objectives = (np.take_along_axis(gains, order.T, axis=0) * take).sum(axis=0)
        best = _best(objectives)
        chosen = order[best, take[:, best]]
    else:
        fits_mem = np.cumsum(ordered_len, axis=1, out=ordered_len) <= capacity
        first_misfit = np.where(fits_mem.all(axis=1), k, np.argmin(fits_mem, axis=1))
        count = np.minimum(first_misfit, batches)
        # the selection at B is a prefix of the order, so its objective is a running sum read
        # at the prefix's end: cumsum adds in order, exactly as a sum down the columns would
        flat = np.multiply(head, nb, out=work.take("flat", (nb, k), np.intp))
        flat += np.arange(nb)[:, None]  # order[j, i] * nb + j: gains[order[j, i], j] flattened
        ordered_gain = np.take(gains, flat, out=work.take("ordered_gain", (nb, k)))
        if nb > 1:
            running = np.cumsum(ordered_gain, axis=1, out=ordered_gain)
            objectives = np.where(count > 0, running[np.arange(nb), np.maximum(count - 1, 0)], 0.0)
        else:  # one B: numpy sums a single column pairwise, not in order; do the same
            objectives = (ordered_gain[0] * (np.arange(n) < count[0])).sum(keepdims=True)
        best = _best(objectives)
        chosen = order[best, : count[best]]
    selected = np.zeros(n, dtype=bool)
    selected[chosen] = True
    return Packing(int(batches[best]), selected, float(objectives[best]), objectives)


def _best(objectives: np.ndarray) -> int:
    """The largest B whose objective ties the best: serving more at equal value costs nothing."""
    return int(np.flatnonzero(objectives >= objectives.max() - 1e-12)[-1])


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
