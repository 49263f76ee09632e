"""The resource manager: the mechanism that carries out a Venn policy's plans.

It holds the state a real manager holds (registered jobs, open requests, the supply monitor,
response profiles) and exposes the two APIs of spec §2.2:

- job-facing: `register_job`, `submit_request`, `close_request` (a round closed or aborted:
  withdraw undispatched demand), `job_finished`, `report_response`;
- device-facing: `checkin(now, atom, capability, skip) -> job_id | None`.

On a trigger (submit, fully dispatched, close, finish, or `replan_period` seconds passing) it
marks the plan stale and asks the policy for a new one before the next check-in, so several
triggers at one instant cost one plan. The check-in path is a dict lookup and a short scan of
the plan's candidates. The simulator and the HTTP service (`kairos.venn.service`) drive this
same object; the policy never sees anything but `ManagerView` snapshots.
"""

from __future__ import annotations

import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from kairos.fl.requirements import Requirement, signature_of
from kairos.venn.plans import Plan
from kairos.venn.policy import DevicePolicy
from kairos.venn.supply import Supply, SupplyMonitor
from kairos.venn.view import ManagerView, Profile, RequestView, Tier


class _Ring:
    """The last `cap` (capability, response) samples, O(1) per sample."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.c = np.empty(cap)
        self.r = np.empty(cap)
        self.n = 0
        self.pos = 0
        self._snap: Profile | None = None

    def add(self, capability: float, response: float) -> None:
        self.c[self.pos] = capability
        self.r[self.pos] = response
        self.pos = (self.pos + 1) % self.cap
        self.n = min(self.n + 1, self.cap)
        self._snap = None

    def profile(self) -> Profile:
        """A read-only snapshot (copied, so later samples never change a view in hand)."""
        if self._snap is None:
            self._snap = Profile(self.c[: self.n].copy(), self.r[: self.n].copy())
        return self._snap


@dataclass
class _Job:
    job_id: str
    group: int
    arrival: float
    rounds: int | None
    deadline_s: float
    profile: _Ring
    served: int = 0
    attained_s: float = 0.0
    request: int | None = None  # the open request's id


@dataclass
class _Request:
    request_id: int
    job: _Job
    demand: int
    remaining: int
    submitted: float
    round_idx: int
    tier: Tier | None = None
    tier_decided: bool = False
    memo: float | None = None
    first_dispatch: float | None = None
    view: RequestView | None = None  # cached snapshot; None after any change


@dataclass
class ManagerStats:
    plans: int = 0
    plan_s: float = 0.0  # wall time spent in policy.plan (for the overhead figure)
    checkins: int = 0
    assigned: int = 0


class ResourceManager:
    def __init__(
        self,
        policy: DevicePolicy,
        requirements: Sequence[Requirement] = (),
        supply: Supply | None = None,
        replan_period_s: float = 600.0,
        profile_samples: int = 1000,
        pooled_samples: int = 5000,
    ) -> None:
        self.policy = policy
        self.requirements: list[Requirement] = list(requirements)
        self.supply: Supply = supply if supply is not None else SupplyMonitor()
        self.replan_period_s = replan_period_s
        self.profile_samples = profile_samples
        self._pooled = _Ring(pooled_samples)
        self._jobs: dict[str, _Job] = {}
        self._requests: dict[int, _Request] = {}
        self._next_id = 0
        self._plan: Plan = Plan()
        self._plan_t = -np.inf
        self._dirty = True
        self.stats = ManagerStats()

    # -- requirements and devices --------------------------------------------------------
    def group_of(self, requirement: Requirement | int) -> int:
        """The group (bit) of a requirement, registering it if new."""
        if isinstance(requirement, int):
            return requirement
        if requirement not in self.requirements:
            self.requirements.append(requirement)
        return self.requirements.index(requirement)

    def signature(self, attrs: Mapping[str, float]) -> int:
        """A device's atom from the attributes it reports (the service's check-in path)."""
        return signature_of(attrs, self.requirements)

    # -- job-facing API ------------------------------------------------------------------
    def register_job(
        self,
        job_id: str,
        requirement: Requirement | int,
        now: float,
        rounds: int | None = None,
        deadline_s: float = 600.0,
    ) -> None:
        if job_id in self._jobs:
            raise ValueError(f"job {job_id!r} is already registered")
        self._jobs[job_id] = _Job(
            job_id, self.group_of(requirement), now, rounds, deadline_s, _Ring(self.profile_samples)
        )

    def submit_request(self, job_id: str, demand: int, now: float, round_idx: int = 0) -> int:
        """Ask for `demand` devices; returns the request id. One open request per job."""
        job = self._job(job_id)
        if demand < 1:
            raise ValueError(f"job {job_id!r}: demand must be >= 1, got {demand}")
        if job.request is not None:
            raise ValueError(f"job {job_id!r} already has an open request; close it first")
        rid = self._next_id
        self._next_id += 1
        self._requests[rid] = _Request(rid, job, demand, demand, now, round_idx)
        job.request = rid
        self._dirty = True
        return rid

    def close_request(self, job_id: str, now: float) -> int:
        """The round closed or aborted: withdraw what is undispatched (returned)."""
        job = self._job(job_id)
        if job.request is None:
            return 0
        req = self._requests.pop(job.request)
        job.request = None
        if req.first_dispatch is not None:
            job.attained_s += now - req.first_dispatch
        self._dirty = True
        return req.remaining

    def job_finished(self, job_id: str, now: float) -> None:
        self.close_request(job_id, now)
        del self._jobs[job_id]
        self._dirty = True

    def report_response(self, job_id: str, capability: float, response_s: float) -> None:
        """A device finished a task of the job: profile its speed (for tiering)."""
        job = self._jobs.get(job_id)
        if job is not None:
            job.profile.add(capability, response_s)
            if job.request is not None:
                self._requests[job.request].view = None
        self._pooled.add(capability, response_s)

    # -- device-facing API ---------------------------------------------------------------
    def checkin(
        self, now: float, atom: int, capability: float = 1.0, skip: Collection[str] = ()
    ) -> str | None:
        """A device of `atom` is online: the job it should serve, or None. Jobs in `skip`
        are passed over (the device already serves their current round)."""
        self.stats.checkins += 1
        self.supply.record(atom, now)
        if self._dirty or now - self._plan_t >= self.replan_period_s:
            self.replan(now)
        requests = self._requests
        for rid in self._plan.candidates(atom):
            req = requests.get(rid)
            if req is None or req.remaining <= 0 or req.job.job_id in skip:
                continue
            tier = req.tier
            if tier is not None and not (tier[0] <= capability < tier[1]):
                continue
            req.remaining -= 1
            req.view = None
            if req.first_dispatch is None:
                req.first_dispatch = now
            job = req.job
            job.served += 1
            if req.remaining == 0:
                self._dirty = True
            self.stats.assigned += 1
            return job.job_id
        return None

    # -- planning ------------------------------------------------------------------------
    def view(self, now: float) -> ManagerView:
        pending = [r for r in self._requests.values() if r.remaining > 0]
        idle: dict[int, int] = {}
        busy = {r.job.job_id for r in pending}
        for job in self._jobs.values():
            if job.job_id not in busy:
                idle[job.group] = idle.get(job.group, 0) + 1
        return ManagerView(
            now=now,
            requests=tuple(self._request_view(r) for r in pending),
            rates=self.supply.rates(now),
            jobs_in_system=len(self._jobs),
            idle_jobs=idle,
            pooled=self._pooled.profile(),
        )

    def replan(self, now: float) -> Plan:
        view = self.view(now)
        start = time.perf_counter()
        plan = self.policy.plan(view)
        self.stats.plan_s += time.perf_counter() - start
        self.stats.plans += 1
        for rid, tier in plan.tiers.items():
            req = self._requests.get(rid)
            if req is not None and not req.tier_decided:
                req.tier, req.tier_decided, req.view = tier, True, None
        for rid, memo in plan.memos.items():
            if rid in self._requests:
                self._requests[rid].memo = memo
                self._requests[rid].view = None
        self._plan, self._plan_t, self._dirty = plan, now, False
        return plan

    @property
    def plan(self) -> Plan:
        return self._plan

    def open_requests(self) -> int:
        return len(self._requests)

    def _job(self, job_id: str) -> _Job:
        try:
            return self._jobs[job_id]
        except KeyError:
            raise KeyError(f"unknown job {job_id!r}; register it first") from None

    def _request_view(self, r: _Request) -> RequestView:
        """The request's snapshot, rebuilt only after it (or its job) changed."""
        if r.view is not None:
            return r.view
        job = r.job
        r.view = RequestView(
            r.request_id,
            job.job_id,
            job.group,
            job.arrival,
            r.submitted,
            r.demand,
            r.remaining,
            r.round_idx,
            job.rounds,
            job.served,
            job.attained_s,
            job.deadline_s,
            r.tier,
            r.tier_decided,
            r.memo,
            job.profile.profile(),
        )
        return r.view
