"""Assigning a new client at deployment (spec 3.9)."""

from __future__ import annotations

import numpy as np
import pytest

from kairos.auxo.assignment import LeafProbeFrame, assign_new, max_probes, oracle_assignment
from kairos.auxo.features import build_features
from kairos.auxo.params import AuxoParams
from kairos.auxo.rewards import reward_frame

P = AuxoParams()
LEAVES = ["0.0.0", "0.0.1", "0.1.0", "0.1.1"]


def test_probes_follow_the_tree_prediction_to_the_right_leaf() -> None:
    home = "0.1.1"

    def probe(leaf: str) -> float:
        return 0.5 if leaf == home else -2.0

    for seed in range(10):
        a = assign_new(probe, LEAVES, P, np.random.default_rng(seed))
        assert a.leaf == home
        assert len(a.probes) <= max_probes(4) == 3
        assert a.probes[-1] == (home, 0.5)
        # after a bad probe the next one goes to the other subtree
        if len(a.probes) > 1:
            first, second = a.probes[0][0], a.probes[1][0]
            assert first.split(".")[1] != second.split(".")[1]


def test_the_probe_limit_is_respected() -> None:
    calls: list[str] = []

    def probe(leaf: str) -> float:
        calls.append(leaf)
        return -1.0

    assign_new(probe, LEAVES, P, np.random.default_rng(0), limit=2)
    assert len(calls) == 2 and len(set(calls)) == 2


def test_a_leaf_scores_a_new_update_in_its_last_rounds_frame() -> None:
    rng = np.random.default_rng(0)
    members = rng.normal(size=(12, 30)) + 3.0
    frame = build_features(members, grad_fraction=1.0, dtype="float64")
    rf = reward_frame(frame.features, np.ones(12, bool), P)
    assert rf is not None
    leaf = LeafProbeFrame(frame, rf)
    inside = leaf.score(members[0], P)
    outsider = leaf.score(members[0] + 50 * rng.normal(size=30), P)
    assert inside > outsider


def test_oracle_is_the_lowest_loss_leaf() -> None:
    assert oracle_assignment({"0.1": 0.3, "0.0": 0.2, "0.2": 0.2}) == "0.0"
    with pytest.raises(ValueError):
        oracle_assignment({})
