"""E3 (spec 6, Fig. 3.10): Auxo combined with other FL algorithms (and FTFA), each against itself.

On E1's clustered population, each of FedProx (mu = 0.1), q-FedAvg (q = 1, L = 1/lr) and
FedYoGi runs alone (one model) and under Auxo (one model per cohort, the algorithm unchanged
inside each), paired by seed. Auxo + X >= X is checked on final mean accuracy (difference in
points with its 95% CI) and on time to X's best accuracy; the paper's Fig. 3.10 beside
(1.2-2.2x faster, +3 to +6.8 points on ShuffleNet-OpenImage).

FTFA (spec 3.8, "fine-tune FedAvg"): FedAvg, then every client fine-tunes the model it is
served for `finetune_steps` local steps and is scored under its own fine-tuned copy: the single
global model for FTFA alone, its cohort's model under Auxo. The row compares the accuracies
after fine-tuning (paper: 63.18% -> 67.40%, +4.2 points) and reports beside it what
fine-tuning adds to each arm; its speed-up column is FedAvg's (fine-tuning happens after).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from kairos.auxo.experiments.arms import QUICK_POINT, arm_runs, mean_of
from kairos.auxo.experiments.pairing import compare
from kairos.auxo.experiments.runs import RunConfig
from kairos.experiments import ExperimentContext, experiment
from kairos.experiments.publish import publish
from kairos.fl.learning import AlgorithmName
from kairos.report.stats import mean_ci


class E3Config(BaseModel):
    model_config = ConfigDict(extra="forbid")

    seeds: int = Field(5, ge=2, le=100)
    first_seed: int = Field(0, ge=0)
    algorithms: tuple[AlgorithmName, ...] = ("fedprox", "qfedavg", "yogi")
    ftfa: bool = True
    finetune_steps: int = Field(10, ge=1)
    point: RunConfig = Field(default_factory=RunConfig)


def after_fine_tuning(runs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The runs with their final metrics replaced by those after fine-tuning."""
    keys = {"final_mean": "ft_mean", "final_p10": "ft_p10", "final_variance": "ft_variance"}
    return [{**r, **{k: r[v] for k, v in keys.items()}} for r in runs]


def ftfa_row(cfg: E3Config, ctx: ExperimentContext, seeds: list[int]) -> dict[str, Any]:
    """FTFA alone vs Auxo + FTFA, both scored after every client fine-tunes its model."""
    ft = {"algorithm": "fedavg", "finetune_steps": cfg.finetune_steps}
    arms = {"single": {**ft, "arm": "single"}, "auxo": {**ft, "arm": "auxo"}}
    runs = arm_runs(ctx, cfg.point, arms, seeds, "auxo E3 ftfa")
    single, auxo = after_fine_tuning(runs["single"]), after_fine_tuning(runs["auxo"])
    row: dict[str, Any] = {"algorithm": "ftfa", **compare(single, auxo)}
    for arm in ("single", "auxo"):
        gain, ci = mean_ci([100 * (r["ft_mean"] - r["final_mean"]) for r in runs[arm]])
        row[f"{arm}_ft_gain"], row[f"{arm}_ft_gain_ci95"] = round(gain, 3), round(ci, 3)
    row["leaves"] = mean_of(runs["auxo"], "leaves")
    row["paper_gain_points"] = "4.2 (63.18% -> 67.40%)"
    row["paper_speedup"] = ""
    return row


@experiment(
    "auxo",
    "e3",
    "E3: Auxo + FedProx / q-FedAvg / YoGi / FTFA vs each algorithm alone",
    E3Config,
    {"seeds": 3, "point": QUICK_POINT},
)
def e3(cfg: E3Config, ctx: ExperimentContext) -> dict[str, Any]:
    seeds = list(range(cfg.first_seed, cfg.first_seed + cfg.seeds))
    rows = []
    for alg in cfg.algorithms:
        arms = {
            "single": {"algorithm": alg, "arm": "single"},
            "auxo": {"algorithm": alg, "arm": "auxo"},
        }
        runs = arm_runs(ctx, cfg.point, arms, seeds, f"auxo E3 {alg}")
        row: dict[str, Any] = {"algorithm": alg, **compare(runs["single"], runs["auxo"])}
        row["leaves"] = mean_of(runs["auxo"], "leaves")
        row["paper_gain_points"] = "3.0-6.8"
        row["paper_speedup"] = "1.2-2.2"
        rows.append(row)
    if cfg.ftfa:
        rows.append(ftfa_row(cfg, ctx, seeds))
    summary = {
        "seeds": f"{seeds[0]}..{seeds[-1]}",
        "mu": cfg.point.mu,
        "q": cfg.point.q,
        "finetune_steps": cfg.finetune_steps if cfg.ftfa else 0,
    }
    publish(
        ctx,
        "e3",
        cfg,
        rows,
        f"E3: Auxo + X vs X, paired over {len(seeds)} seeds (points, 95% CI)",
        summary,
        columns=[
            "algorithm",
            "base_final_mean",
            "final_mean",
            "d_final_mean",
            "d_final_mean_ci95",
            "d_final_mean_wins",
            "speedup",
            "speedup_lo",
            "speedup_hi",
            "leaves",
            "single_ft_gain",
            "auxo_ft_gain",
            "paper_gain_points",
            "paper_speedup",
        ],
    )
    return {"rows": rows, "summary": summary}
