"""The service's logic, apart from HTTP: a `ResourceManager` kept in step with the `Store`.

Job offers keep devices' attributes private. A check-in carries only an opaque device id and
gets the *public* requirements of the jobs that want devices now (strictest first). The device
tests them locally and accepts one it meets. Accepting offer R proves the device meets R and
every requirement R implies (each threshold of R at least as high), so the service hands the
manager that set of requirements as the device's atom: a lower bound of its true atom, never a
wrong one, so the manager never assigns a device to a job it cannot serve.

An offer id is `<job id>.r<round>`: stateless, so offers outlive a restart.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from kairos.fl.requirements import Requirement
from kairos.fl.timing import RoundRule
from kairos.venn.manager import ResourceManager
from kairos.venn.policies.registry import make_policy
from kairos.venn.service.store import JobRow, RoundRow, Store

THRESHOLDS = ("min_cpu_ghz", "min_ram_gb", "min_fp16_mem_mb", "min_android_os")


class ServiceError(Exception):
    """A request the service refuses: HTTP status, message and the offending field."""

    def __init__(self, status: int, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.param = status, message, param


def requirement_of(thresholds: Mapping[str, float]) -> Requirement:
    """Equal thresholds make equal requirements (one group), whatever the jobs' names."""
    values = {k: float(thresholds.get(k, 0.0)) for k in THRESHOLDS}
    name = ",".join(f"{k[4:]}>={v:g}" for k, v in values.items() if v > 0) or "any"
    return Requirement(name=name, **values)


def accepted_atom(manager: ResourceManager, thresholds: Mapping[str, float]) -> int:
    """The atom of a device that accepted an offer with these thresholds: it met them, so it
    is eligible wherever a device with exactly those attributes would be."""
    return manager.signature({k.removeprefix("min_"): v for k, v in thresholds.items()})


def offer_id(job_id: str, round_idx: int) -> str:
    return f"{job_id}.r{round_idx}"


@dataclass
class Counters:
    checkins: int = 0
    offers: int = 0
    assigned: int = 0
    results: int = 0
    late_results: int = 0
    rounds_done: int = 0
    redispatched: int = 0


class VennService:
    """Owns the manager and the store; every mutation is persisted before it is answered."""

    def __init__(
        self,
        store: Store,
        policy: str = "venn",
        clock: Callable[[], float] = time.time,
        replan_period_s: float = 600.0,
    ) -> None:
        self.store = store
        self.policy = policy
        self.clock = clock
        self.manager = ResourceManager(make_policy(policy), replan_period_s=replan_period_s)
        self.jobs: dict[str, JobRow] = {}
        self.rounds: dict[str, RoundRow] = {}
        self.counters = Counters()
        self._last_tick = -1.0
        self._rebuild()

    def _rebuild(self) -> None:
        """Re-register every unfinished job and re-submit the undispatched part of its round."""
        now = self.clock()
        for job in self.store.jobs(active_only=True):
            self.jobs[job.job_id] = job
            req = requirement_of(job.requirement)
            self.manager.register_job(job.job_id, req, job.created, job.rounds, job.deadline_s)
            rnd = self.store.open_round(job.job_id)
            if rnd is not None:
                self.rounds[job.job_id] = rnd
                if rnd.demand > rnd.dispatched:
                    left = rnd.demand - rnd.dispatched
                    self.manager.submit_request(job.job_id, left, now, rnd.round_idx)

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
        now = self.clock()
        job = JobRow(
            f"job-{uuid.uuid4().hex[:12]}",
            name,
            {k: float(requirement.get(k, 0.0)) for k in THRESHOLDS},
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
        self.manager.register_job(
            job.job_id, requirement_of(job.requirement), now, rounds, deadline_s
        )
        return job, False

    def job(self, job_id: str) -> JobRow:
        job = self.jobs.get(job_id) or self.store.job(job_id)
        if job is None:
            raise ServiceError(404, f"Unknown job '{job_id}'; register it with POST /v1/jobs.")
        return job

    def post_round(self, job_id: str, round_idx: int | None, demand: int | None) -> RoundRow:
        job = self.job(job_id)
        if job.finished is not None:
            raise ServiceError(409, f"Job '{job_id}' has finished all {job.rounds} rounds.")
        if job_id in self.rounds:
            r = self.rounds[job_id].round_idx
            raise ServiceError(409, f"Job '{job_id}' already has round {r} open.", "round")
        if round_idx is not None and round_idx != job.rounds_done:
            raise ServiceError(
                409,
                f"The next round of job '{job_id}' is {job.rounds_done}, not {round_idx}.",
                "round",
            )
        size = demand if demand is not None else job.demand
        rule = RoundRule(deadline_s=job.deadline_s, min_resp_frac=job.min_resp_frac)
        now = self.clock()
        rnd = RoundRow(job_id, job.rounds_done, size, rule.needed(size), now, 0, 0, None)
        self.store.open(rnd)
        self.rounds[job_id] = rnd
        self.manager.submit_request(job_id, size, now, rnd.round_idx)
        return rnd

    # -- device-facing -------------------------------------------------------------------
    def offers(self) -> list[dict[str, Any]]:
        """The jobs that want devices now, strictest requirement first."""
        self.counters.checkins += 1
        self.tick()
        out: list[dict[str, Any]] = []
        for job_id, rnd in self.rounds.items():
            if rnd.dispatched < rnd.demand:
                req = self.jobs[job_id].requirement
                out.append({"offer_id": offer_id(job_id, rnd.round_idx), "requirement": req})
        out.sort(key=lambda o: sum(o["requirement"].values()), reverse=True)
        self.counters.offers += len(out)
        return out

    def accept(self, oid: str, device_id: str, capability: float) -> dict[str, Any]:
        job_id, _, r = oid.rpartition(".r")
        job = self.jobs.get(job_id)
        if job is None or not r.isdigit():
            raise ServiceError(404, f"Unknown offer '{oid}'; check in again for current offers.")
        rnd = self.rounds.get(job_id)
        if rnd is None or rnd.round_idx != int(r):
            raise ServiceError(409, f"Offer '{oid}' has expired; check in again for new offers.")
        atom = accepted_atom(self.manager, job.requirement)
        now = self.clock()
        # a device serves a round once: the manager passes over jobs whose current round it
        # already serves and picks among the rest (the accepted offer is a proof of
        # eligibility, not a choice of job)
        serving = {
            j
            for j, open_round in self.rounds.items()
            if self.store.assignment(j, open_round.round_idx, device_id) is not None
        }
        chosen = self.manager.checkin(now, atom, capability, skip=serving)
        target = self.rounds.get(chosen) if chosen is not None else None
        if chosen is None or target is None:  # (target: None only if manager and rounds part)
            if serving:
                return {
                    "assigned": False,
                    "reason": "this device already serves every round that needs it",
                }
            return {"assigned": False, "reason": "no job needs this device right now"}
        self.store.assign(chosen, target.round_idx, device_id, now, capability)
        target.dispatched += 1
        self.counters.assigned += 1
        return {
            "assigned": True,
            "job_id": chosen,
            "round": target.round_idx,
            "deadline_s": self.jobs[chosen].deadline_s,
        }

    def result(self, device_id: str, job_id: str, round_idx: int) -> dict[str, Any]:
        job = self.job(job_id)
        a = self.store.assignment(job_id, round_idx, device_id)
        if a is None:
            raise ServiceError(
                404,
                f"Device '{device_id}' has no assignment for job '{job_id}' round {round_idx}.",
                "device_id",
            )
        rnd = self.rounds.get(job_id)
        if a["responded"] is not None or rnd is None or rnd.round_idx != round_idx:
            self.counters.late_results += 1
            return {"accepted": False, "reason": "the round had already completed"}
        now = self.clock()
        self.manager.report_response(job_id, a["capability"], max(now - a["assigned"], 1e-6))
        close = rnd.responses + 1 >= rnd.needed
        finish = close and job.rounds_done + 1 >= job.rounds
        self.store.respond(job_id, round_idx, device_id, now, close, finish)
        self.counters.results += 1
        rnd.responses += 1
        if close:
            self.counters.rounds_done += 1
            job.rounds_done += 1
            del self.rounds[job_id]
            self.manager.close_request(job_id, now)
            if finish:
                job.finished = now
                self.manager.job_finished(job_id, now)
        return {"accepted": True, "round_complete": close, "job_finished": finish}

    def tick(self) -> None:
        """At most once a second: re-dispatch rounds that passed their deadline short."""
        now = self.clock()
        if now - self._last_tick < 1.0:
            return
        self._last_tick = now
        for job_id, rnd in list(self.rounds.items()):
            job = self.jobs[job_id]
            if now - rnd.opened > job.deadline_s and rnd.responses < rnd.needed:
                self.manager.close_request(job_id, now)
                self.store.redispatch(job_id, rnd.round_idx, now)
                rnd.opened, rnd.dispatched = now, rnd.responses
                self.manager.submit_request(job_id, rnd.demand - rnd.responses, now, rnd.round_idx)
                self.counters.redispatched += 1

    def describe(self, job: JobRow) -> dict[str, Any]:
        rnd = self.rounds.get(job.job_id)
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
