"""E1, Table 2.1 / Fig. 2.7: the 100-job training trace under FIFO, SRTF, PACK and FAIR.

Every seed is one trace (spec 4.6's generator) run under each policy; per policy we report
the means over seeds with 95% CIs, and per seed the paired ratios FIFO / policy of average JCT
and of makespan, summarised by `paired_ratio` (geometric mean, 95% CI, wins). Quick mode runs
the same trace shape at `time_scale = 0.05` (durations and gaps x 0.05: the iteration counts
shrink, the shape does not) and reports minutes scaled back to the full trace.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

import kairos.salus.experiments.paper as paper
from kairos.experiments import ExperimentContext, experiment
from kairos.experiments.publish import publish
from kairos.experiments.seeds import Cell, seed_runs
from kairos.report.stats import mean_ci, paired_ratio
from kairos.salus.catalog import load_workloads
from kairos.salus.experiments.figures import plot_e1
from kairos.salus.policies import make_policy
from kairos.salus.profile import GIB
from kairos.salus.simulator import SimConfig, simulate
from kairos.salus.workloads import E1Trace, e1_trace

POLICIES = ("fifo", "srtf", "pack", "fair")
METRICS = ("makespan_min", "avg_queuing_min", "avg_jct_min", "p95_jct_min")
QUANTILES = tuple(round(i / 100, 2) for i in range(101))


class E1Point(BaseModel):
    """One simulation: a policy on one seed's trace, with every simulator parameter."""

    model_config = ConfigDict(extra="forbid")

    policy: str = "fifo"
    seed: int = 0
    trace: E1Trace = Field(default_factory=E1Trace)
    capacity_gib: float = Field(16.0, gt=0)
    switch_cost_s: float = Field(0.001, ge=0)
    overhead: float = Field(1.0, gt=0)
    margin_p: float = Field(0.10, ge=0)
    margin_total: float = Field(0.05, ge=0)
    busy: float | None = Field(None, gt=0, le=1, description="override u of every workload")
    addresses: bool = False


def e1_point(cfg: E1Point) -> dict[str, Any]:
    """Summary of one run, minutes scaled back to the full trace."""
    profiles = load_workloads()
    if cfg.busy is not None:
        profiles = {k: replace(p, busy=cfg.busy) for k, p in profiles.items()}
    trace = e1_trace(cfg.trace, profiles, cfg.seed)
    sim = SimConfig(
        capacity=int(cfg.capacity_gib * GIB),
        switch_cost=cfg.switch_cost_s,
        overhead=cfg.overhead,
        margin_p=cfg.margin_p,
        margin_total=cfg.margin_total,
        addresses=cfg.addresses,
    )
    result = simulate(trace, make_policy(cfg.policy), profiles, sim)
    out = result.summary()
    for key in METRICS:
        out[key] /= cfg.trace.time_scale
    jct = [j.jct / 60 / cfg.trace.time_scale for j in result.jobs if j.jct is not None]
    return {**out, "jct_min": sorted(jct), "seed": cfg.seed}


class E1Config(BaseModel):
    model_config = ConfigDict(extra="forbid")

    seeds: int = Field(10, ge=2, le=1000, description="paired seeds (traces)")
    first_seed: int = Field(0, ge=0)
    policies: tuple[str, ...] = POLICIES
    point: E1Point = Field(default_factory=E1Point)


def quick_point() -> dict[str, Any]:
    return {"trace": {"time_scale": 0.05}}


@experiment(
    "salus",
    "table2_1",
    "Table 2.1 / Fig. 2.7 (E1): 100-job trace, FIFO vs SRTF vs PACK vs FAIR",
    E1Config,
    {"point": quick_point()},
)
def table2_1(cfg: E1Config, ctx: ExperimentContext) -> dict[str, Any]:
    seeds = list(range(cfg.first_seed, cfg.first_seed + cfg.seeds))
    cells = [Cell({"policy": p}, {"policy": p}) for p in cfg.policies]
    groups = seed_runs(ctx, e1_point, cfg.point, cells, seeds, "salus E1")
    runs = dict(zip(cfg.policies, groups, strict=True))
    fifo = runs.get("fifo")
    rows = []
    for name, group in runs.items():
        row: dict[str, Any] = {"policy": name, "seeds": len(group)}
        for key in METRICS:
            mean, ci = mean_ci([g[key] for g in group])
            row[key], row[key + "_ci95"] = round(mean, 1), round(ci, 1)
        row["utilisation"] = round(sum(g["utilisation"] for g in group) / len(group), 4)
        if fifo is not None:
            jct = paired_ratio([f["avg_jct_min"] for f in fifo], [g["avg_jct_min"] for g in group])
            span = paired_ratio(
                [f["makespan_min"] for f in fifo], [g["makespan_min"] for g in group]
            )
            row |= {
                "jct_vs_fifo": round(jct.geo_mean, 3),
                "jct_lo": round(jct.lo, 3),
                "jct_hi": round(jct.hi, 3),
                "jct_wins": jct.wins,
                "makespan_vs_fifo": round(span.geo_mean, 4),
                "makespan_lo": round(span.lo, 4),
                "makespan_hi": round(span.hi, 4),
            }
        src = paper.TABLE_2_1.get(name)
        if src is not None:
            row |= dict(zip([f"paper_{k}" for k in METRICS], src, strict=True))
            row["paper_jct_vs_fifo"] = round(paper.TABLE_2_1["fifo"][2] / src[2], 2)
        rows.append(row)
    summary = {
        "seeds": f"{seeds[0]}..{seeds[-1]}",
        "trace": cfg.point.trace.model_dump_json(),
        "busy_fractions": "u = 1 for every CSV workload"
        if cfg.point.busy is None
        else cfg.point.busy,
    }
    publish(
        ctx,
        "table2_1",
        cfg,
        rows,
        f"Table 2.1 (E1): minutes, means over {len(seeds)} seeds; ratios FIFO / policy paired "
        "per seed (geometric mean, 95% CI); paper's numbers beside",
        summary,
        columns=[
            "policy",
            "makespan_min",
            "avg_queuing_min",
            "avg_jct_min",
            "avg_jct_min_ci95",
            "p95_jct_min",
            "jct_vs_fifo",
            "jct_lo",
            "jct_hi",
            "makespan_vs_fifo",
            "paper_avg_jct_min",
            "paper_jct_vs_fifo",
        ],
    )
    cdf_rows = jct_quantiles(runs)
    publish(ctx, "table2_1_jct_cdf", cfg, cdf_rows)
    plot_e1(ctx, rows, cdf_rows)
    return {"rows": rows, "summary": summary, "jct_cdf": cdf_rows}


def jct_quantiles(runs: dict[str, list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Fig. 2.7's CDF per policy as its percentiles 0..100 of the JCTs pooled over seeds:
    a few numbers per policy rather than every job, and the plot draws exactly these."""
    rows = []
    for name, group in runs.items():
        pooled = np.concatenate([np.asarray(g["jct_min"], dtype=np.float64) for g in group])
        for q in QUANTILES:
            rows.append(
                {
                    "policy": name,
                    "quantile": q,
                    "jct_min": round(float(np.percentile(pooled, 100 * q)), 2),
                }
            )
    return rows
