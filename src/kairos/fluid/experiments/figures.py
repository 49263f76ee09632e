"""PNG figures of the Fluid experiments, drawn from the rows their JSON holds, next to it.

Most Fluid results are paired speed-ups (baseline / Fluid, geometric mean with a 95% CI that
is not symmetric), so one function draws them all as grouped bars with a line at 1; the rest
are hours with a symmetric CI."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import kairos.fluid.experiments.paper as paper
from kairos.experiments import ExperimentContext
from kairos.report.plots import save_bar_plot

Row = Mapping[str, Any]
SPEEDUP = "speed-up (baseline / Fluid)"


def speedup_bars(
    ctx: ExperimentContext,
    name: str,
    rows: Sequence[Row],
    group: Callable[[Row], str],
    series: Callable[[Row], str],
    title: str,
    ranges: Mapping[str, tuple[float, float]] | None = None,
) -> None:
    """`<name>.png`: each row's `speedup` as a bar at (group(row), series(row)), its
    `speedup_lo`..`speedup_hi` as the error bar; a cell with no row draws nothing."""
    groups = list(dict.fromkeys(group(r) for r in rows))
    labels = list(dict.fromkeys(series(r) for r in rows))
    cell = {(group(r), series(r)): r for r in rows}
    nan = float("nan")
    empty = {"speedup": nan, "speedup_lo": nan, "speedup_hi": nan}
    values, bounds = {}, {}
    for label in labels:
        mine = [cell.get((g, label), empty) for g in groups]
        values[label] = [float(r["speedup"]) for r in mine]
        bounds[label] = [(float(r["speedup_lo"]), float(r["speedup_hi"])) for r in mine]
    save_bar_plot(
        ctx.out_dir / f"{name}.png",
        groups,
        values,
        bounds=bounds,
        ranges=ranges,
        baseline=1.0,
        ylabel=SPEEDUP,
        title=title,
    )


def plot_matrix(ctx: ExperimentContext, rows: Sequence[Row], gpus: int) -> None:
    """Figs 3.7/3.8: speed-up per algorithm (groups) and workload (bars) on `gpus` GPUs, the
    source's stated range shaded; then, where rows exist, the asynchronous settings of
    Fig 3.10 against both baselines."""
    matrix = [r for r in rows if r["gpus"] == gpus]
    tuners = dict.fromkeys(r["tuner"] for r in matrix)
    speedup_bars(
        ctx,
        "fig3_7",
        matrix,
        lambda r: str(r["tuner"]),
        lambda r: str(r["workload"]),
        f"Figs 3.7/3.8: {gpus} GPUs, paired seeds, 95% CI",
        ranges={t: paper.SPEEDUP_RANGE[t] for t in tuners if t in paper.SPEEDUP_RANGE},
    )
    settings = [r for r in rows if r["gpus"] != gpus]
    if settings:
        speedup_bars(
            ctx,
            "fig3_7_settings",
            settings,
            lambda r: f"{r['workload']} {r['tuner']} {r['gpus']} GPUs",
            lambda r: f"baseline K = {'GPU count' if r['k_base'] == r['gpus'] else 'Fluid K'}",
            f"Fig 3.10 settings: Fluid at K = {settings[0]['k_fluid']}, 95% CI",
        )


def hours_bars(
    ctx: ExperimentContext,
    name: str,
    rows: Sequence[Row],
    group: Callable[[Row], str],
    metrics: Mapping[str, tuple[str, str]],
    ylabel: str,
    title: str,
) -> None:
    """`<name>.png`: per group, one bar per `metrics` label -> (value column, CI column)."""
    groups = [group(r) for r in rows]
    save_bar_plot(
        ctx.out_dir / f"{name}.png",
        groups,
        {label: [float(r[v]) for r in rows] for label, (v, _) in metrics.items()},
        ci={label: [float(r[c]) for r in rows] for label, (_, c) in metrics.items()},
        ylabel=ylabel,
        title=title,
    )


def scale_bars(ctx: ExperimentContext, name: str, rows: Sequence[Row], title: str) -> None:
    """Figs 3.9/3.10: time-to-target per GPU count, baseline and Fluid side by side."""
    gpus = list(dict.fromkeys(r["gpus"] for r in rows))
    engines = list(dict.fromkeys(r["engine"] for r in rows))
    cell = {(r["gpus"], r["engine"]): r for r in rows}
    save_bar_plot(
        ctx.out_dir / f"{name}.png",
        [f"{n} GPUs" for n in gpus],
        {e: [float(cell[(n, e)]["makespan_h"]) for n in gpus] for e in engines},
        ci={e: [float(cell[(n, e)]["ci_h"]) for n in gpus] for e in engines},
        ylabel="time to target (h)",
        title=title,
    )
