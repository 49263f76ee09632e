"""The Orloj simulator: the one driver (`kairos.orloj.driver`) on simulated time with a
simulated worker (spec 6.3).

It drives any `BatchPolicy` with a recorded request sequence. What the simulated worker does:

* it runs one batch at a time, non-preemptively; a batch of k whose longest member has solo
  latency l takes g_k(l) (the batch model of `batchdist`), optionally times a recorded speed
  over time and lognormal noise.
  Solo latencies are hidden ground truth: only the worker reads them. A batch with
  `latest_start` that cannot start by then is rejected and all its requests fail;
* profiler re-runs (a sample of finished requests, rate 0.1, plus every batch of one, a free
  solo measurement) run beside the worker, off the critical path, and take their solo latency
  (`shadow_profiling=False`: on the worker while it is idle, as the real runtime runs them);
  the policy is warm-started with an offline profile (1000 solo draws per application) and gets
  what was measured every second;
* with `charge_overhead` each batch is delayed by the policy's measured decision time (x a
  factor, to emulate a faster implementation); without it runs are fully deterministic per seed.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator

from kairos.decisions import Recorder
from kairos.orloj.batchdist import BatchLatencyModel
from kairos.orloj.driver import Driver, PolicyError
from kairos.orloj.metrics import summarize
from kairos.orloj.policy import Batch, BatchPolicy, Outcome, Request
from kairos.orloj.profiler import Profiler
from kairos.orloj.worker import BatchRecord, BatchRun, Delivery, SoloRun
from kairos.sim import EventLoop, RngStreams, SimClock, Timers

__all__ = [
    "BatchRecord",
    "PolicyError",
    "SimConfig",
    "SimResult",
    "SimWorker",
    "sim_profiler",
    "sim_worker",
    "simulate",
]


class SimConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    batch_model: BatchLatencyModel = BatchLatencyModel()
    noise_sigma: float = Field(0.0, ge=0)  # lognormal sigma of batch-time noise
    # the worker's speed over time, (from ms, factor) steps in time order: a batch takes the
    # factor in force at its start times g_k. A recorded run's slow spells replayed: on a shared
    # machine they come in bursts that independent per-batch noise cannot make
    speed: tuple[tuple[float, float], ...] = ()

    @field_validator("speed")
    @classmethod
    def _steps_in_order(cls, v: tuple[tuple[float, float], ...]) -> tuple[tuple[float, float], ...]:
        if any(f <= 0 for _, f in v):
            raise ValueError("every speed factor must be > 0")
        if any(b[0] <= a[0] for a, b in itertools.pairwise(v)):
            raise ValueError("speed steps must be in increasing time order")
        return v

    profile_sample_rate: float = Field(0.1, ge=0, le=1)
    profile_period_ms: float = Field(1000.0, gt=0)
    # re-runs beside the worker (the paper's separate profiling device), or on it, one at a
    # time while it is idle and nothing is pending, as the real single-worker runtime does
    shadow_profiling: bool = True
    charge_overhead: bool = False
    overhead_factor: float = Field(1.0, ge=0)
    seed: int = Field(0, ge=0)
    max_time_ms: float | None = Field(None, gt=0)


@dataclass
class SimResult:
    policy: str
    requests: list[Request]
    batches: list[BatchRecord]
    decide_s: list[float]  # CPU seconds of each `next_batch` call (scheduler iterations)
    arrival_s: list[float]  # CPU seconds of each `on_arrival` call
    stranded: int  # requests the policy never released (ended as timed out at the end)
    end_time: float  # ms
    extra: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        return summarize(self)


def solo_ms(r: Request) -> float:
    """A request's hidden solo latency: set by a recording, or, for a request that came
    through a server, its input (a simulated model's input is the latency it causes)."""
    if r.solo_ms is not None:
        return float(r.solo_ms)
    return float(r.payload) if isinstance(r.payload, int | float) else 0.0


class SimWorker:
    """The simulated worker: batches take g_k(longest solo latency) x noise, in FIFO order."""

    def __init__(
        self,
        clock: Timers,
        batch_model: BatchLatencyModel,
        noise_sigma: float = 0.0,
        rng: np.random.Generator | None = None,
        shadow_profiling: bool = True,
        speed: Sequence[tuple[float, float]] = (),
    ) -> None:
        self.clock, self.batch_model, self.noise_sigma = clock, batch_model, noise_sigma
        self._speed_at = [t for t, _ in speed]
        self._speed = [f for _, f in speed]
        self.shadow_profiling = shadow_profiling
        self.deliver: Delivery = lambda _run: None  # set by whoever wires it to a driver
        self._rng = rng or np.random.default_rng(0)
        self._queue: deque[tuple[Batch | Request, float]] = deque()
        self._running = False

    def submit(self, batch: Batch, not_before_ms: float = -math.inf) -> None:
        self._queue.append((batch, not_before_ms))
        self._start_next()

    def submit_solo(self, request: Request) -> None:
        solo = solo_ms(request)
        if self.shadow_profiling:
            self._at(self._now_ms() + solo, SoloRun(request, solo))
        else:
            self._queue.append((request, -math.inf))
            self._start_next()

    def _now_ms(self) -> float:
        return self.clock.now() * 1e3

    def _at(self, t_ms: float, result: BatchRun | SoloRun) -> None:
        self.clock.call_at(t_ms / 1e3, self._done, result)

    def _noisy(self, ms: float, start_ms: float) -> float:
        step = bisect.bisect_right(self._speed_at, start_ms) - 1
        if step >= 0:
            ms *= self._speed[step]
        if self.noise_sigma > 0:
            ms *= float(np.exp(self.noise_sigma * self._rng.standard_normal()))
        return ms

    def _start_next(self) -> None:
        now = self._now_ms()
        while not self._running and self._queue:
            item, not_before = self._queue.popleft()
            start = max(now, not_before)
            if isinstance(item, Request):
                self._running = True
                ms = self._noisy(solo_ms(item), start)
                self._at(start + ms, SoloRun(item, ms))
            elif item.latest_start is not None and start > item.latest_start:
                self._at(now, BatchRun(item, now, now, rejected=True))
            else:
                longest = max(solo_ms(r) for r in item.requests)
                duration = self._noisy(float(self.batch_model.g(item.size, longest)), start)
                self._running = True
                outputs: list[dict[str, Any]] = [{} for _ in item.requests]
                solo = longest if item.size == 1 else None
                self._at(
                    start + duration, BatchRun(item, start, start + duration, outputs, solo_ms=solo)
                )

    def _done(self, result: BatchRun | SoloRun) -> None:
        ran = isinstance(result, SoloRun) or result.outputs is not None
        if ran and not (isinstance(result, SoloRun) and self.shadow_profiling):
            self._running = False
            self._start_next()
        self.deliver(result)


def sim_worker(clock: Timers, config: SimConfig) -> SimWorker:
    """The simulated worker of `config`, its noise drawn from the config's seed."""
    rng = RngStreams(config.seed).stream("batch-noise")
    return SimWorker(
        clock,
        config.batch_model,
        config.noise_sigma,
        rng,
        shadow_profiling=config.shadow_profiling,
        speed=config.speed,
    )


def sim_profiler(config: SimConfig) -> Profiler:
    """The profiler of `config`, its sampling drawn from the config's seed."""
    rng = RngStreams(config.seed).stream("profiler")
    return Profiler(config.profile_sample_rate, config.profile_period_ms, rng=rng)


class Simulator:
    def __init__(
        self,
        policy: BatchPolicy,
        requests: Sequence[Request],
        config: SimConfig | None = None,
        offline: Mapping[str, Sequence[float]] | None = None,
        recorder: Recorder | None = None,
    ) -> None:
        self.policy = policy
        self.requests = sorted(requests, key=lambda r: r.release)
        self.config = cfg = config or SimConfig()
        self.offline = offline
        first = self.requests[0].release if self.requests else 0.0
        self.loop = EventLoop(start=min(0.0, first / 1e3))
        clock = SimClock(self.loop)
        self.worker = sim_worker(clock, cfg)
        self.driver = Driver(
            policy,
            clock,
            self.worker,
            sim_profiler(cfg),
            charge_overhead=cfg.charge_overhead,
            overhead_factor=cfg.overhead_factor,
            recorder=recorder,
        )
        self.worker.deliver = self.driver.on_result

    def run(self) -> SimResult:
        self.driver.warm_start(self.offline)
        for r in self.requests:
            self.loop.call_at(r.release / 1e3, self.driver.arrive, r)
        cap = self.config.max_time_ms
        self.loop.run(until=None if cap is None else cap / 1e3)
        stranded = self.driver.end_all(Outcome.TIMED_OUT)
        for r in self.requests:  # released after the horizon: never arrived
            if r.outcome is None:
                r.outcome, r.finish = Outcome.TIMED_OUT, self.loop.now * 1e3
                stranded.append(r)
        stats = self.driver.stats
        return SimResult(
            policy=self.policy.name,
            requests=self.requests,
            batches=sorted(stats.records, key=lambda b: (b.start, b.decided)),
            decide_s=list(stats.decide_cpu_s),
            arrival_s=list(stats.arrival_cpu_s),
            stranded=len(stranded),
            end_time=self.loop.now * 1e3,
        )


def simulate(
    policy: BatchPolicy,
    requests: Sequence[Request],
    config: SimConfig | None = None,
    offline: Mapping[str, Sequence[float]] | None = None,
    recorder: Recorder | None = None,
) -> SimResult:
    """Run `policy` over `requests` (fresh objects: outcomes are written into them); every
    decision goes to `recorder` if one is given."""
    return Simulator(policy, requests, config, offline, recorder).run()
