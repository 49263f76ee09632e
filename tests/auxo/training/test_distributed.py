"""Distributed Auxo (spec 3.10): records on the clients, the same trajectory as the
centralized server table for one seed (spec 3.10)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kairos.auxo.decisions import Split
from kairos.auxo.distributed import DistributedPolicy, distributed
from kairos.auxo.training import CohortTraining
from kairos.decisions import Entries, first_divergence
from tests.auxo.training.test_training import _params, _runner


def _pair(seed: int, rounds: int, **kw: Any) -> tuple[CohortTraining, CohortTraining]:
    params = _params(**kw)
    central = CohortTraining(_runner(), params, seed=seed, recorder=Entries())
    dist = distributed(CohortTraining(_runner(), params, seed=seed, recorder=Entries()))
    central.run(rounds, eval_every=5)
    dist.run(rounds, eval_every=5)
    return central, dist


def _assert_identical(central: CohortTraining, dist: CohortTraining) -> None:
    trace = [
        (e.cohort, e.round, e.start, e.end, e.requesters, e.participants, e.split)
        for e in central.log
    ]
    assert trace == [
        (e.cohort, e.round, e.start, e.end, e.requesters, e.participants, e.split) for e in dist.log
    ]
    assert central.leaves() == dist.leaves()
    assert central.policy.tree.splits == dist.policy.tree.splits  # split rounds too
    assert np.array_equal(central.memberships(), dist.memberships())
    for c in central.leaves():
        assert np.array_equal(central.states[c].weights, dist.states[c].weights)
    assert central.reports == dist.reports  # labels, rewards, decisions, every round
    policy = dist.policy
    assert isinstance(policy, DistributedPolicy)
    agents = {c: a.record for c, a in policy.clients.agents.items()}
    assert agents == central.policy.records  # each client holds what the server table held
    if central.recorder is not None:  # and the decision logs: claims, rows, splits, merges
        assert isinstance(central.recorder, Entries) and isinstance(dist.recorder, Entries)
        assert any(isinstance(e.record, Split) for e in central.recorder)
        assert first_divergence(central.recorder, dist.recorder) is None


def test_scheduled_splits_give_identical_trajectories() -> None:
    central, dist = _pair(5, 16, partition_schedule=(5, 9))
    assert len(central.leaves()) == 4
    _assert_identical(central, dist)


def test_merges_counted_by_client_reports_give_identical_trajectories() -> None:
    """The optional merge: the coordinator counts members from the clients' reports."""
    central, dist = _pair(
        5, 20, partition_schedule=(5, 9), merge=True, merge_rounds=1, merge_fraction=0.3
    )
    assert any(node.removed for node in central.policy.tree.nodes.values())
    _assert_identical(central, dist)


def test_criteria_driven_splits_give_identical_trajectories() -> None:
    central, dist = _pair(1, 30, total_rounds=30)
    assert len(central.policy.tree.splits) >= 1  # the heterogeneity test did split
    _assert_identical(central, dist)


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**16), first=st.integers(2, 6), gap=st.integers(1, 5))
def test_any_seed_and_split_times_give_identical_trajectories(
    seed: int, first: int, gap: int
) -> None:
    central, dist = _pair(seed, first + gap + 3, partition_schedule=(first, first + gap))
    _assert_identical(central, dist)


def test_the_coordinator_keeps_no_per_client_table() -> None:
    run = distributed(CohortTraining(_runner(), _params(partition_schedule=(4,)), seed=2))
    policy = run.policy
    assert isinstance(policy, DistributedPolicy)
    for _ in range(8):
        run.step()
        assert set(policy.claims) <= set(run.requests)  # only requests still queued
        assert all(req.cohort_id == run.requests[c][0] for c, req in policy.claims.items())
    assert policy.records == {}
    with pytest.raises(RuntimeError, match="no affinity records"):
        policy.record(0)
    assert any(a.record for a in policy.clients.agents.values())


def test_modes_switch_only_before_the_run() -> None:
    run = CohortTraining(_runner(), _params(), seed=0)
    run.step()
    with pytest.raises(ValueError, match="before the run"):
        distributed(run)
