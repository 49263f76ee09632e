"""Cohort scores over the clients Auxo placed by evidence (docs/auxo.md, the E1 claim).

The all-client ARI counts clients that never returned a rewarded update in their final leaf;
`evidence_mask` keeps only those that did, `sampled_mask` those with any kept update (E0's
"sampled clients"). These tests pin the definitions on hand-built rounds, and check with
hypothesis that the covered score is scikit-learn's ARI on exactly those clients and equals
the all-client ARI when every client was placed by evidence.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from sklearn.metrics import adjusted_rand_score

from kairos.auxo.evaluation import (
    cluster_scores,
    covered_scores,
    evidence_mask,
    membership_columns,
    sampled_mask,
)
from kairos.auxo.policy import RoundReport
from tests.auxo.core.round_reports import LEAVES, report


def test_only_rewarded_kept_updates_in_the_final_leaf_count_as_evidence() -> None:
    membership = np.array([0, 0, 1, 1, 0])
    rounds = [
        report("0", [0, 1, 2, 3, 4], None),  # before the split: sampled, no evidence
        report("0.0", [0, 3], [0.1, -0.2]),  # 0 rewarded in its leaf; 3 in the other leaf
        report("0.1", [2], None),  # kept but unrewarded (too few known): not evidence
        report("0", [1], [0.1]),  # a parent that has split since: not the final leaf
    ]
    assert evidence_mask(rounds, LEAVES, membership).tolist() == [1, 0, 0, 0, 0]
    assert sampled_mask(rounds, 5).tolist() == [1, 1, 1, 1, 1]
    assert sampled_mask(rounds[1:], 5).tolist() == [1, 1, 1, 1, 0]


def test_a_negative_reward_is_evidence_too() -> None:
    # the client's own update decided its standing in that leaf, whatever the sign
    rounds = [report("0.1", [0], [-0.3])]
    assert evidence_mask(rounds, LEAVES, np.array([1])).tolist() == [True]


def test_no_covered_client_gives_nan_scores_and_zero_coverage() -> None:
    s = covered_scores(np.array([0, 1, 2]), np.array([0, 0, 1]), np.zeros(3, dtype=bool))
    assert np.isnan(s.ari) and np.isnan(s.nmi) and s.coverage == 0.0


def test_wrongly_inherited_clients_lower_only_the_all_client_score() -> None:
    groups = np.array([0, 0, 0, 1, 1, 1])
    membership = np.array([0, 0, 1, 1, 1, 0])  # clients 2 and 5 sit in the wrong leaf
    rounds = [report("0.0", [0, 1], [0.1, 0.1]), report("0.1", [3, 4], [0.1, 0.1])]
    cols = membership_columns(groups, membership, LEAVES, rounds)
    assert cols["ari_evidence"] == 1.0 and cols["coverage_evidence"] == 4 / 6
    assert cols["ari"] < 0.5  # the two unplaced clients break the all-client match
    assert cols["coverage_sampled"] == 4 / 6 and cols["ari_sampled"] == 1.0


@st.composite
def runs(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, list[RoundReport]]:
    n = draw(st.integers(2, 30))
    groups = np.array(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)))
    membership = np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)))
    rounds = []
    for _ in range(draw(st.integers(0, 8))):
        cohort = draw(st.sampled_from(["0", *LEAVES]))
        ids = draw(st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True))
        rewarded = draw(st.booleans())
        rounds.append(report(cohort, ids, [0.1] * len(ids) if rewarded else None))
    return groups, membership, rounds


@given(runs())
@settings(max_examples=150, deadline=None)
def test_evidence_score_is_sklearn_ari_over_exactly_the_evidenced_clients(
    run: tuple[np.ndarray, np.ndarray, list[RoundReport]],
) -> None:
    groups, membership, rounds = run
    mask = evidence_mask(rounds, LEAVES, membership)
    expected = np.zeros(len(groups), dtype=bool)  # the definition, written out client by client
    for i in range(len(groups)):
        expected[i] = any(
            r.deltas is not None and r.cohort == LEAVES[membership[i]] and i in r.client_ids
            for r in rounds
        )
    assert mask.tolist() == expected.tolist()
    s = covered_scores(groups, membership, mask)
    assert s.coverage == expected.mean()
    if expected.any():
        assert s.ari == adjusted_rand_score(groups[expected], membership[expected])


@given(runs())
@settings(max_examples=100, deadline=None)
def test_every_client_placed_by_evidence_gives_the_all_client_scores(
    run: tuple[np.ndarray, np.ndarray, list[RoundReport]],
) -> None:
    groups, membership, rounds = run
    # one more rewarded round per leaf holding all its members: everyone has evidence
    for j, leaf in enumerate(LEAVES):
        ids = np.flatnonzero(membership == j).tolist()
        if ids:
            rounds = [*rounds, report(leaf, ids, [0.0] * len(ids))]
    cols = membership_columns(groups, membership, LEAVES, rounds)
    every = cluster_scores(groups, membership)
    assert cols["coverage_evidence"] == 1.0 and cols["coverage_sampled"] == 1.0
    assert cols["ari_evidence"] == every.ari == cols["ari"]
    assert cols["nmi_evidence"] == every.nmi and cols["ari_sampled"] == every.ari
