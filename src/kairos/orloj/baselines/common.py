"""Small pieces the baselines share: the pooled mean of a profile, batch-size validation, and
the arrival-ordered queue of the one-batch-at-a-time batchers (Clipper, timeout)."""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

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


class FifoQueue:
    """Pending requests in arrival order; batches are taken from the front."""

    def __init__(self) -> None:
        self.items: deque[Request] = deque()

    def __len__(self) -> int:
        return len(self.items)

    def drop_expired(self, now: float, *, head_only: bool) -> list[Request]:
        """Remove and return requests past their deadline: only those at the front
        (`head_only`, as a server that checks the next request does), or anywhere."""
        dropped: list[Request] = []
        if head_only:
            while self.items and self.items[0].deadline <= now:
                dropped.append(self.items.popleft())
        elif any(r.deadline <= now for r in self.items):
            dropped = [r for r in self.items if r.deadline <= now]
            self.items = deque(r for r in self.items if r.deadline > now)
        return dropped

    def take(self, n: int) -> list[Request]:
        """Up to `n` requests from the front."""
        return [self.items.popleft() for _ in range(min(n, len(self.items)))]
