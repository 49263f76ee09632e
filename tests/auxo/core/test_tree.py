"""The cohort tree: budget-keeping splits, exact weight copies, bookkeeping (spec 3.4, 7.6)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kairos.auxo.tree import CohortTree, depth, lca, parent_of, tree_distance


@settings(max_examples=80, deadline=None)
@given(
    st.integers(1, 500),
    st.integers(2, 4),
    st.lists(st.integers(0, 1000), min_size=0, max_size=12),
)
def test_splits_keep_the_total_budget_and_grow_m_by_k_minus_1(
    p_total: int, k: int, picks: list[int]
) -> None:
    tree = CohortTree(max_leaves=16)
    for pick in picks:
        leaves = tree.leaves()
        leaf = leaves[pick % len(leaves)]
        if not tree.can_split(leaf, k):
            with pytest.raises(ValueError):
                tree.split(leaf, k, 0)
            continue
        rec = tree.split(leaf, k, 0)
        assert rec.leaves_after == rec.leaves_before + k - 1 == tree.m
        budgets = tree.budgets(p_total)
        assert sum(budgets.values()) == p_total
        assert set(budgets) == set(tree.leaves())
        assert max(budgets.values()) - min(budgets.values()) <= 1  # equal shares
    assert tree.m <= 16


def test_children_start_from_exactly_the_parent_weights_and_state() -> None:
    w = np.random.default_rng(0).normal(size=1000).astype(np.float32)
    tree = CohortTree(w, max_leaves=4)
    tree.nodes["0"].state["moments"] = np.arange(5.0)
    rec = tree.split("0", 2, round=30)
    parent = tree.weights("0")
    assert parent is not None
    for child in rec.children:
        cw = tree.weights(child)
        assert cw is not None and cw.dtype == np.float64
        assert np.array_equal(cw, parent) and np.array_equal(cw, w.astype(np.float64))
        assert cw is not parent  # a copy: training one child cannot change its sibling
        assert np.array_equal(tree.nodes[child].state["moments"], np.arange(5.0))
        assert tree.nodes[child].created_round == 30
    tree.set_weights("0.0", np.zeros(1000))
    w1 = tree.weights("0.1")
    assert w1 is not None and np.array_equal(w1, parent)
    tree.nodes["0.0"].state["moments"][0] = 99.0
    assert tree.nodes["0.1"].state["moments"][0] == 0.0


def test_only_leaves_split_and_the_cap_holds() -> None:
    tree = CohortTree(max_leaves=3)
    tree.split("0", 2, 0)
    with pytest.raises(ValueError):
        tree.split("0", 2, 0)  # not a leaf any more
    with pytest.raises(ValueError):
        tree.split("0.0", 3, 0)  # 2 + 3 - 1 = 4 > 3
    tree.split("0.0", 2, 0)
    assert tree.leaves() == ["0.0.0", "0.0.1", "0.1"]
    assert [s.parent for s in tree.splits] == ["0", "0.0"]


def test_ids_give_tree_distance() -> None:
    assert depth("0") == 0 and depth("0.1.0") == 2
    assert parent_of("0.1.0") == "0.1" and parent_of("0") is None
    assert lca("0.0.1", "0.0.0") == "0.0" and lca("0.0.1", "0.1") == "0"
    # hops from the explored cohort up to the LCA (Fig. 3.7)
    assert tree_distance("0.0.1", "0.0.0") == 1
    assert tree_distance("0.0.1", "0.1") == 2
    assert tree_distance("0.1", "0.0.1") == 1


def test_remove_keeps_a_parent_with_a_surviving_child() -> None:
    tree = CohortTree(max_leaves=8)
    tree.split("0", 3, 0)
    tree.remove("0.1")
    assert tree.leaves() == ["0.0", "0.2"]
    assert sum(tree.budgets(10).values()) == 10
    tree.remove("0.2")
    with pytest.raises(ValueError):
        tree.remove("0.0")
