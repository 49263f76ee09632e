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

from kairos.orloj.policies.base import OneBatchPolicy
from kairos.orloj.policy import Request


class TimeoutBatcher(OneBatchPolicy):
    name = "timeout"

    def __init__(
        self, max_batch_size: int = 16, max_queue_delay_ms: float = 10.0, drop_expired: bool = False
    ) -> None:
        if max_batch_size < 1 or max_queue_delay_ms < 0:
            raise ValueError("need max_batch_size >= 1 and max_queue_delay_ms >= 0")
        super().__init__()
        self.max_batch_size = max_batch_size
        self.max_queue_delay_ms = max_queue_delay_ms
        self.drop_expired = drop_expired

    def drop(self, now: float) -> list[Request]:
        if not self.drop_expired:
            return []
        return self.queue.drop_front(lambda r: r.deadline <= now)

    def size(self, now: float) -> int:
        full = len(self.queue) >= self.max_batch_size
        if not full and now < self.queue.front.release + self.max_queue_delay_ms:
            return 0
        return self.max_batch_size

    def next_wakeup(self, now: float) -> float | None:
        if self.in_flight or not len(self.queue) or len(self.queue) >= self.max_batch_size:
            return None
        return self.queue.front.release + self.max_queue_delay_ms
