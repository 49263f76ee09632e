"""Small pieces the baselines share: the pooled mean of a profile, batch-size validation and
rounding down to a supported size, and the arrival-ordered queue of the one-batch-at-a-time
batchers (Clipper, timeout, Nexus)."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Sequence

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
    model compiled only for those sizes runs when `n` requests could go (issue 19's
    comparison at equal batch-size granularity)."""
    return max(s for s in sizes if s <= n)


class FifoQueue(deque[Request]):
    """Pending requests in arrival order; batches are taken from the front."""

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
