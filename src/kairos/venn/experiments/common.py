"""Helpers shared by the Venn experiments: policy x workload x seed sweeps, speed-ups, plots.

Speed-ups are computed per seed (same job trace and device fleet for every policy of a seed)
and then averaged, so the spread across seeds is reported as well as the mean.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel

from kairos.experiments import ExperimentContext
from kairos.experiments.overrides import deep_merge
from kairos.experiments.seeds import Cell, seed_runs
from kairos.report import save_line_plot
from kairos.report.stats import PairedRatio, paired_ratio
from kairos.venn.experiments.point import VennPoint, run_point

BASELINES = ("random", "fifo", "srsf", "venn")
QUICK_SEEDS = (1, 2)
# Ten seeds resolve a 5% difference: Venn's per-seed SRSF/Venn ratio has a log spread of about
# 0.05 (0.97-1.16 over 12 seeds), so the 95% CI half-width is about 3.6% at n = 10.
FULL_SEEDS = tuple(range(1, 11))


def run_grid(
    ctx: ExperimentContext,
    base: VennPoint,
    cells: Sequence[Mapping[str, Any]],
    policies: Mapping[str, Mapping[str, Any]],
    seeds: Sequence[int],
    description: str,
) -> list[dict[str, Any]]:
    """Run every (cell, policy label, seed). A cell is a dict of VennPoint updates (nested
    dicts update `workload`/`fleet`/`sim` fields); a policy label maps to point updates.

    Returns one row per (cell, label, seed) with the cell's keys, `label`, `seed` and the
    point's result: the seeds stay apart, because a speed-up is a ratio taken within a seed
    (same job trace, same fleet) before it is averaged (`speedups`).
    """
    grid = [
        Cell({**_flat(cell), "label": label}, _merge(base, {**cell, **upd}))
        for cell in cells
        for label, upd in policies.items()
    ]
    groups = seed_runs(ctx, run_point, base, grid, seeds, description)
    return [
        {**c.labels, "seed": seed, **r}
        for c, group in zip(grid, groups, strict=True)
        for seed, r in zip(seeds, group, strict=True)
    ]


def _merge(base: VennPoint, upd: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in upd.items():
        current = getattr(base, key, None)
        if isinstance(value, Mapping) and isinstance(current, BaseModel):
            out[key] = deep_merge(current.model_dump(), value)
        else:
            out[key] = value
    return out


def _flat(cell: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in cell.items():
        if isinstance(value, Mapping):
            out.update(value)
        else:
            out[key] = value
    return out


def speedups(
    rows: Sequence[Mapping[str, Any]],
    keys: Sequence[str],
    base_label: str = "random",
    ref_label: str = "srsf",
) -> list[dict[str, Any]]:
    """Per (cell keys, label): mean JCT, and two per-seed paired summaries on identical traces
    (`kairos.report.stats.paired_ratio`: geometric mean, 95% CI `_lo`/`_hi`, `_wins`, `seeds`):

    - `speedup`: avgJCT(base) / avgJCT(label), seed by seed (the paper's speed-up over Random);
    - `vs_<ref>`: avgJCT(ref) / avgJCT(label) (> 1: this label beats the reference, e.g. SRSF),
      present when the cell ran the reference.

    `resolves_5pct` says whether this many seeds could tell a 5% difference from none (quick
    mode's few seeds cannot: its rows say so rather than report a tie)."""
    by: dict[tuple[Any, ...], dict[str, dict[int, float]]] = {}
    for r in rows:
        cell = tuple(r[k] for k in keys)
        by.setdefault(cell, {}).setdefault(r["label"], {})[r["seed"]] = float(r["avg_jct"])
    out = []
    for cell, labels in by.items():
        for label, per_seed in labels.items():
            row: dict[str, Any] = {
                **dict(zip(keys, cell, strict=True)),
                "policy": label,
                "avg_jct_h": float(np.mean(list(per_seed.values()))) / 3600.0,
            }
            for col, other in (("speedup", base_label), (f"vs_{ref_label}", ref_label)):
                pr = (
                    _paired(labels.get(other), per_seed)
                    if other != label or col == "speedup"
                    else None
                )
                if pr is not None:
                    row.update(pr.columns(col))
                    row.setdefault("resolves_5pct", pr.can_resolve(1.05))
            row["seeds"] = len(per_seed)
            out.append(row)
    return out


def _paired(base: Mapping[int, float] | None, ours: Mapping[int, float]) -> PairedRatio | None:
    """The paired ratio base/ours over the seeds both ran (None if they share none); a run
    that never finished has an infinite mean JCT, which the pairing refuses, so such a seed is
    left out here and the row's `seeds` shows it."""
    if not base:
        return None
    seeds = [s for s in sorted(ours) if s in base and 0 < ours[s] < math.inf and base[s] < math.inf]
    if not seeds:
        return None
    return paired_ratio([base[s] for s in seeds], [ours[s] for s in seeds])


def subset_speedup(
    rows: Sequence[Mapping[str, Any]],
    label: str,
    pick: Callable[[Sequence[Mapping[str, Any]]], list[int]],
    base_label: str = "random",
) -> PairedRatio | None:
    """Per seed, avgJCT(base)/avgJCT(label) on the jobs `pick(jobs_table)` keeps, summarised as
    a paired ratio (geometric mean, 95% CI, seeds); None when no seed has such jobs.

    Both runs of a seed share the job trace, so the subset is the same jobs in both."""
    per_seed: dict[int, dict[str, list[dict[str, Any]]]] = {}
    for r in rows:
        per_seed.setdefault(r["seed"], {})[r["label"]] = r["jobs_table"]
    base_jct, ours_jct = [], []
    for tables in per_seed.values():
        if label not in tables or base_label not in tables:
            continue
        keep = pick(tables[base_label])
        if not keep:
            continue
        ours = _mean_jct([tables[label][i] for i in keep])
        base = _mean_jct([tables[base_label][i] for i in keep])
        if 0 < ours < math.inf and base < math.inf:
            base_jct.append(base)
            ours_jct.append(ours)
    return paired_ratio(base_jct, ours_jct) if ours_jct else None


def by_class(cls: str) -> Callable[[Sequence[Mapping[str, Any]]], list[int]]:
    return lambda jobs: [i for i, j in enumerate(jobs) if j["requirement"] == cls]


def by_demand(pct: float) -> Callable[[Sequence[Mapping[str, Any]]], list[int]]:
    """Jobs at or below the pct-th percentile of total demand, within each seed's trace."""

    def pick(jobs: Sequence[Mapping[str, Any]]) -> list[int]:
        demand = np.array([j["total_demand"] for j in jobs], dtype=float)
        cut = np.percentile(demand, pct)
        return [int(i) for i in np.flatnonzero(demand <= cut)]

    return pick


def _mean_jct(jobs: Sequence[Mapping[str, Any]]) -> float:
    """Mean JCT; an unfinished job counts with the simulation cap's worth (never dropped)."""
    vals = [j["jct"] if j["jct"] is not None else float("inf") for j in jobs]
    return float(np.mean(vals))


def bar_plot(
    ctx: ExperimentContext,
    fname: str,
    groups: Sequence[str],
    ours: Mapping[str, Sequence[float]],
    paper: Mapping[str, Sequence[float]] | None,
    ylabel: str,
    title: str,
) -> None:
    """Ours as solid lines over the categories, the paper's dashed (shared plot helper)."""
    save_line_plot(
        ctx.out_dir / fname,
        list(range(len(groups))),
        ours,
        xlabel=" / ".join(f"{i}={g}" for i, g in enumerate(groups)),
        ylabel=ylabel,
        title=title,
        reference=paper,
    )
