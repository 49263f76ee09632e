"""The Salus simulator: the driver on simulated time with a simulated worker (spec 6.9).

The worker times iterations by capped processor sharing: while the set A of lanes is busy,
each running iteration progresses at `1 / max(1, sum_{j in A} u_j)` of its solo speed, so jobs
that leave the GPU partly idle (u < 1) gain from running side by side and saturating ones
(u = 1) only share it. An iteration's solo work is `t_iter * overhead` (the per-iteration
overhead factor `o`), plus `switch_cost` (delta) when its lane last ran another job.

`simulate()` replays a trace (`kairos.salus.workloads.TraceJob`) under one policy and returns
per-job times and the run's summary: average / p95 JCT and queuing, makespan, GPU busy time.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from kairos.decisions import Recorder
from kairos.salus.decisions import Launch
from kairos.salus.driver import Driver, IterationRecord
from kairos.salus.policy import JobState, JobStatus, Policy
from kairos.salus.profile import GIB, Profile
from kairos.salus.workloads import TraceJob
from kairos.sim import EventHandle, EventLoop, SimClock


@dataclass(eq=False)
class _Run:
    on_done: Callable[[float], None]
    start: float
    left: float  # solo seconds of work still to do
    busy: float  # u
    handle: EventHandle | None = None


class SimWorker:
    """Capped processor sharing over the busy lanes (one running iteration per lane)."""

    def __init__(
        self,
        clock: SimClock,
        switch_cost: float = 0.001,
        overhead: float = 1.0,
        aux_cost: float = 0.0,
    ) -> None:
        if switch_cost < 0 or overhead <= 0 or aux_cost < 0:
            raise ValueError("switch_cost and aux_cost must be >= 0 s and overhead > 0")
        self.aux_cost = aux_cost
        self.clock = clock
        self.switch_cost = switch_cost
        self.overhead = overhead
        self.runs: dict[int, _Run] = {}  # lane -> its running iteration
        self.busy_time = 0.0  # integral of min(1, sum u) dt: GPU busy seconds
        self._t = 0.0
        self._load = 0.0

    def _advance(self) -> None:
        now = self.clock.now()
        dt = now - self._t
        if dt > 0 and self.runs:
            rate = 1.0 / max(1.0, self._load)
            for run in self.runs.values():
                run.left = max(0.0, run.left - dt * rate)
            self.busy_time += dt * min(1.0, self._load)
        self._t = now

    def _reschedule(self) -> None:
        self._load = sum(r.busy for r in self.runs.values())
        rate = 1.0 / max(1.0, self._load)
        now = self.clock.now()
        for lane, run in self.runs.items():
            if run.handle is not None:
                self.clock.cancel(run.handle)
            run.handle = self.clock.call_at(now + run.left / rate, self._finish, lane)

    def launch(self, run: Launch, on_done: Callable[[float], None]) -> None:
        grant = run.grant
        if grant.aux:  # a host-side call (read or save the model): no GPU work to share
            self.clock.call_at(self.clock.now() + self.aux_cost, on_done, self.aux_cost)
            return
        self._advance()
        p = run.profile
        work = p.t_iter * self.overhead + (self.switch_cost if grant.switch else 0.0)
        self.runs[grant.lane] = _Run(on_done, self.clock.now(), work, p.busy)
        self._reschedule()

    def _finish(self, lane: int) -> None:
        self._advance()
        run = self.runs.pop(lane)
        self._reschedule()
        run.on_done(self.clock.now() - run.start)

    def release(self, job: JobState) -> None:
        """Nothing to free in a simulation."""

    def lane_gone(self, lane: int) -> None:
        """Nothing to drop in a simulation."""


@dataclass(frozen=True)
class SimConfig:
    """`capacity` C (bytes; 16 GiB emulates the paper's P100), `switch_cost` delta (s),
    `overhead` o (applied to every policy, FIFO included, spec 6.9), the admission margins of
    spec 3.1, `addresses` to run the Tier B address model, `verify` to recompute every
    invariant after every event (slow; tests), `record` to keep the iteration timeline."""

    capacity: int = 16 * GIB
    switch_cost: float = 0.001
    overhead: float = 1.0
    margin_p: float = 0.10
    margin_total: float = 0.05
    addresses: bool = False
    verify: bool = False
    record: bool = False


@dataclass
class SimResult:
    policy: str
    jobs: list[JobState]
    makespan: float
    busy_time: float
    switches: int
    timeline: list[IterationRecord] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        """Minutes, as Table 2.1 reports them."""
        jct = np.array([j.jct for j in self.jobs if j.jct is not None]) / 60
        queuing = np.array([j.queuing for j in self.jobs if j.queuing is not None]) / 60
        return {
            "policy": self.policy,
            "jobs": len(self.jobs),
            "makespan_min": self.makespan / 60,
            "avg_queuing_min": float(queuing.mean()) if queuing.size else float("nan"),
            "avg_jct_min": float(jct.mean()) if jct.size else float("nan"),
            "p95_jct_min": float(np.percentile(jct, 95)) if jct.size else float("nan"),
            "utilisation": self.busy_time / self.makespan if self.makespan > 0 else 0.0,
            "switches": self.switches,
        }


def simulate(
    trace: Sequence[TraceJob],
    policy: Policy,
    profiles: Mapping[str, Profile],
    config: SimConfig | None = None,
    recorder: Recorder | None = None,
) -> SimResult:
    """Run the trace to completion under `policy`. Each job's iterations are all ready from
    its arrival (a training script submits its next step as soon as the last returns), and
    its T is its solo run time, `iterations * t_iter`. `recorder` receives the decisions."""
    cfg = config or SimConfig()
    loop = EventLoop()
    clock = SimClock(loop)
    worker = SimWorker(clock, cfg.switch_cost, cfg.overhead)
    driver = Driver(
        clock,
        worker,
        policy,
        cfg.capacity,
        addresses=cfg.addresses,
        verify=cfg.verify,
        record=cfg.record,
        recorder=recorder,
    )
    for job in trace:
        if job.workload not in profiles:
            raise KeyError(f"trace job {job.job_id}: unknown workload {job.workload!r}")
        real = profiles[job.workload]
        admitted = real.with_margins(cfg.margin_p, cfg.margin_total, cfg.capacity)
        loop.call_at(
            job.submit_time,
            lambda j=job, prof=admitted, t=real.t_iter: driver.arrive(
                j.workload,
                prof,
                expected=j.iterations * t,
                iterations=j.iterations,
                ready=j.iterations,
                job_id=j.job_id,
            ),
        )
    loop.run()
    jobs = sorted(driver.jobs.values(), key=lambda j: j.id)
    unfinished = [j.id for j in jobs if j.status is not JobStatus.DONE]
    if unfinished:
        raise RuntimeError(f"{policy.name}: jobs {unfinished[:10]} never finished (stuck)")
    first = min((j.arrival for j in jobs), default=0.0)
    last = max((j.finish or 0.0 for j in jobs), default=0.0)
    return SimResult(
        policy.name,
        jobs,
        last - first,
        worker.busy_time,
        driver.switches,
        driver.timeline or [],
    )
