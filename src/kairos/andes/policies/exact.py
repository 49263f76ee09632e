"""Exact batch selection for Andes: the oracle for small instances and for experiment E6.

For a target batch size B, Andes chooses which requests to serve by solving

    maximise sum_i q_i x_i   s.t.   sum_i x_i = B,   sum_i l_i x_i <= M,   x_i in {0, 1}

(a knapsack with an exact cardinality constraint). The paper's Algorithm 2 solves it with a
dynamic program; this module implements that DP faithfully so that the greedy heuristic Andes
actually runs can be measured against the true optimum (E6: greedy vs DP) and so that tests
have an oracle. It is not meant for the serving hot path: the cost is O(N * B * M) time and
the back-tracking table is N * (B + 1) * (M + 1) bytes per B, so callers must quantise memory
to KV blocks (M in blocks, not tokens) to keep M small.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

GainArg = Callable[[int], npt.ArrayLike] | npt.ArrayLike


def _as_gain(gain: npt.ArrayLike, n: int, name: str) -> npt.NDArray[np.float64]:
    arr = np.asarray(gain, dtype=np.float64)
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(f"{name} must be a 1-D array of {n} gains, got shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        # NaN would silently lose every comparison and +inf would swamp the sum.
        raise ValueError(f"{name} must contain only finite values")
    return arr


def _as_length(length: npt.ArrayLike) -> npt.NDArray[np.int64]:
    arr = np.asarray(length)
    if arr.ndim != 1:
        raise ValueError(f"length must be a 1-D array, got shape {arr.shape}")
    if arr.size and arr.dtype.kind not in "iuf":
        raise ValueError(f"length must hold integers, got dtype {arr.dtype}")
    if arr.size and not (np.all(np.isfinite(arr)) and np.all(arr == np.round(arr))):
        # Memory is indexed exactly by block count, so a fractional size has no table slot.
        raise ValueError("length must hold whole numbers of KV blocks")
    if np.any(arr < 0):
        raise ValueError("length must be non-negative")
    return arr.astype(np.int64)


def _as_count(value: int, name: str) -> int:
    try:
        count = operator.index(value)
    except TypeError:
        raise ValueError(f"{name} must be an integer, got {value!r}") from None
    if count < 0:
        raise ValueError(f"{name} must be non-negative, got {count}")
    return count


def _dp(
    gain: npt.NDArray[np.float64], length: npt.NDArray[np.int64], capacity: int, batch: int
) -> tuple[npt.NDArray[np.bool_], float] | None:
    """Run Algorithm 2 on validated inputs; return (mask, objective) or None.

    The table is indexed by the *exact* memory used rather than "at most m" so that every cell
    describes one concrete set of sizes; that is what lets the choice table be replayed
    backwards (subtracting l_i from m lands on the predecessor's cell). Only dp[0, 0] starts
    finite, so -inf marks (count, memory) pairs no subset reaches -- including every b > 0
    until enough items have been seen -- and the exact-B constraint falls out for free.
    """
    n = gain.shape[0]
    dp = np.full((batch + 1, capacity + 1), -np.inf)
    dp[0, 0] = 0.0
    choice = np.zeros((n, batch + 1, capacity + 1), dtype=np.bool_)
    for i in range(n):
        size = int(length[i])
        if size > capacity or batch == 0:
            continue  # never fits (or nothing may be served): "not served" is the only option
        # Candidate "serve i": one more item, `size` more blocks. Computed into a fresh array
        # before the in-place update, so a zero-size item cannot be counted twice.
        served = dp[:-1, : capacity + 1 - size] + gain[i]
        kept = dp[1:, size:]
        take = served > kept  # strict: ties prefer "not served", as in the paper
        choice[i, 1:, size:] = take
        np.copyto(kept, served, where=take)
    final = dp[batch]
    m = int(np.argmax(final))  # among equal optima, the one using the least memory
    if final[m] == -np.inf:
        # The paper's code reads an arbitrary cell here; returning None forces the caller to
        # handle "no batch of exactly B requests fits" instead of acting on garbage.
        return None
    mask = np.zeros(n, dtype=np.bool_)
    b = batch
    for i in range(n - 1, -1, -1):
        if choice[i, b, m]:
            mask[i] = True
            b -= 1
            m -= int(length[i])
    return mask, float(final.max())


def solve_exact(
    gain: npt.ArrayLike, length: npt.ArrayLike, capacity: int, batch: int
) -> npt.NDArray[np.bool_] | None:
    """Optimal set of exactly `batch` requests fitting in `capacity` KV blocks, or None.

    Returns a boolean mask rather than indices so it lines up with the caller's request arrays.
    None (not an empty or partial mask) signals infeasibility because a smaller batch is a
    different decision that the caller, not this solver, must weigh.
    """
    lengths = _as_length(length)
    gains = _as_gain(gain, lengths.shape[0], "gain")
    result = _dp(gains, lengths, _as_count(capacity, "capacity"), _as_count(batch, "batch"))
    return None if result is None else result[0]


def solve_exact_all(
    gain_by_b: GainArg,
    length: npt.ArrayLike,
    capacity: int,
    batches: Sequence[int],
) -> tuple[int, npt.NDArray[np.bool_], float] | None:
    """Best (B, mask, objective) over the candidate batch sizes, or None if none is feasible.

    Gains are taken per B because Andes' QoE gain of serving a request depends on how fast the
    batch decodes, which depends on B; hence either a callable B -> gains or a 2-D array whose
    column j belongs to batches[j]. Ties between B go to the smaller batch: it reaches the same
    objective with less decoding work per step.
    """
    lengths = _as_length(length)
    n = lengths.shape[0]
    cap = _as_count(capacity, "capacity")
    sizes = [_as_count(b, "batches") for b in batches]
    if not sizes:
        raise ValueError("batches must contain at least one batch size")
    if callable(gain_by_b):
        columns = [_as_gain(gain_by_b(b), n, f"gain_by_b({b})") for b in sizes]
    else:
        table = np.asarray(gain_by_b, dtype=np.float64)
        if table.shape != (n, len(sizes)):
            raise ValueError(
                f"gain_by_b must have shape ({n}, {len(sizes)}) = (items, batches), "
                f"got {table.shape}"
            )
        columns = [_as_gain(table[:, j], n, f"gain_by_b[:, {j}]") for j in range(len(sizes))]
    best: tuple[int, npt.NDArray[np.bool_], float] | None = None
    for b, gains in zip(sizes, columns, strict=True):
        result = _dp(gains, lengths, cap, b)
        if result is None:
            continue
        mask, value = result
        if best is None or value > best[2] or (value == best[2] and b < best[0]):
            best = (b, mask, value)
    return best
