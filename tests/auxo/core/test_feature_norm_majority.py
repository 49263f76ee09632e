"""Does spec 3.1's normalisation make k-means cut a majority group at the root?

The candidate cause of E1's majority ending in two leaves on 60/20/20 and 70/30 was: features
are centred on the round mean, which the majority dominates, then scaled to unit length, so a
majority client's feature is mostly noise and K = 2 k-means may cut the majority. Measured on
E1's own updates it does not: at the root's first clustering round the majority's centred
signal is about its noise (0.08-0.15 vs 0.08-0.11, cosine to the group direction 0.67-0.85),
which is enough, and the cut keeps the majority whole under "unit", "center" and "none" alike
(70/30 and 60/20/20, YoGi, seeds 0-4). The majority is divided later, by clients that had no
root label at the split (docs/auxo.md, the E1 claim). Seed 0 here keeps the test cheap.

"center" and "none" cluster and reward identically (distances, k-means and the outlier
threshold are translation invariant), which is why their E1 rows coincide.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pytest

from kairos.auxo.clustering import kmeans
from kairos.auxo.experiments.runs import (
    AUXO_DEFAULTS,
    RunConfig,
    auxo_params,
    build_runner,
    corrupted_dataset,
)
from kairos.auxo.features import build_features
from kairos.auxo.params import AuxoParams, FeatureNorm
from kairos.auxo.policy import RoundReport
from kairos.auxo.rewards import instant_rewards
from kairos.auxo.robustness import Faults
from kairos.auxo.training import CohortTraining

NORMS: tuple[FeatureNorm, ...] = ("unit", "center", "none")


def first_root_clustering(weights: tuple[float, ...], seed: int) -> tuple[np.ndarray, np.ndarray]:
    """(updates, groups) of the participants of the root's first clustering round in E1 quick.

    Nothing before that round depends on feature_norm, so these updates are the same under all
    three norms."""
    cfg = RunConfig.model_validate(
        {
            "seed": seed,
            "rounds": 150,
            "data": {"n_clients": 200, "group_weights": weights, "n_groups": len(weights)},
        }
    )
    ds, _ = corrupted_dataset(cfg)
    tr = CohortTraining(
        build_runner(cfg, ds),
        auxo_params(cfg, len(ds)),
        seed=seed,
        faults=Faults(None, 1.0, 0.0, "once"),
    )
    seen: list[tuple[list[int], np.ndarray]] = []
    observe = tr.policy.observe

    def spy(
        cohort: str,
        round_local: int,
        client_ids: Sequence[int],
        updates: np.ndarray,
        *,
        t: float = 0.0,
    ) -> RoundReport:
        report = observe(cohort, round_local, client_ids, updates, t=t)
        if report.status == "initialised":
            seen.append((list(client_ids), np.array(updates, copy=True)))
        return report

    tr.policy.observe = spy  # type: ignore[method-assign]
    for r in range(1, 12):
        tr.run(r, 10**6)
        if seen:
            ids, updates = seen[0]
            return updates, ds.groups[np.array(ids)]
    raise AssertionError("the root never clustered in 11 rounds")


@pytest.mark.parametrize("weights", [(0.7, 0.3), (0.6, 0.2, 0.2)])
def test_the_roots_first_cut_keeps_the_majority_whole_under_every_norm(
    weights: tuple[float, ...],
) -> None:
    updates, groups = first_root_clustering(weights, seed=0)
    majority = groups == 0
    assert majority.mean() > 0.5  # the round mean is the majority's
    base = AuxoParams(n_clients=200, total_rounds=150, **AUXO_DEFAULTS)
    for norm in NORMS:
        frame = build_features(
            updates, grad_fraction=base.grad_fraction, dtype=base.feature_dtype, norm=norm
        )
        labels, _, _ = kmeans(frame.features, 2, np.random.default_rng([0, 1, 1, 0]))
        side = labels[majority]
        assert np.all(side == side[0]), f"{norm}: the majority is cut {np.bincount(side)}"
        # and the minorities are on the other side (seed 0 of both populations)
        assert np.all(labels[~majority] != side[0]), norm


def test_center_and_none_cluster_and_reward_alike() -> None:
    rng = np.random.default_rng(5)
    shift = rng.normal(0.0, 3.0, 40)  # a large common component that centring removes
    updates = shift + np.concatenate([rng.normal(0, 1, (12, 40)), rng.normal(1, 1, (9, 40))])
    params = AuxoParams(n_clients=100, total_rounds=100, grad_fraction=1.0, min_known=2)
    out = {}
    pair: tuple[FeatureNorm, ...] = ("center", "none")
    for norm in pair:
        f = build_features(updates, grad_fraction=1.0, dtype="float64", norm=norm).features
        labels, _, _ = kmeans(f, 2, np.random.default_rng(7))
        known = np.arange(len(f)) % 3 != 0
        res = instant_rewards(f, known, params)
        assert res is not None
        out[norm] = (labels, res[0])
    assert np.array_equal(out["center"][0], out["none"][0])
    np.testing.assert_allclose(out["center"][1], out["none"][1], atol=1e-9)
    # "unit" is not a translation of them: its rewards differ on the same updates
    f = build_features(updates, grad_fraction=1.0, dtype="float64", norm="unit").features
    res_unit = instant_rewards(f, np.arange(len(f)) % 3 != 0, params)
    assert res_unit is not None
    assert not np.allclose(res_unit[0], out["center"][1], atol=1e-3)
