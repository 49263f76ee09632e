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


def admits_queue_between_solves(objective: Objective) -> bool:
    """Whether paced Andes may admit the whole queue between solves under `objective`, or
    only what the last solve chose (`PacingConfig.between_solves`).

    `perfect` leaves requests waiting on purpose: serving one it cannot keep perfect costs
    the ones it can, so admitting the queue undid the objective (E10 quick, intensity 2.4,
    seeds 0-2: share at perfect QoE 0.087 / 0.126 / 0.164 with the queue admitted, 0.454 /
    0.605 / 0.684 with the solve's choice only, unpaced 0.590 / 0.624 / 0.634). `average`
    values every served request, and `max_min` did better on its own measure with the queue
    admitted (minimum QoE 0.024 / 0.029 / 0.024 against 0.012 / 0.010 / 0.017 with the
    solve's choice only), so both keep it."""
    return objective != "perfect"
