"""The clairvoyant bound: no policy beats it, and its relaxation is an
upper bound on the exact optimum."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kairos.orloj.batchdist import BatchLatencyModel
from kairos.orloj.bound import exact_optimum, relaxation_bound, work_share
from kairos.orloj.policy import Outcome, Request
from kairos.orloj.simulator import SimConfig, simulate
from kairos.orloj.systems import PAPER_SYSTEMS, make_system

MODEL = BatchLatencyModel()


def test_two_requests_that_only_batching_saves() -> None:
    # alone each takes g_1(10) = 10.5, together g_2(10) = 11.5: both make a 12 ms deadline
    # only in one batch; a third, released later, cannot fit behind them
    r, d, solo = [0.0, 0.0, 5.0], [12.0, 12.0, 13.0], [10.0, 10.0, 10.0]
    assert MODEL.shift(1) + MODEL.scale(1) * 10 < 12 < 2 * (MODEL.shift(1) + MODEL.scale(1) * 10)
    assert exact_optimum(r[:2], d[:2], solo[:2], MODEL) == 2
    assert exact_optimum(r, d, solo, MODEL) == 2
    assert exact_optimum(r[:2], d[:2], solo[:2], MODEL, max_batch=1) == 1
    assert relaxation_bound(r, d, solo, MODEL) >= 2


def test_a_request_that_cannot_finish_even_alone_counts_zero() -> None:
    assert exact_optimum([0.0], [5.0], [10.0], MODEL) == 0
    assert relaxation_bound([0.0], [5.0], [10.0], MODEL) == 0.0
    assert exact_optimum([], [], [], MODEL) == 0


def test_work_share_is_the_cheapest_slot_of_any_batch() -> None:
    w = work_share([10.0, 100.0], MODEL, 16)
    expected = [
        min((MODEL.shift(k) + MODEL.scale(k) * x) / k for k in range(1, 17)) for x in (10, 100)
    ]
    assert np.allclose(w, expected)
    assert np.all(w < [10.0, 100.0])  # batching makes each member's share cheaper than alone
    tight = work_share([10.0, 100.0], MODEL, 16, window=[12.0, 105.0])  # only k = 1, 2 fit 12 ms
    assert tight[0] == pytest.approx((MODEL.shift(2) + MODEL.scale(2) * 10) / 2)
    assert tight[1] == pytest.approx(MODEL.shift(1) + MODEL.scale(1) * 100)  # alone, 100.5
    assert np.isinf(work_share([100.0], MODEL, 16, window=[50.0])[0])


def test_the_exact_solver_refuses_large_instances() -> None:
    with pytest.raises(ValueError, match="n <= 12"):
        exact_optimum([0.0] * 13, [1.0] * 13, [1.0] * 13, MODEL)


@st.composite
def traces(draw: st.DrawFn) -> tuple[list[float], list[float], list[float], float]:
    n = draw(st.integers(1, 7))
    release = sorted(draw(st.lists(st.floats(0, 80), min_size=n, max_size=n)))
    solo = draw(st.lists(st.floats(1, 50), min_size=n, max_size=n))
    slo = draw(st.floats(15, 150))
    return release, [t + slo for t in release], solo, slo


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(traces())
def test_no_policy_beats_the_exact_optimum_and_the_relaxation_bounds_it(
    trace: tuple[list[float], list[float], list[float], float],
) -> None:
    release, deadline, solo, slo = trace
    best = exact_optimum(release, deadline, solo, MODEL)
    assert best <= relaxation_bound(release, deadline, solo, MODEL) + 1e-6
    assert best <= sum(MODEL.shift(1) + MODEL.scale(1) * x <= slo for x in solo)
    offline = {"a": list(np.linspace(1, 50, 200))}
    for name in PAPER_SYSTEMS:
        reqs = [
            Request(i, "a", release=t, slo=slo, solo_ms=x)
            for i, (t, x) in enumerate(zip(release, solo, strict=True))
        ]
        policy = make_system(name, model=MODEL, slo_ms=slo, rate_per_ms=0.05)
        done = simulate(policy, reqs, SimConfig(), offline)
        finished = sum(r.outcome is Outcome.OK for r in done.requests)
        assert finished <= best, (name, finished, best)
