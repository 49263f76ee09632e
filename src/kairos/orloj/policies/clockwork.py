"""The Clockwork baseline: plan ahead with point estimates (spec section 4.1, [D + C]).

Mechanisms, after Clockwork's `infer5` scheduler:

* one FIFO queue per supported batch size, every request in all of them;
* the latency estimate of a batch size is the 99th percentile of its last 10 measured batch
  latencies (effectively their maximum), initialised from the offline profile as g_b at the
  mean solo latency;
* before choosing, each queue drops from its front the requests whose deadline is earlier than
  `gpu_free_at + estimate(bs)`; a request that has left every queue is timed out;
* "strategies" (one per non-empty queue) are ordered by front deadline - estimate(bs), ties to
  the smaller batch size; the first one asks for a batch of the largest size whose queue (and
  every smaller one) holds enough requests, and must not be smaller than the strategy's own
  size, else the next strategies are tried with a smaller size limit; after a batch is taken
  every queue skips past its last request (FIFO catch-up, which drops what it skips);
* it schedules ahead: a batch is chosen as soon as the worker's expected free time is less
  than `schedule_ahead_ms` away, and carries an action window
  `latest = max(now + future + latest_delta, expected_start + latest_delta)`; the worker
  rejects an action it cannot start by then, failing all its requests. When a batch overruns
  its estimate, the action queued behind it expires: the source of the baseline's ~0.5 finish
  rate on dynamic DNNs.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping, Sequence

import numpy as np

from kairos.orloj.batchdist import BatchLatencyModel
from kairos.orloj.policies.common import DEFAULT_BATCH_SIZES, batch_sizes, pooled_mean
from kairos.orloj.policy import Batch, ProfileSnapshot, Request


class ClockworkPolicy:
    name = "clockwork"

    def __init__(
        self,
        model: BatchLatencyModel,
        sizes: Sequence[int] = DEFAULT_BATCH_SIZES,
        *,
        window: int = 10,
        percentile: float = 99.0,
        schedule_ahead_ms: float = 10.0,
        latest_delta_ms: float = 10.0,
        future_ms: float = 1.0,
        buffer_ms: float = 0.0,
        initial_estimates: Mapping[int, float] | None = None,
    ) -> None:
        self.model = model
        self.sizes = batch_sizes(sizes)
        self.percentile = percentile
        self.schedule_ahead_ms = schedule_ahead_ms
        self.latest_delta_ms = latest_delta_ms
        self.future_ms = future_ms
        self.buffer_ms = buffer_ms  # Clockwork aims this much before the SLO (its `buffer`)
        self.estimates: dict[int, float] = dict(initial_estimates or {})
        self._measured: set[int] = set()
        self._windows = {bs: deque[float](maxlen=window) for bs in self.sizes}
        self._queues = [deque[Request]() for _ in self.sizes]
        self._count = [0] * len(self.sizes)  # live requests per queue
        self._where: dict[int, int] = {}  # request id -> bitmask of queues still holding it
        self._seq: dict[int, int] = {}
        self._next_seq = 0
        # submitted actions not yet reported back: (batch, estimate, submitted at)
        self._outstanding: deque[tuple[Batch, float, float]] = deque()
        self._anchor = -math.inf  # when the worker last reported a finished/rejected action
        self._stalled_at: float | None = None

    # -- estimates -------------------------------------------------------------------------
    def estimate(self, bs: int) -> float:
        if bs in self.estimates:
            return self.estimates[bs]
        return float(self.model.g(bs, 0.0))  # nothing known yet: the fixed cost only

    def on_profile(self, snapshot: ProfileSnapshot) -> None:
        mean = pooled_mean(snapshot)
        if mean is None:
            return
        for bs in self.sizes:  # offline profile: g_b at the mean, until measurements exist
            if bs not in self._measured and bs not in self.estimates:
                self.estimates[bs] = float(self.model.g(bs, mean))

    def free_at(self, now: float) -> float:
        """The worker's expected free time: actual last completion plus the estimates of the
        actions submitted since (each starts no earlier than it was submitted)."""
        t = self._anchor
        for _, est, submitted in self._outstanding:
            t = max(t, submitted) + est
        return max(now, t)

    # -- queues ----------------------------------------------------------------------------
    def _live(self, r: Request, j: int) -> bool:
        return bool(self._where.get(r.request_id, 0) >> j & 1)

    def _leave(self, r: Request, j: int, dropped: list[Request]) -> None:
        mask = self._where[r.request_id] & ~(1 << j)
        self._count[j] -= 1
        if mask:
            self._where[r.request_id] = mask
        else:
            del self._where[r.request_id]
            del self._seq[r.request_id]
            dropped.append(r)

    def _take(self, r: Request) -> None:
        mask = self._where.pop(r.request_id)
        del self._seq[r.request_id]
        for j in range(len(self.sizes)):
            if mask >> j & 1:
                self._count[j] -= 1

    def _front(self, j: int) -> Request | None:
        q = self._queues[j]
        while q and not self._live(q[0], j):
            q.popleft()
        return q[0] if q else None

    def on_arrival(self, request: Request, now: float) -> list[Request]:
        self._seq[request.request_id] = self._next_seq
        self._next_seq += 1
        self._where[request.request_id] = (1 << len(self.sizes)) - 1
        for j, q in enumerate(self._queues):
            q.append(request)
            self._count[j] += 1
        return []

    def _try_dequeue(
        self, free_at: float, min_bs: int, dropped: list[Request]
    ) -> list[Request] | None:
        for j, bs in enumerate(self.sizes):
            done_by = free_at + self.estimate(bs)
            while (r := self._front(j)) is not None and r.deadline - self.buffer_ms < done_by:
                self._queues[j].popleft()
                self._leave(r, j, dropped)
        i = 0
        while i < len(self.sizes) - 1 and self._count[i + 1] >= self.sizes[i + 1]:
            i += 1
        bs = self.sizes[i]
        if bs < min_bs or self._count[i] < bs:
            return None
        batch: list[Request] = []
        while len(batch) < bs:
            r = self._queues[i].popleft()
            if self._live(r, i):
                batch.append(r)
        last = self._seq[batch[-1].request_id]
        for r in batch:
            self._take(r)
        for j in range(len(self.sizes)):  # catch up: every queue skips past the batch
            while (r := self._front(j)) is not None and self._seq[r.request_id] <= last:
                self._queues[j].popleft()
                self._leave(r, j, dropped)
        return batch

    # -- decisions -------------------------------------------------------------------------
    def next_batch(self, now: float) -> tuple[Batch | None, list[Request]]:
        dropped: list[Request] = []
        free_at = self.free_at(now)
        if not self._where or free_at >= now + self.schedule_ahead_ms:
            return None, dropped
        limit = self.sizes[-1]
        while True:
            strategies = [
                (r.deadline - self.buffer_ms - self.estimate(bs), bs)
                for j, bs in enumerate(self.sizes)
                if bs <= limit and (r := self._front(j)) is not None
            ]
            if not strategies:
                break
            _, bs = min(strategies)
            requests = self._try_dequeue(free_at, bs, dropped)
            if requests is not None:
                est = self.estimate(len(requests))
                latest = max(
                    now + self.future_ms + self.latest_delta_ms, free_at + self.latest_delta_ms
                )
                batch = Batch(requests, latest_start=latest, meta={"expected_start": free_at})
                self._outstanding.append((batch, est, now))
                self._stalled_at = None
                return batch, dropped
            limit = bs - 1
        self._stalled_at = now if self._where else None
        return None, dropped

    def on_batch_done(self, batch: Batch, now: float, measured_ms: float) -> None:
        for k, (b, _, _) in enumerate(self._outstanding):
            if b is batch:
                del self._outstanding[k]
                break
        self._anchor = now
        if math.isfinite(measured_ms):  # NaN: the worker rejected the action
            bs = batch.size
            window = self._windows[bs]
            window.append(measured_ms)
            self._measured.add(bs)
            self.estimates[bs] = float(np.percentile(window, self.percentile, method="higher"))

    def next_wakeup(self, now: float) -> float | None:
        if not self._where:
            return None
        t = self.free_at(now) - self.schedule_ahead_ms
        if t > now:
            return t
        if self._stalled_at != now:
            return now
        # nothing could be batched right now: wake when a queue front expires
        expiries = [
            r.deadline - self.buffer_ms - self.estimate(bs)
            for j, bs in enumerate(self.sizes)
            if (r := self._front(j)) is not None
        ]
        t = float(np.nextafter(min(expiries), math.inf)) if expiries else math.inf
        return t if now < t < math.inf else None

    def pending(self) -> int:
        return len(self._where)
