"""Summary statistics used by every report: mean, spread, percentiles and the empirical CDF."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel

PERCENTILES = (50, 90, 95, 99)


class Summary(BaseModel):
    n: int
    mean: float
    std: float
    min: float
    p50: float
    p90: float
    p95: float
    p99: float
    max: float


def summarize(values: Sequence[float] | np.ndarray) -> Summary:
    """Summary of the finite values; an empty input gives n=0 and NaNs."""
    x = np.asarray(values, dtype=np.float64)
    x = x[np.isfinite(x)]
    if x.size == 0:
        nan = float("nan")
        return Summary(n=0, mean=nan, std=nan, min=nan, p50=nan, p90=nan, p95=nan, p99=nan, max=nan)
    p50, p90, p95, p99 = (float(v) for v in np.percentile(x, PERCENTILES))
    return Summary(
        n=int(x.size),
        mean=float(x.mean()),
        std=float(x.std()),
        min=float(x.min()),
        p50=p50,
        p90=p90,
        p95=p95,
        p99=p99,
        max=float(x.max()),
    )


def cdf(values: Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted values and the fraction of samples at or below each (a right-continuous step)."""
    x = np.sort(np.asarray(values, dtype=np.float64))
    return x, np.arange(1, x.size + 1) / max(x.size, 1)
