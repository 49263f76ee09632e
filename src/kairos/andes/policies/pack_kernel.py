"""Algorithm 1's packing for every candidate B, compiled: each column's priority order, then
its prefix taken while count and memory allow.

Sorting all 49 columns of N = 1000 priorities was a third of a decision. Neighbouring batch
sizes rank requests almost alike (on the benchmark's N = 1000 grid, a median of 363 pairs out
of ~500,000 swap between adjacent columns), so each column is sorted by insertion starting
from the previous column's order, which costs N plus the number of swapped pairs. The first
column, and any column whose insertion passes `SHUFFLED` x N moves (a workload where the
order changes wholesale with B), is heapsorted instead. Compiled with numba (cached on disk):
both are loops of comparisons.

The order is that of a stable descending sort: higher priority first, equal priorities
(-0.0 and 0.0 among them) by request index, NaN after every number, also by index. It is a
total order, so every route to it gives the same permutation. Objectives are summed in that
order, one addition at a time, as a sum down the columns of the sorted grid is;
tests/andes/test_greedy_fast.py checks selections and objectives against the plain packer,
bit for bit.
"""

from __future__ import annotations

import numpy as np
from numba import njit

SHUFFLED = 8  # insertion moves per element beyond which a column is heapsorted


@njit(cache=True, nogil=True, inline="always")
def _before(key_a: float, tie_a: int, key_b: float, tie_b: int) -> bool:
    return key_a > key_b or (key_a == key_b and tie_a < tie_b)


@njit(cache=True, nogil=True)
def _sift_down(keys: np.ndarray, ties: np.ndarray, root: int, end: int) -> None:
    """Min-heap by `_before` (the element that comes last in the order at the root)."""
    key, tie = keys[root], ties[root]
    i = root
    while True:
        child = 2 * i + 1
        if child >= end:
            break
        if child + 1 < end and _before(keys[child], ties[child], keys[child + 1], ties[child + 1]):
            child += 1
        if not _before(key, tie, keys[child], ties[child]):
            break
        keys[i], ties[i] = keys[child], ties[child]
        i = child
    keys[i], ties[i] = key, tie


@njit(cache=True, nogil=True)
def _heapsort(keys: np.ndarray, ties: np.ndarray) -> None:
    """In place: the element that comes last goes to the end, one at a time."""
    n = keys.shape[0]
    for root in range(n // 2 - 1, -1, -1):
        _sift_down(keys, ties, root, n)
    for end in range(n - 1, 0, -1):
        keys[0], keys[end] = keys[end], keys[0]
        ties[0], ties[end] = ties[end], ties[0]
        _sift_down(keys, ties, 0, end)


@njit(cache=True, nogil=True)
def _insertion_sort(keys: np.ndarray, ties: np.ndarray, budget: int) -> bool:
    """In place; False (the arrays still a permutation) once more than `budget` moves."""
    moves = 0
    for pos in range(1, keys.shape[0]):
        key, tie = keys[pos], ties[pos]
        q = pos
        while q > 0 and _before(key, tie, keys[q - 1], ties[q - 1]):
            keys[q], ties[q] = keys[q - 1], ties[q - 1]
            q -= 1
        keys[q], ties[q] = key, tie
        moves += pos - q
        if moves > budget:
            return False
    return True


@njit(cache=True, nogil=True)
def pack_columns(
    gains: np.ndarray,
    priority: np.ndarray,
    lengths: np.ndarray,
    capacity: int,
    batches: np.ndarray,
    skip: bool,
    shuffled: int,
    picks: np.ndarray,
    counts: np.ndarray,
    objectives: np.ndarray,
) -> None:
    """For column j (batch size `batches[j]`): the requests taken, in order, into
    `picks[j, :counts[j]]` and the sum of their gains into `objectives[j]`. `skip`: pass over
    a request that does not fit and go on (else stop at it). `shuffled`: `SHUFFLED` (a
    parameter so that tests can force either sort). `picks` needs min(N, max(batches))
    columns."""
    n = gains.shape[0]
    keys = np.empty(n, dtype=np.float64)
    ties = np.arange(n)  # request i as i, or as n + i when its priority is NaN
    for j in range(gains.shape[1]):
        for pos in range(n):
            i = ties[pos] - n if ties[pos] >= n else ties[pos]
            key = priority[i, j]
            keys[pos], ties[pos] = (-np.inf, n + i) if key != key else (key, i)
        if j == 0 or not _insertion_sort(keys, ties, shuffled * n):
            _heapsort(keys, ties)
        count, used, total = 0, lengths[0] * 0, 0.0
        for pos in range(n):
            if count >= batches[j]:
                break
            i = ties[pos] - n if ties[pos] >= n else ties[pos]
            if used + lengths[i] <= capacity:
                used += lengths[i]
                picks[j, count] = i
                count += 1
                total += gains[i, j]
            elif not skip:
                break
        counts[j] = count
        objectives[j] = total
