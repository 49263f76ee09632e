"""Earliest-deadline-first with the largest fillable batch (an extra baseline, spec 4.1 [P]).

Not in the paper: a deadline-aware point-estimate scheduler that isolates what Orloj's
distributions add over simply serving by deadline. Requests wait in a deadline heap; when the
worker is free, requests that cannot finish even alone at the mean (now + g_1(E[X]) > D) are
dropped, then the batch is the b earliest-deadline requests for the largest b in S that the
queue can fill and whose estimated completion now + g_b(E[X]) still meets the earliest of
those deadlines.
"""

from __future__ import annotations

from collections.abc import Sequence

from kairos.orloj.batchdist import BatchLatencyModel
from kairos.orloj.policies.base import OneBatchPolicy
from kairos.orloj.policies.common import (
    DEFAULT_BATCH_SIZES,
    DeadlineQueue,
    batch_sizes,
    pooled_mean,
)
from kairos.orloj.policy import ProfileSnapshot, Request


class EDFPolicy(OneBatchPolicy):
    name = "edf"

    def __init__(
        self,
        model: BatchLatencyModel,
        sizes: Sequence[int] = DEFAULT_BATCH_SIZES,
        *,
        mean_ms: float | None = None,
    ) -> None:
        super().__init__(DeadlineQueue())
        self.model = model
        self.sizes = batch_sizes(sizes)
        self.mean_ms = mean_ms

    def estimate(self, bs: int) -> float:
        return float(self.model.g(bs, self.mean_ms if self.mean_ms is not None else 0.0))

    def on_profile(self, snapshot: ProfileSnapshot) -> None:
        mean = pooled_mean(snapshot)
        if self.mean_ms is None and mean is not None:
            self.mean_ms = mean

    def drop(self, now: float) -> list[Request]:
        solo = self.estimate(1)
        return self.queue.drop_front(lambda r: now + solo > r.deadline)

    def size(self, now: float) -> int:
        first = self.queue.front.deadline
        n = len(self.queue)
        fits = [b for b in self.sizes if b <= n and now + self.estimate(b) <= first]
        return max(fits, default=1)
