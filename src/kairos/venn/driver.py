"""The round lifecycle of Venn's jobs, written once, over a clock (docs/architecture.md).

A job registers, then submits one round at a time; the driver asks the `ResourceManager` for
the round's devices, hands each checked-in device the job the policy picked, counts the
responses, and judges the round by the job's `RoundRule`: it succeeds as soon as `needed`
responses arrive (undispatched demand is withdrawn, later answers are stragglers); at its
deadline (counted from submission, spec §2.3) it succeeds if the rule's verdict passes and
otherwise aborts, and the driver resubmits the same round `resubmit_s` later. After a
success the job submits its next round (`RoundListener.next_round`) or, after its last one,
finishes.

The simulator runs this driver on a `SimClock`, the service on the wall clock. The driver
makes every decision; what happens around it (simulated device sessions and accounting, or
the service's SQLite file) hears of rounds through a `RoundListener`. A timer (a deadline, a
resubmission) runs at its due time, before any later input: the simulator's event loop gives
that order, and the service calls `advance` with each request, since an asyncio timer may run
late (a timer and an input at one instant: the timer first, in the service and its replay).

With a recorder, every input and decision is recorded as a `kairos.venn.decisions` record;
without one no record is built (the check-in path is the simulator's hot loop).
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from kairos.decisions import Recorder
from kairos.fl.requirements import Requirement
from kairos.fl.timing import RoundRule
from kairos.sim import Timers
from kairos.venn import decisions as rec
from kairos.venn.manager import ResourceManager


class DriverConfig(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    resubmit_s: float = Field(0.1, ge=0)  # gap before an aborted round is asked for again
    tell_rounds: bool = False  # give the manager each job's number of rounds


@dataclass(eq=False)
class Job:
    job_id: str
    participants: int  # devices a round wants by default
    rounds: int
    rule: RoundRule
    round: Round | None = None  # the latest attempt
    resubmit: Any = None  # the pending resubmission's timer
    resubmit_at: float = math.nan
    done: bool = False

    @property
    def busy(self) -> bool:
        """Whether it cannot submit a round now: one is open or due again, or it finished."""
        return (
            self.done or self.resubmit is not None or (self.round is not None and self.round.open)
        )


@dataclass(eq=False)
class Round:
    """One attempt at one round of a job."""

    job: Job
    idx: int
    participants: int
    demand: int  # devices asked for (participants times over-commitment)
    needed: int  # responses that close it at once
    submit: float
    due: float = math.nan  # its deadline
    timer: Any = None
    dispatched: int = 0
    responses: int = 0
    sched_done: float = math.nan  # submission until `needed` devices were dispatched
    open: bool = True

    @property
    def last(self) -> bool:
        return self.idx + 1 >= self.job.rounds


class RoundListener(Protocol):
    """What the mechanism around the driver hears: the simulator keeps its accounting, the
    service writes its store and, after a success, waits for the job's next round."""

    def round_opened(self, rnd: Round) -> None: ...

    def round_closed(self, rnd: Round, now: float, success: bool) -> None: ...

    def next_round(self, job: Job, now: float) -> None: ...

    def job_finished(self, job: Job, now: float) -> None: ...


class Driver:
    """The loop around a `ResourceManager`: the only caller of its job- and device-facing API."""

    def __init__(
        self, manager: ResourceManager, clock: Timers, listener: RoundListener,
        config: DriverConfig | None = None, recorder: Recorder | None = None,
    ) -> None:  # fmt: skip
        self.manager, self.clock, self.listener = manager, clock, listener
        self.config = config or DriverConfig()
        self.recorder = recorder
        self.jobs: dict[str, Job] = {}
        self._active: dict[str, Job] = {}  # unfinished jobs: where timers can be pending
        self._last = -math.inf  # the latest time `advance` or a timer ran at

    @property
    def active(self) -> Mapping[str, Job]:
        """The unfinished jobs, in registration order."""
        return self._active

    # -- job-facing ----------------------------------------------------------------------
    def register(
        self, now: float, job_id: str, requirement: Requirement, participants: int,
        rounds: int, rule: RoundRule,
    ) -> Job:  # fmt: skip
        job = Job(job_id, participants, rounds, rule)
        self.jobs[job_id] = self._active[job_id] = job
        told = rounds if self.config.tell_rounds else None
        self.manager.register_job(job_id, requirement, now, told, rule.deadline_s)
        if self.recorder is not None:
            thresholds = requirement.model_dump(exclude={"name"})
            self.recorder.record(now, rec.JobArrived(
                job_id, requirement.name, thresholds, participants, rounds, rule.deadline_s,
                rule.min_resp_frac, rule.overcommit,
            ))  # fmt: skip
        return job

    def submit(self, now: float, job_id: str, idx: int, participants: int | None = None) -> Round:
        """The job asks for round `idx` (of `participants` devices, by default its own)."""
        job = self.jobs[job_id]
        if job.busy:
            raise ValueError(f"job {job_id!r} has a round open or finished all its rounds")
        return self._open(job, idx, participants or job.participants, now, resubmission=False)

    def restore(
        self, now: float, job_id: str, idx: int, participants: int, submit: float,
        dispatched: int, responses: int,
    ) -> Round:  # fmt: skip
        """A round a restarted service finds open: asked for again where it stood (its
        undispatched demand), judged at its old deadline (at once if that passed)."""
        job = self.jobs[job_id]
        rule = job.rule
        rnd = Round(job, idx, participants, rule.request_size(participants),
                    rule.needed(participants), submit, dispatched=dispatched,
                    responses=responses)  # fmt: skip
        job.round = rnd
        if submit > now:  # an aborted round not yet asked for again: it will be, at `submit`
            rnd.open = False
            job.resubmit_at = submit
            job.resubmit = self.clock.call_at(submit, self._resubmit, job, submit)
            return rnd
        if rnd.demand > dispatched:
            self.manager.submit_request(job_id, rnd.demand - dispatched, now, idx)
        if responses >= rnd.needed:  # the closing response was stored, the close was not
            self._close(rnd, now, success=True)
        else:
            self._arm(rnd, submit + rule.deadline_s)
        return rnd

    # -- device-facing -------------------------------------------------------------------
    def checkin(
        self, now: float, device: str | int, atom: int, capability: float,
        skip: Collection[str] = (),
    ) -> Round | None:  # fmt: skip
        """The round the device should serve, or None."""
        job_id = self.manager.checkin(now, atom, capability, skip)
        recorder = self.recorder
        if recorder is not None:
            recorder.record(now, rec.CheckedIn(str(device), atom, capability, tuple(sorted(skip))))
        if job_id is None:
            return None
        rnd = self.jobs[job_id].round
        assert rnd is not None and rnd.open, "the manager dispatched to a closed round"
        rnd.dispatched += 1
        if rnd.dispatched == rnd.needed:
            rnd.sched_done = now - rnd.submit
        if recorder is not None:
            recorder.record(now, rec.Assigned(str(device), job_id, rnd.idx))
        return rnd

    def respond(
        self, now: float, job_id: str, idx: int, rnd: Round | None, capability: float,
        response_s: float, device: str | int = "",
    ) -> bool:  # fmt: skip
        """A device that served round `idx` of the job (the attempt `rnd`, None if it is gone)
        reported back: profiled, and counted if that attempt is still open."""
        if self.recorder is not None:
            self.recorder.record(
                now, rec.Responded(str(device), job_id, idx, capability, response_s)
            )
        job = self.jobs.get(job_id)
        if job is not None and not job.done:
            self.manager.report_response(job_id, capability, response_s)
        if rnd is None or not rnd.open:
            return False
        rnd.responses += 1
        if rnd.responses >= rnd.needed:
            self._close(rnd, now, success=True)
        return True

    # -- time ----------------------------------------------------------------------------
    def advance(self, now: float) -> float:
        """Run every timer due by `now`, in due order, at its due time; `now`, never earlier
        than a decision already made (an asyncio timer may have run a hair early)."""
        now = self._last = max(now, self._last)
        while True:
            due, fire = math.inf, None  # type: tuple[float, Job | Round | None]
            for job in self._active.values():
                rnd = job.round
                if job.resubmit is not None and job.resubmit_at < due:
                    due, fire = job.resubmit_at, job
                elif rnd is not None and rnd.timer is not None and rnd.due < due:
                    due, fire = rnd.due, rnd
            if fire is None or due > now:
                return now
            if isinstance(fire, Job):
                self.clock.cancel(fire.resubmit)
                self._resubmit(fire, due)
            else:
                self.clock.cancel(fire.timer)
                self._deadline(fire, due)

    def stop(self) -> None:
        """Cancel every pending timer: the service is shutting down (its file keeps the rest)."""
        for job in self._active.values():
            if job.resubmit is not None:
                self.clock.cancel(job.resubmit)
            if job.round is not None and job.round.timer is not None:
                self.clock.cancel(job.round.timer)

    def _arm(self, rnd: Round, due: float) -> None:
        rnd.due = due
        rnd.timer = self.clock.call_at(due, self._deadline, rnd, due)

    def _deadline(self, rnd: Round, due: float) -> None:
        rnd.timer = None
        self._last = max(self._last, due)
        if rnd.open:
            ok = rnd.job.rule.succeeds_at_deadline(rnd.participants, rnd.dispatched, rnd.responses)
            self._close(rnd, due, ok)

    def _resubmit(self, job: Job, due: float) -> None:
        job.resubmit = None
        self._last = max(self._last, due)
        prev = job.round
        assert prev is not None
        self._open(job, prev.idx, prev.participants, due, resubmission=True)

    # -- rounds --------------------------------------------------------------------------
    def _open(self, job: Job, idx: int, participants: int, now: float, resubmission: bool) -> Round:
        rule = job.rule
        rnd = Round(job, idx, participants, rule.request_size(participants),
                    rule.needed(participants), now)  # fmt: skip
        job.round = rnd
        self.listener.round_opened(rnd)
        self.manager.submit_request(job.job_id, rnd.demand, now, round_idx=idx)
        if self.recorder is not None:
            made = (
                rec.Resubmitted(job.job_id, idx, rnd.demand)
                if resubmission
                else rec.RoundOpened(job.job_id, idx, participants, rnd.demand, rnd.needed)
            )
            self.recorder.record(now, made)
        self._arm(rnd, now + rule.deadline_s)
        return rnd

    def _close(self, rnd: Round, now: float, success: bool) -> None:
        job = rnd.job
        rnd.open = False
        if rnd.timer is not None:
            self.clock.cancel(rnd.timer)
            rnd.timer = None
        self.manager.close_request(job.job_id, now)
        if self.recorder is not None:
            self.recorder.record(now, rec.RoundClosed(
                job.job_id, rnd.idx, success, rnd.dispatched, rnd.responses
            ))  # fmt: skip
        if not success:  # the retry is due before the listener hears (the store writes it)
            job.resubmit_at = now + self.config.resubmit_s
            job.resubmit = self.clock.call_at(job.resubmit_at, self._resubmit, job, job.resubmit_at)
            self.listener.round_closed(rnd, now, success=False)
            return
        self.listener.round_closed(rnd, now, success=True)
        if not rnd.last:
            self.listener.next_round(job, now)
        else:
            job.done = True
            del self._active[job.job_id]
            self.manager.job_finished(job.job_id, now)
            if self.recorder is not None:
                self.recorder.record(now, rec.JobFinished(job.job_id, job.rounds))
            self.listener.job_finished(job, now)
