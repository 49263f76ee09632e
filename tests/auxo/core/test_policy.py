"""The composed cohort-round (centralized mode): split bookkeeping, determinism, reference mode."""

from __future__ import annotations

import numpy as np

from kairos.auxo import AuxoParams, AuxoPolicy


def drive(params: AuxoParams, seed: int, rounds: int, weights: np.ndarray | None = None):  # type: ignore[no-untyped-def]
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.normal(size=(100, 2)) + 10, rng.normal(size=(100, 2)) - 10])
    policy = AuxoPolicy(params, seed=seed, weights=weights)
    reports = []
    for r in range(rounds):
        ids = [int(c) for c in rng.choice(200, 40, replace=False)]
        choice = {c: policy.select(c, r) for c in ids}
        for leaf in policy.tree.leaves():
            mine = [c for c in ids if choice[c] == leaf]
            if mine:
                reports.append(policy.observe(leaf, r, mine, x[mine]))
    return policy, reports


def test_reference_mode_splits_at_the_fixed_rounds() -> None:
    params = AuxoParams.reference(
        p_total=40, grad_fraction=1.0, feature_dtype="float64", feature_norm="center"
    )
    policy, reports = drive(params, 0, 130)
    splits = [(rep.split.round, rep.split.parent) for rep in reports if rep.split]
    assert splits[0] == (50, "0")
    assert {r for r, _ in splits} == {50, 100} and policy.tree.m == 4


def test_a_split_in_the_policy_keeps_weights_budget_and_inherits_rewards() -> None:
    params = AuxoParams(
        total_rounds=200,
        p_total=40,
        n_clients=200,
        het_rule="J",
        feature_norm="center",
        grad_fraction=1.0,
        feature_dtype="float64",
    )
    w = np.linspace(-1, 1, 33)
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.normal(size=(100, 2)) + 10, rng.normal(size=(100, 2)) - 10])
    policy = AuxoPolicy(params, seed=1, weights=w)
    split = None
    for r in range(60):
        ids = [int(c) for c in rng.choice(200, 40, replace=False)]
        split = policy.observe("0", r, ids, x[ids]).split
        if split is not None:
            break
    assert split is not None and split.leaves_after == split.leaves_before + 1 == 2
    for child in split.children:
        cw = policy.tree.weights(child)
        assert cw is not None and np.array_equal(cw, w)
    assert sum(policy.budgets().values()) == 40
    labelled = 0
    for record in policy.records.values():
        parent = record["0"]
        for j, child in enumerate(split.children):
            bonus = params.split_bonus if parent.label == j else 0.0
            assert record[child].reward == parent.reward + bonus  # M = 1 before: parent R = 0
            assert record[child].label is None and not record[child].explored
        labelled += parent.label is not None
    assert labelled > 50
    # right after the first split the known members of a child are exactly its labelled clients
    for j, child in enumerate(split.children):
        known = {c for c, rec in policy.records.items() if rec[child].reward > 0}
        assert known == {c for c, rec in policy.records.items() if rec["0"].label == j}


def test_same_seed_same_trajectory() -> None:
    params = AuxoParams(total_rounds=200, p_total=40, grad_fraction=1.0, het_rule="J")
    _, a = drive(params, 3, 60)
    _, b = drive(params, 3, 60)
    assert [(r.cohort, r.labels, r.deltas, r.split) for r in a] == [
        (r.cohort, r.labels, r.deltas, r.split) for r in b
    ]
