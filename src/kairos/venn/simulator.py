"""Event-driven simulator of many FL jobs sharing a device fleet under one Venn policy.

It runs on `kairos.sim.EventLoop` and drives the real `ResourceManager` exactly as a service
would: jobs register and submit one request per round attempt; each check-in asks the manager
for a job; dispatched devices start after a small delay, run for their response time and report
back unless they go offline first. Round rules (spec §2.3, `kairos.fl.timing.RoundRule`): a
round succeeds as soon as `needed` responses arrive (the rest are withdrawn and later answers
are stragglers); at the deadline it succeeds if enough devices were dispatched and enough of
them answered, and otherwise aborts and is resubmitted `resubmit_s` later. Events: job arrival,
request submit, check-in, task done, round deadline; the run ends when every job has finished,
or at `max_days` (unfinished jobs are reported).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

from kairos.fl.jobs import FLJob
from kairos.sim import EventHandle, EventLoop
from kairos.venn.fleet import CheckInChunk, Fleet
from kairos.venn.manager import ResourceManager
from kairos.venn.policy import DevicePolicy
from kairos.venn.results import JobRecord, SimResult
from kairos.venn.supply import SupplyMonitor

DAY_S = 86_400.0


class SimConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    resubmit_s: float = Field(0.1, ge=0)  # gap before the next round / a retried round
    max_days: float = Field(60.0, gt=0)
    replan_period_s: float = Field(600.0, gt=0)
    supply_window: str = "24h"  # or e.g. "count:1000"
    tell_rounds: bool = False  # give the manager each job's number of rounds
    one_task_per_day: bool = False  # for traces where a device checks in more than daily


@dataclass
class _Round:
    run: _Run
    idx: int
    submit: float
    deadline: EventHandle | None = None
    dispatched: int = 0
    responses: int = 0
    sched_done: float = math.nan
    open: bool = True


@dataclass
class _Run:
    index: int
    job: FLJob
    record: JobRecord
    round: _Round | None = None
    done: bool = False
    needed: int = 0  # responses that close a round (cached: read on every dispatch)


class Simulator:
    def __init__(
        self,
        policy: DevicePolicy,
        jobs: Sequence[FLJob],
        fleet: Fleet,
        config: SimConfig | None = None,
    ) -> None:
        self.cfg = config or SimConfig()
        self.fleet = fleet
        self.loop = EventLoop()
        self.manager = ResourceManager(
            policy,
            fleet.requirements,
            SupplyMonitor.parse(self.cfg.supply_window),
            replan_period_s=self.cfg.replan_period_s,
        )
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
                needed=j.needed,
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

    # -- run -------------------------------------------------------------------------------
    def run(self) -> SimResult:
        start = time.perf_counter()
        for run in self.runs.values():
            self.loop.call_at(run.job.arrival, self._arrive, run)
        self._schedule_checkin()
        self.loop.run(until=self.cfg.max_days * DAY_S)
        res = self.result
        res.end_time = max((r.record.finish for r in self.runs.values() if r.done), default=0.0)
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
        job_id = self.manager.checkin(t, self._atom[dev], cap)
        if job_id is None:
            return
        self.result.assigned += 1
        self._used_day[dev] = int(t // DAY_S)
        rnd = self.runs[job_id].round
        assert rnd is not None and rnd.open, "the manager dispatched to a closed round"
        rnd.dispatched += 1
        if rnd.dispatched == rnd.run.needed:
            rnd.sched_done = t - rnd.submit
        finish = t + c.delay_s[i] + c.response_s[i]
        if finish <= c.end[i]:
            self.loop.call_at(finish, self._task_done, rnd, cap, c.response_s[i])
        else:
            self.result.failed += 1

    def _task_done(self, rnd: _Round, cap: float, response_s: float) -> None:
        run = rnd.run
        self.result.completed += 1
        if not run.done:
            self.manager.report_response(run.job.job_id, cap, response_s)
        if not rnd.open:
            self.result.wasted += 1
            return
        rnd.responses += 1
        if rnd.responses >= run.needed:
            self._close(rnd, success=True)

    # -- jobs and rounds -------------------------------------------------------------------
    def _arrive(self, run: _Run) -> None:
        job = run.job
        self.manager.register_job(
            job.job_id,
            job.requirement,
            self.loop.now,
            rounds=job.rounds if self.cfg.tell_rounds else None,
            deadline_s=job.rule.deadline_s,
        )
        self._submit(run, 0)

    def _submit(self, run: _Run, idx: int) -> None:
        now = self.loop.now
        rnd = _Round(run, idx, now)
        run.round = rnd
        run.record.attempts += 1
        self.manager.submit_request(run.job.job_id, run.job.request_size, now, round_idx=idx)
        rnd.deadline = self.loop.call_at(now + run.job.rule.deadline_s, self._deadline, rnd)

    def _deadline(self, rnd: _Round) -> None:
        if not rnd.open:
            return
        job = rnd.run.job
        ok = job.rule.succeeds_at_deadline(job.participants, rnd.dispatched, rnd.responses)
        self._close(rnd, success=ok)

    def _close(self, rnd: _Round, success: bool) -> None:
        run, now = rnd.run, self.loop.now
        rnd.open = False
        if rnd.deadline is not None:
            self.loop.cancel(rnd.deadline)
        self.manager.close_request(run.job.job_id, now)
        self.result.rounds.append(
            (run.index, rnd.idx, rnd.submit, rnd.sched_done, now, success, rnd.dispatched)
        )
        if not success:
            run.record.aborts += 1
            self.result.wasted += rnd.responses
            self.loop.call_after(self.cfg.resubmit_s, self._submit, run, rnd.idx)
        elif rnd.idx + 1 < run.job.rounds:
            self.loop.call_after(self.cfg.resubmit_s, self._submit, run, rnd.idx + 1)
        else:
            run.done = True
            run.record.finish = now
            self.manager.job_finished(run.job.job_id, now)
            self._active -= 1


def simulate(
    policy: DevicePolicy,
    jobs: Sequence[FLJob],
    fleet: Fleet,
    config: SimConfig | None = None,
) -> SimResult:
    """Run one simulation to completion (or `max_days`) and return its result."""
    return Simulator(policy, jobs, fleet, config).run()
