"""Andes' packing with the exact DP (Algorithm 2) instead of the greedy packer (E6).

The DP's cost grows with the memory axis, so memory is quantised to about `memory_units`
units; each request's size is rounded up, so the DP's choice always fits for real.
"""

from __future__ import annotations

import numpy as np

from kairos.andes.policies.exact import solve_exact_all
from kairos.andes.policies.greedy import Packing


def dp_pack(
    value: np.ndarray, blocks: np.ndarray, capacity: int, batches: np.ndarray, memory_units: int
) -> Packing:
    """The best selection over the candidate `batches` (values `value[:, j]` for batch j),
    sizes `blocks` within `capacity` blocks, solved exactly on the quantised sizes."""
    unit = max(1, -(-capacity // memory_units))
    q_len = -(-blocks // unit)  # round sizes up: the DP's choice always fits for real
    q_cap = capacity // unit
    # rounding shrinks what fits: only ask for batch sizes the quantised sizes allow
    fits = int(np.searchsorted(np.cumsum(np.sort(q_len)), q_cap, side="right"))
    feasible = [int(b) for b in batches if b <= fits] or ([fits] if fits > 0 else [])
    if not feasible:
        return Packing(0, np.zeros(len(blocks), dtype=bool), 0.0, np.zeros(len(batches)))
    cols = [int(np.flatnonzero(batches == b)[0]) if b in batches else -1 for b in feasible]
    gains = np.stack([value[:, c] if c >= 0 else value[:, -1] for c in cols], axis=1)
    best = solve_exact_all(gains, q_len, q_cap, feasible)
    if best is None:
        return Packing(0, np.zeros(len(blocks), dtype=bool), 0.0, np.zeros(len(batches)))
    b, mask, obj = best
    return Packing(b, mask, obj, np.zeros(len(batches)))
