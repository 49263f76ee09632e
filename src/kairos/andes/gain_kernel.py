"""The serve estimate and gain of every (request, batch size) pair, in one compiled pass.

This is the decision's hot loop: at N = 1000 and 49 candidate batch sizes, the closed form
of `kairos.andes.gain.qoe_at_horizon` written as numpy array operations made ~40 passes
over the (N, nB) grid and cost about 3 ms of a 7 ms decision. Here each element goes
through the same arithmetic once, in registers (numba, compiled once and cached on disk).

The operations and their order are those of `qoe_at_horizon`, with row-only terms computed
once per row and the branches written as branches; only the sign of a zero can differ, so
the results are bit-identical (tests/andes/test_fast_gain.py checks it against the closed
form over random states). `error_model="numpy"`: a division by zero gives inf or NaN, as in
numpy, instead of raising (`g = tau - 1/s` is 0 exactly when the batch's pace equals the
reader's, and that branch's value is then not used).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True, error_model="numpy")
def serve_gain_grid(
    arrival: np.ndarray,
    ttft: np.ndarray,
    speed: np.ndarray,
    delivered: np.ndarray,
    lag: np.ndarray,
    lag_sum: np.ndarray,
    remaining_cap: np.ndarray,
    start_delay: np.ndarray,
    needs_decode: np.ndarray,
    now: float,
    horizons: np.ndarray,
    tau: np.ndarray,
    gain: np.ndarray,
    q_serve: np.ndarray,
) -> None:
    """Column j: request i served at step time `tau[j]`, judged at `horizons[j]` (absolute).
    Writes Q_serve (NaN where the user's buffered text covers the horizon) into `q_serve[i, j]`
    and `fmax(Q_serve - Q_wait, 0)` into `gain[i, j]`. Arguments are `StreamState`'s columns,
    then as in `kairos.andes.gain.serve_wait_gain`."""
    for i in range(arrival.shape[0]):
        s = speed[i]
        k = np.float64(delivered[i])
        d = lag[i]
        ideal0 = arrival[i] + ttft[i]  # when token 1 is due
        limit_cap = remaining_cap[i]
        base = now + start_delay[i]
        decode = 1.0 if needs_decode[i] else 0.0  # the next token also waits for a step
        next_ideal = ideal0 + k / s
        inv_s = 1.0 / s
        for j in range(tau.shape[0]):
            horizon = horizons[j]
            due = 0.0 if horizon < ideal0 else np.floor((horizon - ideal0) * s + 1e-9) + 1.0
            owed = due - k
            # Q_wait: no token until the horizon, every due one consumed there at one lag
            wait_lag = np.maximum(d, horizon - next_ideal)
            q_wait = _qoe(due, wait_lag, lag_sum[i] + owed * wait_lag, s)
            q_wait = 0.0 if k == 0 else q_wait
            t = tau[j]
            first = base + t * decode
            ahead = horizon - first
            r = np.maximum(
                np.minimum(np.floor(ahead / t + 1e-9) + 1.0, np.minimum(limit_cap, owed)), 0.0
            )
            r = r * (1.0 if ahead >= 0 else 0.0)  # new tokens delivered by the horizon
            l1 = first - next_ideal  # lateness of token k + 1
            g = t - inv_s  # how much later each next token gets
            q_fall = np.minimum(np.maximum(np.floor((d - l1) / g) + 1.0, 0.0), r)
            q_star = q_fall if g > 0 else r * (1.0 if l1 <= d else 0.0)
            r_1 = r - 1.0
            lag_r_falling = np.maximum(d, l1)
            if g >= 0:
                added = (
                    q_star * d + (r - q_star) * l1 + g * (r * r_1 - q_star * (q_star - 1.0)) / 2.0
                )
                lag_r = np.maximum(d, l1 + r_1 * g)
            else:
                added = r * lag_r_falling
                lag_r = lag_r_falling
            if not r > 0:
                lag_r = d
            # due tokens still undelivered at the horizon are consumed there, at one lag
            undelivered = owed - r
            tail_lag = np.maximum(lag_r, horizon - (ideal0 + (k + r) / s))
            added = added + undelivered * tail_lag
            lag_m = tail_lag if undelivered > 0 else lag_r
            q = _qoe(due, lag_m, lag_sum[i] + added, s)
            q = q * (1.0 if (k + r) != 0 else 0.0)  # nothing delivered while tokens are due
            if not owed > 0:  # buffered: Q_serve and Q_wait are NaN, the gain 0
                q = np.nan
            q_serve[i, j] = q
            gain[i, j] = np.fmax(q - q_wait, 0.0)


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _qoe(m: float, lag: float, lag_sum: float, speed: float) -> float:
    """`kairos.andes.qoe.closed_form_qoe` for one element."""
    whole = m * lag + m * (m - 1.0) / (2.0 * speed)
    q = 1.0 - lag_sum / whole if whole > 0 else 1.0
    return np.minimum(np.maximum(q, 0.0), 1.0)
