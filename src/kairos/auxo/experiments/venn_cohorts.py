"""Cohorts as jobs: Auxo's cohorts registered as Venn jobs, or sharing one job.

One Auxo application (P_total devices a round, R rounds, binary splits at the plan's cohort-
local rounds) arrives on Venn's scaled fleet beside a trace of other FL jobs
(`kairos.venn.workloads`), and is deployed either as one Venn job whose devices all cohorts
share, or with each cohort as its own Venn job that registers when its parent splits
(`kairos.auxo.venn_jobs`). Both deployments see the same fleet, check-ins, response times,
other jobs and policy seed, so they are paired seed by seed. Reported per policy: when Auxo
finished (hours from its arrival) under each deployment and the paired ratio one_job /
cohort_jobs (> 1: cohorts as jobs finish sooner), and the other jobs' mean JCT under each and
its paired ratio (> 1: the other jobs finish sooner when Auxo's cohorts are separate jobs).

The default plan splits the root at 10% of the rounds and both children at 20% (four leaves),
near where E1's adaptive splits land. The dissertation has no such experiment; it runs Auxo's
cohorts as separate FedScale processes without a shared resource manager.
"""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from kairos.auxo.venn_jobs import AuxoApp, app_finish, others_jct, run_deployment, with_cohorts
from kairos.experiments import ExperimentContext, experiment
from kairos.experiments.publish import publish
from kairos.experiments.seeds import Cell, seed_runs
from kairos.fl.timing import RoundRule
from kairos.report.stats import mean_ci, paired_ratio
from kairos.sim import RngStreams
from kairos.venn.policies import make_policy
from kairos.venn.simulator import SimConfig
from kairos.venn.workloads import (
    GENERAL,
    FleetConfig,
    WorkloadConfig,
    deadline_for,
    make_fleet,
    make_jobs,
)

DeployMode = Literal["one_job", "cohort_jobs"]


class VennCohortPoint(BaseModel):
    """One deployment of one seed under one policy."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    seed: int = 1
    mode: DeployMode = "cohort_jobs"
    policy: str = "venn"
    p_total: int = Field(40, ge=4)
    rounds: int = Field(100, ge=3)
    splits: dict[str, int] = Field(default_factory=lambda: {"0": 10, "0.0": 20, "0.1": 20})
    arrival_s: float = Field(3600.0, ge=0)
    overcommit: float = Field(1.3, ge=1)
    workload: WorkloadConfig = WorkloadConfig(jobs=20)
    fleet: FleetConfig = FleetConfig()
    sim: SimConfig = SimConfig()


def run_venn_point(p: VennCohortPoint) -> dict[str, Any]:
    """Simulate the point (module level, deterministic: the sweep runs and caches it)."""
    streams = RngStreams(p.seed)
    others = make_jobs(p.workload, streams.stream("jobs"))
    rule = RoundRule(deadline_s=deadline_for(10 * p.p_total), overcommit=p.overcommit)
    app = AuxoApp(p.p_total, p.rounds, dict(p.splits), GENERAL, rule, arrival=p.arrival_s)
    fleet = with_cohorts(make_fleet(p.fleet, p.seed), app, salt=p.seed)
    policy = make_policy(p.policy, streams.stream(f"policy:{p.policy}"))
    res = run_deployment(p.mode, app, others, fleet, policy, p.sim, salt=p.seed)
    jct = others_jct(res)
    return {
        "seed": p.seed,
        "auxo_hours": (app_finish(res) - p.arrival_s) / 3600.0,
        "others_mean_jct_h": float(np.mean(jct)) / 3600.0,
        "others_unfinished": int(np.sum(~np.isfinite(jct))),
        "auxo_jobs": sum(r.job_id.startswith("auxo:") for r in res.jobs),
        "aborts": sum(r.aborts for r in res.jobs if r.job_id.startswith("auxo:")),
    }


class VennCohortsConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    seeds: int = Field(5, ge=2, le=100)
    first_seed: int = Field(1, ge=0)
    policies: tuple[str, ...] = ("venn", "fifo")
    point: VennCohortPoint = Field(default_factory=VennCohortPoint)


def _ratio(base: list[dict[str, Any]], ours: list[dict[str, Any]], key: str) -> dict[str, Any]:
    r = paired_ratio([float(b[key]) for b in base], [float(o[key]) for o in ours])
    return {key: round(r.geo_mean, 3), f"{key}_lo": round(r.lo, 3), f"{key}_hi": round(r.hi, 3)}


def policy_row(
    policy: str, one: list[dict[str, Any]], jobs: list[dict[str, Any]]
) -> dict[str, Any]:
    """One policy's comparison of the two deployments, paired seed by seed."""
    row: dict[str, Any] = {"policy": policy, "seeds": len(one)}
    for label, runs in (("one_job", one), ("cohort_jobs", jobs)):
        for key in ("auxo_hours", "others_mean_jct_h"):
            mean, ci = mean_ci([float(r[key]) for r in runs])
            row[f"{label}_{key}"], row[f"{label}_{key}_ci95"] = round(mean, 3), round(ci, 3)
    speed = _ratio(one, jobs, "auxo_hours")
    others = _ratio(one, jobs, "others_mean_jct_h")
    row |= {f"auxo_speedup{k[len('auxo_hours') :]}": v for k, v in speed.items()}
    row |= {f"others_speedup{k[len('others_mean_jct_h') :]}": v for k, v in others.items()}
    row["auxo_jobs"] = jobs[0]["auxo_jobs"]
    return row


def venn_rows(
    cfg: VennCohortsConfig, ctx: ExperimentContext, seeds: list[int]
) -> list[dict[str, Any]]:
    cells = [
        Cell({"policy": pol, "mode": mode}, {"policy": pol, "mode": mode})
        for pol in cfg.policies
        for mode in ("one_job", "cohort_jobs")
    ]
    groups = seed_runs(ctx, run_venn_point, cfg.point, cells, seeds, "auxo cohorts as Venn jobs")
    rows = []
    for i, pol in enumerate(cfg.policies):
        rows.append(policy_row(pol, groups[2 * i], groups[2 * i + 1]))
    return rows


@experiment(
    "auxo",
    "venn",
    "Cohorts as jobs: Auxo's cohorts as separate Venn jobs vs sharing one job's devices",
    VennCohortsConfig,
    {"seeds": 2, "policies": ("venn",), "point": {"workload": {"jobs": 10}, "rounds": 60}},
)
def venn_cohorts(cfg: VennCohortsConfig, ctx: ExperimentContext) -> dict[str, Any]:
    seeds = list(range(cfg.first_seed, cfg.first_seed + cfg.seeds))
    rows = venn_rows(cfg, ctx, seeds)
    summary = {
        "seeds": f"{seeds[0]}..{seeds[-1]}",
        "app": cfg.point.model_dump_json(include={"p_total", "rounds", "splits", "arrival_s"}),
        "ratios": "one_job / cohort_jobs, geometric mean over seeds with 95% CI",
    }
    publish(
        ctx,
        "venn",
        cfg,
        rows,
        f"Cohorts as Venn jobs vs one shared job, paired over {len(seeds)} seeds",
        summary,
        columns=[
            "policy",
            "one_job_auxo_hours",
            "cohort_jobs_auxo_hours",
            "auxo_speedup",
            "auxo_speedup_lo",
            "auxo_speedup_hi",
            "one_job_others_mean_jct_h",
            "cohort_jobs_others_mean_jct_h",
            "others_speedup",
            "others_speedup_lo",
            "others_speedup_hi",
        ],
    )
    return {"rows": rows, "summary": summary}
