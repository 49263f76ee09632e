"""A stable row-wise argsort, about three times faster than numpy's stable one.

The greedy packer sorts N priorities for each of up to 49 batch sizes on every decision.
numpy's `kind="stable"` argsort is a merge/timsort; its default argsort dispatches to a SIMD
sort (x86-simd-sort on AVX-512/AVX2 machines) that is much faster but does not keep equal
keys in index order. Ties are rare among positive priorities but common among zeros (users
with buffered text all have gain 0), and the packer's decisions depend on their order, so
the fast sort is followed by a fix-up that puts every run of equal keys back in index order.
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
    rows = np.flatnonzero(tied.any(axis=1))
    if rows.size:
        # number each run of equal keys (runs stay where the sort put them), then order the
        # positions by (run, index): within a run, by index; the runs keep their places
        run = np.zeros((rows.size, n), dtype=np.int64)
        np.cumsum(~tied[rows], axis=1, out=run[:, 1:])
        order[rows] = np.sort(run * n + order[rows], axis=1) % n
    return order
