"""The Clipper baseline: react to measured latency with AIMD on the batch size (spec 4.1).

Clipper has no deadline-aware admission: one FIFO queue, and a batch is up to the current
maximum batch size from its head (any size, no waiting for a fuller batch). After each batch
the maximum grows by one if the batch's measured latency was within the SLO and shrinks to 90%
(rounded down, at least 1) otherwise; it starts at 1 and is capped at 16 for parity with the
other systems' batch sizes. Requests that finish late still took worker time and count as
failures. `drop_expired=True` discards requests already past their deadline when a batch is
formed, a more generous variant than the paper's. `sizes` restricts batches to a fixed set
(the largest member not above the queue length and the current maximum), as a model compiled
for Clockwork's sizes would (issue 19's comparison at equal batch-size granularity).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from kairos.orloj.policies.common import FifoQueue, batch_sizes, largest_size
from kairos.orloj.policy import Batch, ProfileSnapshot, Request


class ClipperPolicy:
    def __init__(
        self,
        slo_ms: float,
        *,
        cap: int = 16,
        increase: int = 1,
        decrease: float = 0.9,
        drop_expired: bool = False,
        sizes: Sequence[int] | None = None,
    ) -> None:
        if cap < 1 or increase < 1 or not 0 < decrease < 1:
            raise ValueError("need cap >= 1, increase >= 1 and 0 < decrease < 1")
        self.sizes = batch_sizes(sizes) if sizes is not None else None
        self.name = "clipper-drop" if drop_expired else "clipper"
        self.slo_ms = slo_ms
        self.cap = cap
        self.increase = increase
        self.decrease = decrease
        self.drop_expired = drop_expired
        self.max_batch = 1
        self.history: list[int] = [1]  # max batch size after each batch
        self._queue = FifoQueue()
        self._in_flight = 0

    def adapt(self, measured_ms: float) -> int:
        """One AIMD step from a batch's measured latency; returns the new maximum."""
        if measured_ms <= self.slo_ms:
            self.max_batch = min(self.cap, self.max_batch + self.increase)
        else:
            self.max_batch = max(1, math.floor(self.max_batch * self.decrease))
        self.history.append(self.max_batch)
        return self.max_batch

    def on_arrival(self, request: Request, now: float) -> list[Request]:
        self._queue.append(request)
        return []

    def next_batch(self, now: float) -> tuple[Batch | None, list[Request]]:
        dropped: list[Request] = []
        if self._in_flight:
            return None, dropped
        if self.drop_expired:
            dropped = self._queue.drop_all(lambda r: r.deadline <= now)
        if not self._queue:
            return None, dropped
        n = min(len(self._queue), self.max_batch)
        if self.sizes is not None:
            n = largest_size(self.sizes, n)
        take = self._queue.take(n)
        self._in_flight += 1
        return Batch(take, meta={"max_batch": float(self.max_batch)}), dropped

    def on_batch_done(self, batch: Batch, now: float, measured_ms: float) -> None:
        self._in_flight -= 1
        self.adapt(measured_ms)

    def next_wakeup(self, now: float) -> float | None:
        return None

    def on_profile(self, snapshot: ProfileSnapshot) -> None:
        return None

    def pending(self) -> int:
        return len(self._queue)
