"""E1 in quick mode (200 clients, 150 rounds, 3 paired seeds; full mode runs in `make bench`).

Margins come from the measured spread: over seeds 0-2 the single model ends at 0.29-0.31 and
Auxo at 0.59-0.70, a paired difference of +30 to +39 points with CI half-widths of 3-5 points;
speed-ups to the single model's best were 4.9-5.6x (lower CI bounds 1.4-3.8); membership ARI
0.80-0.86. With Dirichlet(0.5) label skew inside the groups Auxo did not split on any seed
(the skew dominates the updates), so it must at least do no harm there. On the "unequal"
variant (one group of 70% of the clients, three of 10%) the single model's per-client accuracy
is spread as in Table 3.4, and there Auxo lowers the variance.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kairos.auxo.experiments import e1
from kairos.experiments import ExperimentContext


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    cfg = e1.E1Config.model_validate(
        {"seeds": 3, "point": {"data": {"n_clients": 200}, "rounds": 150}}
    )
    ctx = ExperimentContext(
        Path(tmp_path_factory.mktemp("e1")), jobs=2, progress=False, cache=False
    )
    return {
        r["algorithm"].split(",")[0]
        + ("_skew" if "skew" in r["algorithm"] else "")
        + ("_unequal" if "unequal" in r["algorithm"] else ""): r
        for r in e1.e1(cfg, ctx)["rows"]
    }


@pytest.mark.parametrize("alg", ["fedavg", "yogi"])
def test_auxo_beats_the_single_model_by_a_clear_margin(
    rows: dict[str, dict[str, Any]], alg: str
) -> None:
    r = rows[alg]
    assert r["seeds"] == 3 and r["d_final_mean_wins"] == 3
    assert r["d_final_mean"] > 10.0  # points
    assert r["d_final_mean"] - r["d_final_mean_ci95"] > 0


@pytest.mark.parametrize("alg", ["fedavg", "yogi"])
def test_auxo_reaches_the_single_models_best_sooner_and_cheaper(
    rows: dict[str, dict[str, Any]], alg: str
) -> None:
    r = rows[alg]
    assert r["speedup_reached"] == "3/3" and r["speedup"] > 1.0 and r["speedup_lo"] > 1.0
    assert r["resource_ratio"] > 1.0


@pytest.mark.parametrize("alg", ["fedavg", "yogi"])
def test_auxo_raises_the_worst_tenth(rows: dict[str, dict[str, Any]], alg: str) -> None:
    r = rows[alg]
    assert r["d_final_p10_wins"] == 3 and r["final_p10"] > r["base_final_p10"] + 0.1


@pytest.mark.parametrize("alg", ["fedavg", "yogi"])
def test_auxo_finds_cohorts_matching_the_latent_groups(
    rows: dict[str, dict[str, Any]], alg: str
) -> None:
    r = rows[alg]
    assert r["leaves"] >= 3.0  # 2-4 leaves on every seed, mostly 4
    assert r["ari"] > 0.6 and r["nmi"] > 0.6
    assert r["affinity_share"] < 0.01  # affinity messages << model traffic


def test_with_label_skew_inside_groups_auxo_does_no_harm(rows: dict[str, dict[str, Any]]) -> None:
    r = rows["yogi_skew"]
    assert r["seeds"] == 3
    assert r["d_final_mean"] >= -max(100 * r["base_spread"], 1.0)


def test_the_variance_rise_is_misassignment_not_the_cohort_models(
    rows: dict[str, dict[str, Any]],
) -> None:
    """Measured (YoGi, quick, seeds 0-4): Auxo's variance is 2-4x the single model's, but with
    each client on its lowest-training-loss leaf (a diagnostic, not Auxo) it is below it on
    5/5 seeds; 9-14 of 200 clients sit elsewhere under Auxo's own assignment."""
    r = rows["yogi"]
    assert r["variance_change"] > 0  # not reproduced: Auxo raises the variance
    assert r["oracle_variance_lower"] == 3 and r["oracle_variance_change"] < 0
    assert 0 < r["misassigned"] < 0.15 * 200


def test_misplacement_follows_the_relative_threshold_and_rare_participation(
    rows: dict[str, dict[str, Any]],
) -> None:
    """Measured (YoGi and FedAvg, quick, seeds 0-4): in rounds with no outsider 17-18% of the
    participants still get dR < 0 (tau = mean + std is relative to the round), outsiders
    70-100%; 10-35% of the clients with fewer than 10 rewarded participations end misplaced,
    1-10% of the others (kairos.auxo.diagnostics)."""
    for alg in ("fedavg", "yogi"):
        r = rows[alg]
        assert 0.10 < r["diag_pure_outlier_share"] < 0.25
        assert r["diag_outsider_outlier_share"] > 0.5 > r["diag_member_outlier_share"]
        assert r["diag_misplaced_rare"] > 2 * r["diag_misplaced_frequent"]


@pytest.mark.parametrize("alg", ["fedavg", "yogi"])
def test_auxo_lowers_the_variance_where_the_single_models_accuracy_is_spread(
    rows: dict[str, dict[str, Any]], alg: str
) -> None:
    """Measured (quick, seeds 0-4; groups of 70/10/10/10% of the clients): the single model
    serves the majority and fails the minorities (YoGi p10 0.08, p90 0.84, variance 911
    percent^2; Table 3.4's baselines: p10 32-60%, p90 79-100%, variance 185-995); Auxo lowers
    the variance on 5/5 seeds (YoGi -413 +- 191 percent^2, -44%; FedAvg -251 +- 143, -35%),
    gains 7.8 +- 1.7 / 6.2 +- 2.6 points and reaches the single model's best 2.7x / 2.9x
    sooner. On E1's equal groups the single model's variance is about 8x smaller and Auxo
    raises it (test above)."""
    r, equal = rows[f"{alg}_unequal"], rows[alg]
    assert r["base_final_variance"] > 3 * equal["base_final_variance"]
    assert r["base_final_p90"] - r["base_final_p10"] > 0.5  # a widely spread single model
    # lower on every seed, by 18-50% (seeds 0-2); 3 seeds are too few for the CI to exclude 0
    assert r["d_final_variance_wins"] == 3 and r["variance_change"] < -0.1
    assert r["d_final_mean_wins"] == 3 and r["d_final_mean"] - r["d_final_mean_ci95"] > 0
    assert r["d_final_p10_wins"] == 3
    assert r["speedup_reached"] == "3/3" and r["speedup_lo"] > 1.0


@pytest.mark.parametrize("alg", ["fedavg", "yogi"])
def test_cohorts_over_the_clients_placed_by_evidence(
    rows: dict[str, dict[str, Any]], alg: str
) -> None:
    """The E1 claim's cohort clause (docs/auxo.md) scored as E0 scores it: over the clients whose
    final leaf holds one of their own rewarded updates (`evaluation.evidence_mask`), beside the
    all-client ARI. Measured (quick, seeds 0-4, E1's trace): equal groups YoGi 0.90 +- 0.02
    (FedAvg 0.86 +- 0.10) over 94-98% of the clients; 70/10/10/10 YoGi 0.44 +- 0.14 (FedAvg
    0.38 +- 0.13) over 92-98%. The coverage is near 1, so the score is not bought by leaving
    clients out, and on the unequal groups it stays far below E0's 0.8: the clients without
    evidence are not what keeps the cohorts from matching the groups there (docs/auxo.md)."""
    equal, unequal = rows[alg], rows[f"{alg}_unequal"]
    for r in (equal, unequal):
        assert r["coverage_evidence_min"] > 0.85 and r["coverage_sampled"] > 0.95
        assert r["ari_evidence"] >= r["ari"]  # the unplaced clients only lower the match
    assert equal["ari_evidence"] > 0.75 and equal["nmi_evidence"] > 0.75
    assert unequal["ari_evidence"] < 0.65  # seeds 0-2: YoGi 0.43-0.58, FedAvg 0.33-0.44
