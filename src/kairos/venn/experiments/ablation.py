"""Figures 4.11-4.14: ablation, number of jobs, number of tiers, and the fairness knob."""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import BaseModel

import kairos.venn.experiments.paper as paper
from kairos.experiments import ExperimentContext, experiment
from kairos.experiments.publish import publish
from kairos.report import save_line_plot
from kairos.venn.experiments.common import FULL_SEEDS, run_grid, speedups
from kairos.venn.experiments.point import VennPoint

QUICK_ONE = {"seeds": [1], "round_scale": 0.025}


class AblationConfig(BaseModel):
    workloads: list[str] = list(paper.WORKLOADS)
    seeds: list[int] = list(FULL_SEEDS)
    round_scale: float = 0.05
    point: VennPoint = VennPoint()


ABLATION = {
    "random": {"policy": "random"},
    "fifo": {"policy": "fifo"},
    "venn w/o scheduling": {"policy": "venn-nosched"},
    "venn w/o matching": {"policy": "venn-nomatch"},
    "venn": {"policy": "venn"},
}


@experiment(
    "venn",
    "fig4_11",
    "Ablation: scheduling and matching (Figure 4.11)",
    AblationConfig,
    {**QUICK_ONE, "workloads": ["low", "high"]},
)
def fig4_11(cfg: AblationConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    cells = [{"workload": {"workload": w, "round_scale": cfg.round_scale}} for w in cfg.workloads]
    runs = run_grid(ctx, cfg.point, cells, ABLATION, cfg.seeds, "fig 4.11")
    rows = speedups(runs, ["workload"])
    by = {(r["workload"], r["policy"]): r["speedup"] for r in rows}
    summary: dict[str, Any] = {"paper_trend": paper.TRENDS["fig4_11"]}
    for w in cfg.workloads:
        summary[f"{w}_nosched_over_fifo"] = by[(w, "venn w/o scheduling")] / by[(w, "fifo")]
        gain = by[(w, "venn")] - 1
        summary[f"{w}_share_of_gain_from_scheduling"] = (
            (by[(w, "venn w/o matching")] - 1) / gain if gain > 0 else float("nan")
        )
    publish(ctx, "fig4_11", cfg, rows, "Figure 4.11: speed-up over Random by component", summary)
    save_line_plot(
        ctx.out_dir / "fig4_11.png",
        list(range(len(cfg.workloads))),
        {p: [by[(w, p)] for w in cfg.workloads] for p in ABLATION if p != "random"},
        xlabel=" / ".join(f"{i}={w}" for i, w in enumerate(cfg.workloads)),
        ylabel="speed-up over Random",
        title="Figure 4.11",
    )
    return rows


class JobsConfig(BaseModel):
    jobs: list[int] = [10, 25, 50, 75, 100]
    policies: list[str] = ["random", "fifo", "srsf", "venn"]
    seeds: list[int] = list(FULL_SEEDS)
    round_scale: float = 0.05
    point: VennPoint = VennPoint()


@experiment(
    "venn",
    "fig4_12",
    "Speed-up vs number of jobs, Even workload (Figure 4.12)",
    JobsConfig,
    {**QUICK_ONE, "jobs": [10, 25, 50]},
)
def fig4_12(cfg: JobsConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    cells = [{"workload": {"jobs": n, "round_scale": cfg.round_scale}} for n in cfg.jobs]
    runs = run_grid(
        ctx, cfg.point, cells, {p: {"policy": p} for p in cfg.policies}, cfg.seeds, "fig 4.12"
    )
    rows = speedups(runs, ["jobs"])
    by = {(r["jobs"], r["policy"]): r["speedup"] for r in rows}
    summary = {
        f"venn_over_{b}_at_{n}": by[(n, "venn")] / by[(n, b)]
        for n in cfg.jobs
        for b in ("fifo", "srsf")
        if (n, b) in by
    }
    publish(ctx, "fig4_12", cfg, rows, "Figure 4.12: speed-up over Random vs jobs", summary)
    save_line_plot(
        ctx.out_dir / "fig4_12.png",
        cfg.jobs,
        {p: [by[(n, p)] for n in cfg.jobs] for p in cfg.policies if p != "random"},
        xlabel="number of jobs",
        ylabel="speed-up over Random",
        title="Figure 4.12",
    )
    return rows


class TiersConfig(BaseModel):
    workloads: list[str] = ["low", "even"]
    tiers: list[int] = [1, 2, 3, 4, 6]
    seeds: list[int] = list(FULL_SEEDS)
    round_scale: float = 0.05
    point: VennPoint = VennPoint()


@experiment(
    "venn",
    "fig4_13",
    "Speed-up vs number of tiers V (Figure 4.13)",
    TiersConfig,
    {**QUICK_ONE, "workloads": ["low"], "tiers": [1, 2, 4]},
)
def fig4_13(cfg: TiersConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    cells = [{"workload": {"workload": w, "round_scale": cfg.round_scale}} for w in cfg.workloads]
    labels: dict[str, dict[str, Any]] = {"random": {"policy": "random"}}
    labels |= {f"V={v}": {"policy": "venn", "venn": {"tiers": v}} for v in cfg.tiers}
    runs = run_grid(ctx, cfg.point, cells, labels, cfg.seeds, "fig 4.13")
    rows = [r for r in speedups(runs, ["workload"]) if r["policy"] != "random"]
    for r in rows:
        r["tiers"] = int(r["policy"].split("=")[1])
    publish(
        ctx,
        "fig4_13",
        cfg,
        rows,
        "Figure 4.13: speed-up over Random vs tiers",
        {"paper_trend": paper.TRENDS["fig4_13"]},
    )
    save_line_plot(
        ctx.out_dir / "fig4_13.png",
        cfg.tiers,
        {w: [r["speedup"] for r in rows if r["workload"] == w] for w in cfg.workloads},
        xlabel="tiers V",
        ylabel="speed-up over Random",
        title="Figure 4.13",
    )
    return rows


class FairnessConfig(BaseModel):
    epsilons: list[float] = [0.0, 0.5, 1.0, 2.0, 4.0]
    seeds: list[int] = list(FULL_SEEDS)
    round_scale: float = 0.05
    point: VennPoint = VennPoint()


@experiment(
    "venn",
    "fig4_14",
    "Fairness knob ε: speed-up and share meeting fair-share JCT (Figure 4.14)",
    FairnessConfig,
    {**QUICK_ONE, "epsilons": [0.0, 2.0]},
)
def fig4_14(cfg: FairnessConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    cells = [{"workload": {"workload": "even", "round_scale": cfg.round_scale}}]
    labels: dict[str, dict[str, Any]] = {"random": {"policy": "random"}}
    labels |= {f"eps={e:g}": {"policy": "venn", "venn": {"epsilon": e}} for e in cfg.epsilons}
    runs = run_grid(ctx, cfg.point, cells, labels, cfg.seeds, "fig 4.14")
    rows = [r for r in speedups(runs, ["workload"]) if r["policy"] != "random"]
    for r in rows:
        r["epsilon"] = float(r["policy"].split("=")[1])
        mine = [x for x in runs if x["label"] == r["policy"]]
        r["fair_share_met"] = float(np.mean([fair_share_met(x) for x in mine]))
    publish(
        ctx,
        "fig4_14",
        cfg,
        rows,
        "Figure 4.14: fairness knob",
        {"paper_fair_share_at_eps2": paper.FAIR_SHARE_AT_EPS2},
    )
    save_line_plot(
        ctx.out_dir / "fig4_14.png",
        cfg.epsilons,
        {
            "speed-up over Random": [r["speedup"] for r in rows],
            "share meeting fair-share JCT": [r["fair_share_met"] for r in rows],
        },
        xlabel="ε",
        ylabel="value",
        title="Figure 4.14",
        reference={
            "speed-up over Random": [np.nan] * len(rows),
            "share meeting fair-share JCT": [
                paper.FAIR_SHARE_AT_EPS2 if e == 2 else np.nan for e in cfg.epsilons
            ],
        },
    )
    return rows


def fair_share_met(run: dict[str, Any]) -> float:
    """Share of jobs with JCT <= T_i = M_i * sd_i (spec §6 item 10).

    sd_i = R_i (D_i/λ_i + t0): λ_i the class's mean eligible rate, t0 the fleet's p95 response
    time; M_i the time-averaged number of jobs in the system over the job's life.
    """
    jobs = run["jobs_table"]
    start = np.array([j["arrival"] for j in jobs], dtype=float)
    jct = np.array([np.inf if j["jct"] is None else j["jct"] for j in jobs], dtype=float)
    end = start + jct
    met = 0
    for j, s, e in zip(jobs, start, end, strict=True):
        if not np.isfinite(e):
            continue
        overlap = np.clip(np.minimum(end, e) - np.maximum(start, s), 0, None)
        m = float(overlap.sum() / (e - s)) if e > s else 1.0
        lam = run["class_rates"][j["requirement"]]
        solo = j["rounds"] * (j["participants"] / lam + run["p95_response_s"])
        met += int(e - s <= m * solo)
    return met / len(jobs)
