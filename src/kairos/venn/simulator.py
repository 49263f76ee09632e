"""Event-driven simulator of many FL jobs sharing a device fleet under one Venn policy.

It is Venn's `Driver` (`kairos.venn.driver`: the round lifecycle the service runs too) on a
`SimClock`, with simulated devices and jobs around it: check-ins come from the fleet's trace,
each device the driver dispatches starts after a small delay, runs for its response time and
reports back unless it goes offline first, and a job submits its next round `resubmit_s` after
a success. Events: job arrival, round submission, check-in, task done, and the driver's round
deadlines and resubmissions; the run ends when every job has finished, or at `max_days`
(unfinished jobs are reported).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import Field

from kairos.decisions import Recorder
from kairos.fl.jobs import FLJob
from kairos.sim import EventLoop, SimClock
from kairos.venn.driver import Driver, DriverConfig, Job, Round
from kairos.venn.fleet import CheckInChunk, Fleet
from kairos.venn.manager import ResourceManager
from kairos.venn.policy import DevicePolicy
from kairos.venn.results import JobRecord, SimResult
from kairos.venn.supply import SupplyMonitor

DAY_S = 86_400.0


class SimConfig(DriverConfig):
    """The driver's settings (`resubmit_s`, `tell_rounds`) and the simulation's own."""

    max_days: float = Field(60.0, gt=0)
    replan_period_s: float = Field(600.0, gt=0)
    supply_window: str = "24h"  # or e.g. "count:1000"
    one_task_per_day: bool = False  # for traces where a device checks in more than daily


@dataclass
class _Run:
    index: int
    job: FLJob
    record: JobRecord


class Simulator:
    """Simulated device sessions and jobs around the driver, and the run's accounting."""

    def __init__(
        self,
        policy: DevicePolicy,
        jobs: Sequence[FLJob],
        fleet: Fleet,
        config: SimConfig | None = None,
        recorder: Recorder | None = None,
    ) -> None:
        self.cfg = config or SimConfig()
        self.fleet = fleet
        self.loop = EventLoop()
        manager = ResourceManager(
            policy,
            fleet.requirements,
            SupplyMonitor.parse(self.cfg.supply_window),
            replan_period_s=self.cfg.replan_period_s,
        )
        self.driver = Driver(manager, SimClock(self.loop), self, self.cfg, recorder)
        for job in jobs:
            if job.requirement not in fleet.requirements:
                raise ValueError(
                    f"job {job.job_id}: requirement {job.requirement.name!r} "
                    "is not one of the fleet's requirements"
                )
        self.runs = {
            j.job_id: _Run(
                i,
                j,
                JobRecord(
                    j.job_id, j.template, j.requirement.name, j.arrival, j.participants, j.rounds
                ),
            )
            for i, j in enumerate(jobs)
        }
        self.result = SimResult(policy.name, [r.record for r in self.runs.values()])
        atoms = fleet.atoms()
        self._atom = atoms.tolist()
        self._cap = fleet.population.capability.tolist()
        self._used_day = [-1] * len(atoms)
        self._active = len(self.runs)
        self._chunk_k = 0
        self._chunk: CheckInChunk = fleet.chunk(0)
        self._i = 0

    @property
    def manager(self) -> ResourceManager:
        return self.driver.manager

    # -- run -------------------------------------------------------------------------------
    def run(self) -> SimResult:
        start = time.perf_counter()
        for run in self.runs.values():
            self.loop.call_at(run.job.arrival, self._arrive, run)
        self._schedule_checkin()
        self.loop.run(until=self.cfg.max_days * DAY_S)
        res = self.result
        finished = (r.record.finish for r in self.runs.values() if math.isfinite(r.record.finish))
        res.end_time = max(finished, default=0.0)
        if self._active:
            res.end_time = self.loop.now
        res.checkins = self.manager.stats.checkins
        res.plans = self.manager.stats.plans
        res.plan_s = self.manager.stats.plan_s
        res.wall_s = time.perf_counter() - start
        return res

    def _schedule_checkin(self) -> None:
        if self._active:
            self.loop.call_at(self._next_checkin_time(), self._checkins)

    def _next_checkin_time(self) -> float:
        while self._i >= len(self._chunk):
            self._chunk_k += 1
            self._chunk = self.fleet.chunk(self._chunk_k)
            self._i = 0
        return self._chunk.start[self._i]

    # -- devices ---------------------------------------------------------------------------
    def _checkins(self) -> None:
        """Process check-ins in time order until the next other event is due.

        The check-in stream is the bulk of all events; running a batch of them from one loop
        event (instead of one heap entry each) halves the simulator's heap traffic without
        changing the order of anything: a check-in at time t runs before any other event
        later than t, and other events at or before t run first.
        """
        loop = self.loop
        while self._active:
            self._checkin()
            t = self._next_checkin_time()
            nxt = loop.peek_time()
            if nxt is not None and nxt <= t:
                loop.call_at(t, self._checkins)
                return

    def _checkin(self) -> None:
        c, i = self._chunk, self._i
        self._i += 1
        t = c.start[i]
        dev = c.device[i]
        if self.cfg.one_task_per_day and self._used_day[dev] == int(t // DAY_S):
            return
        cap = self._cap[dev]
        rnd = self.driver.checkin(t, dev, self._atom[dev], cap)
        if rnd is None:
            return
        self.result.assigned += 1
        self._used_day[dev] = int(t // DAY_S)
        finish = t + c.delay_s[i] + c.response_s[i]
        if finish <= c.end[i]:
            self.loop.call_at(finish, self._task_done, rnd, cap, c.response_s[i], dev)
        else:
            self.result.failed += 1

    def _task_done(self, rnd: Round, cap: float, response_s: float, dev: int) -> None:
        self.result.completed += 1
        now = self.loop.now
        if not self.driver.respond(now, rnd.job.job_id, rnd.idx, rnd, cap, response_s, dev):
            self.result.wasted += 1

    # -- jobs (the driver's listener) ------------------------------------------------------
    def _arrive(self, run: _Run) -> None:
        job, now = run.job, self.loop.now
        self.driver.register(now, job.job_id, job.requirement, job.participants, job.rounds,
                             job.rule)  # fmt: skip
        self.driver.submit(now, job.job_id, 0)

    def _submit(self, job: Job, idx: int) -> None:
        self.driver.submit(self.loop.now, job.job_id, idx)

    def round_opened(self, rnd: Round) -> None:
        self.runs[rnd.job.job_id].record.attempts += 1

    def round_closed(self, rnd: Round, now: float, success: bool) -> None:
        run = self.runs[rnd.job.job_id]
        self.result.rounds.append(
            (run.index, rnd.idx, rnd.submit, rnd.sched_done, now, success, rnd.dispatched)
        )
        if not success:
            run.record.aborts += 1
            self.result.wasted += rnd.responses

    def next_round(self, job: Job, now: float) -> None:
        """The simulated job submits its next round `resubmit_s` after a success."""
        idx = job.round.idx + 1 if job.round is not None else 0
        self.loop.call_after(self.cfg.resubmit_s, self._submit, job, idx)

    def job_finished(self, job: Job, now: float) -> None:
        self.runs[job.job_id].record.finish = now
        self._active -= 1


def simulate(
    policy: DevicePolicy,
    jobs: Sequence[FLJob],
    fleet: Fleet,
    config: SimConfig | None = None,
    recorder: Recorder | None = None,
) -> SimResult:
    """Run one simulation to completion (or `max_days`) and return its result; with a
    `recorder`, the driver's inputs and decisions go to it too."""
    return Simulator(policy, jobs, fleet, config, recorder).run()
