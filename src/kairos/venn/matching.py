"""Tier-based device matching (Algorithm 4, spec §3.7).

A round's collection time is set by its slowest needed device, so giving a request only devices
of one speed tier shortens collection by a factor g_u (tail latency of tier u over the untiered
tail) while acquisition takes about V times longer. Normalised by the scheduling time, JCT goes
from `1 + c` to `V + g_u * c`, where `c = t_response / t_schedule`; tier only when that is
smaller (and the slower acquisition still fits the deadline). This pays off for small requests
with plenty of supply, i.e. under low contention. The tier is random so that each job still
sees a varied mix of devices; only the currently served request is tiered, once, when it first
becomes the head, and devices outside its tier flow to the requests behind it.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from scipy.special import ndtri

from kairos.venn.view import Profile, RequestView, Tier

EMPIRICAL_MIN = 20  # samples for an empirical tail; fewer: fit a log-normal (Flint)


def _quantile_sorted(x: np.ndarray, q: float) -> float:
    """Linear-interpolated quantile of a sorted array (numpy's default method), without
    numpy's per-call overhead: this runs once per tier decision on the hot planning path."""
    pos = q * (x.size - 1)
    lo = int(pos)
    hi = min(lo + 1, x.size - 1)
    return float(x[lo] + (x[hi] - x[lo]) * (pos - lo))


def tail(samples: np.ndarray, q: float) -> float:
    """The q-quantile of response times: empirical, or from a log-normal fit when few."""
    x = np.asarray(samples, dtype=np.float64)
    x = x[x > 0]
    if x.size == 0:
        return math.nan
    if x.size >= EMPIRICAL_MIN:
        return _quantile_sorted(np.sort(x), q)
    logs = np.log(x)
    return float(np.exp(logs.mean() + float(ndtri(q)) * logs.std()))


class MatcherConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    tiers: int = Field(2, ge=1, le=16)  # V
    tail_q: float = Field(0.95, gt=0, lt=1)
    min_samples_per_tier: int = Field(20, ge=1)
    pooled: bool = True  # fall back to all jobs' samples when the job's own are too few
    # A request that already holds devices of every speed gains nothing in collection time
    # from a tier (its slowest device is already dispatched), only a slower acquisition.
    skip_started: bool = True
    # What t_schedule in c = t_response/t_schedule measures (see `decide`): "group" = the time
    # the supply reaching the head needs for all the demand pending in its group; "request" =
    # for the head's own remaining demand only (the literal reading).
    schedule_scope: Literal["group", "request"] = "group"


class TierMatcher:
    """Decides a head request's tier from its job's (or the pooled) response-time profile."""

    def __init__(self, config: MatcherConfig | None = None) -> None:
        self.config = config or MatcherConfig()

    def _profile(self, req: RequestView, pooled: Profile) -> Profile | None:
        need = self.config.tiers * self.config.min_samples_per_tier
        if req.round_idx < 1:
            return None  # never served: profile this round, tier later
        if len(req.profile) >= need:
            return req.profile
        if self.config.pooled and len(pooled) >= need:
            return pooled
        return None

    def speedups(self, profile: Profile) -> tuple[np.ndarray, np.ndarray, float]:
        """(tier thresholds, g_v per tier, untiered tail t0); tiers are equal-count bands."""
        v = self.config.tiers
        cap, resp = profile.capability, profile.response_s
        cap_sorted = np.sort(cap)
        th = np.array([_quantile_sorted(cap_sorted, k / v) for k in range(1, v)])
        t0 = tail(resp, self.config.tail_q)
        band = np.searchsorted(th, cap, side="right")
        g = np.array([tail(resp[band == u], self.config.tail_q) / t0 for u in range(v)])
        return th, np.nan_to_num(g, nan=np.inf), t0

    def decide(
        self,
        req: RequestView,
        lam: float,
        pooled: Profile,
        rng: np.random.Generator,
        backlog: int | None = None,
    ) -> Tier | None:
        """The tier band the request will accept, or None (take any device).

        `lam` is the supply rate reaching this request (the atoms it is first in line for);
        `backlog` the undispatched demand of its whole group (with `schedule_scope="group"`).
        Reading t_schedule as the group's drain time makes tiering a low-contention tool, as
        §4.4.3 intends: a tiered head acquires V times slower, and with a queue behind it the
        leftover devices scatter over the queue instead of finishing it in SRPT order, a cost
        the per-request condition does not see.
        """
        v = self.config.tiers
        profile = self._profile(req, pooled)
        if v == 1 or profile is None or lam <= 0 or req.remaining <= 0:
            return None
        if self.config.skip_started and req.remaining < req.demand:
            return None
        th, g, t0 = self.speedups(profile)
        if not (t0 > 0 and math.isfinite(t0)):
            return None
        pending = req.remaining
        if self.config.schedule_scope == "group" and backlog is not None:
            pending = max(backlog, req.remaining)
        t_sched = pending / lam
        c = t0 / t_sched
        u = int(rng.integers(0, v))  # uniform over the V tiers (the printed randint(0, V) is off)
        if v + g[u] * c < 1 + c and v * req.remaining / lam + g[u] * t0 <= req.deadline_s:
            lo = -math.inf if u == 0 else float(th[u - 1])
            hi = math.inf if u == v - 1 else float(th[u])
            return (lo, hi)
        return None
