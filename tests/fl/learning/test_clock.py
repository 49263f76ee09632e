"""Availability sources and task durations on device speeds."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kairos.fl import DiurnalAvailability, ResponseModel, synthetic_population
from kairos.fl.learning import (
    AlwaysOnline,
    BernoulliAvailability,
    ClientClock,
    SessionAvailability,
    device_population,
)


def test_bernoulli_availability_rate_and_purity() -> None:
    av = BernoulliAvailability.uniform(2000, np.random.default_rng(0), 0.1, 0.3, slot_s=100)
    rates = np.mean([av.online(t * 100.0 + 5) for t in range(200)], axis=0)
    assert rates.mean() == pytest.approx(0.2, abs=0.01)
    assert np.corrcoef(rates, av.p_on)[0, 1] > 0.8
    first = av.online(1234.0)
    for t in range(5):
        av.online(t * 1000.0)
    assert np.array_equal(av.online(1234.0), first)  # a pure function of the slot


@settings(max_examples=25, deadline=None)
@given(t=st.floats(0, 1e6), seed=st.integers(0, 2**32 - 1))
def test_bernoulli_offline_is_the_end_of_the_online_run(t: float, seed: int) -> None:
    av = BernoulliAvailability(np.full(50, 0.5), slot_s=60.0, seed=seed)
    on = np.flatnonzero(av.online(t))
    off = av.offline_at(on, t)
    assert np.all(off > t)
    for c, end in zip(on, off, strict=True):
        assert not av.online(end)[c]  # offline in the slot where the run ends
        assert all(av.online(s)[c] for s in np.arange(t, end - 1e-6, 60.0))


def test_sessions_from_a_diurnal_source() -> None:
    src = DiurnalAvailability(devices=500, per_day=3, session_median_s=3600, seed=1)
    av = SessionAvailability(src)
    assert av.n_clients == 500
    checked = 0
    for t in np.linspace(10_000, 3 * 86_400, 17):
        on = np.flatnonzero(av.online(t))
        off = av.offline_at(on, t)
        assert np.all(off > t)
        for k in {max(int(t // 86_400) - 1, 0), int(t // 86_400)}:
            c = src.chunk(k)
            live = (c.start <= t) & (t < c.end)
            assert set(c.device[live].tolist()) <= set(on.tolist())
        checked += len(on)
    assert checked > 0
    assert np.all(AlwaysOnline(3).online(5.0)) and np.all(
        np.isinf(AlwaysOnline(3).offline_at(np.arange(3), 0))
    )


def test_durations_scale_with_work_slowness_and_model_size() -> None:
    pop = synthetic_population(4, np.random.default_rng(0))
    clock = ClientClock(pop, ResponseModel(compute_s=0.1, comm_s=2.0, noise_sigma=0.0))
    clients = np.arange(4)
    d = clock.durations(clients, np.full(4, 200), np.random.default_rng(0))
    assert np.allclose(d, 0.1 * 200 * pop.slowness + 4.0 / pop.bandwidth)
    big = ClientClock.for_model(pop, 1_000_000, per_sample_s=0.0, bandwidth_mbps=1.0, noise_sigma=0)
    assert np.allclose(
        big.durations(clients, np.ones(4), np.random.default_rng(0)), 64.0 / pop.bandwidth
    )
    with pytest.raises(ValueError, match="no device"):
        clock.durations(np.array([9]), np.ones(1), np.random.default_rng(0))


def test_real_device_speeds_from_ai_benchmark(data_dir: Path) -> None:
    pop = device_population(
        300, np.random.default_rng(0), path=str(data_dir / "aibenchmark_devices.csv")
    )
    assert len(pop) == 300 and np.median(pop.slowness) == pytest.approx(1.0, rel=0.1)
    assert pop.slowness.max() / pop.slowness.min() > 5  # real phones differ a lot
    syn = device_population(300, np.random.default_rng(0), source="synthetic")
    assert np.all(syn.slowness > 0) and np.all(syn.bandwidth > 0)
