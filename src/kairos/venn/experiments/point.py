"""One simulation point: a workload, a fleet and a policy; what every Venn sweep runs.

`run_point` is module-level and deterministic given its config (the seed is in it), so sweeps
run it in parallel and cache it, and experiments that need the same point share the result:
Tables 4.1, 4.2 and 4.3 come from the same runs.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from kairos.sim import RngStreams
from kairos.venn.fleet import Fleet
from kairos.venn.policies import make_policy
from kairos.venn.simulator import SimConfig, simulate
from kairos.venn.workloads import FleetConfig, WorkloadConfig, make_fleet, make_jobs


class VennPoint(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    policy: str = "venn"
    venn: dict[str, Any] = Field(default_factory=dict)  # VennConfig overrides
    workload: WorkloadConfig = WorkloadConfig()
    fleet: FleetConfig = FleetConfig()
    sim: SimConfig = SimConfig()
    seed: int = Field(1, ge=0)


@lru_cache(maxsize=4)
def _fleet(cfg: FleetConfig, seed: int) -> Fleet:
    return make_fleet(cfg, seed)


@lru_cache(maxsize=4)
def fleet_facts(cfg: FleetConfig, seed: int) -> dict[str, Any]:
    """Each class's mean eligible check-in rate and the fleet's p95 response time (what a
    fair-share estimate needs)."""
    fleet = _fleet(cfg, seed)
    per_s = len(fleet.population) / 86_400.0
    rates = {r.name: float(r.mask(fleet.population).mean()) * per_s for r in fleet.requirements}
    p95 = float(np.percentile(fleet.chunk(0).response_s, 95))
    return {"class_rates": rates, "p95_response_s": p95}


def run_point(p: VennPoint) -> dict[str, Any]:
    """Simulate the point; the summary plus every job's row (for the per-job breakdowns)."""
    streams = RngStreams(p.seed)
    jobs = make_jobs(p.workload, streams.stream("jobs"))
    policy = make_policy(p.policy, streams.stream(f"policy:{p.policy}"), **p.venn)
    res = simulate(policy, jobs, _fleet(p.fleet, p.seed), p.sim)
    out: dict[str, Any] = res.summary()
    out["policy"] = p.policy
    out["jobs_table"] = res.job_rows()
    out |= fleet_facts(p.fleet, p.seed)
    return out


def speedup(base: float, value: float) -> float:
    return base / value if value > 0 and np.isfinite(value) else float("nan")
