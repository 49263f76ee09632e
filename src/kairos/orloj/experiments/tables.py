"""Appendix-C style tables: finish rate per workload x SLO multiple x system, paper beside ours.

`run_table` sweeps the points (in parallel, cached), averages over seeds, prints a compact
"ours / paper" table, writes JSON + CSV, and draws one plot per workload (the paper's numbers
dashed) plus one averaged over the workloads.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

import kairos.orloj.experiments.paper as paper
from kairos.experiments import ExperimentContext
from kairos.experiments.publish import publish
from kairos.experiments.seeds import Cell, seed_average, seed_runs
from kairos.orloj.arrivals import ArrivalKind
from kairos.orloj.experiments.point import BOUND, SimPoint, run_point
from kairos.orloj.systems import PAPER_SYSTEMS
from kairos.report import print_table, save_line_plot
from kairos.report.stats import mean_ci

METRICS = (
    "finish_rate",
    "goodput_rps",
    "mean_batch_size",
    "timed_out",
    "late",
    "rejected",
    "utilisation",
    "sched_us_mean",
)


class TableConfig(BaseModel):
    """The knobs every finish-rate table shares; `point` holds the rest of a `SimPoint`."""

    model_config = ConfigDict(extra="forbid")

    workloads: list[str]
    systems: list[str] = list(PAPER_SYSTEMS)
    slo_mults: list[float] = list(paper.SLO_MULTIPLES)
    seeds: list[int] = [0, 1, 2]
    n_requests: int = Field(10_000, ge=1)
    rho: float = Field(0.8, gt=0)
    arrival: ArrivalKind = "bursty"
    trace_path: str | None = None
    # per-system keyword options, e.g. {"clockwork": {"schedule_ahead_ms": 2.0}}
    system_options: dict[str, dict[str, Any]] = Field(default_factory=dict)
    point: dict[str, Any] = Field(default_factory=dict)  # any other SimPoint field
    # add the clairvoyant relaxation bound (`kairos.orloj.bound`) as a row: what any scheduler
    # could finish on the same recording
    bound: bool = False

    def base(self) -> SimPoint:
        return SimPoint.model_validate(
            {
                **self.point,
                "n_requests": self.n_requests,
                "rho": self.rho,
                "arrival": self.arrival,
                "trace_path": self.trace_path,
            }
        )


def slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9.-]+", "_", name)


def sweep_table(
    ctx: ExperimentContext,
    cfg: TableConfig,
    variants: dict[str, dict[str, Any]] | None = None,
    description: str = "",
) -> list[dict[str, Any]]:
    """Rows of (workload, slo_mult, system label) with each metric's mean over the seeds and
    its 95% CI half-width (`finish_rate`, `finish_rate_ci95`, ...), and the paper's value.

    `variants` maps a label to SimPoint updates (e.g. an Orloj option set); by default each
    of `cfg.systems` is its own label."""
    labels = variants or {
        s: {"system": s, "options": cfg.system_options.get(s, {})} for s in cfg.systems
    }
    if cfg.bound and variants is None:
        labels[BOUND] = {"system": BOUND}
    cells = [
        Cell({"workload": w, "slo_mult": m, "system": label}, {"workload": w, "slo_mult": m, **upd})
        for w in cfg.workloads
        for m in cfg.slo_mults
        for label, upd in labels.items()
    ]
    groups = seed_runs(ctx, run_point, cfg.base(), cells, cfg.seeds, description or "orloj sweep")
    rows: list[dict[str, Any]] = []
    per_seed = {
        tuple(cell.labels.values()): [float(g["finish_rate"]) for g in group]
        for cell, group in zip(cells, groups, strict=True)
    }
    for cell, group in zip(cells, groups, strict=True):
        w, m, label = (cell.labels[k] for k in ("workload", "slo_mult", "system"))
        system = str(labels[label].get("system", label))
        row = {
            **cell.labels,
            "seeds": len(group),
            **seed_average(group, METRICS),
            "paper": paper.paper_value(w, m, system),
            "slo_ms": group[0]["slo_ms"],
        }
        mine = per_seed.get((w, m, "orloj"))
        if mine is not None and label != "orloj":  # paired over the seeds: same recordings
            diff, ci = mean_ci(np.subtract(mine, per_seed[(w, m, label)]))
            row |= {"orloj_minus": diff, "orloj_minus_ci95": ci}
        rows.append(row)
    return rows


def split_labels(rows: list[dict[str, Any]], labels: dict[str, dict[str, Any]], key: str) -> None:
    """Labels `system@...` of a one-variable sweep back into the row's `system` (the part
    before @) and a `key` column read from the label's own SimPoint update (not parsed from
    the label, whose number is rounded); such sweeps have no paper value."""
    for r in rows:
        label = r["system"]
        r.update({"system": label.partition("@")[0], key: labels[label][key], "paper": None})


def mean_finish(rows: list[dict[str, Any]], **match: Any) -> float:
    """The mean finish rate over the rows whose columns equal `match`."""
    picked = [r["finish_rate"] for r in rows if all(r[k] == v for k, v in match.items())]
    return float(np.mean(picked))


def publish_sweep(
    ctx: ExperimentContext,
    name: str,
    cfg: TableConfig,
    rows: list[dict[str, Any]],
    key: str,
    values: Sequence[float],
    systems: Sequence[str],
    xlabel: str,
) -> None:
    """One variable swept (`key` over `values`): JSON and CSV, a finish-rate table, one plot
    per workload and SLO multiple."""
    cells = [(w, m) for w in cfg.workloads for m in cfg.slo_mults]

    def at(w: str, m: float, x: float, s: str) -> float:
        return mean_finish(rows, workload=w, slo_mult=m, system=s, **{key: x})

    shown = [
        {"workload": w, "slo": m, key: x, **{s: at(w, m, x, s) for s in systems}}
        for w, m in cells
        for x in values
    ]
    print_table(shown, title=f"{name}: finish rate")
    publish(ctx, name, cfg, rows)
    for w, m in cells:
        save_line_plot(
            ctx.out_dir / f"{name}_{slug(w)}_{m:g}x.png",
            list(values),
            {s: [at(w, m, x, s) for x in values] for s in systems},
            xlabel=xlabel,
            ylabel="finish rate",
            title=f"{w}, SLO {m:g}x P99",
        )


def _cell(rows: list[dict[str, Any]], w: str, m: float, label: str, key: str) -> float | None:
    for r in rows:
        if r["workload"] == w and r["slo_mult"] == m and r["system"] == label:
            value = r[key]
            return None if value is None else float(value)
    return None


def averages(rows: list[dict[str, Any]], labels: Sequence[str]) -> list[dict[str, Any]]:
    """Per SLO multiple: each system's finish rate averaged over the workloads (and the
    paper's average over the same cells), Orloj / Clockwork and Orloj / best baseline."""
    workloads = list(dict.fromkeys(r["workload"] for r in rows))
    out = []
    for m in dict.fromkeys(r["slo_mult"] for r in rows):
        row: dict[str, Any] = {"slo_mult": m}
        for label in labels:
            ours = [_cell(rows, w, m, label, "finish_rate") for w in workloads]
            theirs = [_cell(rows, w, m, label, "paper") for w in workloads]
            row[label] = float(np.mean([v for v in ours if v is not None]))
            known = [v for v in theirs if v is not None]
            row[f"{label}_paper"] = float(np.mean(known)) if known else None
        others = [s for s in labels if s not in ("orloj", BOUND)]
        if BOUND in labels:  # how far from what any scheduler could do on these recordings
            best_base = max((row[s] for s in others), default=math.nan)
            row["orloj_gap_to_bound"] = row[BOUND] - row.get("orloj", math.nan)
            row["best_baseline_gap_to_bound"] = row[BOUND] - best_base
        if "orloj" in labels and others:
            for tag, ref in (("", ""), ("paper_", "_paper")):
                o = row.get(f"orloj{ref}")
                best = max((row.get(f"{s}{ref}") or 0.0 for s in others), default=0.0)
                cw = row.get(f"clockwork{ref}")
                row[f"{tag}orloj_over_best"] = o / best if o is not None and best > 0 else None
                row[f"{tag}orloj_over_clockwork"] = o / cw if o is not None and cw else None
        out.append(row)
    return out


def _pair(ours: float | None, theirs: float | None) -> str:
    left = "-" if ours is None else f"{ours:.2f}"
    return left + ("" if theirs is None else f" / {theirs:.2f}")


def _compact(avg: dict[str, Any], labels: Sequence[str]) -> dict[str, Any]:
    """One printable row: "ours / paper" per system and for the Orloj ratios."""
    out: dict[str, Any] = {"slo": avg["slo_mult"]}
    for label in labels:
        out[label] = _pair(avg[label], avg[f"{label}_paper"])
    for key in ("orloj_over_clockwork", "orloj_over_best"):
        if key in avg:
            out[key.replace("_over_", "/")] = _pair(avg[key], avg[f"paper_{key}"])
    for key in ("orloj_gap_to_bound", "best_baseline_gap_to_bound"):
        if key in avg:
            out[key] = f"{avg[key]:.3f}"
    return out


def publish_table(
    ctx: ExperimentContext,
    name: str,
    cfg: BaseModel,
    rows: list[dict[str, Any]],
    labels: Sequence[str],
    title: str,
) -> list[dict[str, Any]]:
    """Print "ours / paper", write JSON + CSV + plots; returns the per-SLO averages."""
    shown = []
    for w in dict.fromkeys(r["workload"] for r in rows):
        for m in dict.fromkeys(r["slo_mult"] for r in rows):
            line: dict[str, Any] = {"workload": w, "slo": m}
            for label in labels:
                ours = _cell(rows, w, m, label, "finish_rate")
                ci = _cell(rows, w, m, label, "finish_rate_ci95")
                theirs = _cell(rows, w, m, label, "paper")
                spread = f"±{ci:.2f}" if ci is not None and math.isfinite(ci) else ""
                line[label] = f"{ours:.2f}{spread}" + (
                    f" / {theirs:.2f}" if theirs is not None else ""
                )
            shown.append(line)
    seeds = max((int(r["seeds"]) for r in rows), default=0)
    print_table(shown, title=f"{title}: finish rate ±95% CI over {seeds} seeds, ours / paper")
    avg = averages(rows, labels)
    print_table([_compact(a, labels) for a in avg], title=f"{name}: average over workloads")
    publish(ctx, name, cfg, rows, summary={"averages": avg}, show_summary=False)
    for w in dict.fromkeys(r["workload"] for r in rows):
        plot_workload(ctx, name, rows, w, labels)
    xs = [a["slo_mult"] for a in avg]
    refs = {s: [a[f"{s}_paper"] for a in avg] for s in labels if all(a[f"{s}_paper"] for a in avg)}
    save_line_plot(
        ctx.out_dir / f"{name}_average.png",
        xs,
        {s: [a[s] for a in avg] for s in labels},
        xlabel="SLO (x P99)",
        ylabel="finish rate",
        title=f"{title}: average over workloads",
        reference=refs,
    )
    return avg


def plot_workload(
    ctx: ExperimentContext, name: str, rows: list[dict[str, Any]], w: str, labels: Sequence[str]
) -> None:
    mine = [r for r in rows if r["workload"] == w]
    xs = list(dict.fromkeys(r["slo_mult"] for r in mine))
    series = {s: [_cell(mine, w, m, s, "finish_rate") or 0.0 for m in xs] for s in labels}
    refs = {}
    for s in labels:
        values = [_cell(mine, w, m, s, "paper") for m in xs]
        if all(v is not None for v in values):
            refs[s] = [float(v or 0.0) for v in values]
    save_line_plot(
        ctx.out_dir / f"{name}_{slug(w)}.png",
        xs,
        series,
        xlabel="SLO (x P99)",
        ylabel="finish rate",
        title=w,
        reference=refs,
    )
