"""Paired runs: each seed runs the same tuning job with and without Fluid (same trials, same
noise), and a cell reports the per-seed ratios with their geometric mean and 95% CI."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pydantic import BaseModel, Field

from kairos.fluid.simulator import SimResult, simulate
from kairos.fluid.tuner import Tuner
from kairos.fluid.tuners import make_tuner
from kairos.fluid.workloads import Workload
from kairos.report.stats import mean_ci, paired_ratio

ASYNC = ("asha", "bohb")


class SeedsConfig(BaseModel):
    seeds: int = Field(10, ge=1, le=1000, description="paired seeds per cell")
    first_seed: int = 0


def max_t_for(tuner: str) -> int:
    return 1000 if tuner in ASYNC else 81


def tuner_factory(name: str, dims: int, concurrency: int, **kw: Any) -> Callable[[int], Tuner]:
    return lambda seed: make_tuner(name, dims, seed, max_t_for(name), concurrency, **kw)


def paired_cell(
    seeds: range,
    baseline: Callable[[int], SimResult],
    ours: Callable[[int], SimResult],
) -> dict[str, Any]:
    """One table cell from a run per seed on each side: speed-up (baseline makespan / ours)
    with its CI, the GPU-seconds ratio, and both utilisations."""
    base = [baseline(s) for s in seeds]
    mine = [ours(s) for s in seeds]
    speed = paired_ratio([b.makespan for b in base], [m.makespan for m in mine])
    cost = paired_ratio([b.gpu_seconds for b in base], [m.gpu_seconds for m in mine])
    u_base, u_base_ci = mean_ci([b.utilisation for b in base])
    u_ours, u_ours_ci = mean_ci([m.utilisation for m in mine])
    return {
        "seeds": speed.n,
        "speedup": round(speed.geo_mean, 3),
        "speedup_lo": round(speed.lo, 3),
        "speedup_hi": round(speed.hi, 3),
        "fluid_faster_on": speed.wins,
        "gpu_seconds_ratio": round(cost.geo_mean, 3),
        "util_base": round(u_base, 3),
        "util_fluid": round(u_ours, 3),
        "util_ci": round(max(u_base_ci, u_ours_ci), 3),
        "reached_base": sum(b.time_to_target is not None for b in base),
        "reached_fluid": sum(m.time_to_target is not None for m in mine),
        "makespan_base_h": round(sum(b.makespan for b in base) / len(base) / 3600, 3),
        "makespan_fluid_h": round(sum(m.makespan for m in mine) / len(mine) / 3600, 3),
        "c": mine[0].limits.c,
        "d": mine[0].limits.d,
    }


def run(
    workload: Workload,
    tuner: str,
    n_gpus: int,
    fluid: bool,
    concurrency: int | None = None,
    tuner_kw: dict[str, Any] | None = None,
    **kw: Any,
) -> Callable[[int], SimResult]:
    """One side of a paired cell. Without Fluid the rolling groups' concurrency is the GPU
    count (what every tuning library does); with Fluid it is `concurrency` (its K)."""
    k = concurrency if fluid and concurrency else n_gpus
    make = tuner_factory(tuner, workload.dims, k, **(tuner_kw or {}))
    return lambda seed: simulate(workload, make(seed), n_gpus, fluid, seed=seed, **kw)
