"""The greedy packer's fast path against the straightforward one, bit for bit.

`greedy_pack` sorts with `stable_argsort_rows` (a SIMD sort plus a tie fix-up) and reads each
B's objective off a running sum of its prefix. The reference below is the plain version: a
stable sort down each column, the take mask, the products summed down the columns. Any
difference, even in the last bit of an objective, could flip the chosen B, so equality is
exact; gains and lengths come from a few values so ties are everywhere.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kairos.andes.policies.greedy import Packing, greedy_pack
from kairos.andes.policies.rowsort import stable_argsort_rows
from kairos.andes.policies.scratch import Scratch

KEY_VALUES = (-0.0, 0.0, 0.25, 0.5, 1.0, -1.0, float("nan"), 1e-300)


@settings(max_examples=300, deadline=None)
@given(
    m=st.integers(1, 6),
    n=st.integers(0, 70),
    seed=st.integers(0, 2**32 - 1),
    continuous=st.booleans(),
)
def test_stable_argsort_rows_equals_numpys_stable_argsort(
    m: int, n: int, seed: int, continuous: bool
) -> None:
    rng = np.random.default_rng(seed)
    keys = rng.normal(size=(m, n)) if continuous else rng.choice(KEY_VALUES, size=(m, n))
    assert np.array_equal(stable_argsort_rows(keys), np.argsort(keys, axis=1, kind="stable"))


def _reference_pack(
    gains: np.ndarray, priority: np.ndarray, lengths: np.ndarray, capacity: int, batches: np.ndarray
) -> Packing:
    """Algorithm 1 for every B at once, the plain way (stop at the first misfit)."""
    n = gains.shape[0]
    order = np.argsort(-priority, axis=0, kind="stable")
    fits = np.cumsum(lengths[order], axis=0) <= capacity
    first_misfit = np.where(fits.all(axis=0), n, np.argmin(fits, axis=0))
    take = np.arange(n)[:, None] < np.minimum(first_misfit, batches)[None, :]
    objectives = (np.take_along_axis(gains, order, axis=0) * take).sum(axis=0)
    best = int(np.flatnonzero(objectives >= objectives.max() - 1e-12)[-1])
    selected = np.zeros(n, dtype=bool)
    selected[order[take[:, best], best]] = True
    return Packing(int(batches[best]), selected, float(objectives[best]), objectives)


@settings(max_examples=300, deadline=None)
@given(
    n=st.integers(1, 300),
    nb=st.integers(1, 12),
    capacity=st.integers(1, 3000),
    seed=st.integers(0, 2**32 - 1),
    coarse=st.booleans(),
)
def test_fast_greedy_pack_equals_the_plain_one_bit_for_bit(
    n: int, nb: int, capacity: int, seed: int, coarse: bool
) -> None:
    rng = np.random.default_rng(seed)
    if coarse:
        gains = rng.integers(0, 4, (n, nb)) / 4.0
    else:
        gains = np.maximum(rng.normal(size=(n, nb)), 0.0)
    lengths = rng.integers(1, 40, n)
    priority = gains / lengths[:, None]
    top = int(rng.integers(1, n + 3))  # batch sizes far below N too: only a prefix is read
    batches = np.sort(rng.choice(np.arange(1, top + 1), size=min(nb, top), replace=False))
    gains, priority = gains[:, : len(batches)], priority[:, : len(batches)]
    want = _reference_pack(gains, priority, lengths, capacity, batches)
    scratch = Scratch()
    for _ in range(2):  # a reused scratch gives the same answer
        got = greedy_pack(gains, priority, lengths, capacity, batches, scratch=scratch)
        assert got.batch == want.batch
        assert np.array_equal(got.selected, want.selected)
        assert got.objective == want.objective
        assert np.array_equal(got.objectives, want.objectives)
