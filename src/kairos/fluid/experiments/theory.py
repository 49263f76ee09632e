"""The theorem checks (spec 3.6): on random tiny instances, StaticFluid meets the bound the
proof supports, and its ratio to the best list schedule is reported (never asserted: Theorem
1's factor 2 does not hold, see `kairos.fluid.core.theory`)."""

from __future__ import annotations

from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from kairos.experiments import ExperimentContext, experiment
from kairos.experiments.publish import publish
from kairos.fluid.core.model import Limits, PlanTrial
from kairos.fluid.core.static import static_fluid
from kairos.fluid.core.theory import best_list_schedule, list_schedule, proven_bound


class TheoryConfig(BaseModel):
    instances: int = Field(200, ge=1)
    max_trials: int = Field(5, ge=1, le=6)
    seed: int = 0


@experiment(
    "fluid",
    "theory",
    "Theorems 1/2: the proven bound and the ratio to the best list schedule",
    TheoryConfig,
    {"instances": 30, "max_trials": 4},
)
def theory(cfg: TheoryConfig, ctx: ExperimentContext) -> dict[str, Any]:
    rng = np.random.default_rng(cfg.seed)
    ratios, held = [], 0
    rows = []
    for i in range(cfg.instances):
        n = int(rng.integers(1, 5))
        c = int(rng.integers(1, 4))
        k = int(rng.integers(1, cfg.max_trials + 1))
        trials = [PlanTrial(f"t{j}", float(h)) for j, h in enumerate(rng.uniform(0.1, 10, k))]
        limits = Limits(c=c, d=n)
        ordered = sorted(trials, key=lambda t: -t.h1)
        ours = list_schedule(ordered, static_fluid(trials, n, limits), n, c)
        bound = proven_bound(trials, n, limits)
        best = best_list_schedule(trials, n, limits)
        held += ours <= bound + 1e-9
        ratios.append(ours / best)
        rows.append(
            {
                "instance": i,
                "gpus": n,
                "c": c,
                "trials": k,
                "static_fluid": ours,
                "best": best,
                "bound": bound,
            }
        )
    r = np.array(ratios)
    summary = {
        "instances": cfg.instances,
        "bound_held": held,
        "ratio_mean": round(float(r.mean()), 3),
        "ratio_p95": round(float(np.quantile(r, 0.95)), 3),
        "ratio_max": round(float(r.max()), 3),
        "over_2": int((r > 2).sum()),
    }
    publish(
        ctx,
        "theory",
        cfg,
        rows,
        summary=summary,
        summary_title="StaticFluid / best list schedule (ideal model)",
    )
    return summary
