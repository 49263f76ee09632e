"""Coordinator request matching (spec 3.7): MATCH always returns a leaf."""

from __future__ import annotations

import contextlib

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kairos.auxo.matching import AffinityRequest, match
from kairos.auxo.tree import CohortTree


def random_tree(rng: np.random.Generator, n_splits: int, removals: int) -> CohortTree:
    tree = CohortTree(max_leaves=32)
    for _ in range(n_splits):
        leaves = tree.leaves()
        tree.split(leaves[int(rng.integers(len(leaves)))], int(rng.integers(2, 4)), 0)
    for _ in range(removals):
        leaf = tree.leaves()[int(rng.integers(tree.m))]
        with contextlib.suppress(ValueError):
            tree.remove(leaf)
    return tree


requested = st.one_of(
    st.none(),
    st.sampled_from(
        ["0", "0.0", "0.1", "0.1.1", "0.0.0.2", "0.9", "0.1.7.3", "x", "", "1.0", "0.01"]
    ),
    st.lists(st.integers(0, 3), max_size=4).map(lambda p: ".".join(["0", *map(str, p)])),
)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(0, 10_000),
    st.integers(0, 8),
    st.integers(0, 3),
    requested,
    st.one_of(st.none(), st.integers(-2, 5)),
)
def test_match_always_returns_a_leaf(
    seed: int, n_splits: int, removals: int, cohort: str | None, label: int | None
) -> None:
    rng = np.random.default_rng(seed)
    tree = random_tree(rng, n_splits, removals)
    leaf = match(AffinityRequest(7, cohort, label, 0.3), tree, rng)
    assert leaf is not None and tree.is_leaf(leaf)
    if cohort is not None and tree.is_leaf(cohort):
        assert leaf == cohort  # a leaf request is served where it asked


def test_stale_request_follows_its_cluster_index_to_the_child() -> None:
    tree = CohortTree(max_leaves=8)
    tree.split("0", 2, 0)
    rng = np.random.default_rng(0)
    assert {match(AffinityRequest(1, "0", 1), tree, rng) for _ in range(20)} == {"0.1"}
    tree.split("0.1", 2, 0)
    # L picks the first level; deeper levels are uniform
    got = {match(AffinityRequest(1, "0", 1), tree, rng) for _ in range(50)}
    assert got == {"0.1.0", "0.1.1"}
    # no or invalid L: uniform over surviving children
    assert {match(AffinityRequest(1, "0", 9), tree, rng) for _ in range(80)} == {
        "0.0",
        "0.1.0",
        "0.1.1",
    }


def test_requests_are_dropped_while_recovering_or_blacklisted() -> None:
    tree = CohortTree()
    rng = np.random.default_rng(0)
    assert match(AffinityRequest(1), tree, rng, recovering=True) is None
    assert match(AffinityRequest(1), tree, rng, blacklisted=True) is None
    assert match(AffinityRequest(1), tree, rng) == "0"


def test_a_removed_cohort_resolves_to_a_surviving_sibling() -> None:
    tree = CohortTree(max_leaves=8)
    tree.split("0", 2, 0)
    tree.split("0.0", 2, 0)
    tree.remove("0.0.1")
    rng = np.random.default_rng(0)
    assert {match(AffinityRequest(1, "0.0.1", 0), tree, rng) for _ in range(20)} == {"0.0.0"}
