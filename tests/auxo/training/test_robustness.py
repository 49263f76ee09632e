"""E6's stresses on the driver: LDP on the clustering view, and affinity-record loss."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from kairos.auxo.robustness import Faults, clip_rows, loss_schedule, lost_records, privatize
from kairos.auxo.training import CohortTraining
from tests.auxo.training.test_training import N, _params, _runner


@settings(max_examples=50, deadline=None)
@given(
    arrays(np.float64, (4, 6), elements=st.floats(-1e3, 1e3)),
    st.floats(0.01, 10.0),
)
def test_clipped_rows_are_within_the_clip_and_short_rows_are_untouched(
    u: np.ndarray, clip: float
) -> None:
    out = clip_rows(u, clip)
    norms = np.linalg.norm(u, axis=1)
    assert np.all(np.linalg.norm(out, axis=1) <= clip * (1 + 1e-9))
    short = norms <= clip
    assert np.allclose(out[short], u[short])


def test_ldp_noise_is_the_clients_own_and_has_the_gaussian_mechanisms_scale() -> None:
    rng = np.random.default_rng(0)
    u = rng.normal(size=(3, 4000))
    f = Faults(ldp_sigma=0.77, ldp_clip=0.5)
    a = privatize(u, [5, 6, 7], "0.1", 12, f, seed=3)
    b = privatize(u[[2, 0]], [7, 5], "0.1", 12, f, seed=3)
    assert np.array_equal(a[[2, 0]], b)  # a client's noise does not depend on who else came
    noise = a - clip_rows(u, 0.5)
    assert abs(float(noise.std()) - 0.77 * 0.5) < 0.02
    assert not np.array_equal(a, privatize(u, [5, 6, 7], "0.1", 13, f, seed=3))
    assert np.array_equal(privatize(u, [5, 6, 7], "0", 1, Faults(), seed=3), u)


def test_faults_are_validated() -> None:
    with pytest.raises(ValueError):
        Faults(record_loss=1.5)
    with pytest.raises(ValueError):
        Faults(ldp_clip=0.0)
    assert Faults().clean and not Faults(ldp_sigma=0.6).clean


def test_the_once_schedule_draws_about_the_rate_and_per_round_loss_only_in_its_mode() -> None:
    sched = loss_schedule(4000, 100, Faults(record_loss=0.2), seed=1)
    assert abs(len(sched) / 4000 - 0.2) < 0.03
    assert all(0 <= t < 100 for t in sched.values())
    assert loss_schedule(50, 100, Faults(record_loss=0.2, record_loss_mode="per_round"), 1) == {}
    per = Faults(record_loss=1.0, record_loss_mode="per_round")
    assert lost_records([1, 2, 3], "0", 4, per, seed=0) == [1, 2, 3]
    assert lost_records([1, 2, 3], "0", 4, Faults(record_loss=1.0), seed=0) == []


def _run(faults: Faults, **kw: Any) -> CohortTraining:
    run = CohortTraining(_runner(), _params(**kw), seed=2, faults=faults)
    run.run(30, eval_every=10)
    return run


def test_ldp_changes_only_what_auxo_sees_so_the_single_model_is_unchanged() -> None:
    clean = _run(Faults(), max_leaves=1)
    noisy = _run(Faults(ldp_sigma=1.0), max_leaves=1)
    assert np.array_equal(clean.states["0"].weights, noisy.states["0"].weights)
    assert [r.labels for r in clean.reports] != [r.labels for r in noisy.reports]


def test_a_participant_that_loses_every_record_restarts_as_new() -> None:
    run = _run(Faults(record_loss=1.0, record_loss_mode="per_round"), partition_schedule=(8,))
    trained = {c for r in run.reports for c in r.client_ids}
    assert trained and all(not run.policy.record(c) for c in trained)


def test_scheduled_loss_wipes_each_drawn_client_once_by_its_time() -> None:
    faults = Faults(record_loss=0.5)
    run = _run(faults, partition_schedule=(8,))
    due = {c for c, t in run.loss_at.items() if t <= run.progress}
    assert run.wiped == due and 0 < len(due) < N
