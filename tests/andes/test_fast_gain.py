"""The decision's fast gain path against the straightforward closed form, bit for bit.

`serve_wait_gain` computes the serve estimate with `gain_kernel.serve_gain_grid` (one compiled
pass, row terms hoisted) into caller-owned grids. Any difference from
`qoe_at_horizon` over the whole grid, even in the last bit, could flip a tie in the greedy
packing and change a decision, so equality here is exact.
"""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from kairos.andes.gain import StreamState, qoe_at_horizon, qoe_if_waiting, serve_wait_gain
from kairos.andes.policies.refiner import stall_losses
from kairos.andes.qoe import QoETracker

SPEEDS = (1.0, 2.0, 4.0, 5.0, 10.0, 3.7)
TAUS = (0.1, 0.2, 0.25, 0.5, 1.0, 0.013, 0.77, 2.0)  # several equal 1/s: g == 0 exactly


def _random_state(rng: np.random.Generator, n: int, now: float) -> StreamState:
    """Requests that wait (k = 0), stream behind their reader, or have buffered text."""
    rows = []
    for _ in range(n):
        arrival = float(rng.uniform(0.0, now))
        tracker = QoETracker(arrival, float(rng.choice([0.5, 1.0, 2.5])), float(rng.choice(SPEEDS)))
        k = int(rng.choice([0, 0, 1, 3, 20, 60]))
        gap = float(rng.choice([0.02, 0.3, 1.0]))
        t = arrival + float(rng.uniform(0.0, 4.0))
        for _ in range(k):
            if t > now:
                break
            tracker.deliver(t)
            t += gap
        cap = float(rng.choice([math.inf, 0.0, 2.0, 30.0]))
        rows.append(
            (arrival, tracker.ttft, tracker.speed, tracker.k, tracker.lag, tracker.lag_sum, cap)
        )
    cols = np.array(rows, dtype=np.float64).T
    return StreamState(*cols)


def _reference(
    state: StreamState,
    now: float,
    horizon_s: float,
    start_delay: np.ndarray,
    needs_decode: np.ndarray,
    tau: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The estimate as the spec writes it: one closed-form call over the whole grid."""
    horizon = now + horizon_s
    t = tau[None, :]
    first = now + start_delay[:, None] + np.where(needs_decode[:, None], t, 0.0)
    q_serve = qoe_at_horizon(state, horizon, first, t)
    q_wait = qoe_if_waiting(state, horizon)[:, 0]
    gain = np.maximum(np.nan_to_num(q_serve - q_wait[:, None], nan=0.0), 0.0)
    return gain, q_serve, q_wait


@settings(max_examples=150, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 60),
    nb=st.integers(1, 8),
    horizon_s=st.sampled_from([0.5, 3.0, 10.0]),
)
def test_fast_gain_equals_the_closed_form_bit_for_bit(
    seed: int, n: int, nb: int, horizon_s: float
) -> None:
    rng = np.random.default_rng(seed)
    now = 30.0
    state = _random_state(rng, n, now)
    start_delay = rng.choice([0.0, 0.05, 1.0, horizon_s, 2 * horizon_s], size=n)
    needs_decode = rng.random(n) < 0.5
    tau = np.sort(rng.choice(TAUS, size=nb))
    want = _reference(state, now, horizon_s, start_delay, needs_decode, tau)
    out = (np.full((n, nb), -7.0), np.full((n, nb), -7.0))
    got = serve_wait_gain(state, now, horizon_s, start_delay, needs_decode, tau, out=out)
    assert got[0] is out[0] and got[1] is out[1]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(g, w)  # NaN where NaN, every other value exact


def test_fast_gain_covers_waiting_streaming_and_buffered_rows() -> None:
    """One fixed instance that has all three kinds of rows, so the property above is not
    vacuous on any of them."""
    rng = np.random.default_rng(3)
    state = _random_state(rng, 200, 30.0)
    tau = np.array(TAUS)
    delay = np.full(200, 0.05)
    decode = state.delivered > 0
    gain, q_serve, _ = serve_wait_gain(state, 30.0, 10.0, delay, decode, tau)
    want_gain, want_serve, _ = _reference(state, 30.0, 10.0, delay, decode, tau)
    np.testing.assert_array_equal(q_serve, want_serve)
    np.testing.assert_array_equal(gain, want_gain)
    buffered = np.isnan(q_serve).all(axis=1)
    waiting = state.delivered == 0
    assert buffered.any() and waiting.any() and (~buffered & ~waiting).any()
    assert (gain > 0).any() and (gain[buffered] == 0).all()


@settings(max_examples=100, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(1, 60),
    tau=st.sampled_from(TAUS),
    stalls=st.lists(st.sampled_from([0.0, 0.01, 0.2, 1.0, 7.5]), min_size=1, max_size=6),
)
def test_stall_losses_equal_the_closed_form_bit_for_bit(
    seed: int, n: int, tau: float, stalls: list[float]
) -> None:
    """The refiner's losses (one horizon per column) against the closed form as the spec
    writes it: served every tau from now on, against no token, judged at now + stall."""
    now = 30.0
    state = _random_state(np.random.default_rng(seed), n, now)
    horizon = now + np.array(stalls)[None, :]
    serve = qoe_at_horizon(state, horizon, np.full((n, 1), now + tau), np.array([[tau]]))
    loss = np.nan_to_num(serve - qoe_if_waiting(state, horizon), nan=0.0)
    want = np.where(horizon > now, np.maximum(loss, 0.0), 0.0)
    np.testing.assert_array_equal(stall_losses(state, now, np.array(stalls), tau), want)
