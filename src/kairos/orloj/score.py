"""Orloj's priority score (Eqs 4.1–4.2) in closed form, as time-invariant (α, β) coordinates.

For a one-step cost (c if a request finishes after its deadline D), batch latency L with
histogram density h and mean E[L], and an anticipated delay τ ~ Exp(b), Eq 4.1 is

    p(t) = (c / E[L]) · E[1{L ≤ s} e^{−b(s − L)}],   s = D − t (the slack),

i.e. per bin [l1, l2] with K = c·h / (E[L]·b): K(e^{b l2} − e^{b l1}) e^{−bs} while s > l2,
K − K e^{b l1} e^{−bs} while l1 < s ≤ l2, and 0 once s ≤ l1. As b → 0, p·E[L]/c → P(L ≤ s):
the chance the request still makes its deadline if dispatched now. So the score favours
requests that are cheap to run and can still succeed, and fades both far-from-deadline and
hopeless ones (spec 3.4).

With the bins' states fixed, p(t) = α·e^{b t'} + β with t' = t − t0 (spec 3.5): a line in
x = e^{b t'}, which is what the hull index ranks. The state only changes when s crosses a bin
edge (a *milestone*, at t = D − e_j); empty bins change nothing and produce none. Exponents
are taken relative to the table's top edge so nothing overflows for any b·l that fits a float.
"""

from __future__ import annotations

import logging
import math
from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from kairos.orloj.dist import FloatArray, Histogram

log = logging.getLogger(__name__)
MAX_EXP = 700.0  # e^700 ≈ 1e304: the largest exponent a coordinate may take


@dataclass(frozen=True, eq=False)
class ScoreTable:
    """Prefix tables over one batch-latency histogram: (A, B) for every slack state in O(1).

    State `i` (0 ≤ i ≤ n+1) is the number of edges strictly below the slack s: i = 0 means
    s ≤ e_0 (score 0), i = n+1 means every bin is below s, otherwise bin i−1 holds s. The
    coordinates of a request in state i with unit cost are α = ahat[i]·e^{b(ref − D')} and
    β = bval[i], D' = D − t0.
    """

    edges: list[float]
    b: float
    mean: float
    ref: float
    ahat: list[float]
    bval: list[float]
    change_slack: list[float]  # the state changes once the slack falls to this (−inf: never)
    next_state: list[int]  # ... into this state
    density: FloatArray

    @classmethod
    def build(cls, hist: Histogram, mean: float, b: float) -> ScoreTable:
        if not b > 0 or not mean > 0:
            raise ValueError(f"score needs b > 0 and E[L] > 0, got b={b}, E[L]={mean}")
        e, n = hist.edges, hist.n_bins
        k = hist.density / (mean * b)
        ref = float(e[-1])
        m = k * np.exp(b * (e[:-1] - ref))  # K e^{b(l1 − ref)}
        g = m * np.expm1(b * hist.widths)  # K (e^{b(l2 − ref)} − e^{b(l1 − ref)})
        prefix = np.concatenate(([0.0], np.cumsum(g)))
        ahat, bval = np.zeros(n + 2), np.zeros(n + 2)
        ahat[1 : n + 1] = prefix[:n] - m
        bval[1 : n + 1] = k
        ahat[n + 1] = prefix[n]
        # state i changes where the slack falls to the lower edge of the nearest state at or
        # below i whose (A, B) differ from its predecessor's (state 0: never)
        moved = np.concatenate(([False], (ahat[1:] != ahat[:-1]) | (bval[1:] != bval[:-1])))
        src = np.maximum.accumulate(np.where(moved, np.arange(n + 2), 0))
        lower = np.concatenate(([-math.inf], np.asarray(e, dtype=np.float64)))
        change = lower[src].tolist()
        nxt = np.maximum(src - 1, 0).tolist()
        return cls(
            edges=e.tolist(),
            b=b,
            mean=mean,
            ref=ref,
            ahat=ahat.tolist(),
            bval=bval.tolist(),
            change_slack=change,
            next_state=nxt,
            density=hist.density,
        )

    # -- scalar hot path ------------------------------------------------------------------
    def state_at(self, deadline: float, t: float) -> int:
        """The state at time t; robust to rounding at an edge (it agrees with `milestone`)."""
        i = bisect_left(self.edges, deadline - t)
        while deadline - self.change_slack[i] <= t:
            i = self.next_state[i]
        return i

    def coords(self, deadline_rel: float, state: int, cost: float = 1.0) -> tuple[float, float]:
        """(α, β) for deadline D' = D − t0 (relative to the time base) in `state`."""
        ah = self.ahat[state]
        if ah == 0.0:
            return 0.0, cost * self.bval[state]
        ex = min(self.b * (self.ref - deadline_rel), MAX_EXP)
        return cost * ah * math.exp(ex), cost * self.bval[state]

    def milestone(self, deadline: float, state: int) -> float:
        """When this state ends: the time the slack reaches the next meaningful edge."""
        return deadline - self.change_slack[state]

    # -- vectorised, for resets / rebuilds and tests ------------------------------------------
    def states_at(self, deadlines: ArrayLike, t: float) -> np.ndarray:
        d = np.asarray(deadlines, dtype=np.float64)
        idx = np.searchsorted(np.asarray(self.edges), d - t, side="left")
        change, nxt = np.asarray(self.change_slack), np.asarray(self.next_state)
        late = d - change[idx] <= t
        while np.any(late):
            idx = np.where(late, nxt[idx], idx)
            late = d - change[idx] <= t
        return idx

    def coords_many(
        self, deadlines_rel: ArrayLike, states: np.ndarray, costs: ArrayLike = 1.0
    ) -> tuple[FloatArray, FloatArray]:
        ahat, bval = np.asarray(self.ahat)[states], np.asarray(self.bval)[states]
        ex = np.minimum(self.b * (self.ref - np.asarray(deadlines_rel, dtype=np.float64)), MAX_EXP)
        c = np.asarray(costs, dtype=np.float64)
        return c * ahat * np.exp(ex), c * bval

    def score(self, deadline: float, t: float, cost: float = 1.0) -> float:
        """p(t) through the coordinates (time base 0)."""
        alpha, beta = self.coords(deadline - t, self.state_at(deadline, t), cost)
        return alpha + beta  # x = e^{b·0} = 1 with the base moved to t

    def score_direct(self, deadline: float, t: float, cost: float = 1.0) -> float:
        """Eq 4.2 bin by bin, as printed (with h = mass / width): the oracle for `score`."""
        e = np.asarray(self.edges)
        l1, l2 = e[:-1], e[1:]
        s = deadline - t
        k = cost * self.density / (self.mean * self.b)
        full = k * (np.exp(self.b * l2) - np.exp(self.b * l1)) * np.exp(-self.b * s)
        middle = k - k * np.exp(self.b * l1) * np.exp(-self.b * s)
        p = np.where(s > l2, full, np.where(s > l1, middle, 0.0))
        return float(p.sum())


def cost_steps(
    deadline: float, steps: Sequence[tuple[float, float]] | None, cost: float = 1.0
) -> list[tuple[float, float]]:
    """A piece-wise step cost as single steps (d_j, c_j − c_{j−1}) (appendix C.2).

    `steps` are ((absolute deadline, cost), ...) with increasing deadlines; None is one step
    of `cost` at `deadline`. A decreasing cost is allowed (its step is negative) but logged.
    """
    if not steps:
        return [(deadline, cost)]
    out, previous_d, previous_c = [], -math.inf, 0.0
    for d, c in steps:
        if not d > previous_d:
            raise ValueError(f"cost-step deadlines must increase, got {[s[0] for s in steps]}")
        if c < previous_c:
            log.warning("cost steps %s decrease: the score counts a negative step", steps)
        out.append((float(d), float(c) - previous_c))
        previous_d, previous_c = d, c
    return out
