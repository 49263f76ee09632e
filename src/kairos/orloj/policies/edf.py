"""Earliest-deadline-first with the largest fillable batch (an extra baseline, spec 4.1 [P]).

Not in the paper: a deadline-aware point-estimate scheduler that isolates what Orloj's
distributions add over simply serving by deadline. Requests wait in a deadline heap; when the
worker is free, requests that cannot finish even alone at the mean (now + g_1(E[X]) > D) are
dropped, then the batch is the b earliest-deadline requests for the largest b in S that the
queue can fill and whose estimated completion now + g_b(E[X]) still meets the earliest of
those deadlines.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

from kairos.orloj.batchdist import BatchLatencyModel
from kairos.orloj.policies.common import DEFAULT_BATCH_SIZES, batch_sizes, pooled_mean
from kairos.orloj.policy import Batch, ProfileSnapshot, Request


class EDFPolicy:
    name = "edf"

    def __init__(
        self,
        model: BatchLatencyModel,
        sizes: Sequence[int] = DEFAULT_BATCH_SIZES,
        *,
        mean_ms: float | None = None,
    ) -> None:
        self.model = model
        self.sizes = batch_sizes(sizes)
        self.mean_ms = mean_ms
        self._heap: list[tuple[float, int, Request]] = []
        self._in_flight = 0

    def estimate(self, bs: int) -> float:
        return float(self.model.g(bs, self.mean_ms if self.mean_ms is not None else 0.0))

    def on_profile(self, snapshot: ProfileSnapshot) -> None:
        mean = pooled_mean(snapshot)
        if self.mean_ms is None and mean is not None:
            self.mean_ms = mean

    def on_arrival(self, request: Request, now: float) -> list[Request]:
        heapq.heappush(self._heap, (request.deadline, request.request_id, request))
        return []

    def next_batch(self, now: float) -> tuple[Batch | None, list[Request]]:
        dropped: list[Request] = []
        if self._in_flight:
            return None, dropped
        solo = self.estimate(1)
        while self._heap and now + solo > self._heap[0][0]:
            dropped.append(heapq.heappop(self._heap)[2])
        if not self._heap:
            return None, dropped
        first = self._heap[0][0]
        fits = [b for b in self.sizes if b <= len(self._heap) and now + self.estimate(b) <= first]
        bs = max(fits, default=1)
        take = [heapq.heappop(self._heap)[2] for _ in range(bs)]
        self._in_flight += 1
        return Batch(take), dropped

    def on_batch_done(self, batch: Batch, now: float, measured_ms: float) -> None:
        self._in_flight -= 1

    def next_wakeup(self, now: float) -> float | None:
        return None

    def pending(self) -> int:
        return len(self._heap)
