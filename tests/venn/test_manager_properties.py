"""Property tests of the Venn resource manager: random sequences of register / submit /
check-in / close / finish / report, under every policy, checked against a small model.

What the manager promises (its docstring and `plans.py`), checked after every step:
- a device goes only to a job whose requirement it meets (bit `group` of its atom), that has an
  open request with undispatched demand, that is not in `skip`, and whose tier (if decided)
  admits the device's capability;
- a request never gets more devices than it asked for: `close_request` returns exactly what is
  left, and the view's `remaining` is demand minus what was dispatched (never negative);
- every dispatched device is counted once: per job (`served`), in `stats.assigned`, and in the
  request's remaining demand;
- the ordered and random policies without tiers are work-conserving: a device that some
  pending request could take is never sent away.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    consumes,
    initialize,
    invariant,
    rule,
)

from kairos.venn.manager import ResourceManager
from kairos.venn.policies import POLICIES, make_policy
from kairos.venn.supply import StaticSupply
from kairos.venn.view import eligible

GROUPS = 3
# Policies whose plans list every eligible pending request and never tier: a device that any
# pending request could take must be dispatched.
WORK_CONSERVING = {"fifo", "srsf", "las", "random", "random-pure", "random-job"}


@dataclass
class ModelRequest:
    rid: int
    demand: int
    round_idx: int
    dispatched: int = 0


@dataclass
class ModelJob:
    group: int
    request: ModelRequest | None = None
    served: int = 0
    rounds_submitted: int = 0


@dataclass
class Model:
    jobs: dict[str, ModelJob] = field(default_factory=dict)
    finished_served: int = 0  # devices the finished jobs received
    checkins: int = 0
    assigned: int = 0
    rids: set[int] = field(default_factory=set)


class ManagerMachine(RuleBasedStateMachine):
    jobs = Bundle("jobs")

    def __init__(self) -> None:
        super().__init__()
        self.model = Model()
        self.now = 0.0
        self.policy = ""
        self.mgr: ResourceManager | None = None
        self.next_job = 0

    @initialize(policy=st.sampled_from(POLICIES), seed=st.integers(0, 2**16), static=st.booleans())
    def start(self, policy: str, seed: int, static: bool) -> None:
        self.policy = policy
        # the supply monitor as served, or a steady supply of every atom;
        # a short re-plan period, so time steps also trigger periodic re-plans
        supply = StaticSupply({a: 0.5 for a in range(2**GROUPS)}) if static else None
        self.mgr = ResourceManager(
            make_policy(policy, np.random.default_rng(seed)), supply=supply, replan_period_s=50.0
        )

    @property
    def m(self) -> ResourceManager:
        assert self.mgr is not None
        return self.mgr

    # -- job-facing ----------------------------------------------------------------------
    @rule(
        target=jobs,
        group=st.integers(0, GROUPS - 1),
        rounds=st.none() | st.integers(1, 5),
        deadline=st.floats(10.0, 1e6),
    )
    def register(self, group: int, rounds: int | None, deadline: float) -> str:
        job_id = f"j{self.next_job}"
        self.next_job += 1
        self.m.register_job(job_id, group, self.now, rounds=rounds, deadline_s=deadline)
        self.model.jobs[job_id] = ModelJob(group)
        with pytest.raises(ValueError, match="already registered"):
            self.m.register_job(job_id, group, self.now)
        return job_id

    @rule(job=jobs, demand=st.integers(-1, 6))
    def submit(self, job: str, demand: int) -> None:
        mj = self.model.jobs.get(job)
        if mj is None:  # finished: the manager no longer knows it
            with pytest.raises(KeyError, match="register it first"):
                self.m.submit_request(job, max(demand, 1), self.now)
            return
        if demand < 1:
            with pytest.raises(ValueError, match="demand must be >= 1"):
                self.m.submit_request(job, demand, self.now)
            return
        if mj.request is not None:
            with pytest.raises(ValueError, match="already has an open request"):
                self.m.submit_request(job, demand, self.now)
            return
        rid = self.m.submit_request(job, demand, self.now, round_idx=mj.rounds_submitted)
        assert rid not in self.model.rids  # request ids are never reused
        self.model.rids.add(rid)
        mj.request = ModelRequest(rid, demand, mj.rounds_submitted)
        mj.rounds_submitted += 1

    @rule(job=jobs)
    def close(self, job: str) -> None:
        mj = self.model.jobs.get(job)
        if mj is None:
            return
        left = self.m.close_request(job, self.now)
        expected = 0 if mj.request is None else mj.request.demand - mj.request.dispatched
        assert left == expected >= 0
        mj.request = None

    @rule(job=consumes(jobs))
    def finish(self, job: str) -> None:
        if job not in self.model.jobs:
            return
        self.m.job_finished(job, self.now)
        self.model.finished_served += self.model.jobs.pop(job).served

    @rule(
        job=jobs,
        capability=st.floats(0.1, 4.0),
        response=st.floats(0.5, 500.0),
    )
    def report(self, job: str, capability: float, response: float) -> None:
        self.m.report_response(job, capability, response)  # unknown (finished) jobs: ignored

    @rule(job=jobs, n=st.integers(20, 60), scale=st.floats(50.0, 5000.0), seed=st.integers(0, 99))
    def report_many(self, job: str, n: int, scale: float, seed: int) -> None:
        """A batch of responses, slower for slower devices: enough samples for tiering."""
        rng = np.random.default_rng(seed)
        for cap in rng.uniform(0.1, 4.0, size=n):
            self.m.report_response(job, float(cap), scale / float(cap))

    @rule(dt=st.floats(0.0, 120.0))
    def advance(self, dt: float) -> None:
        self.now += dt

    # -- device-facing -------------------------------------------------------------------
    @rule(
        atom=st.integers(0, 2**GROUPS - 1),
        capability=st.floats(0.1, 4.0),
        skip=st.sets(st.integers(0, 7), max_size=3),
    )
    def checkin(self, atom: int, capability: float, skip: set[int]) -> None:
        skipped = {f"j{i}" for i in skip}
        got = self.m.checkin(self.now, atom, capability, skip=skipped)
        self.model.checkins += 1
        takers = [
            job_id
            for job_id, mj in self.model.jobs.items()
            if mj.request is not None
            and mj.request.dispatched < mj.request.demand
            and eligible(atom, mj.group)
            and job_id not in skipped
        ]
        if got is None:
            if self.policy in WORK_CONSERVING:
                assert takers == [], f"{self.policy} sent away a device that {takers} could take"
            return
        assert got in takers, (got, takers)
        mj = self.model.jobs[got]
        assert mj.request is not None
        tier = self.m._requests[mj.request.rid].tier  # decided at the plan before dispatch
        if tier is not None:
            assert tier[0] <= capability < tier[1], (tier, capability)
        mj.request.dispatched += 1
        mj.served += 1
        self.model.assigned += 1

    # -- invariants ----------------------------------------------------------------------
    @invariant()
    def accounts_balance(self) -> None:
        view = self.m.view(self.now)
        pending = {r.request_id: r for r in view.requests}
        want = {
            mj.request.rid: (job_id, mj)
            for job_id, mj in self.model.jobs.items()
            if mj.request is not None and mj.request.dispatched < mj.request.demand
        }
        assert set(pending) == set(want)
        for rid, r in pending.items():
            job_id, mj = want[rid]
            assert mj.request is not None
            assert r.job_id == job_id and r.group == mj.group
            assert r.demand == mj.request.demand and r.round_idx == mj.request.round_idx
            assert r.remaining == mj.request.demand - mj.request.dispatched > 0
            assert r.served == mj.served and r.attained_s >= 0
            assert r.started == (mj.request.dispatched > 0)
        assert self.m.open_requests() == sum(
            mj.request is not None for mj in self.model.jobs.values()
        )
        assert view.jobs_in_system == len(self.model.jobs)
        idle: dict[int, int] = {}
        for mj in self.model.jobs.values():
            if mj.request is None or mj.request.dispatched == mj.request.demand:
                idle[mj.group] = idle.get(mj.group, 0) + 1
        assert dict(view.idle_jobs) == idle
        assert self.m.stats.checkins == self.model.checkins
        assert self.m.stats.assigned == self.model.assigned
        served = sum(mj.served for mj in self.model.jobs.values()) + self.model.finished_served
        assert self.model.assigned == served

    @invariant()
    def every_dispatch_is_within_demand(self) -> None:
        for mj in self.model.jobs.values():
            if mj.request is not None:
                assert 0 <= mj.request.dispatched <= mj.request.demand


ManagerMachine.TestCase.settings = settings(
    max_examples=150,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_manager_state_machine = ManagerMachine.TestCase


@settings(max_examples=80, deadline=None)
@given(
    policy=st.sampled_from(["venn", "venn-nosched"]),
    seed=st.integers(0, 2**16),
    demand=st.integers(1, 8),
    scale=st.floats(50.0, 5000.0),
    caps=st.lists(st.floats(0.1, 4.0), min_size=1, max_size=40),
)
def test_a_tiered_request_takes_exactly_the_devices_of_its_tier(
    policy: str, seed: int, demand: int, scale: float, caps: list[float]
) -> None:
    """The one pending request is tiered (a second round, plenty of supply, a profile where
    fast devices answer fast): a device gets it iff its capability is in the tier and demand
    is left. The state machine above rarely reaches a tier; this test always does."""
    rng = np.random.default_rng(seed)
    mgr = ResourceManager(make_policy(policy, rng), supply=StaticSupply({1: 0.5}))
    mgr.register_job("a", 0, 0.0, deadline_s=1e6)
    for cap in rng.uniform(0.1, 4.0, size=60):
        mgr.report_response("a", float(cap), scale / float(cap))
    rid = mgr.submit_request("a", demand, 0.0, round_idx=1)
    mgr.replan(0.0)
    tier = mgr._requests[rid].tier
    assume(tier is not None)  # the tier is drawn at random, and the slow one does not pay
    assert tier is not None
    left = demand
    for i, cap in enumerate(caps):
        got = mgr.checkin(1.0 + i, 0b1, cap)
        fits = tier[0] <= cap < tier[1]
        assert got == ("a" if fits and left > 0 else None), (tier, cap, left)
        left -= got is not None
    assert mgr.close_request("a", 100.0) == left
