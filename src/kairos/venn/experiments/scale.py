"""Figure 4.5 (JCT breakdown under random matching) and Figure 4.10 (scheduler overhead)."""

from __future__ import annotations

import statistics
import time
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

import kairos.venn.experiments.paper as paper
from kairos.experiments import ExperimentContext, experiment
from kairos.experiments.publish import publish
from kairos.fl.jobs import FLJob
from kairos.fl.timing import RoundRule
from kairos.report import save_line_plot
from kairos.venn.experiments.point import _fleet
from kairos.venn.manager import ResourceManager
from kairos.venn.policies import make_policy
from kairos.venn.simulator import SimConfig, simulate
from kairos.venn.supply import StaticSupply
from kairos.venn.workloads import GENERAL, FleetConfig, deadline_for


class ConcurrentPoint(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    jobs: int = Field(4, ge=1)
    participants: int = Field(50, ge=1)  # P=500 scaled by 1/10
    policy: str = "random"
    fleet: FleetConfig = FleetConfig()
    seed: int = 1


def run_concurrent(p: ConcurrentPoint) -> dict[str, Any]:
    """N single-round General jobs arriving together; JCT split into scheduling and
    collection (of the round attempt that succeeded)."""
    rule = RoundRule(deadline_s=deadline_for(p.participants * 10))
    jobs = [
        FLJob(f"c{i}", 3600.0, p.participants, 1, GENERAL, rule, "concurrent")
        for i in range(p.jobs)
    ]
    policy = make_policy(p.policy, np.random.default_rng(p.seed))
    res = simulate(policy, jobs, _fleet(p.fleet, p.seed), SimConfig())
    last = {}
    for job, _, submit, sched, close, ok, _n in res.rounds:
        if ok:
            last[job] = close - submit - sched
    jct = res.jct()
    collect = np.array([last.get(i, np.nan) for i in range(len(jobs))])
    return {
        "jobs": p.jobs,
        "avg_jct": float(np.nanmean(jct)),
        "avg_collect": float(np.nanmean(collect)),
        "avg_sched": float(np.nanmean(jct - collect)),
        "abort_rate": res.summary()["abort_rate"],
    }


class BreakdownConfig(BaseModel):
    jobs: list[int] = [1, 2, 4, 8, 16]
    seeds: list[int] = [1, 2, 3]
    point: ConcurrentPoint = ConcurrentPoint()


@experiment(
    "venn",
    "fig4_5",
    "Random matching: scheduling delay vs collection time as jobs grow (Figure 4.5)",
    BreakdownConfig,
    {"jobs": [1, 4, 16], "seeds": [1]},
)
def fig4_5(cfg: BreakdownConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    points = [{"jobs": n, "seed": s} for n in cfg.jobs for s in cfg.seeds]
    results = ctx.sweep(run_concurrent, cfg.point, points, description="fig 4.5")
    rows = []
    for n in cfg.jobs:
        mine = [r for r, pt in zip(results, points, strict=True) if pt["jobs"] == n]
        rows.append({k: float(np.mean([r[k] for r in mine])) for k in mine[0]} | {"jobs": n})
    slope = np.polyfit(cfg.jobs, [r["avg_sched"] for r in rows], 1)[0]
    summary = {
        "sched_s_per_job": float(slope),
        "collect_range_s": max(r["avg_collect"] for r in rows)
        - min(r["avg_collect"] for r in rows),
        "paper_trend": paper.TRENDS["fig4_5"],
    }
    publish(ctx, "fig4_5", cfg, rows, "Figure 4.5: one round's JCT under Random", summary)
    save_line_plot(
        ctx.out_dir / "fig4_5.png",
        cfg.jobs,
        {
            "scheduling delay": [r["avg_sched"] for r in rows],
            "response collection": [r["avg_collect"] for r in rows],
        },
        xlabel="concurrent jobs",
        ylabel="seconds",
        title="Figure 4.5",
    )
    return rows


def synthetic_manager(
    jobs: int, groups: int, rng: np.random.Generator, policy: str = "venn"
) -> tuple[ResourceManager, list[int]]:
    """A manager with `jobs` open requests over `groups` overlapping requirement groups.

    There are 2*groups atoms, each a random subset of the groups (each group with probability
    0.3, at least one), with random rates; every job asks for 5-100 devices.
    """
    atoms: list[int] = []
    for _ in range(2 * groups):
        bits = np.flatnonzero(rng.random(groups) < 0.3)
        if bits.size == 0:
            bits = rng.integers(0, groups, size=1)
        atoms.append(sum(1 << int(b) for b in bits))
    covered = sorted({g for a in atoms for g in range(groups) if a >> g & 1})
    rates = {a: float(rng.uniform(0.1, 1.0)) for a in atoms}
    mgr = ResourceManager(make_policy(policy, rng), supply=StaticSupply(rates))
    for i in range(jobs):
        job_id = f"s{i}"
        mgr.register_job(job_id, int(rng.choice(covered)), float(rng.uniform(0, 3600)))
        mgr.submit_request(job_id, int(rng.integers(5, 101)), 3600.0)
    return mgr, atoms


class OverheadConfig(BaseModel):
    jobs: list[int] = [10, 100, 1000, 10_000]
    groups: list[int] = [4, 16, 64, 256]
    repeats: int = 7
    seed: int = 0


@experiment(
    "venn",
    "fig4_10",
    "Scheduler overhead: one IRS plan plus one dispatch (Figure 4.10)",
    OverheadConfig,
    {"jobs": [10, 100, 1000], "groups": [4, 16, 64], "repeats": 3},
)
def fig4_10(cfg: OverheadConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    rows = []
    for m in cfg.jobs:
        for n in cfg.groups:
            rng = np.random.default_rng([cfg.seed, m, n])
            mgr, atoms = synthetic_manager(m, n, rng)
            samples = []
            for k in range(cfg.repeats):
                start = time.perf_counter()
                mgr.replan(3600.0 + k)
                mgr.checkin(3600.0 + k, atoms[k % len(atoms)])
                samples.append(time.perf_counter() - start)
            rows.append({"jobs": m, "groups": n, "ms": 1e3 * statistics.median(samples)})
    publish(
        ctx,
        "fig4_10",
        cfg,
        rows,
        "Figure 4.10: plan + dispatch latency (ms, median)",
        {"paper_trend": paper.TRENDS["fig4_10"]},
    )
    save_line_plot(
        ctx.out_dir / "fig4_10.png",
        cfg.jobs,
        {f"{n} groups": [r["ms"] for r in rows if r["groups"] == n] for n in cfg.groups},
        xlabel="jobs",
        ylabel="ms per plan + dispatch",
        title="Figure 4.10",
    )
    return rows
