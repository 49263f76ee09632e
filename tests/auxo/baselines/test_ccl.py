"""CCL: full participation, splits only at a stationary point, cosine bi-partitioning."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import adjusted_rand_score

import kairos.auxo.baselines.ccl as ccl
from kairos.auxo.baselines.ccl import CCLConfig, bipartition, cosine_matrix, run_ccl, stationary
from kairos.fl.learning import FederatedDataset
from tests.auxo.baselines.conftest import N_CLIENTS, make_runner


def test_stationary_needs_a_small_mean_and_a_large_individual_update() -> None:
    counts = np.ones(4)
    opposed = np.array([[2.0, 0], [-2.0, 0], [0, 2.0], [0, -2.0]])  # cancel out
    assert stationary(opposed, counts, eps1=0.1, eps2=1.0)
    assert not stationary(opposed, counts, eps1=0.1, eps2=3.0)  # nobody is far off
    aligned = np.array([[2.0, 0]] * 4)
    assert not stationary(aligned, counts, eps1=0.1, eps2=1.0)  # still descending together
    assert not stationary(opposed * 0.01, counts, eps1=0.1, eps2=1.0)  # converged: no split


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 10_000), n=st.integers(2, 12), m=st.integers(2, 12))
def test_bipartition_follows_direction_not_length(seed: int, n: int, m: int) -> None:
    rng = np.random.default_rng(seed)
    a, b = np.linalg.qr(rng.normal(size=(20, 2)))[0].T
    lengths = rng.uniform(0.01, 100.0, size=n + m)  # norms overlap across the two sides
    noise = 0.05 * rng.normal(size=(n + m, 20))
    u = np.vstack([np.outer(lengths[:n], a), np.outer(lengths[n:], b)])
    u += noise * lengths[:, None]
    labels, cross = bipartition(u)
    truth = np.r_[np.zeros(n), np.ones(m)]
    assert adjusted_rand_score(truth, labels) == pytest.approx(1.0)
    sim = cosine_matrix(u)
    assert cross == pytest.approx(sim[np.ix_(labels == 0, labels == 1)].max())
    assert cross < 0.5


def test_splits_happen_only_after_a_stationary_test_passes(
    separated: FederatedDataset, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[str, Any]] = []
    real_stationary, real_bipartition = ccl.stationary, ccl.bipartition

    def spy_stationary(*args: Any) -> bool:
        out = real_stationary(*args)
        calls.append(("stationary", out))
        return out

    def spy_bipartition(*args: Any) -> tuple[np.ndarray, float]:
        calls.append(("bipartition", None))
        return real_bipartition(*args)

    monkeypatch.setattr(ccl, "stationary", spy_stationary)
    monkeypatch.setattr(ccl, "bipartition", spy_bipartition)
    runner = make_runner(separated, participants=N_CLIENTS)
    res = run_ccl(runner, CCLConfig(rounds=60, min_rounds=10), np.random.default_rng(0))
    for i, (what, _) in enumerate(calls):
        if what == "bipartition":
            assert calls[i - 1] == ("stationary", True)
    assert any(c == ("stationary", False) for c in calls)  # it did wait for the point
    splits = res.events["splits"]
    assert isinstance(splits, list) and 1 <= len(splits) <= 3
    assert all(s["round"] >= 10 for s in splits)  # late: never before min_rounds
    assert res.n_models == len(splits) + 1
    assert res.history.final.participant_rounds == N_CLIENTS * 60  # full participation
    assert adjusted_rand_score(separated.groups, res.assignment) >= 0.9


def test_no_stationary_point_means_one_model(separated: FederatedDataset) -> None:
    runner = make_runner(separated, participants=N_CLIENTS)
    res = run_ccl(runner, CCLConfig(rounds=30, eps1=1e-6, min_rounds=5), np.random.default_rng(0))
    assert res.n_models == 1 and res.events["splits"] == []
    assert np.all(res.assignment == 0)
