"""The simulator: determinism, conservation and round-rule invariants (hypothesis)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kairos.fl import DevicePopulation, FLJob, Requirement, RoundRule, TraceAvailability
from kairos.fl.availability import CheckIns
from kairos.venn.fleet import Fleet
from kairos.venn.policies import make_policy
from kairos.venn.simulator import SimConfig, Simulator, simulate
from kairos.venn.workloads import CLASSES, FleetConfig, make_fleet

SMALL_FLEET = FleetConfig(devices=4000)


def small_jobs(rng: np.random.Generator, n: int) -> list[FLJob]:
    return [
        FLJob(
            f"j{i}",
            float(3600 + rng.uniform(0, 600)),
            int(rng.integers(3, 12)),
            int(rng.integers(1, 4)),
            CLASSES[int(rng.integers(0, 4))],
            RoundRule(deadline_s=float(rng.choice([300.0, 600.0]))),
        )
        for i in range(n)
    ]


def test_same_seed_same_result_and_policies_share_the_trace() -> None:
    fleet = make_fleet(SMALL_FLEET, seed=5)
    jobs = small_jobs(np.random.default_rng(5), 6)
    a = simulate(make_policy("venn", np.random.default_rng(1)), jobs, fleet)
    b = simulate(make_policy("venn", np.random.default_rng(1)), jobs, fleet)
    assert a.job_rows() == b.job_rows() and a.rounds == b.rounds
    assert a.summary()["unfinished"] == 0
    c = simulate(make_policy("random", np.random.default_rng(1)), jobs, fleet)
    assert [j["job_id"] for j in c.job_rows()] == [j["job_id"] for j in a.job_rows()]
    assert a.checkins >= a.assigned > 0 and a.completed > 0


@settings(max_examples=12, deadline=None)
@given(
    st.integers(0, 10_000),
    st.sampled_from(["venn", "srsf", "fifo", "random", "random-pure", "las", "venn-nosched"]),
)
def test_simulation_invariants(seed: int, policy: str) -> None:
    rng = np.random.default_rng(seed)
    jobs = small_jobs(rng, int(rng.integers(1, 6)))
    fleet = make_fleet(SMALL_FLEET, seed=seed % 3)
    res = Simulator(make_policy(policy, rng), jobs, fleet, SimConfig(max_days=20)).run()
    by_job = {j.job_id: j for j in jobs}
    closed = 0
    for idx, rnd, submit, sched, close, ok, dispatched in res.rounds:
        job = jobs[idx]
        assert dispatched <= job.request_size  # never more devices than asked for
        assert submit <= close <= submit + job.rule.deadline_s + 1e-6
        if np.isfinite(sched):
            assert dispatched >= job.needed and 0 <= sched <= close - submit
        if ok:
            closed += 1
        assert 0 <= rnd < job.rounds
    assert res.assigned == sum(r[6] for r in res.rounds)  # every dispatch belongs to a round
    assert res.completed + res.failed <= res.assigned
    for rec in res.jobs:  # every job finished all its rounds, after it arrived
        job = by_job[rec.job_id]
        assert rec.finish > job.arrival
        wins = [r for r in res.rounds if jobs[r[0]].job_id == rec.job_id and r[5]]
        assert [r[1] for r in wins] == list(range(job.rounds))
    assert closed == sum(j.rounds for j in jobs)


def test_one_task_per_device_per_day_on_replayed_traces() -> None:
    """A trace where one device is online twice a day: with the rule on it serves once."""
    windows = CheckIns(np.array([0, 0]), np.array([3700.0, 3800.0]), np.array([9000.0, 9000.0]))
    one = np.ones(1)
    phone = DevicePopulation(20 * one, 8 * one, 2000 * one, 13 * one, one, one, np.zeros(1, int))
    fleet = Fleet(phone, CLASSES, TraceAvailability(windows, 86_400.0, 1))
    assert fleet.atoms().tolist() == [0b1111]  # eligible for every class
    jobs = [FLJob("a", 3600.0, 2, 1, CLASSES[0], RoundRule(deadline_s=300))]
    for rule, expect in ((False, 2), (True, 1)):
        cfg = SimConfig(one_task_per_day=rule, max_days=1)
        res = simulate(make_policy("fifo"), jobs, fleet, cfg)
        assert res.assigned == expect


def test_unknown_requirement_is_rejected() -> None:
    fleet = make_fleet(SMALL_FLEET, seed=0)
    odd = FLJob("x", 0.0, 2, 1, Requirement(name="odd", min_ram_gb=3))
    with pytest.raises(ValueError, match="not one of the fleet's requirements"):
        simulate(make_policy("fifo"), [odd], fleet)
