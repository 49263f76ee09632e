"""Helpers shared by the Andes experiments: policy sweeps, tables, plots, result files."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kairos.andes.experiments.workload import SimPoint, run_point
from kairos.experiments import ExperimentContext
from kairos.report import print_table, save_line_plot, write_result

BASELINES = ("fcfs", "sarathi", "lqsf", "andes")
SUMMARY_KEYS = (
    "avg_qoe",
    "share_qoe_095",
    "avg_ttft",
    "avg_tds",
    "preemptions_per_request",
    "peak_waiting",
)


def policy_sweep(
    ctx: ExperimentContext,
    base: SimPoint,
    axis: str,
    values: Sequence[Any],
    policies: Sequence[str] = BASELINES,
    variants: dict[str, dict[str, Any]] | None = None,
    seeds: Sequence[int] = (0,),
) -> list[dict[str, Any]]:
    """Rows of (axis value, policy label, metrics averaged over seeds).

    `variants` maps a label to SimPoint updates (e.g. an Andes ablation); plain policy names
    in `policies` become `{"policy": name}`.
    """
    labels = {p: {"policy": p} for p in policies} | dict(variants or {})
    points = [{axis: v, "seed": s, **upd} for v in values for upd in labels.values() for s in seeds]
    results = ctx.sweep(run_point, base, points, description=f"{axis} sweep")
    rows: list[dict[str, Any]] = []
    i = 0
    for v in values:
        for label in labels:
            group = results[i : i + len(seeds)]
            i += len(seeds)
            row: dict[str, Any] = {axis: v, "policy": label}
            for key in group[0]:
                if isinstance(group[0][key], int | float):
                    row[key] = sum(float(g[key]) for g in group) / len(group)
            rows.append(row)
    return rows


def pivot(
    rows: list[dict[str, Any]], axis: str, metric: str
) -> tuple[list[Any], dict[str, list[float]]]:
    xs = list(dict.fromkeys(r[axis] for r in rows))
    series: dict[str, list[float]] = {}
    for r in rows:
        series.setdefault(r["policy"], []).append(float(r[metric]))
    return xs, series


def publish(
    ctx: ExperimentContext,
    name: str,
    config: Any,
    rows: list[dict[str, Any]],
    summary: dict[str, Any],
    title: str,
    columns: Sequence[str] | None = None,
) -> None:
    shown = [{k: r[k] for k in columns if k in r} for r in rows] if columns else rows
    print_table(shown, title=title)
    if summary:
        print_table([summary], title=f"{name}: summary (paper beside ours)")
    write_result(ctx.out_dir, name, config=config, rows=rows, summary=summary)


def plot_metric(
    ctx: ExperimentContext,
    rows: list[dict[str, Any]],
    axis: str,
    metric: str,
    fname: str,
    xlabel: str,
    ylabel: str,
    title: str,
) -> None:
    xs, series = pivot(rows, axis, metric)
    save_line_plot(ctx.out_dir / fname, xs, series, xlabel=xlabel, ylabel=ylabel, title=title)
