"""A max-batch-size + max-queue-delay batcher, as in Triton's dynamic batcher and Ray Serve's
`@serve.batch` (an extra baseline: what most deployments run today).

Requests wait in one FIFO queue. When the worker is free, a batch of up to `max_batch_size`
runs as soon as the queue holds that many, or when the oldest request has waited
`max_queue_delay_ms` (Triton's `max_queue_delay_microseconds`, Ray Serve's
`batch_wait_timeout_s`); the timer is asked for through `next_wakeup`. It knows nothing about
latency or deadlines; `drop_expired=True` discards requests already past their deadline
(Triton's queue policy with a timeout and REJECT).
"""

from __future__ import annotations

from kairos.orloj.policies.common import FifoQueue
from kairos.orloj.policy import Batch, ProfileSnapshot, Request


class TimeoutBatcher:
    name = "timeout"

    def __init__(
        self, max_batch_size: int = 16, max_queue_delay_ms: float = 10.0, drop_expired: bool = False
    ) -> None:
        if max_batch_size < 1 or max_queue_delay_ms < 0:
            raise ValueError("need max_batch_size >= 1 and max_queue_delay_ms >= 0")
        self.max_batch_size = max_batch_size
        self.max_queue_delay_ms = max_queue_delay_ms
        self.drop_expired = drop_expired
        self._queue = FifoQueue()
        self._in_flight = 0

    def on_arrival(self, request: Request, now: float) -> list[Request]:
        self._queue.append(request)
        return []

    def next_batch(self, now: float) -> tuple[Batch | None, list[Request]]:
        dropped: list[Request] = []
        if self._in_flight:
            return None, dropped
        if self.drop_expired:
            dropped = self._queue.drop_front(lambda r: r.deadline <= now)
        if not self._queue:
            return None, dropped
        full = len(self._queue) >= self.max_batch_size
        if not full and now < self._queue[0].release + self.max_queue_delay_ms:
            return None, dropped
        take = self._queue.take(self.max_batch_size)
        self._in_flight += 1
        return Batch(take), dropped

    def on_batch_done(self, batch: Batch, now: float, measured_ms: float) -> None:
        self._in_flight -= 1

    def next_wakeup(self, now: float) -> float | None:
        if self._in_flight or not self._queue or len(self._queue) >= self.max_batch_size:
            return None
        return self._queue[0].release + self.max_queue_delay_ms

    def on_profile(self, snapshot: ProfileSnapshot) -> None:
        return None

    def pending(self) -> int:
        return len(self._queue)
