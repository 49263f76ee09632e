from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from kairos.workloads import CyclicBurst, Gamma, Poisson, TraceReplay, arrival_process


def _within(count: int, expected: float, sigmas: float = 5.0) -> bool:
    """A Poisson count within `sigmas` standard deviations of its mean (plus 2 for tiny means)."""
    return abs(count - expected) <= sigmas * np.sqrt(expected) + 2


@settings(max_examples=40, deadline=None)
@given(rate=st.floats(0.2, 20.0), seed=st.integers(0, 2**32 - 1))
def test_poisson_has_the_configured_rate(rate: float, seed: int) -> None:
    horizon = 4000.0 / rate  # about 4000 arrivals
    t = Poisson(rate=rate).sample(horizon, np.random.default_rng(seed))
    assert np.all(np.diff(t) >= 0) and (t.size == 0 or (t[0] >= 0 and t[-1] < horizon))
    assert _within(t.size, rate * horizon)
    # memoryless: gaps have CV close to 1
    gaps = np.diff(t)
    assert abs(gaps.std() / gaps.mean() - 1.0) < 0.1


@settings(max_examples=40, deadline=None)
@given(
    rate=st.floats(0.5, 10.0),
    intensity=st.floats(1.0, 4.0),
    duration=st.floats(0.05, 0.9),
    seed=st.integers(0, 2**32 - 1),
)
def test_cyclic_burst_has_the_configured_rate_in_each_phase(
    rate: float, intensity: float, duration: float, seed: int
) -> None:
    if intensity * duration >= 0.97:
        return  # infeasible or a near-empty calm phase; the validator test covers the boundary
    proc = CyclicBurst(rate=rate, intensity=intensity, duration=duration, cycle_s=300.0)
    horizon = 300.0 * 20
    t = proc.sample(horizon, np.random.default_rng(seed))
    in_burst = (t % proc.cycle_s) < duration * proc.cycle_s
    burst_time = duration * horizon
    calm_time = horizon - burst_time
    assert _within(int(in_burst.sum()), proc.burst_rate * burst_time)
    assert _within(int((~in_burst).sum()), proc.calm_rate * calm_time)
    assert _within(t.size, rate * horizon)  # the long-run mean is the configured average
    assert proc.burst_rate == pytest.approx(intensity * rate)
    assert proc.calm_rate * (1 - duration) + proc.burst_rate * duration == pytest.approx(rate)


def test_cyclic_burst_rejects_an_impossible_shape() -> None:
    with pytest.raises(ValidationError, match="intensity\\*duration must be < 1"):
        CyclicBurst(rate=1.0, intensity=3.0, duration=0.4)
    with pytest.raises(ValidationError):
        CyclicBurst(rate=-1.0)


def test_cyclic_burst_phases_cover_the_horizon_without_gaps() -> None:
    proc = CyclicBurst(rate=1.0, intensity=2.0, duration=0.35, cycle_s=1200.0)
    phases = proc.phases(3000.0)
    assert phases[0] == (0.0, 420.0, 2.0)
    assert all(a[1] == b[0] for a, b in itertools.pairwise(phases))
    assert phases[-1][1] == 3000.0
    assert proc.rate_at(100.0) == 2.0 and proc.rate_at(500.0) == pytest.approx(proc.calm_rate)


@pytest.mark.parametrize("burstiness", [0.25, 1.0, 4.0])
def test_gamma_has_the_rate_and_cv_of_the_vllm_benchmark(burstiness: float) -> None:
    proc = Gamma(rate=5.0, burstiness=burstiness)
    t = proc.sample(4000.0, np.random.default_rng(1))
    gaps = np.diff(t)
    assert t.size / 4000.0 == pytest.approx(5.0, rel=0.06)
    assert gaps.std() / gaps.mean() == pytest.approx(proc.cv, rel=0.1)


def test_trace_replay_scales_time_and_rate() -> None:
    times = tuple(float(x) for x in np.arange(0, 100, 0.5))  # 2 req/s
    assert TraceReplay(times=times).mean_rate() == pytest.approx(200 / 99.5)
    slow = TraceReplay(times=times, time_scale=2.0).sample(1e9, np.random.default_rng(0))
    assert slow[1] == pytest.approx(1.0)
    fixed = TraceReplay(times=times, rate=1.0)
    assert fixed.mean_rate() == pytest.approx(1.0)
    with pytest.raises(ValidationError, match="non-decreasing"):
        TraceReplay(times=(1.0, 0.5))


def test_arrival_process_from_a_dict_names_the_bad_field() -> None:
    assert isinstance(arrival_process({"kind": "poisson", "rate": 2}), Poisson)
    with pytest.raises(ValidationError, match="rate"):
        arrival_process({"kind": "gamma", "rate": "fast"})
