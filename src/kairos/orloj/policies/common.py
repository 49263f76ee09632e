"""Small pieces the baselines share: the pooled mean of a profile, batch-size validation and
rounding down to a supported size, and the two queues of the one-batch-at-a-time baselines
(arrival order for Clipper, Nexus and the timeout batcher; deadline order for EDF)."""

from __future__ import annotations

import heapq
from collections import deque
from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np

from kairos.orloj.policy import ProfileSnapshot, Request

DEFAULT_BATCH_SIZES: tuple[int, ...] = (1, 2, 4, 8, 16)  # Clockwork's compiled batch sizes


def pooled_mean(snapshot: ProfileSnapshot) -> float | None:
    """Mean solo latency over every application's samples (None if the snapshot is empty).

    The point-estimate baselines plan with one number for the whole model: they do not know
    about applications, which is exactly what Orloj's per-application tracking adds."""
    values = [v for samples in snapshot.samples.values() for v in samples]
    return float(np.mean(values)) if values else None


def batch_sizes(sizes: Sequence[int]) -> tuple[int, ...]:
    """Sorted, distinct, positive batch sizes that include 1 (so any single request can run)."""
    out = tuple(sorted(set(int(s) for s in sizes)))
    if not out or out[0] != 1:
        raise ValueError(f"batch sizes must be positive and include 1, got {list(sizes)}")
    return out


def largest_size(sizes: Sequence[int], n: int) -> int:
    """The largest of `sizes` (validated by `batch_sizes`) not above `n` >= 1: the batch a
    model compiled only for those sizes runs when `n` requests could go (what compares
    baselines that batch any size with Clockwork at equal batch-size granularity)."""
    return max(s for s in sizes if s <= n)


class RequestQueue(Protocol):
    """Pending requests in the order a baseline serves them; batches come from the front."""

    def __len__(self) -> int: ...

    def append(self, request: Request) -> None: ...

    @property
    def front(self) -> Request: ...

    def drop_front(self, expired: Callable[[Request], bool]) -> list[Request]: ...

    def take(self, n: int) -> list[Request]: ...


class FifoQueue(deque[Request]):
    """Pending requests in arrival order; batches are taken from the front."""

    @property
    def front(self) -> Request:
        return self[0]

    def drop_front(self, expired: Callable[[Request], bool]) -> list[Request]:
        """Remove and return the expired requests at the front (a server that checks only
        the next request it would run)."""
        dropped: list[Request] = []
        while self and expired(self[0]):
            dropped.append(self.popleft())
        return dropped

    def drop_all(self, expired: Callable[[Request], bool]) -> list[Request]:
        """Remove and return the expired requests anywhere in the queue."""
        dropped = [r for r in self if expired(r)]
        if dropped:
            kept = [r for r in self if not expired(r)]
            self.clear()
            self.extend(kept)
        return dropped

    def take(self, n: int) -> list[Request]:
        """Up to `n` requests from the front."""
        return [self.popleft() for _ in range(min(n, len(self)))]


class DeadlineQueue:
    """Pending requests in deadline order (ties: the lower request id first)."""

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Request]] = []

    def __len__(self) -> int:
        return len(self._heap)

    def append(self, request: Request) -> None:
        heapq.heappush(self._heap, (request.deadline, request.request_id, request))

    @property
    def front(self) -> Request:
        return self._heap[0][2]

    def drop_front(self, expired: Callable[[Request], bool]) -> list[Request]:
        """Remove and return the expired requests at the front."""
        dropped: list[Request] = []
        while self._heap and expired(self._heap[0][2]):
            dropped.append(heapq.heappop(self._heap)[2])
        return dropped

    def take(self, n: int) -> list[Request]:
        """Up to `n` requests from the front."""
        return [heapq.heappop(self._heap)[2] for _ in range(min(n, len(self._heap)))]
