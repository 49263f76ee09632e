"""Paired comparison of two arms over the same seeds (spec 4 "Metrics", 6).

Per seed: the target is the highest mean per-client accuracy the baseline reaches (the paper's
"highest accuracy the YoGi baseline reaches"); the speed-up is the baseline's simulated time to
that target over the candidate's, and the resource ratio the same with participant-rounds.
Across seeds: differences of final mean, p10 and variance with a 95% CI (`mean_ci` of the
per-seed differences), and ratios as geometric means with a 95% CI (`paired_ratio`) over the
seeds where the candidate reached the target (how many did is reported beside).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from kairos.report.stats import mean_ci, paired_ratio

Run = Mapping[str, Any]


def first_time(run: Run, target: float, column: str = "curve_time") -> float | None:
    """The run's `column` at its first evaluation with mean accuracy >= target."""
    mean = np.asarray(run["curve_mean"])
    hit = np.flatnonzero(mean >= target - 1e-12)
    return None if hit.size == 0 else float(run[column][int(hit[0])])


def _ratio(pairs: Sequence[tuple[float | None, float | None]], key: str) -> dict[str, Any]:
    ok = [(b, c) for b, c in pairs if b is not None and c is not None and b > 0 and c > 0]
    out: dict[str, Any] = {f"{key}_reached": f"{len(ok)}/{len(pairs)}"}
    if not ok:
        return out | {key: float("nan"), f"{key}_lo": float("nan"), f"{key}_hi": float("nan")}
    r = paired_ratio([b for b, _ in ok], [c for _, c in ok])
    lo, hi = round(r.lo, 3), round(r.hi, 3)
    return out | {key: round(r.geo_mean, 3), f"{key}_lo": lo, f"{key}_hi": hi}


def _diff(
    base: Sequence[Run], cand: Sequence[Run], key: str, scale: float, higher: bool = True
) -> dict[str, Any]:
    """Per-seed differences candidate - baseline (scaled); wins: seeds where the candidate is
    better (higher, or lower when `higher` is False)."""
    d = [scale * (float(c[key]) - float(b[key])) for b, c in zip(base, cand, strict=True)]
    mean, ci = mean_ci(d)
    return {
        f"d_{key}": round(mean, 3),
        f"d_{key}_ci95": round(ci, 3),
        f"d_{key}_wins": sum((x > 0) if higher else (x < 0) for x in d),
    }


def compare(base: Sequence[Run], cand: Sequence[Run]) -> dict[str, Any]:
    """Candidate vs baseline, seed by seed (runs in the same seed order)."""
    if [b["seed"] for b in base] != [c["seed"] for c in cand]:
        raise ValueError("paired runs must have the same seeds in the same order")
    times: list[tuple[float | None, float | None]] = []
    jobs: list[tuple[float | None, float | None]] = []
    for b, c in zip(base, cand, strict=True):
        target = float(b["best_mean"])
        times.append((first_time(b, target), first_time(c, target)))
        col = "curve_participant_rounds"
        jobs.append((first_time(b, target, col), first_time(c, target, col)))
    row: dict[str, Any] = {"seeds": len(base)}
    for key in ("final_mean", "final_p10", "final_variance"):
        row[f"base_{key}"] = round(float(np.mean([float(b[key]) for b in base])), 4)
        row[key] = round(float(np.mean([float(c[key]) for c in cand])), 4)
    row |= _diff(base, cand, "final_mean", 100.0)  # percentage points
    row |= _diff(base, cand, "final_p10", 100.0)
    row |= _diff(base, cand, "final_variance", 1e4, higher=False)  # percent^2, as Table 3.4
    var = [
        float(c["final_variance"]) / float(b["final_variance"]) - 1.0
        for b, c in zip(base, cand, strict=True)
        if float(b["final_variance"]) > 0
    ]
    row["variance_change"] = round(float(np.mean(var)), 3) if var else float("nan")
    # candidate / baseline variance, paired in log space: a ratio's CI, unlike the difference
    # in percent^2, does not let one seed with a large variance dominate
    pairs = [
        (float(c["final_variance"]), float(b["final_variance"]))
        for b, c in zip(base, cand, strict=True)
    ]
    row |= _ratio(pairs, "variance_ratio")
    row |= _ratio(times, "speedup")
    row |= _ratio(jobs, "resource_ratio")
    return row


def seed_spread(runs: Sequence[Run], key: str = "final_mean") -> float:
    """Standard deviation of a metric across seeds (what tolerances are set from)."""
    values = [float(r[key]) for r in runs]
    return float(np.std(values, ddof=1)) if len(values) > 1 else float("nan")
