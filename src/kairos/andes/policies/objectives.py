"""The knapsack's item values under each objective of the paper's appendix A.

`average` (the default) values a request by its QoE gain from being served; `max_min`
values raising the worst user's QoE; `perfect` values keeping a user's QoE at 1. The solver
packs whichever it is given, so an objective is only a different value grid.
"""

from __future__ import annotations

from typing import Literal

import numpy as np

from kairos.andes.policies.snapshot import Snapshot

Objective = Literal["average", "max_min", "perfect"]


def objective_value(
    objective: Objective,
    snap: Snapshot,
    now: float,
    gain: np.ndarray,
    q_serve: np.ndarray,
    q_wait: np.ndarray,
) -> np.ndarray:
    """Item values (requests x batch sizes) for the knapsack under `objective`. `q_wait` is
    NaN where waiting costs nothing (the user's buffered text covers the horizon)."""
    if objective == "average":
        return gain
    q_now = np.array([r.qoe.qoe_at(now) for r in snap.requests])
    buffered = np.isnan(q_wait)  # wait == serve: the horizon is covered already
    if objective == "max_min":
        qw = np.where(buffered, q_now, q_wait)
        value = np.maximum(q_now.min() - qw, 0.0)
        return np.broadcast_to(value[:, None], gain.shape).copy()
    perfect_now = q_now >= 1.0 - 1e-9
    qs = np.where(np.isnan(q_serve), 1.0, q_serve)
    qw = np.where(buffered, 1.0, q_wait)
    serve_ok = (qs >= 1.0 - 1e-9).astype(float)
    wait_ok = (qw >= 1.0 - 1e-9).astype(float)[:, None]
    return (serve_ok - wait_ok) * perfect_now[:, None]
