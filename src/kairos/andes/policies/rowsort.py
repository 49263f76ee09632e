"""A stable row-wise argsort, about three times faster than numpy's stable one.

The greedy packer sorts N priorities for each of up to 49 batch sizes on every decision.
numpy's `kind="stable"` argsort is a merge/timsort; its default argsort dispatches to a SIMD
sort (x86-simd-sort on AVX-512/AVX2 machines) that is much faster but does not keep equal
keys in index order. Ties are rare among positive priorities but common among zeros (users
with buffered text all have gain 0), and the packer's decisions depend on their order, so
the fast sort is followed by a fix-up that puts every run of equal keys back in index order
(touching only the positions inside such runs).
The result equals `np.argsort(keys, axis=1, kind="stable")` exactly (a property test checks).
"""

from __future__ import annotations

import numpy as np


def stable_argsort_rows(keys: np.ndarray) -> np.ndarray:
    """Row-wise ascending argsort of a 2-D float array, equal keys in index order (NaN last)."""
    n = keys.shape[1]
    order = np.argsort(keys, axis=1)
    if n < 2:
        return order
    ranked = np.take_along_axis(keys, order, axis=1)
    tied = ranked[:, 1:] == ranked[:, :-1]
    if np.isnan(ranked[:, -1]).any():  # NaNs sort last; as a stable sort does, keep them in order
        nan = np.isnan(ranked)
        tied |= nan[:, 1:] & nan[:, :-1]
    if tied.any():
        # only the positions inside runs of equal keys move: number the runs in row-major
        # order (they never straddle rows) and sort those positions by (run, index)
        in_run = np.zeros(keys.shape, dtype=bool)
        in_run[:, 1:] = tied
        in_run[:, :-1] |= tied
        flat = np.flatnonzero(in_run)
        continues = np.zeros(keys.shape, dtype=bool)
        continues[:, 1:] = tied  # tied with the position before it: the same run
        run = np.cumsum(~continues.ravel()[flat])
        moved = order.ravel()[flat]
        order.ravel()[flat] = np.sort(run * n + moved) % n
    return order
