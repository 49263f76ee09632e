"""Small pieces the baselines share: the pooled mean of a profile and batch-size validation."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from kairos.orloj.policy import ProfileSnapshot

DEFAULT_BATCH_SIZES: tuple[int, ...] = (1, 2, 4, 8, 16)  # Clockwork's compiled batch sizes


def pooled_mean(snapshot: ProfileSnapshot) -> float | None:
    """Mean solo latency over every application's samples (None if the snapshot is empty).

    The point-estimate baselines plan with one number for the whole model: they do not know
    about applications, which is exactly what Orloj's per-application tracking adds."""
    values = [v for samples in snapshot.samples.values() for v in samples]
    return float(np.mean(values)) if values else None


def batch_sizes(sizes: Sequence[int]) -> tuple[int, ...]:
    """Sorted, distinct, positive batch sizes that include 1 (so any single request can run)."""
    out = tuple(sorted(set(int(s) for s in sizes)))
    if not out or out[0] != 1:
        raise ValueError(f"batch sizes must be positive and include 1, got {list(sizes)}")
    return out
