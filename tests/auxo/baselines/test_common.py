"""The shared machinery: budgets, lockstep rounds, the every-client round, splits."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kairos.auxo.baselines.common import ClusterSet, client_losses, proportional_budgets
from kairos.fl import synthetic_population
from kairos.fl.learning import (
    BernoulliAvailability,
    ClientClock,
    FederatedDataset,
    LocalConfig,
    RoundConfig,
    RoundRunner,
    make_algorithm,
    make_model,
)
from tests.auxo.baselines.conftest import N_CLIENTS, make_runner


@settings(max_examples=200, deadline=None)
@given(
    sizes=st.lists(st.integers(0, 50), min_size=1, max_size=8),
    total=st.integers(1, 200),
)
def test_budgets_cover_the_total_and_every_nonempty_cluster(sizes: list[int], total: int) -> None:
    out = proportional_budgets(sizes, total)
    s = np.array(sizes)
    live = s > 0
    assert np.all(out[~live] == 0)
    if not live.any():
        assert out.sum() == 0
        return
    assert np.all(out[live] >= 1)
    assert out.sum() == max(total, int(live.sum()))
    exact = s / s.sum() * total
    if exact[live].min() >= 1:  # no cluster starved: largest remainder, within one of exact
        assert np.all(np.abs(out - exact) < 1)


def _clocked(
    ds: FederatedDataset, availability: BernoulliAvailability | None = None
) -> RoundRunner:
    model = make_model("lr", ds.n_features, ds.n_classes)
    pop = synthetic_population(len(ds), np.random.default_rng(3))
    return RoundRunner(
        model,
        ds,
        make_algorithm("fedavg"),
        LocalConfig(lr=0.05, batch_size=20, steps=10),
        RoundConfig(participants=8),
        clock=ClientClock.for_model(pop, model.n_params),
        availability=availability,
    )


def test_a_round_ends_with_its_slowest_cluster_and_counts_every_update(
    separated: FederatedDataset,
) -> None:
    runner = _clocked(separated)
    rng = np.random.default_rng(0)
    cs = ClusterSet.single(runner, rng)
    cs.split(0, np.arange(N_CLIENTS) % 3, np.arange(N_CLIENTS))
    cs.cost_factor = 2.0
    results = cs.run(rng, [cs.members(k) for k in range(3)], [4, 3, 0])
    done = [r for r in results if r is not None]
    assert results[2] is None and len(done) == 2
    assert cs.now == pytest.approx(max(r.end for r in done)) and cs.now > 0
    assert all(s.now == cs.now for s in cs.states)
    assert cs.participant_rounds == 2.0 * (4 + 3)
    assert cs.dispatched == 2.0 * sum(len(r.selected) for r in done)
    for k, r in enumerate(done):
        assert set(r.participants.tolist()) <= set(cs.members(k).tolist())


def test_every_client_reports_once_even_when_some_are_offline(separated: FederatedDataset) -> None:
    av = BernoulliAvailability.uniform(N_CLIENTS, np.random.default_rng(1), 0.3, 0.5, slot_s=30.0)
    runner = _clocked(separated, av)
    rng = np.random.default_rng(2)
    cs = ClusterSet.single(runner, rng)
    before = cs.states[0].weights.copy()
    everyone = np.arange(N_CLIENTS)
    updates = cs.collect_updates(0, everyone, rng)
    assert updates.shape == (N_CLIENTS, runner.model.n_params)
    assert np.all(np.linalg.norm(updates, axis=1) > 0)  # every row was filled by a client
    assert np.array_equal(cs.states[0].weights, before)  # the model did not move
    assert cs.participant_rounds == N_CLIENTS  # each client counted exactly once
    assert cs.dispatched >= N_CLIENTS and cs.now > 0


def test_split_clones_the_parent_for_every_part(separated: FederatedDataset) -> None:
    runner = make_runner(separated)
    rng = np.random.default_rng(0)
    cs = ClusterSet.single(runner, rng)
    cs.run(rng, [np.arange(N_CLIENTS)], [8])
    labels = np.arange(N_CLIENTS) % 4
    parts = cs.split(0, labels, np.arange(N_CLIENTS))
    assert parts[0] == 0 and cs.n_models == 4
    for j in parts:
        assert np.array_equal(cs.states[j].weights, cs.states[0].weights)
        assert cs.states[j].aggregator is not cs.states[0].aggregator or j == 0
    assert np.array_equal(cs.assignment, np.array(parts)[labels])


def test_client_losses_read_each_clients_training_data(separated: FederatedDataset) -> None:
    runner = make_runner(separated)
    w = [
        np.zeros(runner.model.n_params),
        np.random.default_rng(0).normal(size=runner.model.n_params),
    ]
    got = client_losses(runner, w, np.array([3, 5]))
    c = separated.clients[5]
    assert got.shape == (2, 2)
    assert got[1, 1] == pytest.approx(runner.model.loss(w[1], c.x_train, c.y_train))
    assert got[0, 0] == pytest.approx(np.log(separated.n_classes))  # zero model: uniform
