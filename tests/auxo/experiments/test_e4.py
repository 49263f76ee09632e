"""E4 in a reduced quick mode: the clustered baselines and Auxo against one model.

What is asserted is what E4 measures on the spec's E1 population (four latent groups that
conflict, Synthetic(alpha=1, beta=0), LR), with margins from the spread across seeds:

* every clustered method beats the single model's final accuracy (the paired 95% CI of the
  difference excludes 0);
* IFCA, charged K = 4 trainings per task, is less resource-efficient than Auxo and FlexCFL:
  paired per seed, it needs more participant-rounds to reach the single model's best accuracy
  (against CL+HC, whose warm-up and all-client round cost about as much, the order flips
  between this reduced scale and the full one, so it is not asserted);
* CCL, at full participation, splits the population and beats the single model;
* CL+HC and FlexCFL end above Auxo on every seed, and Auxo's own cohort models with every
  client on its lowest-loss leaf nearly close the gap: their lead is Auxo's misplaced clients.

Not asserted on this population, because it does not hold here (reported in docs/auxo.md):
the paper's "Auxo at least each clustered baseline" against CL+HC and FlexCFL, whose one-shot
clustering, told the true K, recovers these cleanly separable groups exactly (ARI 1) at or
near round 0, which is the best possible partition for a convex model on conflicting
labellers; Auxo above IFCA, which the full-size runs show but 120 clients and 100 rounds do
not resolve over three seeds.

On clients without latent groups whose label mixes differ (`ungrouped`, Dirichlet(0.5) label
skew: heterogeneity of FEMNIST's and Amazon Review's kind) the source's claims do hold, and
are asserted: Auxo keeps one cohort and ends above IFCA, CL+HC and FlexCFL on every seed
(their K = 4 clusters only split the data), IFCA never reaches the single model's best (its
resource efficiency is below 1x) and CCL ends within the seed spread of the single model.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from kairos.auxo.experiments.e4 import E4Config, e4
from kairos.auxo.experiments.pairing import first_time
from kairos.experiments import ExperimentContext
from kairos.report.stats import paired_ratio

ONLINE = (1.0, 1.0)
SMALL = {"p_on": ONLINE, "data": {"n_clients": 120}, "rounds": 100, "eval_every": 5}
FULL = {"p_on": ONLINE, "p_total": 60, "data": {"n_clients": 60}, "rounds": 100, "eval_every": 5}


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    cfg = E4Config.model_validate(
        {"seeds": 3, "small": {"run": SMALL}, "ccl_setting": {"run": FULL}, "ungrouped": 0.5}
    )
    out: Path = tmp_path_factory.mktemp("e4") / "auxo" / "e4"
    return e4(cfg, ExperimentContext(out_dir=out, jobs=2, progress=False, cache=False))


def _row(result: dict[str, Any], setting: str, method: str) -> dict[str, Any]:
    return next(r for r in result["rows"] if r["setting"] == setting and r["method"] == method)


@pytest.mark.parametrize(
    ("setting", "method"),
    [
        ("small", "auxo"),
        ("small", "ifca"),
        ("small", "clhc"),
        ("small", "flexcfl"),
        ("ccl_n100", "ccl"),
        ("ccl_n100", "auxo"),
    ],
)
def test_every_clustered_method_beats_the_single_model(
    result: dict[str, Any], setting: str, method: str
) -> None:
    row = _row(result, setting, method)
    assert row["d_final_mean"] - row["d_final_mean_ci95"] > 0, row
    assert row["d_final_mean_wins"] == row["seeds"] == 3


def _jobs_to_target(single: dict[str, Any], run: dict[str, Any]) -> float:
    t = first_time(run, float(single["best_mean"]), "curve_participant_rounds")
    assert t is not None, f"{run['method']} never reached the single model's best"
    return t


@pytest.mark.parametrize("other", ["auxo", "flexcfl"])
def test_ifca_needs_more_participant_rounds_than_auxo_and_flexcfl(
    result: dict[str, Any], other: str
) -> None:
    runs = result["runs"]["small"]
    ifca = [_jobs_to_target(s, r) for s, r in zip(runs["single"], runs["ifca"], strict=True)]
    them = [_jobs_to_target(s, r) for s, r in zip(runs["single"], runs[other], strict=True)]
    ratio = paired_ratio(ifca, them)  # > 1: the other method needs fewer participant-rounds
    assert ratio.wins == 3 and ratio.geo_mean > 1, ratio
    assert (
        _row(result, "small", "ifca")["resource_ratio"]
        < _row(result, "small", other)["resource_ratio"]
    )


def test_ccl_splits_at_the_cost_of_full_participation(result: dict[str, Any]) -> None:
    runs = result["runs"]["ccl_n100"]
    for single, ccl in zip(runs["single"], runs["ccl"], strict=True):
        assert ccl["leaves"] >= 2
        # full participation: CCL spends exactly what the single model spends per round
        assert ccl["participant_rounds"] == single["participant_rounds"] == 60 * 100
    assert np.mean([r["ari"] for r in runs["ccl"]]) > 0.5


@pytest.mark.parametrize("other", ["clhc", "flexcfl"])
def test_the_one_shot_baselines_lead_is_auxos_misplaced_clients(
    result: dict[str, Any], other: str
) -> None:
    """Measured (this setting, seeds 0-2): CL+HC and FlexCFL end above Auxo on every seed (the
    paper's order does not hold here), by 5.0 and 5.6 points; Auxo's own cohort models with
    each client on its lowest-loss leaf (a diagnostic) come within 1 point of them. At quick
    scale (N = 200, 150 rounds, seeds 0-4) the gaps were 4.1 +- 1.6 and 4.8 +- 1.6 points,
    and 3.2-4.6 with the baselines told a wrong K = 8 (docs/auxo.md, E4)."""
    row = _row(result, "small", other)
    assert row["auxo_higher"] == "0/3" and row["auxo_minus"] < 0
    runs = result["runs"]["small"]
    pairs = list(zip(runs["auxo"], runs[other], strict=True))
    lead = np.mean([o["final_mean"] - a["final_mean"] for a, o in pairs])
    left = np.mean([o["final_mean"] - a["oracle_mean"] for a, o in pairs])
    assert lead > 0 and left < 0.5 * lead


@pytest.mark.parametrize("other", ["clhc", "flexcfl"])
def test_straggler_feedback_narrows_the_one_shot_baselines_lead(
    result: dict[str, Any], other: str
) -> None:
    """Option `straggler_feedback` (ours): always online, Auxo's misplaced clients are chronic
    stragglers; rewarding their late updates places most of them. Measured at quick scale
    (N = 200, 150 rounds, seeds 0-4): +2.1 +- 1.9 points over Auxo (5/5), misplaced 6-16 ->
    3-7; the gap to CL+HC 4.1 -> 2.0 points, to FlexCFL 4.8 -> 2.8 (still 0/5 above them)."""
    runs = result["runs"]["small"]
    pairs = list(zip(runs["auxo"], runs["auxo_sf"], strict=True))
    gain = [s["final_mean"] - a["final_mean"] for a, s in pairs]
    assert min(gain) > 0, gain
    assert sum(s["misassigned"] for _, s in pairs) < sum(a["misassigned"] for a, _ in pairs)
    row = _row(result, "small", other)
    assert row["sf_auxo_minus"] > row["auxo_minus"], row


def test_without_latent_groups_auxo_keeps_one_cohort_and_ends_above_each_baseline(
    result: dict[str, Any],
) -> None:
    """Measured (this setting, seeds 0-2): Auxo minus IFCA +1.6 +- 1.3 points, minus CL+HC
    +2.2 +- 1.1, minus FlexCFL +2.7 +- 1.2, 3/3 each; at quick scale (N = 200, 150 rounds,
    seeds 0-4) +1.2 +- 1.1, +2.2 +- 1.0, +1.9 +- 0.7 (docs/auxo.md, E4)."""
    runs = result["runs"]["small_ungrouped"]
    assert [r["leaves"] for r in runs["auxo"]] == [1, 1, 1]  # nothing to split: no split
    for other in ("ifca", "clhc", "flexcfl"):
        row = _row(result, "small_ungrouped", other)
        assert row["auxo_higher"] == "3/3", row
        assert row["auxo_minus"] - row["auxo_minus_ci95"] > 0, row


def test_without_latent_groups_ifca_is_less_efficient_than_the_single_model(
    result: dict[str, Any],
) -> None:
    """Resource efficiency below 1x, shown the strict way: by the end IFCA has spent more
    participant-rounds than the single model needed for its best accuracy and still has not
    reached it, on every seed."""
    runs = result["runs"]["small_ungrouped"]
    for single, ifca in zip(runs["single"], runs["ifca"], strict=True):
        best = float(single["best_mean"])
        needed = first_time(single, best, "curve_participant_rounds")
        assert needed is not None
        assert first_time(ifca, best, "curve_participant_rounds") is None
        assert ifca["participant_rounds"] > needed


def test_without_latent_groups_ccl_is_close_to_the_single_model(result: dict[str, Any]) -> None:
    row = _row(result, "ccl_n100_ungrouped", "ccl")
    assert abs(row["d_final_mean"]) < 100 * row["base_spread"], row  # within the seed spread
    assert (
        row["d_final_mean"] - row["d_final_mean_ci95"]
        < 0
        < (row["d_final_mean"] + row["d_final_mean_ci95"])
    ), row  # the CI covers no difference
    auxo = _row(result, "ccl_n100_ungrouped", "auxo")
    assert auxo["leaves"] == 1 and auxo["d_final_mean"] == 0.0
