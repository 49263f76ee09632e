"""Tables 4.1-4.4: average-JCT speed-ups over optimised Random, overall and per job subset.

Tables 4.2 and 4.3 come from the same runs as Table 4.1 (the sweep cache shares them).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import BaseModel

import kairos.venn.experiments.paper as paper
from kairos.experiments import ExperimentContext, experiment
from kairos.experiments.publish import publish
from kairos.report import print_table
from kairos.report.stats import PairedRatio
from kairos.venn.experiments.common import (
    BASELINES,
    FULL_SEEDS,
    QUICK_SEEDS,
    bar_plot,
    by_class,
    by_demand,
    run_grid,
    speedups,
    subset_speedup,
)
from kairos.venn.experiments.point import VennPoint

PREFIXES = ("", "paper_", "srsf_")
SUFFIXES = {"": ("", "_lo", "_hi"), "paper_": ("",), "srsf_": ("",)}
CI_COLS = (("low", ""), ("low", "_lo"), ("low", "_hi"), ("paper_low", ""))
QUICK = {"workloads": ["even"], "seeds": list(QUICK_SEEDS), "round_scale": 0.025}


class TableConfig(BaseModel):
    workloads: list[str] = list(paper.WORKLOADS)
    policies: list[str] = list(BASELINES)
    seeds: list[int] = list(FULL_SEEDS)
    round_scale: float = 0.05  # rounds R' = max(5, R * round_scale); quick mode halves it
    point: VennPoint = VennPoint()


def _runs(cfg: TableConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    cells = [{"workload": {"workload": w, "round_scale": cfg.round_scale}} for w in cfg.workloads]
    labels = {p: {"policy": p} for p in cfg.policies}
    return run_grid(ctx, cfg.point, cells, labels, cfg.seeds, "table 4.1 runs")


@experiment("venn", "table4_1", "Average-JCT speed-up over Random (Table 4.1)", TableConfig, QUICK)
def table4_1(cfg: TableConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    runs = _runs(cfg, ctx)
    rows = speedups(runs, ["workload"])
    for r in rows:
        r["paper_speedup"] = paper.TABLE_4_1.get(r["workload"], {}).get(r["policy"], float("nan"))
        if r["policy"] == "random":
            r["paper_speedup"] = 1.0
    by = {(r["workload"], r["policy"]): r for r in rows}
    summary: dict[str, Any] = {"paper_max_speedup": paper.MAX_SPEEDUP}
    if all((w, "venn") in by for w in cfg.workloads):
        summary["max_venn_speedup"] = max(
            by[(w, "venn")].get("speedup", float("nan")) for w in cfg.workloads
        )
    for w in cfg.workloads:
        if (w, "venn") in by and "vs_srsf" in by[(w, "venn")]:
            v = by[(w, "venn")]
            # SRSF's mean JCT over Venn's, paired seed by seed: geometric mean [95% CI], seeds
            summary[f"{w}_srsf_over_venn"] = v["vs_srsf"]
            summary[f"{w}_srsf_over_venn_ci95"] = [v["vs_srsf_lo"], v["vs_srsf_hi"]]
            summary[f"{w}_seeds"] = v["seeds"]
            summary[f"{w}_resolves_5pct"] = v["resolves_5pct"]
            p = paper.TABLE_4_1[w]
            summary[f"{w}_paper_venn_over_srsf"] = p["venn"] / p["srsf"]
    publish(ctx, "table4_1", cfg, rows, "Table 4.1: speed-up over Random (ours vs paper)", summary)
    pols = [p for p in cfg.policies if p != "random"]
    bar_plot(
        ctx,
        "table4_1.png",
        cfg.workloads,
        {p: [by[(w, p)].get("speedup", float("nan")) for w in cfg.workloads] for p in pols},
        {
            p: [paper.TABLE_4_1[w][p] for w in cfg.workloads]
            for p in pols
            if all(p in paper.TABLE_4_1[w] for w in cfg.workloads)
        },
        "speed-up over Random",
        "Table 4.1",
    )
    return rows


@experiment(
    "venn",
    "table4_2_3",
    "Venn's speed-up by job size (Table 4.2) and eligibility class (Table 4.3)",
    TableConfig,
    QUICK,
)
def table4_2_3(cfg: TableConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    runs = _runs(cfg, ctx)
    rows: list[dict[str, Any]] = []
    for w in cfg.workloads:
        mine = [r for r in runs if r["workload"] == w]
        demand = np.array([j["total_demand"] for j in mine[0]["jobs_table"]], dtype=float)
        row: dict[str, Any] = {"workload": w}
        for pct in (25, 50, 75):
            _put(row, f"low{pct}", subset_speedup(mine, "venn", by_demand(pct)))
            row[f"paper_low{pct}"] = paper.TABLE_4_2[w][pct]
        for cls in paper.CLASS_NAMES:
            _put(row, cls, subset_speedup(mine, "venn", by_class(cls)))
            row[f"paper_{cls}"] = paper.TABLE_4_3[w][cls]
            _put(row, f"srsf_{cls}", subset_speedup(mine, "srsf", by_class(cls)))
        row["jobs"] = int(demand.size)
        rows.append(row)
    show_42 = [
        "workload",
        *(f"{p}{n}{s}" for n in (25, 50, 75) for p, s in CI_COLS),
        "seeds",
    ]
    print_table([{k: r[k] for k in show_42} for r in rows], title="Table 4.2 (ours vs paper)")
    publish(
        ctx,
        "table4_2_3",
        cfg,
        rows,
        "Table 4.3: Venn's speed-up over Random by class (ours, paper, SRSF's)",
        columns=[
            "workload",
            *(f"{p}{c}{s}" for c in paper.CLASS_NAMES for p in PREFIXES for s in SUFFIXES[p]),
            "seeds",
        ],
    )
    keys = ["low25", "low50", "low75", *paper.CLASS_NAMES]
    bar_plot(
        ctx,
        "table4_2_3.png",
        keys,
        {r["workload"]: [r[k] for k in keys] for r in rows},
        {r["workload"]: [r[f"paper_{k}"] for k in keys] for r in rows},
        "Venn speed-up over Random",
        "Tables 4.2 / 4.3",
    )
    return rows


def _put(row: dict[str, Any], col: str, pr: PairedRatio | None) -> None:
    """A subset's paired speed-up as `col`, `col_lo`, `col_hi` (NaN when no seed had one)."""
    if pr is None:
        row.update({col: float("nan"), f"{col}_lo": float("nan"), f"{col}_hi": float("nan")})
        return
    row.update({k: v for k, v in pr.columns(col).items() if k != f"{col}_wins"})


class BiasedConfig(BaseModel):
    biases: list[str] = ["general", "compute", "memory", "resource"]
    shares: list[float] = [0.5, 0.7]
    policies: list[str] = list(BASELINES)
    seeds: list[int] = list(FULL_SEEDS)
    round_scale: float = 0.05
    point: VennPoint = VennPoint()


@experiment(
    "venn",
    "table4_4",
    "Biased workloads: speed-up over Random (Table 4.4)",
    BiasedConfig,
    {"shares": [0.5], "seeds": [1], "round_scale": 0.025},
)
def table4_4(cfg: BiasedConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    cells = [
        {"workload": {"bias": b, "bias_share": s, "round_scale": cfg.round_scale}}
        for b in cfg.biases
        for s in cfg.shares
    ]
    runs = run_grid(
        ctx, cfg.point, cells, {p: {"policy": p} for p in cfg.policies}, cfg.seeds, "table 4.4"
    )
    rows = speedups(runs, ["bias", "bias_share"])
    for r in rows:
        r["paper_speedup"] = paper.TABLE_4_4[r["bias"]].get(r["policy"], 1.0)
    publish(ctx, "table4_4", cfg, rows, "Table 4.4: biased workloads (ours vs paper)")
    by = {(r["bias"], r["bias_share"], r["policy"]): r["speedup"] for r in rows}
    share = cfg.shares[0]
    pols = [p for p in cfg.policies if p != "random"]
    bar_plot(
        ctx,
        "table4_4.png",
        cfg.biases,
        {p: [by[(b, share, p)] for b in cfg.biases] for p in pols},
        {
            p: [paper.TABLE_4_4[b][p] for b in cfg.biases]
            for p in pols
            if p in paper.TABLE_4_4["general"]
        },
        f"speed-up over Random (bias share {share})",
        "Table 4.4",
    )
    return rows
