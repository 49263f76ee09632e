"""E2 (spec 6, the Reddit analogue): populations without separable groups.

Auxo must keep one cohort, or split without changing accuracy by more than the seed spread
(|difference| within the spread of the single model's accuracy across seeds, and within one
point). Populations: IID (one labeller, identical input distributions: `n_groups=1,
alpha=beta=0`), one group with Dirichlet(0.5) label skew, and one group whose clients' inputs
are shifted (LEAF's beta = 1): heterogeneous, but with no latent groups to find.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from kairos.auxo.experiments.arms import QUICK_POINT, arm_runs, mean_of
from kairos.auxo.experiments.pairing import compare, seed_spread
from kairos.auxo.experiments.runs import RunConfig
from kairos.experiments import ExperimentContext, experiment
from kairos.experiments.publish import publish

POPULATIONS: dict[str, dict[str, Any]] = {
    "iid": {"n_groups": 1, "alpha": 0.0, "beta": 0.0},
    "label_skew": {"n_groups": 1, "alpha": 0.0, "beta": 0.0, "label_alpha": 0.5},
    "input_shift": {"n_groups": 1, "alpha": 0.0, "beta": 1.0},
}


class E2Config(BaseModel):
    model_config = ConfigDict(extra="forbid")

    seeds: int = Field(5, ge=2, le=100)
    first_seed: int = Field(0, ge=0)
    populations: tuple[str, ...] = tuple(POPULATIONS)
    point: RunConfig = Field(default_factory=RunConfig)


@experiment(
    "auxo",
    "e2",
    "E2: no latent groups (IID, label skew, input shift): Auxo keeps one cohort or no change",
    E2Config,
    {"seeds": 3, "point": QUICK_POINT},
)
def e2(cfg: E2Config, ctx: ExperimentContext) -> dict[str, Any]:
    seeds = list(range(cfg.first_seed, cfg.first_seed + cfg.seeds))
    rows = []
    for name in cfg.populations:
        data = cfg.point.data.model_copy(update=POPULATIONS[name])
        arms = {
            "single": {"arm": "single", "data": data.model_dump()},
            "auxo": {"arm": "auxo", "data": data.model_dump()},
        }
        runs = arm_runs(ctx, cfg.point, arms, seeds, f"auxo E2 {name}")
        row: dict[str, Any] = {"population": name, **compare(runs["single"], runs["auxo"])}
        spread = seed_spread(runs["single"])
        row |= {
            "leaves": mean_of(runs["auxo"], "leaves"),
            "split_runs": sum(int(r["leaves"]) > 1 for r in runs["auxo"]),
            # one latent group: ARI is 0 for any split; coverage says who was placed by evidence
            "ari": mean_of(runs["auxo"], "ari"),
            "coverage_evidence": mean_of(runs["auxo"], "coverage_evidence"),
            "base_spread_points": round(100 * spread, 3),
            "within_spread": abs(row["d_final_mean"]) <= max(100 * spread, 1.0),
            "paper": "Reddit: no partition, 1x",
        }
        rows.append(row)
    summary = {"seeds": f"{seeds[0]}..{seeds[-1]}", "algorithm": cfg.point.algorithm}
    publish(
        ctx,
        "e2",
        cfg,
        rows,
        f"E2: populations without latent groups, paired over {len(seeds)} seeds",
        summary,
        columns=[
            "population",
            "base_final_mean",
            "final_mean",
            "d_final_mean",
            "d_final_mean_ci95",
            "leaves",
            "split_runs",
            "ari",
            "coverage_evidence",
            "base_spread_points",
            "within_spread",
            "paper",
        ],
    )
    return {"rows": rows, "summary": summary}
