"""Option `straggler_feedback`: dropped stragglers' late updates are scored, not aggregated."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from kairos.auxo.decisions import LateRewards
from kairos.auxo.features import compress
from kairos.auxo.policy import AuxoPolicy
from kairos.auxo.straggler_feedback import late_updates
from kairos.auxo.training import CohortTraining
from kairos.decisions import Entries, is_plain
from tests.auxo.training.test_training import _params, _runner


def test_the_option_is_off_by_default_and_changes_nothing_before_a_split() -> None:
    assert not _params().straggler_feedback
    a = CohortTraining(_runner(), _params(max_leaves=1), seed=1)
    b = CohortTraining(_runner(), _params(max_leaves=1, straggler_feedback=True), seed=1)
    a.run(15, 5)
    b.run(15, 5)
    assert np.array_equal(a.states["0"].weights, b.states["0"].weights)
    assert a.usage == b.usage  # with one cohort there are no rewards, so no late feedback


def test_late_updates_are_scored_in_the_rounds_frame_and_never_aggregated() -> None:
    decided = Entries()
    params = _params(straggler_feedback=True, partition_schedule=())
    run = CohortTraining(_runner(), params, seed=1, recorder=decided)
    run.run(5, 5)
    groups = run.dataset.groups
    run.partition("0", {i: int(groups[i]) % 2 for i in range(len(groups))})
    calls: list[dict[str, Any]] = []
    observe_late = run.policy.observe_late

    def spy(
        cohort: str, client_ids: Sequence[int], updates: np.ndarray, *, t: float = 0.0
    ) -> tuple[float, ...]:
        report = run.reports[-1]
        frame = run.policy.probe_frames[cohort]
        p = run.params
        expected = [frame.score(compress(u, p.grad_fraction, p.feature_dtype), p) for u in updates]
        weights = run.states[cohort].weights.copy()
        ids = list(client_ids)
        deltas = observe_late(cohort, ids, updates, t=t)
        calls.append(
            {
                "ids": list(ids),
                "participants": set(report.client_ids),
                "expected": expected,
                "deltas": deltas,
                "explored": [run.policy.record(c)[cohort].explored for c in ids],
                "weights_kept": np.array_equal(weights, run.states[cohort].weights),
            }
        )
        return deltas

    run.policy.observe_late = spy  # type: ignore[method-assign]
    run.run(30, 10)
    assert calls, "no round had stragglers after the split"
    for call in calls:
        assert not set(call["ids"]) & call["participants"]  # only dropped clients
        assert np.allclose(call["deltas"], call["expected"])
        assert all(call["explored"]) and call["weights_kept"]
    late = [e.record for e in decided if isinstance(e.record, LateRewards)]  # each is recorded
    assert [(r.clients, r.rewards) for r in late] == [
        (tuple(call["ids"]), call["deltas"]) for call in calls
    ]
    assert all(is_plain(r) for r in late)


def test_a_late_update_is_its_own_stream_and_reproducible() -> None:
    runner = _runner()
    w = runner.model.init(np.random.default_rng(0))
    a = late_updates(runner, w, [3, 7], seed=1, cohort="0.1", round=9)
    b = late_updates(runner, w, [7], seed=1, cohort="0.1", round=9)
    assert a.shape == (2, runner.model.n_params)
    assert np.array_equal(a[1], b[0])  # one client's update does not depend on the others
    c = late_updates(runner, w, [7], seed=1, cohort="0.1", round=10)
    assert not np.array_equal(b, c)


def test_late_feedback_needs_the_rounds_reward_frame() -> None:
    policy = AuxoPolicy(_params(), seed=0, weights=np.zeros(4))
    with pytest.raises(ValueError):
        policy.observe_late("0", [1], np.zeros((1, 4)))
