"""A discrete-event simulator of one Orloj worker, on `kairos.sim.EventLoop` (spec 6.3).

It drives any `BatchPolicy` with a recorded request sequence. Events: ARRIVAL, BATCH_DONE,
TIMER (a wake-up the policy asked for) and PROFILE_SNAPSHOT. What it simulates:

* the worker runs one batch at a time, non-preemptively; a batch of k whose longest member has
  solo latency l takes g_k(l) (the batch model of `batchdist`), optionally times lognormal
  noise. Solo latencies are hidden ground truth: only the worker reads them;
* the policy is asked for a batch whenever the worker is idle, and whenever a wake-up it asked
  for comes due, busy or not. A batch returned while the worker is busy waits in the worker's
  FIFO queue: that is how schedule-ahead policies (Clockwork) submit actions early. A batch
  with `latest_start` that cannot start by then is rejected by the worker and all its
  requests fail (reported to the policy with `measured_ms = nan`, `meta["rejected"] = 1`);
* the profiler samples finished requests (rate 0.1, plus every batch of one, a free solo
  measurement), re-runs them alone off the critical path (their solo latency is known after
  that long) and hands what it has to the policy every second; the policy is warm-started
  with an offline profile (1000 solo draws per application) before the first arrival;
* `charge_overhead` delays each batch by the policy's measured decision time (x a factor, to
  emulate a faster implementation); without it runs are fully deterministic per seed.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from kairos.orloj.batchdist import BatchLatencyModel
from kairos.orloj.metrics import summarize
from kairos.orloj.policy import Batch, BatchPolicy, Outcome, ProfileSnapshot, Request
from kairos.sim import EventHandle, EventLoop, RngStreams

PROFILE, BATCH_DONE, ARRIVAL, TIMER = 0, 1, 2, 3  # priorities of simultaneous events


class PolicyError(RuntimeError):
    """The policy broke the contract: ended a request twice, or batched a finished one."""


class SimConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    batch_model: BatchLatencyModel = BatchLatencyModel()
    noise_sigma: float = Field(0.0, ge=0)  # lognormal sigma of batch-time noise
    profile_sample_rate: float = Field(0.1, ge=0, le=1)
    profile_period_ms: float = Field(1000.0, gt=0)
    charge_overhead: bool = False
    overhead_factor: float = Field(1.0, ge=0)
    seed: int = Field(0, ge=0)
    max_time_ms: float | None = Field(None, gt=0)


@dataclass(frozen=True)
class BatchRecord:
    decided: float
    start: float
    end: float
    ids: tuple[int, ...]  # request ids, in batch order
    rejected: bool = False

    @property
    def size(self) -> int:
        return len(self.ids)


@dataclass
class SimResult:
    policy: str
    requests: list[Request]
    batches: list[BatchRecord]
    decide_s: list[float]  # CPU seconds of each `next_batch` call (scheduler iterations)
    arrival_s: list[float]  # CPU seconds of each `on_arrival` call
    stranded: int  # requests the policy never released (ended as timed out at the end)
    end_time: float
    extra: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        return summarize(self)


class Simulator:
    def __init__(
        self,
        policy: BatchPolicy,
        requests: Sequence[Request],
        config: SimConfig | None = None,
        offline: Mapping[str, Sequence[float]] | None = None,
    ) -> None:
        self.policy = policy
        self.requests = sorted(requests, key=lambda r: r.release)
        self.config = config or SimConfig()
        self.offline = offline
        first = self.requests[0].release if self.requests else 0.0
        self.loop = EventLoop(start=min(0.0, first))
        rng = RngStreams(self.config.seed)
        self._noise = rng.stream("batch-noise")
        self._sampler = rng.stream("profiler")
        self._next_arrival = 0
        self._running: tuple[Batch, float] | None = None  # (batch, start)
        self._queue: deque[tuple[Batch, float, float]] = deque()  # (batch, decided, overhead)
        self._timer: EventHandle | None = None
        self._dispatched: set[int] = set()
        self._profiled: list[tuple[float, str, float]] = []  # (ready at, app, solo ms)
        self.batches: list[BatchRecord] = []
        self.decide_s: list[float] = []
        self.arrival_s: list[float] = []
        self._ended = 0

    # -- bookkeeping -----------------------------------------------------------------------
    def _end(self, r: Request, outcome: Outcome, t: float) -> None:
        if r.outcome is not None:
            raise PolicyError(f"{self.policy.name}: request {r.request_id} ended twice")
        r.outcome, r.finish = outcome, t
        self._ended += 1

    def _idle(self) -> bool:
        return self._running is None and not self._queue

    # -- policy calls ----------------------------------------------------------------------
    def _decide(self) -> tuple[Batch, float] | None:
        now = self.loop.now
        t0 = time.perf_counter()
        batch, dropped = self.policy.next_batch(now)
        cpu = time.perf_counter() - t0
        self.decide_s.append(cpu)
        for r in dropped:
            self._end(r, Outcome.TIMED_OUT, now)
        if batch is None:
            return None
        if not batch.requests:
            raise PolicyError(f"{self.policy.name}: returned an empty batch")
        for r in batch.requests:
            if r.outcome is not None or r.request_id in self._dispatched:
                raise PolicyError(f"{self.policy.name}: request {r.request_id} batched twice")
            self._dispatched.add(r.request_id)
        overhead = cpu * 1e3 * self.config.overhead_factor if self.config.charge_overhead else 0.0
        return batch, overhead

    def _after_event(self, forced: bool = False) -> None:
        now = self.loop.now
        wake = self.policy.next_wakeup(now)
        due = forced or (wake is not None and wake <= now)
        while self._idle() or due:
            decided = self._decide()
            if decided is None:
                break
            self._queue.append((decided[0], now, decided[1]))
            self._start_next()
            wake = self.policy.next_wakeup(now)
            due = wake is not None and wake <= now
        self._arm(self.policy.next_wakeup(now))

    def _arm(self, wake: float | None) -> None:
        if self._timer is not None and self._timer.pending:
            if wake is not None and self._timer.time == wake:
                return
            self.loop.cancel(self._timer)
        self._timer = None
        if wake is not None and wake > self.loop.now:
            self._timer = self.loop.call_at(wake, self._on_timer, priority=TIMER)

    # -- the worker ------------------------------------------------------------------------
    def _start_next(self) -> None:
        now = self.loop.now
        while self._running is None and self._queue:
            batch, decided, overhead = self._queue.popleft()
            start = max(now, decided + overhead)
            if batch.latest_start is not None and start > batch.latest_start:
                for r in batch.requests:
                    self._end(r, Outcome.TIMED_OUT, now)
                batch.meta["rejected"] = 1.0
                ids = tuple(r.request_id for r in batch.requests)
                self.batches.append(BatchRecord(decided, now, now, ids, rejected=True))
                self.policy.on_batch_done(batch, now, math.nan)
                continue
            longest = max(float(r.solo_ms or 0.0) for r in batch.requests)
            duration = float(self.config.batch_model.g(batch.size, longest))
            if self.config.noise_sigma > 0:
                duration *= float(np.exp(self.config.noise_sigma * self._noise.standard_normal()))
            self._running = (batch, start)
            ids = tuple(r.request_id for r in batch.requests)
            self.batches.append(BatchRecord(decided, start, start + duration, ids))
            self.loop.call_at(start + duration, self._on_done, priority=BATCH_DONE)

    def _on_done(self) -> None:
        assert self._running is not None
        batch, start = self._running
        now = self.loop.now
        self._running = None
        rate = self.config.profile_sample_rate
        for r in batch.requests:
            r.batch_size = batch.size
            self._end(r, Outcome.OK if now <= r.deadline else Outcome.LATE, now)
            if batch.size == 1 or self._sampler.random() < rate:
                solo = float(r.solo_ms or 0.0)
                self._profiled.append((now + solo, r.app, solo))
        self.policy.on_batch_done(batch, now, now - start)
        self._start_next()
        self._after_event()

    # -- arrivals, timers, profiles ---------------------------------------------------------
    def _on_arrival(self) -> None:
        r = self.requests[self._next_arrival]
        self._next_arrival += 1
        if self._next_arrival < len(self.requests):
            nxt = self.requests[self._next_arrival]
            self.loop.call_at(nxt.release, self._on_arrival, priority=ARRIVAL)
        t0 = time.perf_counter()
        rejected = self.policy.on_arrival(r, self.loop.now)
        self.arrival_s.append(time.perf_counter() - t0)
        for x in rejected:
            self._end(x, Outcome.TIMED_OUT, self.loop.now)
        self._after_event()

    def _on_timer(self) -> None:
        self._timer = None
        self._after_event(forced=True)

    def _on_profile(self) -> None:
        now = self.loop.now
        ready = [p for p in self._profiled if p[0] <= now]
        if ready:
            self._profiled = [p for p in self._profiled if p[0] > now]
            samples: dict[str, list[float]] = {}
            for _, app, solo in ready:
                samples.setdefault(app, []).append(solo)
            self.policy.on_profile(ProfileSnapshot(samples))
        busy = self._running is not None or bool(self._queue)
        timer = self._timer is not None and self._timer.pending
        if self._next_arrival < len(self.requests) or busy or timer:
            self.loop.call_after(self.config.profile_period_ms, self._on_profile, priority=PROFILE)
        if ready:
            self._after_event()

    def run(self) -> SimResult:
        if self.offline:
            self.policy.on_profile(ProfileSnapshot({a: list(v) for a, v in self.offline.items()}))
        if self.requests:
            first = self.requests[0].release
            self.loop.call_at(first, self._on_arrival, priority=ARRIVAL)
            self.loop.call_at(
                first + self.config.profile_period_ms, self._on_profile, priority=PROFILE
            )
        self.loop.run(until=self.config.max_time_ms)
        stranded = [r for r in self.requests if r.outcome is None]
        for r in stranded:
            self._end(r, Outcome.TIMED_OUT, self.loop.now)
        return SimResult(
            policy=self.policy.name,
            requests=self.requests,
            batches=self.batches,
            decide_s=self.decide_s,
            arrival_s=self.arrival_s,
            stranded=len(stranded),
            end_time=self.loop.now,
        )


def simulate(
    policy: BatchPolicy,
    requests: Sequence[Request],
    config: SimConfig | None = None,
    offline: Mapping[str, Sequence[float]] | None = None,
) -> SimResult:
    """Run `policy` over `requests` (fresh objects: outcomes are written into them)."""
    return Simulator(policy, requests, config, offline).run()
