"""CL+HC: warm-up, one clustering round over every client, hierarchical clustering."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import adjusted_rand_score

from kairos.auxo.baselines.clhc import CLHCConfig, hierarchical_labels, run_clhc
from kairos.fl.learning import BernoulliAvailability, FederatedDataset
from tests.auxo.baselines.conftest import N_CLIENTS, make_runner


def _blobs(seed: int, sizes: list[int], dim: int = 20) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    centres = rng.normal(0, 10, size=(len(sizes), dim))
    x = np.concatenate([c + rng.normal(size=(n, dim)) for c, n in zip(centres, sizes, strict=True)])
    return x, np.repeat(np.arange(len(sizes)), sizes)


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), sizes=st.lists(st.integers(2, 12), min_size=2, max_size=5))
def test_hierarchical_clustering_finds_separated_blobs_in_any_order(
    seed: int, sizes: list[int]
) -> None:
    x, truth = _blobs(seed, sizes)
    cfg = CLHCConfig(n_clusters=len(sizes))
    labels = hierarchical_labels(x, cfg)
    assert adjusted_rand_score(truth, labels) == pytest.approx(1.0)
    perm = np.random.default_rng(seed).permutation(len(x))
    assert adjusted_rand_score(labels[perm], hierarchical_labels(x[perm], cfg)) == pytest.approx(
        1.0
    )


def test_distance_threshold_cut_and_ward_needs_euclidean() -> None:
    x, truth = _blobs(0, [5, 6, 7])
    labels = hierarchical_labels(x, CLHCConfig(n_clusters=None, distance_threshold=50.0))
    assert adjusted_rand_score(truth, labels) == pytest.approx(1.0)
    with pytest.raises(ValueError, match="Ward"):
        hierarchical_labels(x, CLHCConfig(metric="cosine"))


def test_every_client_is_clustered_exactly_once_even_with_sparse_availability(
    separated: FederatedDataset,
) -> None:
    av = BernoulliAvailability.uniform(N_CLIENTS, np.random.default_rng(3), 0.2, 0.4, slot_s=1.0)
    runner = make_runner(separated, participants=8)
    runner.availability = av
    cfg = CLHCConfig(rounds=12, warmup_rounds=5, eval_every=100)
    res = run_clhc(runner, cfg, np.random.default_rng(0))
    final = res.history.final
    # warm-up rounds keep P each, the clustering round adds each client once, then P a round
    assert res.events["clustered_at_round"] == 6 and final.round == 12
    assert final.participant_rounds <= 5 * 8 + N_CLIENTS + 6 * 8
    assert final.participant_rounds >= N_CLIENTS
    assert res.n_models == 4 and np.bincount(res.assignment).sum() == N_CLIENTS
    assert adjusted_rand_score(separated.groups, res.assignment) >= 0.9


def test_clhc_counts_the_all_client_round_and_improves(separated: FederatedDataset) -> None:
    runner = make_runner(separated, participants=16)
    res = run_clhc(runner, CLHCConfig(rounds=40, warmup_rounds=10), np.random.default_rng(1))
    assert res.history.final.participant_rounds == 10 * 16 + N_CLIENTS + 29 * 16
    before_split = res.history.points[1].stats.mean  # round 10, the warmed-up global model
    assert res.history.final.stats.mean > before_split + 0.1
