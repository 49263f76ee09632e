"""The base of the baselines that run one batch at a time from one queue (Clipper, Nexus, EDF,
the timeout batcher), as Ray Tune's schedulers build on its `FIFOScheduler`.

The base keeps the queue and whether a batch is out on the worker: arrivals join the queue;
while a batch is out no other is chosen; when the worker is free, the baseline's rule says
which requests to drop (`drop`) and how many to take from the front (`size`; 0: wait), and
the base takes them. A baseline writes only that rule, and what it learns from a profile or
a finished batch. Clockwork (several actions out at once, a queue per batch size) and Orloj
(score-ranked queues) keep their own bookkeeping.
"""

from __future__ import annotations

from kairos.orloj.policies.common import FifoQueue, RequestQueue
from kairos.orloj.policy import Batch, ProfileSnapshot, Request


class OneBatchPolicy:
    name: str

    def __init__(self, queue: RequestQueue | None = None) -> None:
        self.queue: RequestQueue = FifoQueue() if queue is None else queue
        self.in_flight = 0  # batches handed out, not yet back

    # -- the batch rule -------------------------------------------------------------------------
    def drop(self, now: float) -> list[Request]:
        """Requests to time out before choosing (default: none)."""
        return []

    def size(self, now: float) -> int:
        """How many requests to take from the non-empty queue's front now; 0 to wait."""
        raise NotImplementedError

    def meta(self) -> dict[str, float]:
        """What the batch carries for diagnostics."""
        return {}

    # -- BatchPolicy ----------------------------------------------------------------------------
    def on_arrival(self, request: Request, now: float) -> list[Request]:
        self.queue.append(request)
        return []

    def next_batch(self, now: float) -> tuple[Batch | None, list[Request]]:
        if self.in_flight:
            return None, []
        dropped = self.drop(now)
        n = self.size(now) if len(self.queue) else 0
        if n == 0:
            return None, dropped
        batch = Batch(self.queue.take(n), meta=self.meta())
        self.in_flight += 1
        return batch, dropped

    def on_batch_done(self, batch: Batch, now: float, measured_ms: float) -> None:
        self.in_flight -= 1

    def next_wakeup(self, now: float) -> float | None:
        return None

    def on_profile(self, snapshot: ProfileSnapshot) -> None:
        return None

    def pending(self) -> int:
        return len(self.queue)
