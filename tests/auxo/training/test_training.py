"""The cohort training driver: paired baseline, asynchronous leaves, split mechanics, budgets."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from kairos.auxo import AuxoParams
from kairos.auxo.training import CohortTraining
from kairos.fl.learning import (
    BernoulliAvailability,
    ClientClock,
    FedYoGi,
    LocalConfig,
    RoundConfig,
    RoundRunner,
    device_population,
    federated_synthetic,
    make_algorithm,
    make_model,
)

N = 120


def _runner(seed: int = 0, alg: Any = "yogi") -> RoundRunner:
    ds = federated_synthetic(N, np.random.default_rng(seed), beta=0.0, min_count=40)
    model = make_model("lr", ds.n_features, ds.n_classes)
    pop = device_population(N, np.random.default_rng([seed, 1]), source="synthetic")
    av = BernoulliAvailability.uniform(N, np.random.default_rng([seed, 2]), slot_s=20.0)
    return RoundRunner(
        model,
        ds,
        make_algorithm(alg, lr=0.05),
        LocalConfig(lr=0.05, batch_size=20, steps=5),
        RoundConfig(participants=20),
        clock=ClientClock.for_model(pop, model.n_params),
        availability=av,
    )


def _params(**kw: Any) -> AuxoParams:
    base: dict[str, Any] = {
        "p_total": 20,
        "total_rounds": 60,
        "n_clients": N,
        "grad_fraction": 1.0,
        "het_rule": "J",
    }
    return AuxoParams(**(base | kw))


def test_the_single_model_baseline_is_plain_federated_learning() -> None:
    """Splitting disabled, the driver runs exactly the rounds of one model over all clients."""
    runner = _runner()
    run = CohortTraining(runner, _params(max_leaves=1), seed=3)
    for _ in range(15):
        run.step()
    ref = _runner()
    state = ref.new_state(np.random.default_rng([3, 0]))
    rng = np.random.default_rng([3, 2, 1, 0])
    while state.round < 15:
        ref.run_round(state, rng)
    assert run.leaves() == ["0"] and run.states["0"].round == 15
    assert np.array_equal(run.states["0"].weights, state.weights)
    assert run.states["0"].now == state.now


def test_auxo_and_its_baseline_are_the_same_run_until_the_first_split() -> None:
    auxo = CohortTraining(_runner(), _params(partition_schedule=(8,)), seed=1)
    base = CohortTraining(_runner(), _params(max_leaves=1), seed=1)
    for _ in range(8):
        a, b = auxo.step(), base.step()
        assert (a.cohort, a.start, a.end) == (b.cohort, b.start, b.end)
        assert a.participants == b.participants
    assert auxo.log[-1].split == ("0.0", "0.1") and base.log[-1].split is None
    assert np.array_equal(auxo.states["0.0"].weights, base.states["0"].weights)


def test_children_start_from_exactly_the_parent_state() -> None:
    run = CohortTraining(_runner(alg="yogi"), _params(partition_schedule=(6,)), seed=2)
    while run.leaves() == ["0"]:
        parent = run.states["0"]
        run.step()
    kids = [run.states[c] for c in ("0.0", "0.1")]
    for kid in kids:
        assert np.array_equal(kid.weights, parent.weights)
        assert (kid.now, kid.round) == (parent.now, parent.round) == (parent.now, 6)
        assert isinstance(kid.aggregator, FedYoGi) and isinstance(parent.aggregator, FedYoGi)
        assert kid.aggregator.m is not None and parent.aggregator.m is not None
        assert np.array_equal(kid.aggregator.m, parent.aggregator.m)
        assert np.array_equal(kid.aggregator.v, parent.aggregator.v)  # type: ignore[arg-type]
        tree_w = run.policy.tree.weights(kid_id := "0.0")
        assert tree_w is not None and np.array_equal(tree_w, run.states[kid_id].weights)
    kids[0].weights[0] += 1.0  # independent copies
    assert kids[1].weights[0] != kids[0].weights[0]
    assert kids[0].aggregator is not kids[1].aggregator


def test_leaves_run_earliest_clock_first_within_their_budgets() -> None:
    run = CohortTraining(_runner(), _params(partition_schedule=(5, 10)), seed=4)
    seen_leaves = set()
    for _ in range(60):
        clocks = {c: run.states[c].now for c in run.leaves()}
        expected = min(clocks, key=lambda c: (clocks[c], c))
        budgets = run.policy.budgets()
        assert sum(budgets.values()) == 20
        entry = run.step()
        assert entry.cohort == expected and entry.start == clocks[expected]
        assert entry.participants <= budgets[expected] == entry.budget
        assert entry.participants <= entry.requesters
        seen_leaves.add(entry.cohort)
    assert run.policy.tree.m == 4  # both children split at their own round 10
    assert {"0", "0.0", "0.1", *run.leaves()} == seen_leaves
    rounds = {c: run.states[c].round for c in run.leaves()}
    assert len(set(rounds.values())) > 1  # asynchronous: leaves are at different rounds


def test_participants_come_from_the_leaf_requesters_only() -> None:
    run = CohortTraining(_runner(), _params(partition_schedule=(4,)), seed=5)
    for _ in range(30):
        m = run.next_leaf()
        assert m is not None
        state = run.states[m]
        run.check_in(state.now, state.round)
        asked = set(run.requesters(m).tolist())
        n_reports = len(run.reports)
        run.step(m)
        if len(run.reports) > n_reports:
            assert set(run.reports[-1].client_ids) <= asked
    assert run.policy.tree.m == 2


def test_a_run_is_a_pure_function_of_its_seed() -> None:
    def go(seed: int) -> tuple[list[Any], np.ndarray]:
        run = CohortTraining(_runner(), _params(partition_schedule=(5,)), seed=seed)
        run.run(20, eval_every=10)
        return [(e.cohort, e.end, e.participants) for e in run.log], run.memberships()

    (a, ma), (b, mb), (c, _) = go(7), go(7), go(8)
    assert a == b and np.array_equal(ma, mb) and a != c


def test_run_reaches_the_rounds_and_counts_its_own_resources() -> None:
    run = CohortTraining(_runner(), _params(partition_schedule=(5,)), seed=6)
    hist = run.run(20, eval_every=5)
    assert all(run.states[c].round >= 20 for c in run.leaves())
    assert [p.round for p in hist.points][:2] == [0, 5] and hist.final.round == run.progress
    agg = sum(e.participants for e in run.log)
    assert run.usage.participant_rounds == agg == hist.final.participant_rounds
    assert run.usage.cohort_rounds == sum(1 for e in run.log if e.requesters and e.participants)
    n_params = run.model.n_params
    assert run.usage.model_bytes == 4 * n_params * (run.usage.dispatched + agg)
    assert 0 < run.usage.affinity_bytes < 0.01 * run.usage.model_bytes
    times = [p.time for p in hist.points]
    assert times == sorted(times)


@pytest.mark.parametrize("bad", ["0.7", "1"])
def test_step_refuses_a_cohort_that_is_not_a_leaf(bad: str) -> None:
    run = CohortTraining(_runner(), _params(), seed=0)
    with pytest.raises(ValueError, match="not a leaf"):
        run.step(bad)


def test_a_forced_partition_keeps_its_composition_and_the_parent_model() -> None:
    # no epsilon-greedy exploration, so every participant trains in its assigned cohort
    run = CohortTraining(_runner(), _params(k=4, partition_schedule=(), epsilon0=0.0), seed=8)
    for _ in range(5):
        run.step()
    parent = run.states["0"].weights.copy()
    groups = run.dataset.groups
    kids = run.partition("0", {i: int(g) for i, g in enumerate(groups)})
    assert kids == ("0.0", "0.1", "0.2", "0.3") and run.leaves() == list(kids)
    assert all(np.array_equal(run.states[c].weights, parent) for c in kids)
    assert sum(run.policy.budgets().values()) == 20
    run.run(25, eval_every=10)
    assert np.array_equal(run.memberships(), groups)  # clients stay where they were put
    for entry in run.log[5:]:
        members = {c for rep in run.reports if rep.cohort == entry.cohort for c in rep.client_ids}
        assert {int(groups[c]) for c in members} == {int(entry.cohort[-1])}
