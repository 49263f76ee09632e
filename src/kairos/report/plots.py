"""PNG plots with matplotlib's non-interactive backend (works with no display)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.figure import Figure

from kairos.report.stats import cdf


def save_line_plot(
    path: str | Path,
    x: Sequence[float],
    series: Mapping[str, Sequence[float]],
    *,
    xlabel: str,
    ylabel: str,
    title: str = "",
    reference: Mapping[str, Sequence[float]] | None = None,
    kind: str = "line",
) -> Path:
    """One line per series; `reference` series (e.g. the paper's numbers) are drawn dashed."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, ys in series.items():
        if kind == "step":
            ax.step(list(x), list(ys), where="post", label=name)
        else:
            ax.plot(list(x), list(ys), marker="o", markersize=3, label=name)
    for name, ys in (reference or {}).items():
        ax.plot(list(x), list(ys), linestyle="--", marker="x", label=f"{name} (paper)")
    return _finish(fig, ax, path, xlabel, ylabel, title)


def save_cdf_plot(
    path: str | Path, samples: Mapping[str, Sequence[float]], *, xlabel: str, title: str = ""
) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, values in samples.items():
        xs, ys = cdf(values)
        ax.step(xs, ys, where="post", label=name)
    return _finish(fig, ax, path, xlabel, "CDF", title)


def save_xy_plot(
    path: str | Path,
    curves: Mapping[str, tuple[Sequence[float], Sequence[float]]],
    *,
    xlabel: str,
    ylabel: str,
    title: str = "",
    kind: str = "step",
) -> Path:
    """One curve per series, each with its own x (e.g. a CDF given by its quantiles)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(6, 4))
    for name, (xs, ys) in curves.items():
        if kind == "step":
            ax.step(list(xs), list(ys), where="post", label=name)
        else:
            ax.plot(list(xs), list(ys), marker="o", markersize=3, label=name)
    return _finish(fig, ax, path, xlabel, ylabel, title)


@dataclass(frozen=True)
class DrawnBar:
    """One bar as drawn: its group and series, centre x, height, and how far its error bar
    reaches below and above the height (0 where no interval was given)."""

    group: str
    series: str
    x: float
    height: float
    below: float
    above: float


def bar_layout(
    groups: Sequence[str],
    series: Mapping[str, Sequence[float]],
    *,
    ci: Mapping[str, Sequence[float]] | None = None,
    bounds: Mapping[str, Sequence[tuple[float, float]]] | None = None,
    width: float = 0.8,
) -> list[DrawnBar]:
    """Where each bar of a grouped bar chart goes and what it shows, apart from matplotlib so
    the numbers drawn can be checked against the rows they came from.

    Group g's bars sit side by side around x = g, sharing `width`. A series' interval is either
    `ci` (symmetric half-widths, e.g. `mean_ci`'s) or `bounds` (absolute (low, high), e.g. a
    geometric mean's CI, which is not symmetric). A missing (NaN) interval draws no error bar.
    """
    for name, ys in series.items():
        if len(ys) != len(groups):
            raise ValueError(f"series {name!r} has {len(ys)} values for {len(groups)} groups")
    step = width / max(len(series), 1)
    bars = []
    for j, (name, ys) in enumerate(series.items()):
        offset = -width / 2 + step * (j + 0.5)
        for g, (group, y) in enumerate(zip(groups, ys, strict=True)):
            below = above = 0.0
            if ci is not None and name in ci:
                half = float(ci[name][g])
                below = above = 0.0 if math.isnan(half) else half
            if bounds is not None and name in bounds:
                lo, hi = (float(v) for v in bounds[name][g])
                below = 0.0 if math.isnan(lo) else max(float(y) - lo, 0.0)
                above = 0.0 if math.isnan(hi) else max(hi - float(y), 0.0)
            bars.append(DrawnBar(group, name, g + offset, float(y), below, above))
    return bars


def grouped_bar_figure(
    groups: Sequence[str],
    series: Mapping[str, Sequence[float]],
    *,
    ylabel: str,
    xlabel: str = "",
    title: str = "",
    ci: Mapping[str, Sequence[float]] | None = None,
    bounds: Mapping[str, Sequence[tuple[float, float]]] | None = None,
    reference: Mapping[str, Sequence[float]] | None = None,
    ranges: Mapping[str, tuple[float, float]] | None = None,
    baseline: float | None = None,
) -> Figure:
    """Grouped bars with error bars (see `bar_layout`), for the caller to inspect or save.

    `reference` (per series, one value per group, NaN for none) draws the source's number as a
    dashed mark across its bar; `ranges` (per group) shades a range the source states only as
    an interval, edged dashed; `baseline` draws a solid line (e.g. 1 for a speed-up)."""
    bars = bar_layout(groups, series, ci=ci, bounds=bounds)
    step = 0.8 / max(len(series), 1)
    fig, ax = plt.subplots(figsize=(max(6.0, 0.9 * len(groups) * max(len(series), 1) / 2), 4))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    referenced = False  # one legend entry for all the source's marks
    intervals = {*(ci or {}), *(bounds or {})}  # series with error bars
    for j, name in enumerate(series):
        mine = [b for b in bars if b.series == name]
        colour = colours[j % len(colours)]
        ax.bar(
            [b.x for b in mine],
            [b.height for b in mine],
            step * 0.95,
            yerr=[[b.below for b in mine], [b.above for b in mine]] if name in intervals else None,
            capsize=3,
            color=colour,
            label=name,
        )
        refs = (reference or {}).get(name, [float("nan")] * len(mine))
        for b, ref in zip(mine, refs, strict=True):
            if not math.isnan(float(ref)):
                label = "_nolegend_" if referenced else "paper"
                ax.hlines(
                    ref,
                    b.x - step / 2,
                    b.x + step / 2,
                    colors="black",
                    linestyles="--",
                    label=label,
                )
                referenced = True
    shaded = False  # one legend entry for all the source's ranges
    for g, group in enumerate(groups):
        if ranges is not None and group in ranges:
            lo, hi = ranges[group]
            label = "_nolegend_" if shaded else "paper range"
            ax.fill_between([g - 0.45, g + 0.45], lo, hi, color="grey", alpha=0.15, label=label)
            ax.hlines([lo, hi], g - 0.45, g + 0.45, colors="grey", linestyles="--")
            shaded = True
    if baseline is not None:
        ax.axhline(baseline, color="black", linewidth=0.8)
    ax.set_xticks(range(len(groups)), list(groups), rotation=20 if len(groups) > 4 else 0)
    ax.set_ylabel(ylabel)
    if xlabel:
        ax.set_xlabel(xlabel)
    if title:
        ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def save_bar_plot(
    path: str | Path, groups: Sequence[str], series: Mapping[str, Sequence[float]], **kw: Any
) -> Path:
    """`grouped_bar_figure` written to `path` as PNG (the figure is closed after)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig = grouped_bar_figure(groups, series, **kw)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def save_span_plot(
    path: str | Path,
    spans: Mapping[str, Sequence[tuple[float, float]]],
    *,
    xlabel: str,
    title: str = "",
) -> Path:
    """A timeline: one row per key (top to bottom in order), a bar for each (start, end) span,
    e.g. when each job held the GPU."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig, ax = plt.subplots(figsize=(7, 0.5 * len(spans) + 1.5))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    names = list(spans)
    for i, name in enumerate(names):
        bars = [(start, end - start) for start, end in spans[name]]
        ax.broken_barh(bars, (len(names) - 1 - i - 0.4, 0.8), color=colours[i % len(colours)])
    ax.set_yticks(range(len(names)), list(reversed(names)))
    ax.set_xlabel(xlabel)
    if title:
        ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3, axis="x")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def _finish(fig: Any, ax: Any, path: Path, xlabel: str, ylabel: str, title: str) -> Path:
    """Labels, grid and legend as every plot here has them; saved as PNG and closed."""
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if title:
        ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
