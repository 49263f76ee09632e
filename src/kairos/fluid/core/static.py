"""StaticFluid (Algorithm 3.1): water-filling widths for a newly submitted TrialGroup.

Each trial gets a share of the idle GPUs proportional to its remaining work, so that with
perfect scaling every trial would end at the same water level `H = S / n`; the share is rounded
down to something a GPU can realize (whole GPUs up to `d`, or one `1/c` packing slot).
"""

from __future__ import annotations

from collections.abc import Sequence

from kairos.fluid.core.model import Limits, PlanTrial, Width, water_fill


def by_work(trials: Sequence[PlanTrial]) -> list[PlanTrial]:
    """Longest remaining work first (ties by id, so plans are deterministic)."""
    return sorted(trials, key=lambda t: (-t.h1, t.trial_id))


def static_fluid(trials: Sequence[PlanTrial], n_idle: int, limits: Limits) -> dict[str, Width]:
    """Widths for `trials` over `n_idle` GPUs, in placement order (longest work first).

    The widths may sum to more than `n_idle` (many `1/c` trials: the surplus queues) or to
    less (flooring: the rest idles until DynamicFluid reclaims it); neither is redistributed.
    """
    if n_idle < 0:
        raise ValueError(f"n_idle must be >= 0, got {n_idle}")
    ordered = by_work(trials)
    total = sum(t.h1 for t in ordered)
    n = max(n_idle, 1)  # no idle GPU: every trial takes a slot and waits in the queue
    return {t.trial_id: water_fill(t.h1, total, n, limits) for t in ordered}
