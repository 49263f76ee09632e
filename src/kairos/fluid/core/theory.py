"""Appendix B, as something a test can check: list scheduling of a planned group in the ideal
runtime model, the bound that is actually proven (spec 3.6), and the best schedule over every
width choice and list order for tiny instances.

Theorem 1 calls StaticFluid a 2-approximation; what the proof shows is the asymptotic bound
`max(2 H_small + max h1, 2 H)`, and the factor 2 fails: with n = 3, c = 4, d = 3, one trial of
1.9 and eleven of 0.1, StaticFluid gives the long trial one GPU (makespan 1.9) while running it
on three GPUs first and then the eleven short ones in slots takes 0.733.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Mapping, Sequence
from fractions import Fraction

from kairos.fluid.core.model import Limits, PlanTrial, Width
from kairos.fluid.core.placement import Placer, Waiting, start_queued


def list_schedule(
    trials: Sequence[PlanTrial], widths: Mapping[str, Width], n: int, c: int
) -> float:
    """Makespan of running `trials` at fixed `widths` on `n` GPUs: start in the given order,
    the rest queued and started (with backfill) as devices free. No resizes."""
    placer = Placer(n, c)
    by_id = {t.trial_id: t for t in trials}
    queue = [Waiting(0, float(-i), t.trial_id, widths[t.trial_id]) for i, t in enumerate(trials)]
    ends: list[tuple[float, str]] = []
    now = 0.0
    while queue or ends:
        for p in start_queued(placer, queue, now=now):
            heapq.heappush(ends, (now + by_id[p.trial_id].at(p.width), p.trial_id))
        started = set(placer.placed)
        queue = [w for w in queue if w.trial_id not in started]
        if not ends:
            raise ValueError("a trial can never start: its width exceeds the GPUs")
        now, done = heapq.heappop(ends)
        placer.release(done)
    return now


def proven_bound(trials: Sequence[PlanTrial], n: int, limits: Limits) -> float:
    """`max(2 H_small + max h1, 2 H)` for StaticFluid on an empty cluster, ideal model, with a
    `d` that does not bind: the bound Appendix B's argument supports (spec 3.6)."""
    total = sum(t.h1 for t in trials)
    share = {t.trial_id: n * t.h1 / total for t in trials}
    large = [t for t in trials if share[t.trial_id] >= 1]
    small = [t for t in trials if share[t.trial_id] < 1]
    h = total / n
    if not small:
        return 2 * h
    leftover = n - sum(int(share[t.trial_id]) for t in large)
    h_small = sum(t.h1 for t in small) / limits.c / leftover
    return max(2 * h_small + max(t.h1 for t in trials), 2 * h)


def best_list_schedule(trials: Sequence[PlanTrial], n: int, limits: Limits) -> float:
    """The shortest makespan over every width in `{1/c, 1..min(d, n)}` per trial and every list
    order: the optimum among list schedules, an upper bound on OPT. Tiny instances only."""
    if len(trials) > 6:
        raise ValueError("best_list_schedule enumerates every order; keep it to 6 trials")
    choices: list[Width] = [Fraction(w) for w in range(1, min(limits.d, n) + 1)]
    if limits.c > 1:
        choices.insert(0, limits.slot)
    best = float("inf")
    for ws in itertools.product(choices, repeat=len(trials)):
        widths = {t.trial_id: w for t, w in zip(trials, ws, strict=True)}
        for order in itertools.permutations(trials):
            best = min(best, list_schedule(order, widths, n, limits.c))
    return best
