"""The greedy packer's fast path against the straightforward one, bit for bit.

`greedy_pack` sorts each column starting from the last one's order (policies/pack_kernel.py)
and sums its gains as it goes. The reference below is the plain version: a stable sort down
each column, the take mask, the products summed down the columns. Any difference, even in
the last bit of an objective, could flip the chosen B, so equality is exact; gains and
lengths come from a few values so ties are everywhere, and priorities may also be -0.0, 0.0
or NaN (which a stable sort of the negated priorities puts last, in index order).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kairos.andes.policies import pack_kernel
from kairos.andes.policies.greedy import Packing, greedy_pack
from kairos.andes.policies.scratch import Scratch

KEY_VALUES = (-0.0, 0.0, 0.25, 0.5, 1.0, -1.0, float("nan"), 1e-300)


def _reference_pack(
    gains: np.ndarray,
    priority: np.ndarray,
    lengths: np.ndarray,
    capacity: int,
    batches: np.ndarray,
    skip: bool,
) -> Packing:
    """Algorithm 1 for every B at once, the plain way (stop at the first misfit, or skip it)."""
    n = gains.shape[0]
    order = np.argsort(-priority, axis=0, kind="stable")
    take = np.zeros(order.shape, dtype=bool)
    for j, batch in enumerate(batches):
        used = 0
        for pos, i in enumerate(order[:, j]):
            if take[:, j].sum() == batch:
                break
            if used + lengths[i] <= capacity:
                take[pos, j], used = True, used + lengths[i]
            elif not skip:
                break
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
    odd_keys=st.booleans(),
    skip=st.booleans(),
    shuffled=st.sampled_from([0, pack_kernel.SHUFFLED, 10**9]),
)
def test_fast_greedy_pack_equals_the_plain_one_bit_for_bit(
    n: int,
    nb: int,
    capacity: int,
    seed: int,
    coarse: bool,
    odd_keys: bool,
    skip: bool,
    shuffled: int,
) -> None:
    """`shuffled` 0 heapsorts every column, 10**9 sorts all but the first by insertion."""
    rng = np.random.default_rng(seed)
    if coarse:
        gains = rng.integers(0, 4, (n, nb)) / 4.0
    else:
        gains = np.maximum(rng.normal(size=(n, nb)), 0.0)
    lengths = rng.integers(1, 40, n)
    priority = gains / lengths[:, None]
    if odd_keys:  # signed zeros, NaN and ties that only the index breaks
        priority = rng.choice(KEY_VALUES, size=gains.shape)
    top = int(rng.integers(1, n + 3))  # batch sizes far below N too: only a prefix is read
    batches = np.sort(rng.choice(np.arange(1, top + 1), size=min(nb, top), replace=False))
    gains, priority = gains[:, : len(batches)], priority[:, : len(batches)]
    want = _reference_pack(gains, priority, lengths, capacity, batches, skip)
    scratch = Scratch()
    for _ in range(2):  # a reused scratch gives the same answer
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(pack_kernel, "SHUFFLED", shuffled)
            got = greedy_pack(
                gains, priority, lengths, capacity, batches, skip=skip, scratch=scratch
            )
        assert got.batch == want.batch
        assert np.array_equal(got.selected, want.selected)
        assert got.objective == want.objective
        assert np.array_equal(got.objectives, want.objectives)
