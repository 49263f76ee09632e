"""E5 (spec 6, Fig. 3.13b/c): when to partition, and into how many cohorts.

(a) Partition time. The same cohorts (built from the latent groups: a control, not Auxo's
clustering, so only the time differs) are formed at 0%, an intermediate fraction and 80% of
the rounds, on data whose groups share structure (Synthetic with a common labeller share
`shared`), against the single model. The source: intermediate beats early (which loses the
shared structure) and late (which converges slowly), with ResNet-18 on FEMNIST; the spec warns
that with a convex model splitting at round 0 may well be best. We report what happens: final
mean accuracy, the mean of the accuracy curve (how fast it got there) and each time's paired
difference against the intermediate split.

(b) Number of cohorts. M in {1, 2, 4, 8} cohorts forced at the intermediate time on E1's four
groups at a fixed P_total (M = 2 pairs groups, M = 8 halves each group): the source finds M = 4
best and more cohorts worse (Fig. 3.13c).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from kairos.auxo.experiments.arms import QUICK_POINT, Runs, arm_runs
from kairos.auxo.experiments.runs import RunConfig
from kairos.experiments import ExperimentContext, experiment
from kairos.experiments.publish import publish
from kairos.report.stats import mean_ci

SHARED_DATA: dict[str, Any] = {"shared": 0.8}


def _timing_point() -> RunConfig:
    return RunConfig.model_validate({"data": SHARED_DATA})


class E5Config(BaseModel):
    model_config = ConfigDict(extra="forbid")

    seeds: int = Field(5, ge=2, le=100)
    first_seed: int = Field(0, ge=0)
    fractions: tuple[float, ...] = (0.0, 0.15, 0.8)
    intermediate: float = Field(0.15, gt=0, lt=1)
    timing_point: RunConfig = Field(default_factory=_timing_point)
    cohort_counts: tuple[int, ...] = (1, 2, 4, 8)
    count_point: RunConfig = Field(default_factory=RunConfig)

    @classmethod
    def quick(cls) -> E5Config:
        return cls.model_validate(QUICK)


QUICK: dict[str, Any] = {
    "seeds": 3,
    "timing_point": {**QUICK_POINT, "data": {**QUICK_POINT["data"], **SHARED_DATA}},
    "count_point": QUICK_POINT,
}


def curve_mean(run: dict[str, Any]) -> float:
    """Mean accuracy over the evaluation points after the first (area under the curve)."""
    return float(np.mean(run["curve_mean"][1:]))


def _summarise(label: str, runs: list[dict[str, Any]], ref: list[dict[str, Any]]) -> dict[str, Any]:
    row: dict[str, Any] = {"case": label, "seeds": len(runs)}
    for key, fn in (("final_mean", lambda r: float(r["final_mean"])), ("curve_mean", curve_mean)):
        mean, ci = mean_ci([fn(r) for r in runs])
        d, d_ci = mean_ci([100 * (fn(r) - fn(q)) for r, q in zip(runs, ref, strict=True)])
        row |= {
            key: round(mean, 4),
            f"{key}_ci95": round(ci, 4),
            f"d_{key}_vs_ref": round(d, 3),
            f"d_{key}_vs_ref_ci95": round(d_ci, 3),
        }
    return row


def timing_rows(cfg: E5Config, ctx: ExperimentContext, seeds: list[int]) -> list[dict[str, Any]]:
    rounds = cfg.timing_point.rounds
    arms: dict[str, dict[str, Any]] = {"single": {"arm": "single"}}
    for f in sorted({*cfg.fractions, cfg.intermediate}):
        arms[f"split@{f:.0%}"] = {"arm": "forced", "split_at": int(f * rounds)}
    runs: Runs = arm_runs(ctx, cfg.timing_point, arms, seeds, "auxo E5a")
    ref = runs[f"split@{cfg.intermediate:.0%}"]
    return [_summarise(label, group, ref) for label, group in runs.items()]


def count_rows(cfg: E5Config, ctx: ExperimentContext, seeds: list[int]) -> list[dict[str, Any]]:
    at = int(cfg.intermediate * cfg.count_point.rounds)
    arms: dict[str, dict[str, Any]] = {}
    for m in cfg.cohort_counts:
        arms[f"M={m}"] = (
            {"arm": "single"} if m == 1 else {"arm": "forced", "split_at": at, "cohorts": m}
        )
    runs: Runs = arm_runs(ctx, cfg.count_point, arms, seeds, "auxo E5b")
    ref = runs.get("M=4", next(iter(runs.values())))
    return [_summarise(label, group, ref) for label, group in runs.items()]


@experiment(
    "auxo",
    "e5",
    "E5: partition time (0%, intermediate, 80%) and number of cohorts (M = 1, 2, 4, 8)",
    E5Config,
    QUICK,
)
def e5(cfg: E5Config, ctx: ExperimentContext) -> dict[str, Any]:
    seeds = list(range(cfg.first_seed, cfg.first_seed + cfg.seeds))
    rows = timing_rows(cfg, ctx, seeds) + count_rows(cfg, ctx, seeds)
    summary = {
        "seeds": f"{seeds[0]}..{seeds[-1]}",
        "timing_data": cfg.timing_point.data.model_dump_json(),
        "timing_model": cfg.timing_point.model,
        "reference": f"differences in points against split@{cfg.intermediate:.0%} (a) and M=4 (b)",
        "paper": "intermediate beats early and late (Fig. 3.13b); M=4 best, >4 worse (3.13c)",
    }
    publish(
        ctx,
        "e5",
        cfg,
        rows,
        f"E5: forced partitions over {len(seeds)} seeds (final and curve-mean accuracy)",
        summary,
        columns=[
            "case",
            "final_mean",
            "d_final_mean_vs_ref",
            "d_final_mean_vs_ref_ci95",
            "curve_mean",
            "d_curve_mean_vs_ref",
            "d_curve_mean_vs_ref_ci95",
        ],
    )
    return {"rows": rows, "summary": summary}
