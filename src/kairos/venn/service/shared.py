"""A stateless Venn front-end: one of several `kairos venn serve` processes on one database.

Nothing a front-end holds can contradict another: the database is the state, and every change
that guards an invariant is one guarded write there (`store_api`): a round is opened once, a
device assigned once per round and never past the round's demand, a response counted once and
the round closed by the response that reaches `needed`, and a deadline judged once by the
job's `RoundRule` (the driver's rule; aborts reopen the round `resubmit_s` after its deadline).
So a device may check in at any front-end, and a front-end killed at any instant loses only
the answer it was writing, never a committed assignment or response.

What a front-end keeps is a cache: the latest snapshot of the unfinished jobs and their open
rounds (one read every `refresh_s`, off the request path) mirrored into a `ResourceManager`
that runs the policy. The policy's input is the database's: the open requests and their
undispatched demand. A check-in answers offers from the snapshot (no round trip); accepting one
is one round trip (the guarded assignment); a result is one. A stale snapshot can pick a round
another front-end just filled: the database refuses it (`Assign.FULL`), the device is told to
check in again, and `counters.conflicts` counts it.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from kairos.venn.manager import ResourceManager
from kairos.venn.policies.registry import make_policy
from kairos.venn.service.core import Counters, ServiceError, job_view
from kairos.venn.service.offers import (
    accepted_atom,
    offer_id,
    public_requirement,
    requirement_of,
)
from kairos.venn.service.store_api import (
    Assign,
    JobRow,
    KeyReusedError,
    OpenJob,
    Respond,
    RoundRow,
    VennStore,
)

Request = tuple[int, float, int]  # (round, opened, undispatched demand) as mirrored


class SharedService:
    """The front-end's logic apart from HTTP. `tick` (the app calls it every `refresh_s`)
    judges due deadlines and refreshes the snapshot."""

    def __init__(
        self,
        store: VennStore,
        policy: str = "venn",
        replan_period_s: float = 600.0,
        resubmit_s: float = 0.1,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.policy = policy
        self.resubmit_s = resubmit_s
        self.clock = clock
        self.manager = ResourceManager(make_policy(policy), replan_period_s=replan_period_s)
        self.jobs: dict[str, JobRow] = {}  # unfinished, as of the last snapshot
        self.rounds: dict[str, RoundRow] = {}  # their open rounds
        self._mirrored: dict[str, Request | None] = {}
        self.counters = Counters()
        self.conflicts = 0  # assignments refused because the cached round had filled
        self.tick()

    # -- the cache -----------------------------------------------------------------------
    def tick(self) -> None:
        """Refresh the snapshot (one round trip); judge deadlines only when it shows one due
        (a due attempt is already closed to assignments and responses, judged or not)."""
        now = self.clock()
        snapshot = self.store.snapshot()
        due = any(e.round is not None and e.round.opened + e.job.deadline_s <= now
                  for e in snapshot)  # fmt: skip
        if due:
            for _, ok in self.store.judge_deadlines(now, self.resubmit_s):
                if ok:
                    self.counters.rounds_done += 1
                else:
                    self.counters.aborted += 1
            snapshot = self.store.snapshot()
        self._mirror(snapshot, now)

    def _mirror(self, snapshot: list[OpenJob], now: float) -> None:
        """Bring the manager's jobs and requests to the snapshot: a request changes when its
        attempt or its undispatched demand in the database differs from what it mirrors."""
        told = set()
        for entry in snapshot:
            job, rnd = entry.job, entry.round
            told.add(job.job_id)
            if job.job_id not in self._mirrored:
                self.manager.register_job(job.job_id, requirement_of(job.requirement),
                                          job.created, job.rounds, job.deadline_s)  # fmt: skip
                self._mirrored[job.job_id] = None
            self.jobs[job.job_id] = job
            want: Request | None = None
            if rnd is not None and rnd.opened <= now and rnd.dispatched < rnd.demand:
                want = (rnd.round_idx, rnd.opened, rnd.demand - rnd.dispatched)
            if want != self._mirrored[job.job_id]:
                self.manager.close_request(job.job_id, now)
                if want is not None:
                    self.manager.submit_request(job.job_id, want[2], now, want[0])
                self._mirrored[job.job_id] = want
        for gone in set(self._mirrored) - told:
            self.manager.job_finished(gone, now)
            del self._mirrored[gone]
            self.jobs.pop(gone, None)
        self.rounds = {e.job.job_id: e.round for e in snapshot if e.round is not None}

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
        job = JobRow(f"job-{uuid.uuid4().hex[:12]}", name,
                     public_requirement(requirement), demand, rounds,
                     deadline_s, min_resp_frac, self.clock(), 0, None)  # fmt: skip
        try:
            return self.store.register(job, key, fingerprint)
        except KeyReusedError as exc:
            raise ServiceError(422, str(exc), param="Idempotency-Key") from None

    def job(self, job_id: str) -> JobRow:
        job = self.store.job(job_id)
        if job is None:
            raise ServiceError(404, f"Unknown job '{job_id}'; register it with POST /v1/jobs.")
        return job

    def open_round(self, job_id: str) -> RoundRow | None:
        return self.store.open_round(job_id)

    def post_round(self, job_id: str, round_idx: int | None, demand: int | None) -> RoundRow:
        job = self.job(job_id)
        if job.finished is not None:
            raise ServiceError(409, f"Job '{job_id}' has finished all {job.rounds} rounds.")
        if round_idx is not None and round_idx != job.rounds_done:
            raise ServiceError(
                409,
                f"The next round of job '{job_id}' is {job.rounds_done}, not {round_idx}.",
                "round",
            )
        size = demand if demand is not None else job.demand
        row = RoundRow(job_id, job.rounds_done, size, job.rule.needed(size), self.clock(), 0, 0,
                       None)  # fmt: skip
        if not self.store.try_open(row):
            current = self.store.open_round(job_id)
            r = current.round_idx if current is not None else job.rounds_done
            raise ServiceError(409, f"Job '{job_id}' already has round {r} open.", "round")
        self.tick()  # this front-end offers the round at once (the others within refresh_s)
        return row

    # -- device-facing -------------------------------------------------------------------
    def offers(self) -> list[dict[str, Any]]:
        """The jobs that want devices, from the snapshot: no database round trip."""
        self.counters.checkins += 1
        now = self.clock()
        out: list[dict[str, Any]] = []
        for job_id, want in self._mirrored.items():
            job = self.jobs.get(job_id)
            if want is not None and want[1] <= now and want[2] > 0 and job is not None:
                out.append({"offer_id": offer_id(job_id, want[0]), "requirement": job.requirement})
        out.sort(key=lambda o: sum(o["requirement"].values()), reverse=True)
        self.counters.offers += len(out)
        return out

    def accept(self, oid: str, device_id: str, capability: float) -> dict[str, Any]:
        """The policy picks the job from the mirror; one guarded write makes it so. A device
        the database finds already serving the picked round is offered the policy's next
        pick once more: at most two round trips."""
        job_id, _, r = oid.rpartition(".r")
        job = self.jobs.get(job_id)
        if job is None or not r.isdigit():
            raise ServiceError(404, f"Unknown offer '{oid}'; check in again for current offers.")
        want = self._mirrored.get(job_id)
        if want is None or want[0] != int(r):
            raise ServiceError(409, f"Offer '{oid}' has expired; check in again for new offers.")
        now = self.clock()
        atom = accepted_atom(self.manager, job.requirement)
        serving: set[str] = set()
        for trip in range(3):
            chosen = self.manager.checkin(now, atom, capability, serving)
            target = self._mirrored.get(chosen) if chosen is not None else None
            if chosen is None or target is None:
                break
            if trip == 2:  # a third pick: not tried here, left for the device's next check-in
                self._reset(chosen, target, now)
                return {"assigned": False, "reason": "check in again for another round"}
            got = self.store.try_assign(chosen, target[0], device_id, now, capability)
            if got is Assign.ASSIGNED:
                self._mirrored[chosen] = (target[0], target[1], target[2] - 1)
                self.counters.assigned += 1
                return {"assigned": True, "job_id": chosen, "round": target[0],
                        "deadline_s": self.jobs[chosen].deadline_s}  # fmt: skip
            if got is not Assign.SERVING:  # filled or closed at another front-end
                self._reset(chosen, None, now)
                self.conflicts += 1
                return {"assigned": False, "reason": "that round filled; check in again"}
            self._reset(chosen, target, now)  # the round keeps its room for other devices
            serving.add(chosen)
        if serving:
            return {
                "assigned": False,
                "reason": "this device already serves every round that needs it",
            }
        return {"assigned": False, "reason": "no job needs this device right now"}

    def _reset(self, job_id: str, request: Request | None, now: float) -> None:
        """Set the mirror's request for `job_id` back to `request` (None: none), undoing a
        pick the database did not make."""
        self.manager.close_request(job_id, now)
        if request is not None:
            self.manager.submit_request(job_id, request[2], now, request[0])
        self._mirrored[job_id] = request

    def result(self, device_id: str, job_id: str, round_idx: int) -> dict[str, Any]:
        got = self.store.try_respond(job_id, round_idx, device_id, self.clock())
        if got is Respond.UNKNOWN:
            raise ServiceError(
                404,
                f"Device '{device_id}' has no assignment for job '{job_id}' round {round_idx}.",
                "device_id",
            )
        if got is Respond.DUPLICATE:
            self.counters.late_results += 1
            return {"accepted": False, "reason": "this result was already reported"}
        if got is Respond.LATE:
            self.counters.late_results += 1
            return {"accepted": False, "reason": "the round had already completed"}
        self.counters.results += 1
        close = got is not Respond.COUNTED
        self.counters.rounds_done += close
        return {"accepted": True, "round_complete": close, "job_finished": got is Respond.FINISHED}

    def describe(self, job: JobRow) -> dict[str, Any]:
        rnd = None if job.finished is not None else self.store.open_round(job.job_id)
        return job_view(job, rnd)
