"""Quality of Experience of a token stream, exactly as the Andes spec defines it (section 2).

A user reads (or listens) at `speed` tokens/s and expects the first token `ttft` seconds after
arrival, so token j is ideally consumed at `I_j = arrival + ttft + (j-1)/speed`. With the client
pacer, token j is consumed at `C_j = max(t_j, C_{j-1} + 1/speed)`: never before it arrives,
never faster than the user reads. QoE compares the area under the actual consumption timeline
with the ideal one: `1 - sum_j (C_j - I_j) / sum_j (C_m - I_j)`.

Two implementations live here on purpose: `qoe_at` walks the token timeline (the definition,
used for reporting and as the test oracle), and `QoETracker` keeps the O(1) state of spec
section 10, because the lag `D_j = C_j - I_j` is the running maximum of lateness:
`D_j = max(D_{j-1}, t_j - I_j, 0)`. The scheduler's estimators (`gain.py`) build on that state.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

# Table 2.1: reading speed by age group (words/min x 1.3 tokens/word / 60) and population share.
READER_SPEEDS: tuple[tuple[float, float], ...] = (
    (5.11, 0.280),
    (4.33, 0.519),
    (4.16, 0.112),
    (4.01, 0.056),
    (3.79, 0.033),
)
# Table 2.2: speaking speed by language and share of speakers.
LISTENER_SPEEDS: tuple[tuple[float, float], ...] = (
    (3.25, 0.793),
    (3.42, 0.070),
    (3.25, 0.069),
    (4.23, 0.036),
    (4.72, 0.032),
)
PROFILES: dict[str, tuple[tuple[float, float], ...]] = {
    "reader": READER_SPEEDS,
    "listener": LISTENER_SPEEDS,
}


@dataclass(frozen=True)
class QoEParams:
    """What a user expects: the first token within `ttft_s`, then `tokens_per_s`."""

    ttft_s: float
    tokens_per_s: float

    def __post_init__(self) -> None:
        if not (self.ttft_s >= 0 and math.isfinite(self.ttft_s)):
            raise ValueError(f"ttft_s must be a finite number >= 0, got {self.ttft_s}")
        if not (self.tokens_per_s > 0 and math.isfinite(self.tokens_per_s)):
            raise ValueError(f"tokens_per_s must be a finite number > 0, got {self.tokens_per_s}")


def ttft_target(
    prompt_tokens: int | np.ndarray, prefill_tokens_per_s: float = 5000.0
) -> np.ndarray:
    """The paper's TTFT target: `max(prompt / prefill throughput, 1 s)`."""
    return np.maximum(np.asarray(prompt_tokens, dtype=np.float64) / prefill_tokens_per_s, 1.0)


def sample_speeds(
    profile: Literal["reader", "listener"], n: int, rng: np.random.Generator
) -> np.ndarray:
    """Consumption speeds drawn from a profile's population mix."""
    try:
        table = PROFILES[profile]
    except KeyError:
        raise ValueError(f"unknown QoE profile {profile!r}; choose {sorted(PROFILES)}") from None
    speeds = np.array([s for s, _ in table])
    weights = np.array([w for _, w in table])
    return rng.choice(speeds, size=n, p=weights / weights.sum())


def due_tokens(t: float, arrival: float, ttft: float, speed: float) -> int:
    """How many tokens the user should have started consuming by time t (0 before a + ttft)."""
    start = arrival + ttft
    return 0 if t < start else math.floor((t - start) * speed + 1e-9) + 1


def qoe_at(
    times: Sequence[float] | np.ndarray,
    arrival: float,
    ttft: float,
    speed: float,
    t: float | None = None,
    finished: bool = True,
) -> float:
    """QoE of a stream whose tokens arrived at `times`, walking the timeline token by token.

    A finished stream is scored over all its tokens. An unfinished one is scored at time `t`
    over the tokens due by then; a due token not yet delivered is consumed no earlier than `t`.
    """
    arrived = np.sort(np.asarray(times, dtype=np.float64))
    if finished:
        m = arrived.size
        stamps = arrived
    else:
        if t is None:
            raise ValueError("an unfinished stream needs the evaluation time t")
        arrived = arrived[arrived <= t]
        m = due_tokens(t, arrival, ttft, speed)
        if m == 0:
            return 1.0
        if arrived.size == 0:
            return 0.0
        stamps = np.full(m, float(t))
        k = min(m, arrived.size)
        stamps[:k] = arrived[:k]
    if m == 0:
        return 1.0
    ideal = arrival + ttft + np.arange(m) / speed
    lag = np.maximum.accumulate(np.maximum(stamps - ideal, 0.0))
    whole = m * lag[-1] + m * (m - 1) / (2.0 * speed)
    return 1.0 if whole <= 0 else float(1.0 - lag.sum() / whole)


def closed_form_qoe(
    m: np.ndarray, lag: np.ndarray, lag_sum: np.ndarray, speed: np.ndarray
) -> np.ndarray:
    """QoE from the O(1) state: m due tokens, lag of the m-th, and the sum of the m lags."""
    m = np.asarray(m, dtype=np.float64)
    whole = m * lag + m * (m - 1.0) / (2.0 * speed)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(whole > 0, 1.0 - lag_sum / np.where(whole > 0, whole, 1.0), 1.0)
    return np.clip(q, 0.0, 1.0)


@dataclass
class QoETracker:
    """Per-request QoE state, updated as each token is delivered.

    `k`, `lag` and `lag_sum` are the O(1) state the scheduler uses. The per-token lag history
    is kept only to score a request at a time when fewer tokens are due than were delivered
    (a user with buffered text); the scheduler's gain estimates never need it.
    """

    arrival: float
    ttft: float
    speed: float
    k: int = 0
    lag: float = 0.0
    lag_sum: float = 0.0
    first_time: float = math.nan
    last_time: float = math.nan
    _lags: list[float] = field(default_factory=list, repr=False)
    _sums: list[float] = field(default_factory=list, repr=False)

    def ideal(self, j: int) -> float:
        """Ideal consumption time of token j (1-based)."""
        return self.arrival + self.ttft + (j - 1) / self.speed

    def deliver(self, t: float) -> None:
        if self.k and t < self.last_time:
            raise ValueError(f"token timestamps must not decrease: {t} < {self.last_time}")
        self.k += 1
        # `ideal(k)` inlined: this runs once per token of every stream
        ideal = self.arrival + self.ttft + (self.k - 1) / self.speed
        self.lag = max(self.lag, t - ideal, 0.0)
        self.lag_sum += self.lag
        if self.k == 1:
            self.first_time = t
        self.last_time = t
        self._lags.append(self.lag)
        self._sums.append(self.lag_sum)

    def qoe_at(self, t: float, finished: bool = False) -> float:
        """Exactly `qoe_at(times, ..., t, finished)` over the delivered tokens, in O(1)."""
        if finished:
            return float(
                closed_form_qoe(
                    np.array(self.k),
                    np.array(self.lag),
                    np.array(self.lag_sum),
                    np.array(self.speed),
                )
            )
        m = due_tokens(t, self.arrival, self.ttft, self.speed)
        if m == 0:
            return 1.0
        if self.k == 0:
            return 0.0
        if m <= self.k:
            lag, total = self._lags[m - 1], self._sums[m - 1]
        else:  # due but undelivered tokens all share the lag of being consumed at t
            lag = max(self.lag, t - self.ideal(self.k + 1))
            total = self.lag_sum + (m - self.k) * lag
        return float(
            closed_form_qoe(np.array(m), np.array(lag), np.array(total), np.array(self.speed))
        )
