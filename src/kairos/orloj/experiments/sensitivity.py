"""Sensitivity experiments: E5 the b sweep (Fig 4.13), E6 scale-down with charged scheduler
overhead (Fig 4.14), E8 ablations of the spec's [P] choices, and the offered-load sweep the
spec adds as an extra.
"""

from __future__ import annotations

import math
from typing import Any

from pydantic import Field

import kairos.orloj.experiments.paper as paper
from kairos.experiments import ExperimentContext, experiment
from kairos.experiments.publish import publish
from kairos.orloj.experiments.tables import (
    TableConfig,
    publish_sweep,
    publish_table,
    split_labels,
    sweep_table,
)
from kairos.orloj.systems import PAPER_SYSTEMS
from kairos.orloj.workloads import get_workload
from kairos.report import print_table, save_line_plot

QUICK: dict[str, Any] = {"seeds": [0], "slo_mults": [1.5, 3.0], "n_requests": 1200}


def _by_slo_plot(
    ctx: ExperimentContext,
    fname: str,
    rows: list[dict[str, Any]],
    xs: list[float],
    labels: list[str],
    xlabel: str,
    title: str,
) -> None:
    """One line per SLO multiple across the variants (`labels`, placed at `xs`)."""
    series = {}
    for m in dict.fromkeys(r["slo_mult"] for r in rows):
        by = {r["system"]: r["finish_rate"] for r in rows if r["slo_mult"] == m}
        series[f"SLO {m:g}x"] = [by[label] for label in labels]
    save_line_plot(
        ctx.out_dir / fname, xs, series, xlabel=xlabel, ylabel="finish rate", title=title
    )


class BSweepConfig(TableConfig):
    workloads: list[str] = Field(default_factory=lambda: ["three-modal"])
    b_values: list[float] = Field(default_factory=lambda: list(paper.B_SWEEP))


@experiment(
    "orloj",
    "b_sweep",
    "Orloj's finish rate is insensitive to b (Fig 4.13)",
    BSweepConfig,
    quick={**QUICK, "b_values": [1e-6, 1e-5, 1e-4, 1e-2]},
)
def b_sweep(cfg: BSweepConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    labels = {f"b={b:g}": {"system": "orloj", "options": {"b": b}} for b in cfg.b_values}
    rows = sweep_table(ctx, cfg, labels, "b sweep")
    spread = {}
    for m in cfg.slo_mults:
        values = [r["finish_rate"] for r in rows if r["slo_mult"] == m]
        spread[f"spread_at_{m:g}x"] = float(max(values) - min(values))
    summary = {**spread, "max_spread": max(spread.values()), "spec_max": paper.B_SPREAD_MAX}
    title = "E5: finish-rate spread across b (spec: <= 0.05)"
    publish(ctx, "b_sweep", cfg, rows, summary=summary, summary_title=title)
    xs = [math.log10(b) for b in cfg.b_values]
    _by_slo_plot(ctx, "b_sweep.png", rows, xs, list(labels), "log10 b (per ms)", "Fig 4.13")
    return rows


class ScaleDownConfig(TableConfig):
    workloads: list[str] = Field(default_factory=lambda: ["three-modal"])
    p99_targets_ms: list[float] = Field(
        default_factory=lambda: [200.0, 100.0, 50.0, 20.0, 10.0, 5.0, 2.0]
    )
    systems: list[str] = Field(default_factory=lambda: ["orloj"])
    overhead_factor: float = 1.0  # < 1 emulates a faster (C++) scheduler
    # also run each point with free decisions: the difference is what the overhead costs,
    # independent of how fast this machine is
    compare_free: bool = True


def _scale_label(system: str, target: float, charged: bool) -> str:
    return f"{system}@p99={target:g}ms" + ("" if charged else " free")


@experiment(
    "orloj",
    "scale_down",
    "Scale the three-modal workload down with charged scheduler overhead (Fig 4.14)",
    ScaleDownConfig,
    quick={**QUICK, "p99_targets_ms": [200.0, 20.0, 2.0]},
)
def scale_down(cfg: ScaleDownConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    p99 = get_workload(cfg.workloads[0]).p99_ms
    modes = (True, False) if cfg.compare_free else (True,)
    labels: dict[str, dict[str, Any]] = {
        _scale_label(s, t, charged): {
            "system": s,
            "scale": t / p99,
            "charge_overhead": charged,
            "overhead_factor": cfg.overhead_factor,
        }
        for t in cfg.p99_targets_ms
        for s in cfg.systems
        for charged in modes
    }
    rows = sweep_table(ctx, cfg, labels, "scale down")
    by = {(r["system"], r["slo_mult"]): r for r in rows}
    for r in rows:
        r["p99_ms"] = labels[r["system"]]["scale"] * p99
        r["charged"] = labels[r["system"]]["charge_overhead"]
        r["paper"] = None  # Fig 4.14 is a plot without a table
        free = by.get((r["system"] + " free", r["slo_mult"]))
        r["overhead_cost"] = free["finish_rate"] - r["finish_rate"] if free else None
    summary: dict[str, Any] = {"paper_degrades_below_p99_ms": paper.SCALE_DOWN_P99_MS}
    for s in cfg.systems:
        for m in cfg.slo_mults:
            mine = [by[(_scale_label(s, t, True), m)] for t in cfg.p99_targets_ms]
            top = max(r["finish_rate"] for r in mine)
            stable = [r["p99_ms"] for r in mine if r["finish_rate"] >= top - 0.1]
            summary[f"{s}_smallest_stable_p99_ms_at_{m:g}x"] = min(stable)
    title = "E6: smallest P99 whose finish rate is within 0.1 of the top"
    publish(ctx, "scale_down", cfg, rows, summary=summary, summary_title=title)
    print_table(
        [
            {k: r[k] for k in ("system", "slo_mult", "finish_rate", "overhead_cost")}
            for r in rows
            if r["charged"]
        ],
        title="E6: finish rate with charged overhead, and what the overhead cost",
    )
    for s in cfg.systems:
        names = [_scale_label(s, t, True) for t in cfg.p99_targets_ms]
        mine = [r for r in rows if r["system"] in names]
        xs = [math.log10(t) for t in cfg.p99_targets_ms]
        _by_slo_plot(ctx, f"scale_down_{s}.png", mine, xs, names, "log10 P99 (ms)", "Fig 4.14")
    return rows


ABLATIONS: dict[str, dict[str, Any]] = {
    "default": {},
    "drop=mean": {"drop_estimator": "mean"},  # the spec's default
    "sizes=S": {"batch_sizes": (1, 2, 4, 8, 16)},  # Clockwork's compiled sizes only
    "drop=min": {"drop_estimator": "min"},
    "dist=mixture": {"batch_dist_mode": "mixture"},
    "dist=cyclic": {"batch_dist_mode": "cyclic"},
    "bs_order=clockwork": {"bs_order": "clockwork_priority"},
    "bs_order=earliest_deadline": {"bs_order": "earliest_deadline"},  # the paper's prose
    "pooled (no app tags)": {"pooled": True},
    "index=hull": {"index": "hull"},
}


class AblationConfig(TableConfig):
    workloads: list[str] = Field(default_factory=lambda: ["three-modal", "std-0.5/2"])
    slo_mults: list[float] = Field(default_factory=lambda: [1.5, 2.0, 3.0, 5.0])
    variants: list[str] = Field(default_factory=lambda: list(ABLATIONS))


@experiment(
    "orloj",
    "ablation",
    "Ablations: drop estimator, batch_dist_mode, bs_order, pooled vs tagged, index",
    AblationConfig,
    quick={
        **QUICK,
        "workloads": ["three-modal"],
        "variants": ["default", "pooled (no app tags)", "index=hull"],
    },
)
def ablation(cfg: AblationConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    unknown = [v for v in cfg.variants if v not in ABLATIONS]
    if unknown:
        raise ValueError(f"unknown ablation variants {unknown}; known: {list(ABLATIONS)}")
    labels = {v: {"system": "orloj", "options": ABLATIONS[v]} for v in cfg.variants}
    rows = sweep_table(ctx, cfg, labels, "ablation")
    for r in rows:
        r["paper"] = None  # the paper has no ablations
    publish_table(ctx, "ablation", cfg, rows, cfg.variants, "E8 ablation (Orloj variants)")
    return rows


class LoadConfig(TableConfig):
    workloads: list[str] = Field(default_factory=lambda: ["three-modal"])
    slo_mults: list[float] = Field(default_factory=lambda: [2.0, 4.0])
    rhos: list[float] = Field(default_factory=lambda: [0.5, 0.65, 0.8, 1.0, 1.2])
    systems: list[str] = Field(default_factory=lambda: list(PAPER_SYSTEMS))


@experiment(
    "orloj",
    "load",
    "Offered load sweep rho = 0.5-1.2 of capacity (spec section 4, an extra)",
    LoadConfig,
    quick={**QUICK, "rhos": [0.5, 1.0], "slo_mults": [2.0]},
)
def load(cfg: LoadConfig, ctx: ExperimentContext) -> list[dict[str, Any]]:
    labels = {f"{s}@rho={r:g}": {"system": s, "rho": r} for r in cfg.rhos for s in cfg.systems}
    rows = sweep_table(ctx, cfg, labels, "load")
    split_labels(rows, labels, "rho")
    publish_sweep(ctx, "load", cfg, rows, "rho", cfg.rhos, cfg.systems, "offered load rho")
    return rows
