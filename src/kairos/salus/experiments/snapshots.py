"""E2 (Fig. 2.8a, the SRTF snapshot) and E3 (Fig. 2.9, fair sharing): small traces on one lane
whose iteration timelines show the policies' rules.

E2: six jobs drawn (seed named) from the E1 workloads on a single SRTF lane: #0 is a long
background job, #1 preempts it on arrival, #3 (shorter) runs before #2 (earlier), #5 preempts
#4, and #0 runs only when nothing shorter is present. Every preemption happens at the running
iteration's end, so its delay is at most one iteration.

E3: three `inception3_50` jobs of 60 s (solo) start at 0, 15 and 30 s on one FAIR lane. With
the min rule each newcomer starts level with the others, so the shares go 1 -> 1/2 -> 1/3 at
once, and back as jobs end (in arrival order: 142.5, 172.5, 180 s with no switch cost), while
the aggregate stays at the solo throughput.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

import kairos.salus.experiments.paper as paper
from kairos.experiments import ExperimentContext, experiment
from kairos.experiments.publish import publish
from kairos.salus.catalog import load_workloads
from kairos.salus.driver import IterationRecord
from kairos.salus.experiments.figures import plot_e2
from kairos.salus.policies import make_policy
from kairos.salus.simulator import SimConfig, SimResult, simulate
from kairos.salus.workloads import TraceJob, training_workloads

# (arrival s, solo duration s) of E2's six jobs
E2_JOBS = ((0.0, 600.0), (30.0, 120.0), (60.0, 200.0), (90.0, 90.0), (500.0, 150.0), (550.0, 40.0))
E2_ORDER = (0, 1, 3, 2, 0, 4, 5, 4, 0)  # who runs, segment by segment


class SnapshotConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    seed: int = Field(7, ge=0, description="draws E2's workloads")
    switch_cost_s: float = Field(0.001, ge=0)


def segments(timeline: Sequence[IterationRecord]) -> list[dict[str, Any]]:
    """Runs of consecutive iterations of one job: (job, start, end, iterations)."""
    out: list[dict[str, Any]] = []
    for rec in sorted(timeline, key=lambda r: r.start):
        if out and out[-1]["job"] == rec.job:
            out[-1]["end"], out[-1]["iterations"] = rec.end, out[-1]["iterations"] + 1
        else:
            out.append({"job": rec.job, "start": rec.start, "end": rec.end, "iterations": 1})
    return out


def e2_run(cfg: SnapshotConfig) -> SimResult:
    profiles = load_workloads()
    names = training_workloads(profiles, 16 << 30)
    picks = np.random.default_rng(cfg.seed).choice(len(names), len(E2_JOBS), replace=False)
    trace = []
    for i, ((at, dur), k) in enumerate(zip(E2_JOBS, picks, strict=True)):
        p = profiles[names[k]]
        n = max(1, round(dur / p.t_iter))
        trace.append(TraceJob(i, p.workload, n, at, n * p.t_iter))
    sim = SimConfig(switch_cost=cfg.switch_cost_s, record=True)
    return simulate(trace, make_policy("srtf"), profiles, sim)


@experiment(
    "salus", "fig2_8a", "Fig. 2.8a (E2): SRTF snapshot, six jobs on one lane", SnapshotConfig
)
def fig2_8a(cfg: SnapshotConfig, ctx: ExperimentContext) -> dict[str, Any]:
    result = e2_run(cfg)
    segs = segments(result.timeline)
    for s in segs:
        job = result.jobs[s["job"]]
        s |= {"workload": job.name, "t_iter": round(job.profile.t_iter, 4)}
        s["start"], s["end"] = round(s["start"], 3), round(s["end"], 3)
    delays = {}
    for job in result.jobs[1:]:  # how long each arrival waited for the running iteration
        assert job.first_start is not None
        delays[job.id] = round(job.first_start - job.arrival, 4)
    order = tuple(s["job"] for s in segs)
    summary = {
        "seed": cfg.seed,
        "order": " ".join(map(str, order)),
        "expected_order": " ".join(map(str, E2_ORDER)),
        "matches": order == E2_ORDER,
        "first_start_delays_s": str(delays),
    }
    publish(
        ctx,
        "fig2_8a",
        cfg,
        segs,
        f"Fig. 2.8a (E2): SRTF on one lane, seed {cfg.seed}",
        summary,
        seed=cfg.seed,
    )
    plot_e2(ctx, segs, cfg.seed)
    return {"segments": segs, "summary": summary, "jobs": result.jobs}


class FairConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    workload: str = "inception3_50"
    starts_s: tuple[float, ...] = (0.0, 15.0, 30.0)
    solo_s: float = Field(60.0, gt=0, description="each job's exclusive run time")
    window_s: float = Field(5.0, gt=0)
    switch_cost_s: float = Field(0.001, ge=0)
    reset: str = Field("min", pattern="^(min|zero)$")


def busy_share(timeline: Sequence[IterationRecord], job: int, t0: float, t1: float) -> float:
    """Fraction of [t0, t1) the job's iterations occupied."""
    cover = sum(max(0.0, min(r.end, t1) - max(r.start, t0)) for r in timeline if r.job == job)
    return cover / (t1 - t0)


def e3_run(cfg: FairConfig) -> SimResult:
    profiles = load_workloads()
    p = profiles[cfg.workload]
    n = max(1, round(cfg.solo_s / p.t_iter))
    trace = [TraceJob(i, p.workload, n, at, n * p.t_iter) for i, at in enumerate(cfg.starts_s)]
    sim = SimConfig(switch_cost=cfg.switch_cost_s, record=True)
    return simulate(trace, make_policy("fair", reset=cfg.reset), profiles, sim)


@experiment("salus", "fig2_9", "Fig. 2.9 (E3): fair shares 1, 1/2, 1/3 and back", FairConfig)
def fig2_9(cfg: FairConfig, ctx: ExperimentContext) -> dict[str, Any]:
    result = e3_run(cfg)
    p = result.jobs[0].profile
    batch = int(p.batch) if p.batch.isdigit() else 1
    solo_rate = batch / p.t_iter  # images/s alone
    end = max(j.finish or 0.0 for j in result.jobs)
    rows = []
    for t0 in np.arange(0.0, end, cfg.window_s):
        t1 = min(float(t0) + cfg.window_s, end)
        shares = [busy_share(result.timeline, j.id, float(t0), t1) for j in result.jobs]
        row: dict[str, Any] = {"t": round(float(t0), 2)}
        row |= {
            f"job{j.id}_img_s": round(s * solo_rate, 1)
            for j, s in zip(result.jobs, shares, strict=True)
        }
        row["aggregate_img_s"] = round(sum(shares) * solo_rate, 1)
        rows.append(row)
    finish = [round(j.finish or 0.0, 2) for j in result.jobs]
    summary = {
        "solo_img_s": round(solo_rate, 1),
        "finish_s": str(finish),
        "paper_finish_s": str(paper.E3_FINISH_S),
        "finishing_order": " ".join(
            str(j.id) for j in sorted(result.jobs, key=lambda j: j.finish or 0)
        ),
        "job_iterations": result.jobs[0].iterations,
    }
    publish(
        ctx, "fig2_9", cfg, rows, "Fig. 2.9 (E3): images/s per job and in aggregate (FAIR)", summary
    )
    return {"rows": rows, "summary": summary, "result": result}
