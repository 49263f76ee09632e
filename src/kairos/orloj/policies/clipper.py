"""The Clipper baseline: react to measured latency with AIMD on the batch size (spec 4.1).

Clipper has no deadline-aware admission: one FIFO queue, and a batch is up to the current
maximum batch size from its head (any size, no waiting for a fuller batch). After each batch
the maximum grows by one if the batch's measured latency was within the SLO and shrinks to 90%
(rounded down, at least 1) otherwise; it starts at 1 and is capped at 16 for parity with the
other systems' batch sizes. Requests that finish late still took worker time and count as
failures. `drop_expired=True` discards requests already past their deadline when a batch is
formed, a more generous variant than the paper's. `sizes` restricts batches to a fixed set
(the largest member not above the queue length and the current maximum), as a model compiled
for Clockwork's sizes would: the comparison with Clockwork at equal batch-size granularity.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from kairos.orloj.policies.base import OneBatchPolicy
from kairos.orloj.policies.common import FifoQueue, batch_sizes, largest_size
from kairos.orloj.policy import Batch, Request


class ClipperPolicy(OneBatchPolicy):
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
        self._fifo = FifoQueue()  # drops anywhere in it, not only at the front
        super().__init__(self._fifo)
        self.sizes = batch_sizes(sizes) if sizes is not None else None
        self.name = "clipper-drop" if drop_expired else "clipper"
        self.slo_ms = slo_ms
        self.cap = cap
        self.increase = increase
        self.decrease = decrease
        self.drop_expired = drop_expired
        self.max_batch = 1
        self.history: list[int] = [1]  # max batch size after each batch

    def adapt(self, measured_ms: float) -> int:
        """One AIMD step from a batch's measured latency; returns the new maximum."""
        if measured_ms <= self.slo_ms:
            self.max_batch = min(self.cap, self.max_batch + self.increase)
        else:
            self.max_batch = max(1, math.floor(self.max_batch * self.decrease))
        self.history.append(self.max_batch)
        return self.max_batch

    def drop(self, now: float) -> list[Request]:
        if not self.drop_expired:
            return []
        return self._fifo.drop_all(lambda r: r.deadline <= now)

    def size(self, now: float) -> int:
        n = min(len(self.queue), self.max_batch)
        return largest_size(self.sizes, n) if self.sizes is not None else n

    def meta(self) -> dict[str, float]:
        return {"max_batch": float(self.max_batch)}

    def on_batch_done(self, batch: Batch, now: float, measured_ms: float) -> None:
        super().on_batch_done(batch, now, measured_ms)
        self.adapt(measured_ms)
