"""The service's logic, apart from HTTP: Venn's `Driver` on the wall clock, kept with the `Store`.

Rounds follow the driver's rule, the simulator's: a round succeeds when enough devices
respond; at its deadline it succeeds by the job's `RoundRule` verdict or aborts, and the
driver asks for the same round again `resubmit_s` later (a device that served the aborted
attempt is not asked again for that round). A job posts each next round itself.

Offers and the atom an accepted offer proves: `offers`.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kairos.fl.timing import RoundRule
from kairos.sim import AsyncioClock, Timers
from kairos.venn.driver import Driver, DriverConfig, Job, Round
from kairos.venn.manager import ResourceManager
from kairos.venn.policies.registry import make_policy
from kairos.venn.service.offers import (
    accepted_atom,
    offer_id,
    public_requirement,
    requirement_of,
)
from kairos.venn.service.store_api import JobRow, RoundRow, VennStore


class ServiceError(Exception):
    """A request the service refuses: HTTP status, message and the offending field."""

    def __init__(self, status: int, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.param = status, message, param


@dataclass
class Counters:
    checkins: int = 0
    offers: int = 0
    assigned: int = 0
    results: int = 0
    late_results: int = 0
    rounds_done: int = 0
    aborted: int = 0


def wall_clock() -> AsyncioClock:
    """The running asyncio loop's timers on Unix time, so times in the store mean the same to
    the next process on the same file."""
    loop = asyncio.get_running_loop()
    return AsyncioClock(loop, origin=loop.time() - time.time())


class VennService:
    """Venn's `Driver` on the wall clock, kept in step with the `Store`: every mutation is
    persisted before it is answered. A recorder set on the driver after construction records
    from there on: the `restored` jobs rebuilt from the file are not in it."""

    def __init__(
        self,
        store: VennStore,
        policy: str = "venn",
        clock: Timers | None = None,
        replan_period_s: float = 600.0,
        config: DriverConfig | None = None,
    ) -> None:
        self.store = store
        self.policy = policy
        self.clock = clock or wall_clock()
        self.config = config or DriverConfig(tell_rounds=True)
        manager = ResourceManager(make_policy(policy), replan_period_s=replan_period_s)
        self.driver = Driver(manager, self.clock, self, self.config)
        self.jobs: dict[str, JobRow] = {}
        self.counters = Counters()
        self.restored = self._rebuild()

    @property
    def manager(self) -> ResourceManager:
        return self.driver.manager

    def _now(self) -> float:
        """The time of a request: every deadline and resubmission due by then runs first."""
        return self.driver.advance(self.clock.now())

    def _rebuild(self) -> int:
        """Re-register every unfinished job and restore its round where the file left it."""
        now = self.clock.now()
        for job in self.store.jobs(active_only=True):
            self.jobs[job.job_id] = job
            self.driver.register(job.created, job.job_id, requirement_of(job.requirement),
                                 job.demand, job.rounds, _rule(job))  # fmt: skip
            rnd = self.store.open_round(job.job_id)
            if rnd is not None:
                self.driver.restore(now, job.job_id, rnd.round_idx, rnd.demand, rnd.opened,
                                    rnd.dispatched, rnd.responses)  # fmt: skip
        return len(self.jobs)

    # -- the driver's listener: what its decisions change in the store -------------------
    def round_opened(self, rnd: Round) -> None:
        """Nothing to write: a job's round was stored when posted, a retry when it aborted."""

    def round_closed(self, rnd: Round, now: float, success: bool) -> None:
        job = self.jobs[rnd.job.job_id]
        if not success:
            self.counters.aborted += 1
            self.store.reopen(job.job_id, rnd.idx, rnd.job.resubmit_at)
            return
        self.store.close_round(job.job_id, rnd.idx, now, rnd.last)
        self.counters.rounds_done += 1
        job.rounds_done += 1
        if rnd.last:
            job.finished = now

    def next_round(self, job: Job, now: float) -> None:
        """Nothing to do: the job posts its next round when it is ready."""

    def job_finished(self, job: Job, now: float) -> None:
        """Nothing to write: the last round's close finished the job in the store."""

    # -- job-facing ----------------------------------------------------------------------
    def register(
        self,
        name: str,
        requirement: Mapping[str, float],
        demand: int,
        rounds: int,
        deadline_s: float,
        min_resp_frac: float,
        key: str | None = None,
        fingerprint: str = "",
    ) -> tuple[JobRow, bool]:
        """The new job, and False; or, for an idempotency `key` seen before with the same
        `fingerprint` (the request body), the job that first registration made, and True."""
        if key is not None:
            seen = self.store.registration(key)
            if seen is not None:
                if seen[0] != fingerprint:
                    raise ServiceError(
                        422,
                        f"Idempotency-Key '{key}' was used for a different job registration; "
                        "use a new key for a new job.",
                        param="Idempotency-Key",
                    )
                return self.job(seen[1]), True
        now = self._now()
        job = JobRow(
            f"job-{uuid.uuid4().hex[:12]}",
            name,
            public_requirement(requirement),
            demand,
            rounds,
            deadline_s,
            min_resp_frac,
            now,
            0,
            None,
        )
        self.store.add_job(job, key, fingerprint)
        self.jobs[job.job_id] = job
        self.driver.register(now, job.job_id, requirement_of(job.requirement), demand, rounds,
                             _rule(job))  # fmt: skip
        return job, False

    def job(self, job_id: str) -> JobRow:
        job = self.jobs.get(job_id) or self.store.job(job_id)
        if job is None:
            raise ServiceError(404, f"Unknown job '{job_id}'; register it with POST /v1/jobs.")
        return job

    @property
    def rounds(self) -> dict[str, RoundRow]:
        """Each job's open round as the store holds it."""
        rows = {job_id: self.open_round(job_id) for job_id in self.driver.active}
        return {job_id: row for job_id, row in rows.items() if row is not None}

    def open_round(self, job_id: str) -> RoundRow | None:
        """The job's open round as the store holds it; a round waiting to be asked for again
        after an abort is open, with nothing dispatched yet."""
        job = self.driver.jobs.get(job_id)
        rnd = job.round if job is not None else None
        if job is None or job.done or rnd is None:
            return None
        if job.resubmit is not None:
            return RoundRow(job_id, rnd.idx, rnd.participants, rnd.needed, job.resubmit_at,
                            0, 0, None)  # fmt: skip
        if rnd.open:
            return RoundRow(job_id, rnd.idx, rnd.participants, rnd.needed, rnd.submit,
                            rnd.dispatched, rnd.responses, None)  # fmt: skip
        return None

    def post_round(self, job_id: str, round_idx: int | None, demand: int | None) -> RoundRow:
        job = self.job(job_id)
        if job.finished is not None:
            raise ServiceError(409, f"Job '{job_id}' has finished all {job.rounds} rounds.")
        now = self._now()
        current = self.open_round(job_id)
        if current is not None:
            r = current.round_idx
            raise ServiceError(409, f"Job '{job_id}' already has round {r} open.", "round")
        if round_idx is not None and round_idx != job.rounds_done:
            raise ServiceError(
                409,
                f"The next round of job '{job_id}' is {job.rounds_done}, not {round_idx}.",
                "round",
            )
        size = demand if demand is not None else job.demand
        row = RoundRow(job_id, job.rounds_done, size, _rule(job).needed(size), now, 0, 0, None)
        self.store.open(row)
        self.driver.submit(now, job_id, row.round_idx, size)
        return row

    # -- device-facing -------------------------------------------------------------------
    def offers(self) -> list[dict[str, Any]]:
        """The jobs that want devices now, strictest requirement first."""
        self.counters.checkins += 1
        self._now()
        out: list[dict[str, Any]] = []
        for job_id, job in self.driver.active.items():
            rnd = job.round
            if rnd is not None and rnd.open and rnd.dispatched < rnd.demand:
                req = self.jobs[job_id].requirement
                out.append({"offer_id": offer_id(job_id, rnd.idx), "requirement": req})
        out.sort(key=lambda o: sum(o["requirement"].values()), reverse=True)
        self.counters.offers += len(out)
        return out

    def accept(self, oid: str, device_id: str, capability: float) -> dict[str, Any]:
        job_id, _, r = oid.rpartition(".r")
        job = self.jobs.get(job_id)
        if job is None or not r.isdigit():
            raise ServiceError(404, f"Unknown offer '{oid}'; check in again for current offers.")
        now = self._now()
        rounds = self.rounds
        rnd = rounds.get(job_id)
        if rnd is None or rnd.round_idx != int(r):
            raise ServiceError(409, f"Offer '{oid}' has expired; check in again for new offers.")
        atom = accepted_atom(self.manager, job.requirement)
        # a device serves a round once: the manager passes over jobs whose current round it
        # already serves and picks among the rest (the accepted offer is a proof of
        # eligibility, not a choice of job)
        serving = {
            j
            for j, open_round in rounds.items()
            if self.store.assignment(j, open_round.round_idx, device_id) is not None
        }
        target = self.driver.checkin(now, device_id, atom, capability, serving)
        if target is None:
            if serving:
                return {
                    "assigned": False,
                    "reason": "this device already serves every round that needs it",
                }
            return {"assigned": False, "reason": "no job needs this device right now"}
        chosen = target.job.job_id
        self.store.assign(chosen, target.idx, device_id, now, capability)
        self.counters.assigned += 1
        return {
            "assigned": True,
            "job_id": chosen,
            "round": target.idx,
            "deadline_s": self.jobs[chosen].deadline_s,
        }

    def result(self, device_id: str, job_id: str, round_idx: int) -> dict[str, Any]:
        self.job(job_id)
        a = self.store.assignment(job_id, round_idx, device_id)
        if a is None:
            raise ServiceError(
                404,
                f"Device '{device_id}' has no assignment for job '{job_id}' round {round_idx}.",
                "device_id",
            )
        if a["responded"] is not None:
            self.counters.late_results += 1
            return {"accepted": False, "reason": "this result was already reported"}
        now = self._now()
        served = self._attempt(job_id, round_idx, a["assigned"])
        response_s = max(now - a["assigned"], 1e-6)
        if served is None:
            self.driver.respond(now, job_id, round_idx, None, a["capability"], response_s,
                                device_id)  # fmt: skip
            self.counters.late_results += 1
            return {"accepted": False, "reason": "the round had already completed"}
        self.store.respond(job_id, round_idx, device_id, now)
        self.counters.results += 1
        self.driver.respond(now, job_id, round_idx, served, a["capability"], response_s,
                            device_id)  # fmt: skip
        close = not served.open
        return {"accepted": True, "round_complete": close, "job_finished": close and served.last}

    def _attempt(self, job_id: str, round_idx: int, assigned: float) -> Round | None:
        """The open attempt a device assigned at `assigned` serves: None once that round
        closed or the attempt it served aborted (its assignment predates the retry)."""
        job = self.driver.jobs.get(job_id)
        rnd = job.round if job is not None else None
        if rnd is None or not rnd.open or rnd.idx != round_idx or assigned < rnd.submit:
            return None
        return rnd

    def describe(self, job: JobRow) -> dict[str, Any]:
        return job_view(job, self.open_round(job.job_id))


def log_meta(service: VennService) -> dict[str, Any]:
    """What a replay of the service's decision log needs besides the log's entries."""
    return {
        "policy": service.policy,
        "replan_period_s": service.manager.replan_period_s,
        "driver": service.config.model_dump(),
        "restored_jobs": service.restored,
    }


def _rule(job: JobRow) -> RoundRule:
    return RoundRule(deadline_s=job.deadline_s, min_resp_frac=job.min_resp_frac)


def job_view(job: JobRow, rnd: RoundRow | None) -> dict[str, Any]:
    """A job as the API shows it (`rnd`: its open round, if any), in both services."""
    state = "finished" if job.finished is not None else "running" if rnd else "waiting"
    return {
        "id": job.job_id,
        "name": job.name,
        "requirement": job.requirement,
        "demand": job.demand,
        "rounds": job.rounds,
        "rounds_done": job.rounds_done,
        "deadline_s": job.deadline_s,
        "min_resp_frac": job.min_resp_frac,
        "state": state,
        "round": None
        if rnd is None
        else {
            "round": rnd.round_idx,
            "demand": rnd.demand,
            "needed": rnd.needed,
            "dispatched": rnd.dispatched,
            "responses": rnd.responses,
        },
    }
