"""The iteration scheduler's core loop (spec 3.7), written once over a clock and a worker.

The simulator is this driver on a `SimClock` with a simulated worker (capped processor
sharing); the real service is the same driver on the wall clock with a worker that runs the
job's step on the lane's stream. The driver owns every decision: admission (Algorithm 2.1 via
the `LaneManager`, the queue of spec 3.6), which job's iteration each idle lane runs next (the
policy's `pick`), and the lane life cycle (shrink and delete on exit, defragmentation at
boundaries). The worker only carries iterations out and reports how long each took. Each
decision is a plain record keyed by ids (`kairos.salus.decisions`): the worker is handed a
`Grant`, and a recorder, when given, receives every grant, admission, lane change and exit.

Events, as spec 3.5/3.7 name them:
* `arrive` (a session opens) queues the job and retries admission;
* `submit` (ITERATION_SUBMITTED) adds ready iterations and schedules the job's lane;
* the worker's `on_done` (ITERATION_DONE) charges S, ends the job after its last iteration,
  and otherwise runs ITERATION_END: pending layout applied, the lane scheduled again;
* `leave` (JOB_EXIT by request) ends a job, at once or at its running iteration's end;
* `aux` queues an auxiliary call (spec 3.7's `aux=True`: reading the model, saving it): it runs
  in the job's lane when the lane is idle, ahead of the next main iteration, is not a policy
  decision, not charged to S and not a switch.
Eq. 2.1 is checked after every change (`verify=True` also recomputes it and, with addresses,
the range invariants from scratch: the property tests run that way).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Protocol

from kairos.decisions import Recorder
from kairos.salus.admission import AdmissionQueue
from kairos.salus.decisions import Admit, Exit, Grant, Launch, lane_changes
from kairos.salus.lane_finder import LaneManager
from kairos.salus.layout import Lane
from kairos.salus.policy import JobState, JobStatus, Policy
from kairos.salus.profile import Profile
from kairos.sim import Timers


class Worker(Protocol):
    def launch(self, run: Launch, on_done: Callable[[float], None]) -> None:
        """Start the granted iteration (or auxiliary call); later (never from inside this
        call) call `on_done(duration)` on the driver's clock thread with its duration in s."""

    def release(self, job: JobState) -> None:
        """The job left: free its persistent memory (its lane may be gone too)."""

    def lane_gone(self, lane: int) -> None:
        """An empty lane was deleted: drop its stream and pool."""


@dataclass(frozen=True)
class IterationRecord:
    job: int
    lane: int
    start: float
    end: float
    duration: float  # as the worker measured it (what S is charged)


class Driver:
    """Decides for one device of `capacity` bytes under `policy`."""

    def __init__(
        self,
        clock: Timers,
        worker: Worker,
        policy: Policy,
        capacity: int,
        *,
        addresses: bool = False,
        verify: bool = False,
        record: bool = False,
        on_finish: Callable[[JobState], None] | None = None,
        recorder: Recorder | None = None,
    ) -> None:
        self.clock = clock
        self.worker = worker
        self.policy = policy
        self.manager = LaneManager(capacity, policy.lane_mode, addresses=addresses)
        self.queue = AdmissionQueue(policy)
        self.jobs: dict[int, JobState] = {}
        self.timeline: list[IterationRecord] | None = [] if record else None
        self.switches = 0
        self._verify = verify
        self._on_finish = on_finish
        self._ids = itertools.count()
        self._recorder = recorder

    @property
    def capacity(self) -> int:
        return self.manager.layout.capacity

    # ---- events from outside --------------------------------------------------------------------
    def arrive(
        self,
        name: str,
        profile: Profile,
        *,
        expected: float | None = None,
        iterations: int | None = None,
        ready: int = 0,
        job_id: int | None = None,
    ) -> JobState:
        """A session opens with its profile; it is admitted now or queued."""
        if profile.peak > self.capacity:
            raise ValueError(
                f"job {name!r} needs P + E = {profile.peak} bytes but the device has "
                f"{self.capacity}: it could never be admitted"
            )
        if iterations is not None and iterations < 1:
            raise ValueError(f"job {name!r}: iterations must be >= 1, got {iterations}")
        jid = next(self._ids) if job_id is None else job_id
        if jid in self.jobs:
            raise ValueError(f"job id {jid} is already taken")
        job = JobState(jid, name, profile, self.clock.now(), expected, iterations, ready)
        self.jobs[jid] = job
        self.queue.push(job)
        self._admit()
        self._changed()
        return job

    def submit(self, job_id: int, n: int = 1) -> None:
        """ITERATION_SUBMITTED: `n` more iterations of the job are ready."""
        job = self.jobs[job_id]
        if job.status in (JobStatus.DONE, JobStatus.CANCELLED):
            raise ValueError(f"job {job_id} has ended")
        job.ready += n
        if job.status is JobStatus.ADMITTED:
            self._schedule(self.manager.lane_of(job_id))

    def aux(self, job_id: int) -> None:
        """Queue one auxiliary call of the job; it runs once the job has a lane and the lane
        is idle (a queued job's call waits for admission)."""
        job = self.jobs[job_id]
        if job.status not in (JobStatus.QUEUED, JobStatus.ADMITTED) or job.leaving:
            raise ValueError(f"job {job_id} has ended")
        job.aux += 1
        if job.status is JobStatus.ADMITTED:
            self._schedule(self.manager.lane_of(job_id))

    def leave(self, job_id: int) -> None:
        """End a job by request: queued jobs go at once, a running iteration is let finish."""
        job = self.jobs[job_id]
        if job.status is JobStatus.QUEUED:
            self.queue.remove(job)
            self._finished(job, JobStatus.CANCELLED)
            self._admit()  # without backfill, the job behind a cancelled head may fit
            self._changed()
        elif job.status is JobStatus.ADMITTED:
            if self.manager.lane_of(job_id).busy == job_id:
                job.leaving = True
            else:
                self._exit(job, JobStatus.CANCELLED)

    # ---- the loop -------------------------------------------------------------------------------
    def _place(self, job: JobState) -> Lane | None:
        p = job.profile
        sizes = self._lane_sizes()
        lane = self.manager.admit(job.id, p.persistent, p.ephemeral)
        if lane is not None:
            job.status, job.admitted_at = JobStatus.ADMITTED, self.clock.now()
            if self._recorder is not None:
                self._recorder.record(
                    job.admitted_at, Admit(job.id, lane.id, p.persistent, p.ephemeral)
                )
                self._record_lanes(sizes)
            others = [self.jobs[j] for j in lane.jobs if j != job.id]
            self.policy.on_join(lane, others, job)
        return lane

    def _lane_sizes(self) -> dict[int, int] | None:
        """Lane id -> size, to record what a change did (only when there is a recorder)."""
        if self._recorder is None:
            return None
        return {lane.id: lane.size for lane in self.manager.lanes}

    def _record_lanes(self, before: dict[int, int] | None) -> None:
        if self._recorder is not None and before is not None:
            now = self.clock.now()
            for change in lane_changes(before, self._lane_sizes() or {}):
                self._recorder.record(now, change)

    def _launch(
        self, job: JobState, grant: Grant, now: float, done: Callable[[float], None]
    ) -> None:
        if self._recorder is not None:
            self._recorder.record(now, grant)
        self.worker.launch(Launch(grant, job.profile, now), done)

    def _admit(self) -> None:
        if len(self.queue):
            self.queue.admit(self._place)

    def _schedule(self, lane: Lane) -> None:
        """SCHEDULE(lane): if it may start an iteration, ask the policy whose."""
        if not self.manager.runnable(lane):
            return
        waiting = next((self.jobs[j] for j in lane.jobs if self.jobs[j].aux > 0), None)
        if waiting is not None:  # auxiliary calls first: they are short and not scheduled
            lane.busy = waiting.id
            grant = Grant(waiting.id, lane.id, lane.size, False, aux=True)
            now = self.clock.now()
            self._launch(waiting, grant, now, partial(self._aux_done, waiting, lane))
            return
        job = self.policy.pick(lane, [self.jobs[j] for j in lane.jobs])
        if job is None:
            return
        if job.ready < 1 or self.manager.lane_of(job.id) is not lane:
            raise RuntimeError(f"{self.policy.name} picked job {job.id}, which cannot run here")
        now = self.clock.now()
        job.ready -= 1
        if job.first_start is None:
            job.first_start = now
        switch = lane.last is not None and lane.last != job.id
        self.switches += switch
        lane.busy = job.id
        grant = Grant(job.id, lane.id, lane.size, switch)
        self._launch(job, grant, now, partial(self._done, job, lane, now))

    def _done(self, job: JobState, lane: Lane, start: float, duration: float) -> None:
        """ITERATION_DONE, then JOB_EXIT after the last iteration or ITERATION_END."""
        lane.busy, lane.last = None, job.id
        job.service += duration
        job.done += 1
        self.policy.on_iteration(job, duration)
        if self.timeline is not None:
            self.timeline.append(
                IterationRecord(job.id, lane.id, start, self.clock.now(), duration)
            )
        if job.leaving:
            self._exit(job, JobStatus.CANCELLED)
        elif job.iterations is not None and job.done >= job.iterations:
            self._exit(job, JobStatus.DONE)
        elif self.manager.boundary():  # a lane moved: memory or a lane may have come free
            self._admit()
            self._changed()
        else:
            self._schedule(lane)
            self._check()

    def _aux_done(self, job: JobState, lane: Lane, duration: float) -> None:
        lane.busy = None
        job.aux -= 1
        if job.leaving:
            self._exit(job, JobStatus.CANCELLED)
        else:
            self._schedule(lane)
            self._check()

    def _exit(self, job: JobState, status: JobStatus) -> None:
        sizes = self._lane_sizes()
        lane = self.manager.leave(job.id)
        self.policy.on_leave(lane, [self.jobs[j] for j in lane.jobs], job)
        self._finished(job, status)
        self._record_lanes(sizes)
        if lane.id not in self.manager.layout.lanes:
            self.worker.lane_gone(lane.id)
        self.manager.boundary()
        self._admit()
        self._changed()

    def _finished(self, job: JobState, status: JobStatus) -> None:
        job.status, job.finish = status, self.clock.now()
        job.ready = job.aux = 0
        if self._recorder is not None:
            self._recorder.record(job.finish, Exit(job.id, status.value))
        if status is not JobStatus.CANCELLED or job.admitted_at is not None:
            self.worker.release(job)
        if self._on_finish is not None:
            self._on_finish(job)

    def _changed(self) -> None:
        """After admissions, exits and lane moves: every idle lane may have work."""
        for lane in self.manager.lanes:
            self._schedule(lane)
        self._check()

    def _check(self) -> None:
        self.manager.layout.check()
        if self._verify:
            self.manager.verify()

    # ---- what reports read ----------------------------------------------------------------------
    def open_jobs(self) -> int:
        return sum(j.status in (JobStatus.QUEUED, JobStatus.ADMITTED) for j in self.jobs.values())
