"""Seed-averaged sweeps: every cell of a sweep runs once per seed, and its row reports each
metric's mean over the seeds with the half-width of the 95% confidence interval.

One rule for every system, so tables compare: before, Andes averaged, Orloj added a population
std and Venn kept its seeds apart, each with its own loop. Every (cell, seed) point goes to one
`ctx.sweep`, so all of them run in parallel and are cached point by point.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from kairos.report.stats import mean_ci

if TYPE_CHECKING:
    from kairos.experiments.registry import ExperimentContext
    from kairos.experiments.sweep import C, PointFn

CI_LEVEL = 0.95
CI_SUFFIX = "_ci95"  # the column of a metric's CI half-width: `avg_qoe_ci95`


@dataclass(frozen=True)
class Cell:
    """One row of a seed-averaged sweep: the columns that name it (`labels`, e.g. the axis value
    and the policy's label) and the point's config updates (`update`; the seed is added)."""

    labels: Mapping[str, Any]
    update: Mapping[str, Any] = field(default_factory=dict)


def seed_runs(
    ctx: ExperimentContext,
    fn: PointFn[C],
    base: C,
    cells: Sequence[Cell],
    seeds: Sequence[int],
    description: str = "",
) -> list[list[dict[str, Any]]]:
    """Per cell, its results for each seed (in `seeds` order), from one parallel cached sweep.

    For analyses that pair runs seed by seed (a speed-up over a baseline on the same trace)
    before averaging; `seed_sweep` averages the metrics themselves."""
    if not seeds:
        raise ValueError("a seed-averaged sweep needs at least one seed")
    points = [{**cell.update, "seed": s} for cell in cells for s in seeds]
    results = ctx.sweep(fn, base, points, description)
    k = len(seeds)
    return [results[i * k : (i + 1) * k] for i in range(len(cells))]


def numeric_keys(result: Mapping[str, Any]) -> list[str]:
    """The result's numbers (bools count: their mean is a share), less the seed itself."""
    return [k for k, v in result.items() if isinstance(v, int | float) and k != "seed"]


def seed_average(
    group: Sequence[Mapping[str, Any]], keys: Sequence[str] | None = None
) -> dict[str, float]:
    """Each metric's mean over the group's seeds, and beside it `<key>_ci95`, the half-width of
    its 95% confidence interval (NaN with one seed). `keys` default: the numbers of the first
    result."""
    if not group:
        raise ValueError("no results to average")
    out: dict[str, float] = {}
    for key in numeric_keys(group[0]) if keys is None else keys:
        out[key], out[key + CI_SUFFIX] = mean_ci([float(g[key]) for g in group], CI_LEVEL)
    return out


def seed_sweep(
    ctx: ExperimentContext,
    fn: PointFn[C],
    base: C,
    cells: Sequence[Cell],
    seeds: Sequence[int],
    *,
    keys: Sequence[str] | None = None,
    description: str = "",
) -> list[dict[str, Any]]:
    """One row per cell: its labels, `seeds` (how many ran), and per metric the mean over the
    seeds and its 95% CI half-width (`seed_average`)."""
    groups = seed_runs(ctx, fn, base, cells, seeds, description)
    return [
        {**cell.labels, "seeds": len(group), **seed_average(group, keys)}
        for cell, group in zip(cells, groups, strict=True)
    ]
