"""Running labelled arms over paired seeds, and the quick-mode setting every experiment shares.

`arm_runs` sends every (arm, seed) point to one cached parallel sweep and hands back, per arm
label, its runs in seed order, ready for `pairing.compare`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kairos.auxo.experiments.runs import RunConfig, run_arm
from kairos.experiments import ExperimentContext
from kairos.experiments.seeds import Cell, seed_runs

Runs = dict[str, list[dict[str, Any]]]

# Quick mode (tests, smoke runs): half the population and rounds, P_total kept at 40.
QUICK_POINT: dict[str, Any] = {"data": {"n_clients": 200}, "rounds": 150}


def arm_runs(
    ctx: ExperimentContext,
    base: RunConfig,
    arms: Mapping[str, Mapping[str, Any]],
    seeds: Sequence[int],
    description: str,
) -> Runs:
    """Per arm label, the runs of `base` updated by that arm's fields, one per seed."""
    cells = [Cell({"arm": label}, dict(update)) for label, update in arms.items()]
    groups = seed_runs(ctx, run_arm, base, cells, list(seeds), description)
    return dict(zip(arms, groups, strict=True))


def mean_of(runs: Sequence[Mapping[str, Any]], key: str) -> float:
    return round(sum(float(r[key]) for r in runs) / len(runs), 4)


def affinity_share(runs: Sequence[Mapping[str, Any]]) -> float:
    """Affinity-message bytes over model bytes (upload + download), pooled over runs."""
    return sum(r["affinity_bytes"] for r in runs) / sum(r["model_bytes"] for r in runs)
