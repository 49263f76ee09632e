"""Rounds on the FedScale-like clock, and convergence checks that could fail."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from kairos.fl import ResponseModel, synthetic_population
from kairos.fl.learning import (
    AccuracyStats,
    AlgorithmName,
    Availability,
    BernoulliAvailability,
    ClientClock,
    FederatedDataset,
    LocalConfig,
    RoundConfig,
    RoundRunner,
    device_population,
    evaluate_clients,
    federated_digits,
    federated_synthetic,
    make_algorithm,
    make_model,
    train,
)


@pytest.fixture(scope="module")
def iid_digits() -> FederatedDataset:
    return federated_digits(40, np.random.default_rng(0), n_groups=1, transform="none")


def _runner(
    ds: FederatedDataset,
    clock: ClientClock | None = None,
    availability: Availability | None = None,
    alg: AlgorithmName = "fedavg",
    **round_kw: Any,
) -> RoundRunner:
    model = make_model("lr", ds.n_features, ds.n_classes)
    return RoundRunner(
        model,
        ds,
        make_algorithm(alg, lr=0.1),
        LocalConfig(lr=0.1, batch_size=20, steps=10),
        RoundConfig(**round_kw),
        clock=clock,
        availability=availability,
    )


def _exact_clock(n: int) -> ClientClock:
    pop = synthetic_population(n, np.random.default_rng(3))
    return ClientClock(pop, ResponseModel(compute_s=0.05, comm_s=0.0, noise_sigma=0.0))


def test_overcommit_keeps_the_fastest_p_and_ends_at_the_pth(iid_digits: FederatedDataset) -> None:
    clock = _exact_clock(40)
    runner = _runner(iid_digits, clock=clock, participants=10, overcommit=1.3)
    state = runner.new_state(np.random.default_rng(0))
    res = runner.run_round(state, np.random.default_rng(1))
    assert len(res.selected) == 13 and len(res.participants) == 10 and len(res.stragglers) == 3
    work = np.array([runner.local.work(int(iid_digits.train_counts[c])) for c in res.selected])
    dur = dict(
        zip(
            res.selected.tolist(),
            0.05 * work * clock.population.slowness[res.selected],
            strict=True,
        )
    )
    kept = [dur[c] for c in res.participants.tolist()]
    assert kept == sorted(kept) and max(kept) <= min(dur[c] for c in res.stragglers.tolist())
    assert res.end == pytest.approx(max(kept)) and state.now == res.end
    assert state.round == 1 and state.participant_rounds == 10 and state.dispatched == 13
    assert res.updates.shape == (10, runner.model.n_params) and res.aggregated


def test_deadline_drops_stragglers_and_bounds_the_round(iid_digits: FederatedDataset) -> None:
    clock = _exact_clock(40)
    runner = _runner(iid_digits, clock=clock, participants=10, overcommit=1.3, deadline_s=8.0)
    state = runner.new_state(np.random.default_rng(0))
    for _ in range(5):
        start = state.now
        res = runner.run_round(state, np.random.default_rng(state.round))
        assert res.end - start <= 8.0 + 1e-9
        work = np.array(
            [runner.local.work(int(iid_digits.train_counts[c])) for c in res.participants]
        )
        assert np.all(0.05 * work * clock.population.slowness[res.participants] <= 8.0)
        if len(res.participants) < 10:
            assert res.end - start == pytest.approx(8.0)


def test_clients_that_go_offline_fail_and_are_never_aggregated(
    iid_digits: FederatedDataset,
) -> None:
    clock = _exact_clock(40)
    av = BernoulliAvailability.uniform(40, np.random.default_rng(2), 0.5, 0.9, slot_s=5.0)
    runner = _runner(iid_digits, clock=clock, availability=av, participants=8)
    state = runner.new_state(np.random.default_rng(0))
    failed = 0
    for r in range(20):
        start = state.now
        online = av.online(start)
        res = runner.run_round(state, np.random.default_rng(r))
        assert np.all(online[res.selected])  # only online clients are picked
        assert not set(res.failed.tolist()) & set(res.participants.tolist())
        off = av.offline_at(res.participants, start)
        work = [runner.local.work(int(iid_digits.train_counts[c])) for c in res.participants]
        dur = 0.05 * np.array(work) * clock.population.slowness[res.participants]
        assert np.all(start + dur <= off + 1e-9)  # the kept ones finished while online
        failed += len(res.failed)
    assert failed > 0


def test_candidates_and_budget_restrict_a_cohort(iid_digits: FederatedDataset) -> None:
    runner = _runner(iid_digits, participants=10)
    members = np.arange(0, 40, 4)
    state = runner.new_state(np.random.default_rng(0))
    child = state.clone()
    res = runner.run_round(state, np.random.default_rng(1), candidates=members, participants=3)
    assert set(res.selected.tolist()) <= set(members.tolist()) and len(res.participants) == 3
    assert not np.array_equal(child.weights, state.weights) and child.round == 0  # independent copy
    idle = runner.run_round(
        state, np.random.default_rng(1), candidates=np.array([], dtype=np.int64)
    )
    assert not idle.aggregated and state.round == 1 and state.now == res.end + runner.config.idle_s


def test_runs_are_deterministic_for_a_seed() -> None:
    ds = federated_synthetic(60, np.random.default_rng(0), min_count=30)

    def run(seed: int) -> tuple[np.ndarray, float]:
        pop = device_population(60, np.random.default_rng(seed), source="synthetic")
        av = BernoulliAvailability.uniform(60, np.random.default_rng(seed + 1), slot_s=60.0)
        runner = _runner(
            ds,
            clock=ClientClock.for_model(pop, 610),
            availability=av,
            alg="yogi",
            participants=8,
            deadline_s=30.0,
        )
        state, _ = train(runner, 15, np.random.default_rng(seed), eval_every=5)
        return state.weights, state.now

    (w1, t1), (w2, t2), (w3, _) = run(4), run(4), run(5)
    assert np.array_equal(w1, w2) and t1 == t2 and not np.array_equal(w1, w3)


def test_fedavg_on_iid_digits_passes_80_percent(iid_digits: FederatedDataset) -> None:
    pop = device_population(40, np.random.default_rng(5), source="synthetic")
    av = BernoulliAvailability.uniform(40, np.random.default_rng(6), 0.3, 0.6)
    runner = _runner(
        iid_digits, ClientClock.for_model(pop, 650), av, participants=10, deadline_s=100.0
    )
    _, hist = train(runner, 30, np.random.default_rng(1), eval_every=10)
    assert hist.points[0].stats.mean < 0.2 and hist.final.stats.mean > 0.8
    assert hist.final.round == 30 and hist.final.time > 0


@pytest.mark.parametrize("alg", ["fedprox", "qfedavg", "yogi"])
def test_every_algorithm_learns_iid_digits(
    iid_digits: FederatedDataset, alg: AlgorithmName
) -> None:
    runner = _runner(iid_digits, alg=alg, participants=10)
    _, hist = train(runner, 40, np.random.default_rng(1), eval_every=40)
    assert hist.final.stats.mean > 0.75


@pytest.mark.parametrize("alg", ["fedavg", "qfedavg"])
def test_losses_before_training_are_computed_only_for_the_aggregator_that_reads_them(
    iid_digits: FederatedDataset, alg: AlgorithmName
) -> None:
    runner = _runner(iid_digits, alg=alg, participants=5)
    state = runner.new_state(np.random.default_rng(0))
    before = state.weights.copy()
    res = runner.run_round(state, np.random.default_rng(1))
    assert len(res.losses) == 5
    if alg == "qfedavg":  # q-FedAvg weights by F_k(w^t): each is the global model's loss there
        for c, loss in zip(res.participants, res.losses, strict=True):
            data = iid_digits.clients[int(c)]
            assert loss == runner.model.loss(before, data.x_train, data.y_train)
    else:
        assert np.isnan(res.losses).all()


def _per_group(runner: RoundRunner, groups: np.ndarray, rounds: int, p: int) -> np.ndarray:
    """Oracle per-group models (the ground truth read here, by the test, never by training)."""
    models, rng = [], np.random.default_rng(3)
    for g in range(int(groups.max()) + 1):
        state = runner.new_state(rng)
        for _ in range(rounds):
            runner.run_round(state, rng, candidates=np.flatnonzero(groups == g), participants=p)
        models.append(state.weights)
    return evaluate_clients(runner.model, runner.dataset, models, assignment=groups).accuracy


def test_permuted_groups_defeat_a_single_model() -> None:
    ds = federated_digits(40, np.random.default_rng(0), n_groups=4, transform="permute")
    runner = _runner(ds, participants=8)
    _, hist = train(runner, 60, np.random.default_rng(1), eval_every=60)
    single = hist.final.stats
    grouped = AccuracyStats.of(_per_group(runner, ds.groups, 60, 2))
    assert grouped.mean > 0.75 and single.mean < 0.45
    assert grouped.p10 > single.p10 + 0.2 and grouped.variance < single.variance


def test_synthetic_groups_defeat_a_single_model_in_federated_training() -> None:
    ds = federated_synthetic(120, np.random.default_rng(1), n_groups=4, min_count=40)
    runner = _runner(ds, participants=20)
    _, hist = train(runner, 80, np.random.default_rng(2), eval_every=80)
    grouped = AccuracyStats.of(_per_group(runner, ds.groups, 80, 5))
    assert grouped.mean > hist.final.stats.mean + 0.2
    assert grouped.p10 > hist.final.stats.p10
