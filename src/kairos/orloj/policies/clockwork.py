"""The Clockwork baseline: plan ahead with point estimates (spec section 4.1, [D + C]).

Mechanisms, checked against Clockwork's public `infer5` scheduler (the MPI-SWS code as
mirrored in malixian/clockwork, `src/clockwork/controller/infer5/infer5_scheduler.{h,cpp}`,
`controller/worker_tracker.h`, `sliding_window.h`, and the worker's `task.cpp`):

* one FIFO queue per supported batch size, every request in all of them;
* each request is scheduled against an "exec deadline" `buffer` (5 ms) before its SLO, never
  less than `schedule_ahead + buffer` after its arrival (`RequestImpl::set_slo`);
* the latency estimate of a batch size is the 99th percentile of its last 10 measured batch
  latencies, linearly interpolated between the two largest (`SlidingWindow::get_percentile`:
  0.91 x the largest + 0.09 x the next), initialised from the offline profile as g_b at the
  mean solo latency [P: Clockwork profiles each compiled batch size once at load];
* the worker's expected free time is Clockwork's `WorkerTracker::available()`: the last
  completion (or the submit time of work sent to an idle worker) plus the estimates of every
  outstanding action, at least `now + future` (1 ms); when the running action is more than
  `lag` (10 ms) past its estimate, it is assumed to finish `lag` ago;
* before choosing, each queue drops from its front the requests whose exec deadline is
  earlier than `free_at + estimate(bs)`; a request that has left every queue is timed out;
* "strategies" (one per non-empty queue) are ordered by front exec deadline - estimate(bs),
  ties to the smaller batch size; the first one asks for a batch of the largest size whose
  queue (and every smaller one) holds enough requests, and must not be smaller than the
  strategy's own size, else the next strategies are tried with a smaller size limit; after a
  batch is taken every queue skips past its last request (FIFO catch-up, which drops what it
  skips);
* it schedules ahead: a batch is chosen as soon as the worker's expected free time is less
  than `schedule_ahead_ms` away, and carries an action window `earliest = now`,
  `latest = max(now + future + latest_delta, free_at + latest_delta)`; the worker rejects an
  action it cannot start by `latest` (`ExecTask::run`: "could not start in time"), failing
  all its requests. When a batch overruns its estimate by more than the window, the action
  queued behind it expires: the source of the paper's ~0.5 finish rate on dynamic DNNs.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from kairos.orloj.batchdist import BatchLatencyModel
from kairos.orloj.policies.common import DEFAULT_BATCH_SIZES, batch_sizes, pooled_mean
from kairos.orloj.policy import Batch, ProfileSnapshot, Request


@dataclass
class Action:
    """One infer action as Clockwork planned it and as the worker carried it out (the trace
    `ClockworkPolicy(trace=True)` keeps): planned at `decided` for a worker expected free at
    `expected_start`, `estimate` long, startable until `latest`; `done` is when the worker
    reported back, `measured` its run time (NaN when it was rejected)."""

    decided: float
    batch_size: int
    estimate: float
    expected_start: float
    latest: float
    done: float = math.nan
    measured: float = math.nan
    rejected: bool = False


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
        buffer_ms: float = 5.0,
        lag_ms: float = 10.0,
        initial_estimates: Mapping[int, float] | None = None,
        trace: bool = False,
    ) -> None:
        self.model = model
        self.sizes = batch_sizes(sizes)
        self.percentile = percentile
        self.schedule_ahead_ms = schedule_ahead_ms
        self.latest_delta_ms = latest_delta_ms
        self.future_ms = future_ms
        self.buffer_ms = buffer_ms  # Clockwork aims this much before the SLO (its `buffer`)
        self.lag_ms = lag_ms  # an action this late is assumed done (`WorkerTracker::lag`)
        self.estimates: dict[int, float] = dict(initial_estimates or {})
        self._measured: set[int] = set()
        self._windows = {bs: deque[float](maxlen=window) for bs in self.sizes}
        self._queues = [deque[Request]() for _ in self.sizes]
        self._count = [0] * len(self.sizes)  # live requests per queue
        self._where: dict[int, int] = {}  # request id -> bitmask of queues still holding it
        self._seq: dict[int, int] = {}
        self._next_seq = 0
        self._exec_deadline: dict[int, float] = {}  # request id -> the deadline it aims for
        # submitted actions not yet reported back, in submission order: (batch, estimate)
        self._outstanding: deque[tuple[Batch, float]] = deque()
        self._work_begin = -math.inf  # `WorkerTracker::work_begin`
        self._stalled_at: float | None = None
        self.actions: list[Action] | None = [] if trace else None  # the action trace
        self._action_of: dict[int, Action] = {}  # id(batch) -> its traced action

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
        """The worker's expected free time (`WorkerTracker::available`): when the oldest
        outstanding action began (the last completion, or its submission to an idle worker)
        plus every outstanding estimate, at least `now + future`; an action more than `lag`
        past its estimate is taken to have begun `lag` + its estimate ago."""
        begin = self._work_begin
        if self._outstanding:
            front = self._outstanding[0][1]
            if begin + front + self.lag_ms < now:  # "mysteriously not completed"
                begin = now - self.lag_ms - front
        total = sum(est for _, est in self._outstanding)
        return max(begin + total, now + self.future_ms)

    def exec_deadline(self, r: Request) -> float:
        """The deadline Clockwork schedules for (`RequestImpl::set_slo`): `buffer` before the
        SLO, but at least `schedule_ahead + buffer` after the arrival."""
        slo = r.deadline - r.release
        return r.release + max(slo - self.buffer_ms, self.schedule_ahead_ms + self.buffer_ms)

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
            del self._exec_deadline[r.request_id]
            dropped.append(r)

    def _take(self, r: Request) -> None:
        mask = self._where.pop(r.request_id)
        del self._seq[r.request_id]
        del self._exec_deadline[r.request_id]
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
        self._exec_deadline[request.request_id] = self.exec_deadline(request)
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
            while (r := self._front(j)) is not None and self._exec_deadline[r.request_id] < done_by:
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
                (self._exec_deadline[r.request_id] - self.estimate(bs), bs)
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
                if not self._outstanding:  # `WorkerTracker::add` to an idle worker
                    self._work_begin = now
                self._outstanding.append((batch, est))
                if self.actions is not None:
                    action = Action(now, len(requests), est, free_at, latest)
                    self.actions.append(action)
                    self._action_of[id(batch)] = action
                self._stalled_at = None
                return batch, dropped
            limit = bs - 1
        self._stalled_at = now if self._where else None
        return None, dropped

    def on_batch_done(self, batch: Batch, now: float, measured_ms: float) -> None:
        ok = math.isfinite(measured_ms)  # NaN: the worker rejected the action
        if (action := self._action_of.pop(id(batch), None)) is not None:
            action.done, action.measured, action.rejected = now, measured_ms, not ok
        for k, (b, est) in enumerate(self._outstanding):  # `WorkerTracker::update`
            if b is batch:
                if k == 0:
                    self._work_begin = now
                elif ok:  # done, but not known when: its estimate has passed
                    self._work_begin += est
                del self._outstanding[k]
                break
        if ok:
            bs = batch.size
            window = self._windows[bs]
            window.append(measured_ms)
            self._measured.add(bs)
            # `SlidingWindow::get_percentile`: linear between the ranks around p (n - 1)
            self.estimates[bs] = float(np.percentile(window, self.percentile, method="linear"))

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
            self._exec_deadline[r.request_id] - self.estimate(bs)
            for j, bs in enumerate(self.sizes)
            if (r := self._front(j)) is not None
        ]
        t = float(np.nextafter(min(expiries), math.inf)) if expiries else math.inf
        return t if now < t < math.inf else None

    def pending(self) -> int:
        return len(self._where)
