"""Summary statistics used by every report: mean, spread, percentiles, a confidence interval over
seeds, and the empirical CDF.

`percentile_summary` is the one place a list of latencies, QoE values or scheduler times becomes
`mean`/`std`/`p50`/`p99`: the bench report, the Orloj load generator and server, and the Andes
`/metrics` summary all read it, so they agree on what a percentile is (numpy's linear
interpolation) and on what is left out (non-finite values: a failed request's NaN latency).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel
from scipy import stats as sps

PERCENTILES = (50, 90, 95, 99)


def finite(values: Sequence[float] | np.ndarray) -> np.ndarray:
    """The finite values as a float64 array (NaN and infinities dropped)."""
    x = np.asarray(values, dtype=np.float64).ravel()
    return x[np.isfinite(x)]


def percentile_key(p: float) -> str:
    """`p50`, `p99`, `p99.9`: the column name of a percentile."""
    return f"p{p:g}"


def percentile_summary(
    values: Sequence[float] | np.ndarray,
    percentiles: Sequence[float] = (50, 90, 99),
    *,
    empty: float = math.nan,
) -> dict[str, float]:
    """`n`, `mean`, `std` (population) and one `p<k>` per percentile over the finite values.

    With no finite value, `n` is 0 and every other entry is `empty` (NaN by default; a counter
    that reads 0 until there is data passes `empty=0.0`).
    """
    x = finite(values)
    keys = ["mean", "std", *(percentile_key(p) for p in percentiles)]
    if x.size == 0:
        return {"n": 0, **dict.fromkeys(keys, empty)}
    qs = np.percentile(x, list(percentiles)) if percentiles else []
    return {
        "n": int(x.size),
        "mean": float(x.mean()),
        "std": float(x.std()),
        **{percentile_key(p): float(q) for p, q in zip(percentiles, qs, strict=True)},
    }


def mean_ci(values: Sequence[float] | np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """The mean and the half-width of its `level` confidence interval (Student's t with n-1
    degrees of freedom over the sample standard deviation): the spread across seeds.

    Unlike `percentile_summary`, nothing is dropped: a seed whose metric is NaN or infinite (a
    job that never finished) makes the mean so, rather than vanishing from it. The half-width
    is NaN for fewer than two values (one seed says nothing about the spread; 0 would claim a
    certainty the run does not have) or any non-finite one.
    """
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1), got {level}")
    x = np.asarray(values, dtype=np.float64).ravel()
    if x.size == 0:
        return math.nan, math.nan
    mean = float(x.mean())
    if x.size < 2 or not np.all(np.isfinite(x)):
        return mean, math.nan
    sem = float(x.std(ddof=1)) / math.sqrt(x.size)
    return mean, float(sps.t.ppf(0.5 + level / 2, x.size - 1)) * sem


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
    x = finite(values)
    s = percentile_summary(x, PERCENTILES)
    lo, hi = (float(x.min()), float(x.max())) if x.size else (math.nan, math.nan)
    return Summary.model_validate({**s, "min": lo, "max": hi})


def cdf(values: Sequence[float] | np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted values and the fraction of samples at or below each (a right-continuous step)."""
    x = np.sort(np.asarray(values, dtype=np.float64))
    return x, np.arange(1, x.size + 1) / max(x.size, 1)


class PairedRatio(BaseModel):
    """Per-seed ratios `baseline / ours` on identical inputs, and their geometric mean with a
    `level` confidence interval (Student's t on the logs). `n` seeds; `wins` where ours was
    strictly better (ratio > 1). A CI containing 1 means the seeds cannot tell the two apart."""

    n: int
    geo_mean: float
    lo: float
    hi: float
    wins: int
    ratios: list[float]

    def resolves(self) -> bool:
        """Whether the interval excludes 1 (a difference, not a tie, at this many seeds)."""
        return bool(self.lo > 1 or self.hi < 1)

    def can_resolve(self, effect: float = 1.05) -> bool:
        """Whether these seeds could tell a ratio of `effect` from 1: the interval, centred on
        1, would exclude `effect` (its half-width on the log scale is below `log(effect)`).

        A table run on too few seeds says so instead of calling an overlap a tie; one seed
        (no interval) never can."""
        if not (self.n > 1 and math.isfinite(self.lo) and math.isfinite(self.hi)):
            return False
        return bool(math.log(self.hi / self.lo) / 2 < math.log(effect))

    def columns(self, prefix: str) -> dict[str, float | int]:
        """The summary as flat table columns `<prefix>`, `<prefix>_lo`, `<prefix>_hi`,
        `<prefix>_wins` and `seeds`: what every per-seed paired table prints."""
        return {
            prefix: self.geo_mean,
            f"{prefix}_lo": self.lo,
            f"{prefix}_hi": self.hi,
            f"{prefix}_wins": self.wins,
            "seeds": self.n,
        }


def paired_ratio(
    baseline: Sequence[float], ours: Sequence[float], level: float = 0.95
) -> PairedRatio:
    """Summarise per-seed `baseline[i] / ours[i]` (e.g. makespans: > 1 means ours is faster).
    Pairs must line up seed by seed; a non-positive or non-finite value is an error, not a
    silently dropped seed."""
    b = np.asarray(baseline, dtype=np.float64)
    o = np.asarray(ours, dtype=np.float64)
    if b.shape != o.shape or b.ndim != 1:
        raise ValueError(f"paired values must be two equal-length lists, got {b.shape}, {o.shape}")
    if not (np.all(np.isfinite(b)) and np.all(np.isfinite(o)) and np.all(b > 0) and np.all(o > 0)):
        raise ValueError("paired ratios need finite positive values on both sides")
    ratios = b / o
    mean_log, half = mean_ci(np.log(ratios), level)
    return PairedRatio(
        n=int(ratios.size),
        geo_mean=math.exp(mean_log) if ratios.size else math.nan,
        lo=math.exp(mean_log - half) if ratios.size > 1 else math.nan,
        hi=math.exp(mean_log + half) if ratios.size > 1 else math.nan,
        wins=int(np.sum(ratios > 1)),
        ratios=[float(r) for r in ratios],
    )
