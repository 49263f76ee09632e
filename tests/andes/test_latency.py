from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kairos.andes.capacity import capacity, sustainable_rate
from kairos.andes.latency import (
    PROFILES,
    LinearProfile,
    RooflineProfile,
    fit_profile,
    load_profile,
)


def test_fitter_recovers_a_known_model_from_noisy_samples() -> None:
    rng = np.random.default_rng(0)
    b = rng.integers(1, 256, 400).astype(float)
    c = b * rng.uniform(200, 4000, 400)
    dec = np.column_stack([b, c, 0.012 + 2e-4 * b + 3e-8 * c + rng.normal(0, 2e-4, 400)])
    t = rng.uniform(16, 8000, 200)
    pre = np.column_stack([t, 0.01 + 2e-4 * t + 1e-9 * t * t + rng.normal(0, 1e-4, 200)])
    prof = fit_profile("fitted", dec, pre, kv_capacity=10_000, swap_capacity=2_000)
    assert prof.decode_coef == pytest.approx((0.012, 2e-4, 3e-8), rel=0.05)
    assert prof.prefill_coef[1] == pytest.approx(2e-4, rel=0.05)
    assert float(prof.decode_time(64, 64 * 1000)) == pytest.approx(
        0.012 + 2e-4 * 64 + 3e-8 * 64000, rel=0.02
    )
    with pytest.raises(ValueError, match="decode_samples"):
        fit_profile("bad", dec[:, :2], pre, kv_capacity=1)


@given(
    coef=st.tuples(*[st.floats(0, 1)] * 3),
    batch=st.integers(0, 512),
    context=st.integers(0, 10**6),
    tokens=st.integers(0, 10**5),
)
def test_linear_profile_scalar_path_equals_array_path(
    coef: tuple[float, float, float], batch: int, context: int, tokens: int
) -> None:
    """Plain numbers take a shortcut (the engine asks every iteration); same answers."""
    prof = LinearProfile(
        name="p",
        decode_coef=coef,
        prefill_coef=coef,
        swap_s_per_token=0.0,
        kv_capacity=1,
        swap_capacity=0,
    )
    arr = prof.decode_time(np.array([batch, batch]), np.array([context, context]))[0]
    assert float(prof.decode_time(batch, context)) == pytest.approx(float(arr), rel=1e-12)
    arr = prof.prefill_time(np.array([tokens, tokens]))[0]
    assert float(prof.prefill_time(tokens)) == pytest.approx(float(arr), rel=1e-12)
    assert float(prof.decode_time(0, context)) == 0.0 == float(prof.prefill_time(0))


def test_fitted_profile_round_trips_through_json(tmp_path: Path) -> None:
    prof = fit_profile(
        "fitted",
        np.array([[1, 10, 0.01], [2, 20, 0.012], [4, 40, 0.016]]),
        np.array([[10, 0.01], [20, 0.02], [40, 0.04]]),
        kv_capacity=512,
    )
    path = tmp_path / "p.json"
    prof.save(path)
    assert load_profile(str(path)) == prof
    with pytest.raises(ValueError, match="unknown profile"):
        load_profile("no-such-profile")


@pytest.mark.parametrize("name", list(PROFILES))
def test_roofline_profiles_are_physically_sensible(name: str) -> None:
    p = PROFILES[name]
    assert p.kv_capacity_tokens > 100_000 and p.kv_capacity_tokens % p.block_size == 0
    taus = p.decode_time(np.array([1, 8, 64, 256]), np.array([1, 8, 64, 256]) * 2000)
    assert np.all(np.diff(taus) > 0)  # bigger batches take longer per iteration ...
    assert np.all(np.diff(np.array([1, 8, 64, 256]) / taus) > 0)  # ... but raise throughput
    assert float(p.swap_time(3000)) < float(p.prefill_time(3000))  # swap is the cheaper restore


def test_llama_profile_calibration_matches_the_paper() -> None:
    p = PROFILES["llama-3.1-70b"]
    assert 3171 / float(p.prefill_time(3171)) == pytest.approx(5000, rel=0.1)  # "5000 tokens/s"
    assert sustainable_rate(p, 3171, 385) * 0.6 == pytest.approx(0.8, rel=0.1)  # Table A.2


def test_weights_that_do_not_fit_are_refused() -> None:
    big = RooflineProfile(
        name="x",
        n_gpus=1,
        weight_gb=100,
        active_params_b=1,
        n_layers=1,
        d_model=1,
        kv_bytes_per_token=1,
    )
    with pytest.raises(ValueError, match="do not fit"):
        _ = big.kv_capacity_tokens


def test_capacity_reads_the_crossing() -> None:
    assert capacity([1, 2, 3], [0.99, 0.97, 0.90], 0.95) == pytest.approx(2 + 0.02 / 0.07)
    assert np.isnan(capacity([1, 2], [0.9, 0.8], 0.95))
    assert capacity([1, 2], [0.99, 0.98], 0.95) == 2.0
    # a later recovery does not count: every lower load must meet the target
    assert capacity([1, 2, 3], [0.99, 0.90, 0.99], 0.95) < 2.0


def test_the_regather_cost_is_fitted_beyond_the_decode_time() -> None:
    rng = np.random.default_rng(1)
    b = rng.integers(1, 64, 300).astype(float)
    c = b * rng.uniform(50, 500, 300)
    decode = 0.004 + 2e-4 * b + 2e-7 * c
    dec = np.column_stack([b, c, decode + rng.normal(0, 1e-5, 300)])
    pre = np.column_stack([np.arange(16.0, 66.0), 0.005 + 1e-5 * np.arange(16.0, 66.0)])
    longest = c / b * 1.5
    gather = np.column_stack([b, c, b * longest, decode + 8e-7 * b * longest])
    prof = fit_profile("g", dec, pre, kv_capacity=1_000, regather_samples=gather)
    assert prof.regather_s_per_token == pytest.approx(8e-7, rel=0.05)
    assert prof.regather_time(1_000) == pytest.approx(8e-4, rel=0.05)
    assert fit_profile("none", dec, pre, kv_capacity=1_000).regather_s_per_token == 0.0
    assert prof.scaled(2.0).regather_s_per_token == pytest.approx(2 * prof.regather_s_per_token)
    with pytest.raises(ValueError, match="regather_samples"):
        fit_profile("bad", dec, pre, kv_capacity=1_000, regather_samples=gather[:, :3])
