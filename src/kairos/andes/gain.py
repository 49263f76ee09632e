"""QoE gain estimates over the horizon `now + Δt`, vectorised over requests and batch sizes.

For request i, `Q_wait` is its QoE at the horizon if it gets no token until then, and
`Q_serve(B)` its QoE if it is served in a batch of B: after a start delay `p_i` (prefill,
or restore after preemption) tokens arrive every `τ(B)` seconds. Both come from the O(1) state
`(k, D_k, sum D)` in closed form (spec section 10): the lateness of future token k+q is linear
in q, `L_q = L_1 + (q-1)(τ - 1/s)`, so the running maximum of lags is a flat part followed by
an arithmetic series; due tokens still undelivered at the horizon all share one lag.

Only tokens due by the horizon count. A request whose delivered tokens already cover the
horizon (its user has buffered text) has gain exactly 0, whatever B is.

`qoe_at_horizon` is the closed form as numpy array operations, the reference; the decision
computes the same numbers through `kairos.andes.gain_kernel` (one compiled pass over the
(N, nB) grid, bit-identical), writing into grids the caller may reuse (`out`).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from kairos.andes.gain_kernel import serve_gain_grid
from kairos.andes.qoe import closed_form_qoe


@dataclass(frozen=True)
class StreamState:
    """Struct-of-arrays QoE state of N requests (shape (N,) each)."""

    arrival: np.ndarray
    ttft: np.ndarray
    speed: np.ndarray
    delivered: np.ndarray  # k
    lag: np.ndarray  # D_k
    lag_sum: np.ndarray  # sum_{j<=k} D_j
    remaining_cap: np.ndarray  # tokens still allowed by max_tokens (inf if unbounded)

    def __len__(self) -> int:
        return len(self.arrival)

    def due(self, t: float | np.ndarray) -> np.ndarray:
        """Tokens due by t; a (1, K) array of times gives an (N, K) answer."""
        start = (self.arrival + self.ttft)[:, None]
        m = np.floor((t - start) * self.speed[:, None] + 1e-9) + 1.0
        out = np.where(t < start, 0.0, m)
        return out[:, 0] if np.ndim(t) == 0 else out


def qoe_at_horizon(
    state: StreamState, horizon: float | np.ndarray, first_new: np.ndarray, tau: np.ndarray
) -> np.ndarray:
    """QoE at `horizon` if new tokens arrive at `first_new + q*tau` (q = 0, 1, ...).

    `first_new`, `tau` and `horizon` (a scalar, or a (1, K) row of horizons) broadcast
    against shape (N, K) (pass `first_new = +inf` for "no new token"). Requests with due <=
    delivered get NaN instead of their current-prefix QoE: callers treat them as zero-gain
    (see module docstring).
    """
    a = state.arrival[:, None]
    s = state.speed[:, None]
    k = state.delivered[:, None].astype(np.float64)
    d = state.lag[:, None]
    total = state.lag_sum[:, None]
    ideal0 = a + state.ttft[:, None]  # I_1
    m_h = state.due(horizon)
    m_h = m_h[:, None] if m_h.ndim == 1 else m_h
    open_ = m_h > k  # tokens due beyond what was delivered: the estimate matters

    first_new = np.broadcast_to(first_new, np.broadcast_shapes(np.shape(first_new), np.shape(tau)))
    tau = np.asarray(tau, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):
        r = np.where(first_new <= horizon, np.floor((horizon - first_new) / tau + 1e-9) + 1.0, 0.0)
        r = np.minimum(r, state.remaining_cap[:, None])
        r = np.clip(np.minimum(r, m_h - k), 0.0, None)

        l1 = first_new - (ideal0 + k / s)  # lateness of token k+1
        g = tau - 1.0 / s
        # number of new tokens whose lateness stays at or below the current lag
        q_star = np.where(
            g > 0,
            np.clip(np.floor((d - l1) / np.where(g > 0, g, 1.0)) + 1.0, 0.0, r),
            np.where(l1 <= d, r, 0.0),
        )
        rising = g >= 0
        added_rising = (
            q_star * d + (r - q_star) * l1 + g * (r * (r - 1.0) - q_star * (q_star - 1.0)) / 2.0
        )
        lag_r_rising = np.maximum(d, l1 + (r - 1.0) * g)
        lag_r_falling = np.maximum(d, l1)
        lag_r = np.where(r > 0, np.where(rising, lag_r_rising, lag_r_falling), d)
        added = np.where(r > 0, np.where(rising, added_rising, r * lag_r_falling), 0.0)

        # due tokens not delivered by the horizon: consumed no earlier than the horizon
        undelivered = m_h - k - r
        tail_lag = np.maximum(lag_r, horizon - (ideal0 + (k + r) / s))
        added = added + np.where(undelivered > 0, undelivered * tail_lag, 0.0)
        lag_m = np.where(undelivered > 0, tail_lag, lag_r)
        q = closed_form_qoe(m_h, lag_m, total + added, s)
    q = np.where((k + r) == 0, 0.0, q)  # nothing delivered while tokens are due: QoE 0
    return np.where(open_, q, np.nan)


def qoe_if_waiting(state: StreamState, horizon: float | np.ndarray) -> np.ndarray:
    """`qoe_at_horizon` with no new token (the Q_wait case), without the serve arithmetic."""
    k = state.delivered[:, None]
    s = state.speed[:, None]
    m_h = state.due(horizon)
    m_h = m_h[:, None] if m_h.ndim == 1 else m_h
    undelivered = m_h - k
    ideal_next = (state.arrival + state.ttft)[:, None] + k / s
    tail = np.maximum(state.lag[:, None], horizon - ideal_next)
    q = closed_form_qoe(m_h, tail, state.lag_sum[:, None] + undelivered * tail, s)
    q = np.where(k == 0, 0.0, q)
    return np.where(undelivered > 0, q, np.nan)


def serve_wait_gain(
    state: StreamState,
    now: float,
    horizon_s: float,
    start_delay: np.ndarray,
    needs_decode: np.ndarray,
    tau: np.ndarray,
    out: tuple[np.ndarray, np.ndarray] | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(gain (N, nB), Q_serve (N, nB), Q_wait (N,)) over the horizon `now + horizon_s`.

    `start_delay` (N,) is the prefill or restore time before a request's next token;
    `needs_decode` (N,) is True when that token also needs a decode iteration (running or
    swapped-in requests) and False when a prefill produces it (new or recomputed requests).
    NaN entries of Q (buffered requests) get gain 0. `out`: (N, nB) float64 grids to write
    gain and Q_serve into (see the module docstring).
    """
    horizon = now + horizon_s
    tau = np.atleast_1d(np.asarray(tau, dtype=np.float64))
    n, nb = len(state), tau.shape[0]
    gain, q_serve = out if out is not None else (np.empty((n, nb)), np.empty((n, nb)))
    q_wait = qoe_if_waiting(state, horizon)[:, 0]
    served_grid(state, now, np.full(nb, horizon), start_delay, needs_decode, tau, gain, q_serve)
    return gain, q_serve, q_wait


def served_grid(
    state: StreamState,
    now: float,
    horizons: np.ndarray,
    start_delay: np.ndarray,
    needs_decode: np.ndarray,
    tau: np.ndarray,
    gain: np.ndarray,
    q_serve: np.ndarray,
) -> None:
    """Column j of the (N, nB) grids `gain` and `q_serve`: served at step time `tau[j]`,
    judged at `horizons[j]` (`gain_kernel.serve_gain_grid`, the same numbers as
    `qoe_at_horizon` and `qoe_if_waiting`)."""
    serve_gain_grid(
        state.arrival,
        state.ttft,
        state.speed,
        state.delivered,
        state.lag,
        state.lag_sum,
        state.remaining_cap,
        np.asarray(start_delay, dtype=np.float64),
        np.asarray(needs_decode, dtype=np.bool_),
        float(now),
        np.asarray(horizons, dtype=np.float64),
        np.asarray(tau, dtype=np.float64),
        gain,
        q_serve,
    )
