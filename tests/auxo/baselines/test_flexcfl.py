"""FlexCFL-lite: round-0 pre-training of every client, EDC grouping, newcomers by best fit."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import adjusted_rand_score

from kairos.auxo.baselines.flexcfl import FlexCFLConfig, edc_features, edc_labels, run_flexcfl
from kairos.fl.learning import FederatedDataset
from tests.auxo.baselines.conftest import N_CLIENTS, make_runner


@settings(max_examples=50, deadline=None)
@given(seed=st.integers(0, 10_000), scale=st.floats(1e-3, 1e3))
def test_edc_is_cosines_and_ignores_a_global_scale(seed: int, scale: float) -> None:
    rng = np.random.default_rng(seed)
    u = rng.normal(size=(12, 30))
    f = edc_features(u, 4)
    assert f.shape == (12, 4) and np.all(np.abs(f) <= 1 + 1e-9)
    assert np.allclose(np.abs(edc_features(u * scale, 4)), np.abs(f), atol=1e-6)
    labels = edc_labels(u, 3, np.random.default_rng(0))
    again = edc_labels(u * scale, 3, np.random.default_rng(0))
    assert adjusted_rand_score(labels, again) == pytest.approx(1.0)


def test_edc_separates_updates_along_distinct_directions() -> None:
    rng = np.random.default_rng(0)
    directions = np.linalg.qr(rng.normal(size=(50, 4)))[0].T
    truth = np.repeat(np.arange(4), 6)
    u = directions[truth] * rng.uniform(0.5, 2.0, size=(24, 1)) + 0.05 * rng.normal(size=(24, 50))
    assert adjusted_rand_score(truth, edc_labels(u, 4, rng)) == pytest.approx(1.0)


def test_groups_are_formed_at_round_zero_from_every_client(separated: FederatedDataset) -> None:
    runner = make_runner(separated, participants=16)
    res = run_flexcfl(runner, FlexCFLConfig(k=4, rounds=1), np.random.default_rng(0))
    first = res.history.final
    assert first.round == 1 and first.participant_rounds == N_CLIENTS  # the pre-training round
    assert res.n_models == 4
    assert adjusted_rand_score(separated.groups, res.assignment) >= 0.9
    # each group model already took its members' pre-training step
    assert first.stats.mean > res.history.points[0].stats.mean + 0.1


def test_newcomers_join_the_group_whose_model_fits_best(separated: FederatedDataset) -> None:
    runner = make_runner(separated, participants=16)
    known = np.arange(0, N_CLIENTS, 2)
    res = run_flexcfl(runner, FlexCFLConfig(k=4, rounds=20), np.random.default_rng(1), known)
    assert res.events["newcomers"] == N_CLIENTS // 2
    new = np.arange(1, N_CLIENTS, 2)
    assert adjusted_rand_score(separated.groups[new], res.assignment[new]) >= 0.9
    assert adjusted_rand_score(separated.groups, res.assignment) >= 0.9
