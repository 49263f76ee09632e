"""The online profiler: solo latencies of finished requests, handed to the policy every second.

Orloj needs *solo* latency distributions per application, and those cannot be read off batched
executions (a batch takes as long as its slowest member). So, as in the paper (§4.3.2, spec
3.1), a sample of finished requests is re-run alone off the critical path: the driver hands
one re-run to the worker only while it is idle (nothing running, nothing pending), so
profiling never delays a batch the policy wants to start. A request that ran in a batch of one
is a free solo measurement and is always kept. Every `period_ms` the samples gathered since the
last snapshot go to the policy's `on_profile` (the driver owns that timer).

Under sustained load the worker is rarely idle, so re-runs wait in a bounded backlog (oldest
dropped first) and only the free measurements flow: the counters in `stats` say how much was
profiled and how much was skipped.
"""

from __future__ import annotations

import math
from collections import defaultdict, deque
from dataclasses import dataclass

import numpy as np

from kairos.orloj.policy import Batch, ProfileSnapshot, Request


@dataclass
class ProfilerStats:
    sampled: int = 0  # finished requests picked for a re-run
    reruns: int = 0  # re-runs measured
    free: int = 0  # batch-of-one measurements kept
    skipped: int = 0  # sampled requests dropped from a full backlog
    snapshots: int = 0  # snapshots handed to the policy
    samples: int = 0  # solo latencies handed to the policy in all


class Profiler:
    def __init__(
        self,
        sample_rate: float = 0.1,
        period_ms: float = 1000.0,
        max_backlog: int = 32,
        seed: int = 0,
        rng: np.random.Generator | None = None,
    ) -> None:
        if not 0.0 <= sample_rate <= 1.0 or period_ms <= 0 or max_backlog < 1:
            raise ValueError("need 0 <= sample_rate <= 1, period_ms > 0 and max_backlog >= 1")
        self.sample_rate = sample_rate
        self.period_ms = period_ms
        self._rng = rng if rng is not None else np.random.default_rng(seed)
        self._backlog: deque[Request] = deque()
        self._max_backlog = max_backlog
        self._fresh: dict[str, list[float]] = defaultdict(list)
        self.stats = ProfilerStats()

    def observe(self, batch: Batch, measured_ms: float, solo_ms: float | None = None) -> None:
        """A batch finished: keep a batch of one's time (`solo_ms` where the worker knows it
        exactly), sample the members of bigger ones."""
        if not math.isfinite(measured_ms):
            return
        if batch.size == 1:
            self._fresh[batch.requests[0].app].append(measured_ms if solo_ms is None else solo_ms)
            self.stats.free += 1
            return
        for r in batch.requests:
            if self.sample_rate > 0 and self._rng.random() < self.sample_rate:
                self.stats.sampled += 1
                if len(self._backlog) >= self._max_backlog:
                    self._backlog.popleft()
                    self.stats.skipped += 1
                self._backlog.append(r)

    def next_job(self) -> Request | None:
        """The next request to re-run alone (newest inputs first: they reflect today's mix)."""
        return self._backlog.pop() if self._backlog else None

    @property
    def backlog(self) -> int:
        return len(self._backlog)

    @property
    def pending(self) -> bool:
        """Measurements not yet handed over, or re-runs not yet made."""
        return bool(self._fresh) or bool(self._backlog)

    def record(self, request: Request, solo_ms: float) -> None:
        """The measured solo latency of a re-run."""
        if math.isfinite(solo_ms) and solo_ms >= 0:
            self._fresh[request.app].append(solo_ms)
            self.stats.reruns += 1

    def snapshot(self) -> ProfileSnapshot | None:
        """What was measured since the last snapshot (None if nothing was)."""
        if not self._fresh:
            return None
        samples = {app: list(v) for app, v in self._fresh.items()}
        self._fresh.clear()
        self.stats.snapshots += 1
        self.stats.samples += sum(len(v) for v in samples.values())
        return ProfileSnapshot(samples)
