"""Which of a job's iterations run under its memory accounting (the CPU's `StorageTracker`).

On CPU the accounting is a `TorchDispatchMode`, and a Python dispatch mode costs tens of
microseconds on every operator whether or not it allocates: 5-15% of a 20-30 ms step, more than
the service's whole overhead budget (Fig. 2.12's 10%). The checks it serves (a peak over the
profile fails the job at that operator; bytes still live at the boundary are a leak) only need
to see a misbehaving iteration, not every iteration. So after admission a job is accounted on
at least one iteration in every `every`: the gap to the next accounted iteration is drawn
uniformly from 1..`every` (mean (every + 1) / 2), from a generator seeded by the job's id.

Bounded: a job that leaks or overruns on every iteration is failed within `every` iterations.
Random: a job that misbehaves periodically (every other iteration, say) cannot hide between
evenly spaced samples. `every = 1` accounts every iteration (the strict mode). The profiler's
iterations (before admission) are always accounted: they measure P and E.
"""

from __future__ import annotations

import random


class AccountingSchedule:
    """`next()` says whether the job's next iteration is accounted."""

    def __init__(self, every: int = 1, seed: int = 0) -> None:
        if every < 1:
            raise ValueError(f"account_every must be >= 1, got {every}")
        self.every = every
        self._rng = random.Random(seed)
        self._left = self._gap()

    def _gap(self) -> int:
        return 1 if self.every == 1 else self._rng.randint(1, self.every)

    def next(self) -> bool:
        self._left -= 1
        if self._left > 0:
            return False
        self._left = self._gap()
        return True
