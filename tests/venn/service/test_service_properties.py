"""Property tests of the Venn service over its store: random sequences of job registrations,
rounds, check-ins, offer accepts, results, time passing (deadlines) and restarts. The service's
driver runs on a `SimClock` the test moves.

Checked after every step:
- a device never holds two assignments in one round of one job, and is never given a job
  whose requirement is stricter than the offer it accepted (the accept proves no more);
- every device slot is accounted for: the manager's undispatched demand for a round is its
  demand minus the devices dispatched to it (what the store recorded), never negative;
- 0 <= dispatched <= demand, responses <= the devices assigned, and a round closes exactly when
  its responses reach the needed count (a job finishes with its last round);
- at a deadline a round closes by its `RoundRule` verdict or aborts and is asked for again,
  with nothing dispatched; a result of an aborted attempt is not counted;
- what the service holds in memory is what the store holds, and a service restarted on the
  same file describes every job exactly as the last one left it.
"""

from __future__ import annotations

import tempfile
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from kairos.fl.timing import RoundRule
from kairos.sim import EventLoop, SimClock
from kairos.venn.service.core import ServiceError, VennService
from kairos.venn.service.offers import THRESHOLDS, offer_id
from kairos.venn.service.store import Store

REQUIREMENTS: tuple[dict[str, float], ...] = (
    {},
    {"min_ram_gb": 4.0},
    {"min_cpu_ghz": 5.0},
    {"min_ram_gb": 6.0, "min_android_os": 9.0},
)
DEVICES = [f"d{i}" for i in range(6)]


class ServiceMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = tempfile.TemporaryDirectory()
        self.path = Path(self.tmp.name) / "venn.sqlite"
        self.now = 1000.0
        self.loop = EventLoop(start=self.now)
        self.svc: VennService | None = None
        self.job_ids: list[str] = []
        self.done_rounds: dict[str, int] = {}  # job -> rounds closed, by the model
        self.served: set[tuple[str, int, str]] = set()  # (job, round, device) assignments
        self.responded: set[tuple[str, int, str]] = set()
        self.attempt: dict[tuple[str, int], int] = {}  # (job, round) -> aborts so far
        self.served_in: dict[tuple[str, int, str], int] = {}  # assignment -> its attempt

    @initialize(
        policy=st.sampled_from(["venn", "fifo", "srsf", "random"]),
        demands=st.lists(st.integers(1, 4), min_size=1, max_size=3),
    )
    def start(self, policy: str, demands: list[int]) -> None:
        """A service with a few jobs, each with its first round open."""
        self.policy = policy
        self.svc = VennService(Store(self.path), policy=policy, clock=SimClock(self.loop))
        for i, demand in enumerate(demands):
            self.register(REQUIREMENTS[i % len(REQUIREMENTS)], demand, 2, 30.0, 0.5)
            self.s.post_round(self.job_ids[-1], 0, None)

    def teardown(self) -> None:
        if self.svc is not None:
            self.svc.store.close()
        self.tmp.cleanup()

    def _ordered(self, keys: set[tuple[str, int, str]]) -> list[tuple[str, int, str]]:
        """In registration order: job ids are random (uuid), draws must not depend on them."""
        return sorted(keys, key=lambda k: (self.job_ids.index(k[0]), k[1], k[2]))

    @property
    def s(self) -> VennService:
        assert self.svc is not None
        return self.svc

    # -- jobs ----------------------------------------------------------------------------
    @rule(
        req=st.sampled_from(REQUIREMENTS),
        demand=st.integers(1, 4),
        rounds=st.integers(1, 3),
        deadline=st.floats(5.0, 60.0),
        frac=st.floats(0.3, 1.0),
    )
    def register(
        self, req: dict[str, float], demand: int, rounds: int, deadline: float, frac: float
    ) -> None:
        job, _ = self.s.register(f"job{len(self.job_ids)}", req, demand, rounds, deadline, frac)
        self.job_ids.append(job.job_id)
        self.done_rounds[job.job_id] = 0

    @rule(data=st.data())
    def post_round(self, data: st.DataObject) -> None:
        if not self.job_ids:
            return
        waiting = [j for j in self.job_ids if self.s.describe(self.s.job(j))["state"] == "waiting"]
        job_id = data.draw(st.sampled_from(waiting or self.job_ids))
        job = self.s.job(job_id)
        if job.finished is not None or job_id in self.s.rounds:
            with pytest.raises(ServiceError) as err:
                self.s.post_round(job_id, None, None)
            assert err.value.status == 409
            return
        rnd = self.s.post_round(job_id, None, None)
        assert rnd.round_idx == self.done_rounds[job_id] and rnd.dispatched == 0
        assert 1 <= rnd.needed <= rnd.demand == job.demand

    # -- devices -------------------------------------------------------------------------
    @rule()
    def checkin(self) -> None:
        offers = self.s.offers()
        want = {  # a round waiting to be asked for again after an abort is not offered yet
            offer_id(j, r.round_idx)
            for j, r in self.s.rounds.items()
            if r.dispatched < r.demand and r.opened <= self.now
        }
        assert {o["offer_id"] for o in offers} == want
        strictness = [sum(o["requirement"].values()) for o in offers]
        assert strictness == sorted(strictness, reverse=True)

    @rule(
        data=st.data(),
        device=st.sampled_from(DEVICES),
        capability=st.floats(0.2, 4.0),
        stale=st.integers(0, 4).map(lambda x: x == 0),  # one accept in five: a stale offer
    )
    def accept(self, data: st.DataObject, device: str, capability: float, stale: bool) -> None:
        offers = self.s.offers()
        if stale or not offers:  # an offer of a round that is not open (or never was)
            if not self.job_ids:
                return
            job_id = data.draw(st.sampled_from(self.job_ids))
            r = self.s.rounds.get(job_id)
            oid = offer_id(job_id, (r.round_idx + 1) if r is not None else 99)
            with pytest.raises(ServiceError) as err:
                self.s.accept(oid, device, capability)
            # expired (409); a finished job's offers are unknown (404) after a restart, which
            # loads only unfinished jobs
            durable = self.s.store.job(job_id)
            assert durable is not None
            finished = durable.finished is not None
            assert err.value.status in ({404, 409} if finished else {409})
            return
        offer = data.draw(st.sampled_from(offers))
        before = {j: (r.round_idx, r.dispatched) for j, r in self.s.rounds.items()}
        got = self.s.accept(offer["offer_id"], device, capability)
        if not got["assigned"]:
            assert {j: (r.round_idx, r.dispatched) for j, r in self.s.rounds.items()} == before
            return
        job_id, round_idx = got["job_id"], got["round"]
        key = (job_id, round_idx, device)
        assert key not in self.served, f"{device} serves round {round_idx} of {job_id} twice"
        self.served.add(key)
        self.served_in[key] = self.attempt.get((job_id, round_idx), 0)
        assert self.s.rounds[job_id].round_idx == round_idx
        assert self.s.rounds[job_id].dispatched == before[job_id][1] + 1
        # the accept proves the offer's thresholds, so the job must ask for no more
        chosen = self.s.job(job_id).requirement
        assert all(chosen[k] <= offer["requirement"][k] for k in THRESHOLDS), (chosen, offer)

    @rule(data=st.data(), late=st.booleans())
    def result(self, data: st.DataObject, late: bool) -> None:
        pending = self._ordered(self.served - self.responded)
        if late and self.responded:  # a second result for the same assignment
            job_id, round_idx, device = data.draw(st.sampled_from(self._ordered(self.responded)))
            assert self.s.result(device, job_id, round_idx)["accepted"] is False
            return
        if not pending:
            if self.job_ids:  # no assignment to answer for: refused, naming the device
                with pytest.raises(ServiceError, match="nobody") as err:
                    self.s.result("nobody", self.job_ids[0], 0)
                assert err.value.status == 404
            return
        job_id, round_idx, device = data.draw(st.sampled_from(pending))
        rnd = self.s.rounds.get(job_id)
        got = self.s.result(device, job_id, round_idx)
        key = (job_id, round_idx, device)
        self.responded.add(key)
        aborted = self.served_in[key] != self.attempt.get((job_id, round_idx), 0)
        if rnd is None or rnd.round_idx != round_idx or aborted:  # completed, or retried
            assert got == {"accepted": False, "reason": "the round had already completed"}
            return
        assert got["accepted"] is True
        closes = rnd.responses + 1 >= rnd.needed  # (rnd: the round as it was before)
        assert got["round_complete"] == closes
        if closes:
            self.done_rounds[job_id] += 1
            job = self.s.job(job_id)
            assert got["job_finished"] == (self.done_rounds[job_id] >= job.rounds)
            assert job_id not in self.s.rounds

    @rule(dt=st.floats(1.0, 40.0))
    def tick(self, dt: float) -> None:
        """Time passes (no device answers meanwhile): a round whose deadline passes closes if
        the rule's verdict passes, and otherwise is asked for again with nothing dispatched."""
        before = {j: (r, self.s.job(j)) for j, r in self.s.rounds.items()}
        self.now += dt
        self.loop.run(until=self.now)
        after = self.s.rounds
        for job_id, (rnd, job) in before.items():
            if self.now < rnd.opened + job.deadline_s:
                assert after[job_id] == rnd  # nothing happened to it
                continue
            rule = RoundRule(deadline_s=job.deadline_s, min_resp_frac=job.min_resp_frac)
            if rule.succeeds_at_deadline(rnd.demand, rnd.dispatched, rnd.responses):
                self.done_rounds[job_id] += 1
                assert job_id not in after
                assert self.s.job(job_id).rounds_done == self.done_rounds[job_id]
                continue
            key = (job_id, rnd.round_idx)
            self.attempt[key] = self.attempt.get(key, 0) + 1
            retry = after[job_id]
            assert retry.round_idx == rnd.round_idx and retry.dispatched == retry.responses == 0
            # asked for again resubmit_s after an abort (maybe still waiting for that)
            assert rnd.opened + job.deadline_s < retry.opened <= self.now + 0.1
        for job_id, rnd in after.items():  # nothing open is past its deadline
            assert self.now - rnd.opened <= self.s.jobs[job_id].deadline_s

    @rule()
    def restart(self) -> None:
        before = [self.s.describe(j) for j in self.s.store.jobs()]
        self.s.store.close()
        self.loop = EventLoop(start=self.now)  # the old service's timers die with it
        self.svc = VennService(Store(self.path), policy=self.policy, clock=SimClock(self.loop))
        assert [self.s.describe(j) for j in self.s.store.jobs()] == before

    # -- invariants ----------------------------------------------------------------------
    @invariant()
    def memory_store_and_manager_agree(self) -> None:
        store = self.s.store
        pending = {r.job_id: r for r in self.s.manager.view(self.now).requests}
        for job_id in self.job_ids:
            durable = store.job(job_id)
            assert durable is not None and durable.rounds_done == self.done_rounds[job_id]
            if job_id in self.s.jobs:
                assert asdict(self.s.jobs[job_id]) == asdict(durable)
            rnd = self.s.rounds.get(job_id)
            assert store.open_round(job_id) == rnd
            if durable.finished is not None:
                assert rnd is None and durable.rounds_done == durable.rounds
            if rnd is None:
                assert job_id not in pending
                continue
            mine = {d for (j, r, d) in self.served if (j, r) == (job_id, rnd.round_idx)}
            assert 0 <= rnd.dispatched <= rnd.demand and rnd.dispatched <= len(mine)
            assert 0 <= rnd.responses <= len(mine)
            assert rnd.responses < rnd.needed  # it would have closed
            for d in mine:
                assert store.assignment(job_id, rnd.round_idx, d) is not None
            if rnd.opened > self.now:  # aborted, asked for again in a moment: nothing yet
                assert job_id not in pending and rnd.dispatched == 0
                continue
            # every slot accounted for: the manager still wants exactly the undispatched ones
            left = pending[job_id].remaining if job_id in pending else 0
            assert left == rnd.demand - rnd.dispatched

    @invariant()
    def counters_never_negative(self) -> None:
        c: dict[str, Any] = asdict(self.s.counters)
        assert all(v >= 0 for v in c.values()), c


ServiceMachine.TestCase.settings = settings(
    max_examples=50,
    stateful_step_count=40,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
test_service_state_machine = ServiceMachine.TestCase
