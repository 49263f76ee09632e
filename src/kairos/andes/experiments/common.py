"""Helpers shared by the Andes experiments: policy sweeps over seeds and plots (the sweep and
`publish` themselves are the shared `kairos.experiments.seeds` and `.publish`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from kairos.andes.experiments.workload import SimPoint, run_point
from kairos.experiments import ExperimentContext
from kairos.experiments.seeds import Cell, seed_sweep
from kairos.report import save_line_plot

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
    """Rows of (axis value, policy label, each metric's mean and 95% CI over the seeds).

    `variants` maps a label to SimPoint updates (e.g. an Andes ablation); plain policy names
    in `policies` become `{"policy": name}`.
    """
    labels = {p: {"policy": p} for p in policies} | dict(variants or {})
    cells = [
        Cell({axis: v, "policy": label}, {axis: v, **upd})
        for v in values
        for label, upd in labels.items()
    ]
    return seed_sweep(ctx, run_point, base, cells, seeds, description=f"{axis} sweep")


def pivot(
    rows: list[dict[str, Any]], axis: str, metric: str
) -> tuple[list[Any], dict[str, list[float]]]:
    xs = list(dict.fromkeys(r[axis] for r in rows))
    series: dict[str, list[float]] = {}
    for r in rows:
        series.setdefault(r["policy"], []).append(float(r[metric]))
    return xs, series


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
