"""The resource manager's APIs, the supply monitor, and tier matching (Algorithm 4)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from kairos.fl import Requirement
from kairos.venn.manager import ResourceManager
from kairos.venn.matching import MatcherConfig, TierMatcher, tail
from kairos.venn.policies import make_policy
from kairos.venn.supply import StaticSupply, SupplyMonitor
from kairos.venn.view import Profile
from tests.venn.test_irs_and_ilp import req

ANY = Requirement(name="any")
BIG = Requirement(name="big", min_ram_gb=8)


def test_manager_dispatches_only_eligible_devices_up_to_demand() -> None:
    mgr = ResourceManager(make_policy("venn"), [ANY, BIG], StaticSupply({1: 1.0, 3: 1.0}))
    mgr.register_job("small", ANY, 0.0)
    mgr.register_job("needs-big", BIG, 0.0)
    mgr.submit_request("small", 1, 0.0)
    mgr.submit_request("needs-big", 2, 0.0)
    assert mgr.checkin(1.0, atom=0b01) == "small"  # only ANY-eligible
    assert mgr.checkin(2.0, atom=0b01) is None  # small is satisfied; big cannot use it
    assert [mgr.checkin(3.0 + i, atom=0b11) for i in range(3)] == ["needs-big"] * 2 + [None]
    assert mgr.close_request("needs-big", 6.0) == 0
    with pytest.raises(ValueError, match="already has an open request"):
        mgr.submit_request("small", 1, 7.0)
    with pytest.raises(KeyError, match="register it first"):
        mgr.submit_request("ghost", 1, 7.0)
    with pytest.raises(ValueError, match="demand must be >= 1"):
        mgr.submit_request("needs-big", 0, 7.0)
    mgr.job_finished("small", 8.0)
    assert mgr.signature({"ram_gb": 12.0, "cpu_ghz": 2.0}) == 0b11


def test_manager_replans_on_triggers_and_periodically() -> None:
    mgr = ResourceManager(make_policy("fifo"), [ANY], StaticSupply({1: 1.0}), replan_period_s=600)
    mgr.register_job("a", ANY, 0.0)
    mgr.submit_request("a", 2, 0.0)
    mgr.checkin(1.0, 1)
    assert mgr.stats.plans == 1
    mgr.checkin(2.0, 1)  # fully dispatched: the next check-in re-plans
    mgr.checkin(3.0, 1)
    assert mgr.stats.plans == 2
    mgr.checkin(700.0, 1)  # no trigger, but the plan is older than replan_period_s
    assert mgr.stats.plans == 3


def test_supply_monitor_trailing_window_and_count_modes() -> None:
    mon = SupplyMonitor(window_s=100.0, min_window_s=10.0)
    for t in range(50):
        mon.record(0b1, float(t))
    assert mon.rates(50.0)[1] == pytest.approx(1.0)  # 50 check-ins over 50 s of history
    for t in range(50, 300):
        mon.record(0b11 if t % 2 else 0b1, float(t))
    r = mon.rates(300.0)  # window [200, 300): 50 of each atom
    assert r[1] == pytest.approx(0.5) and r[3] == pytest.approx(0.5)
    cnt = SupplyMonitor.parse("count:10")
    for t in range(20):
        cnt.record(1 if t < 15 else 2, float(t))
    assert cnt.rates(19.0) == {1: pytest.approx(5 / 9), 2: pytest.approx(5 / 9)}
    assert SupplyMonitor.parse("24h").window_s == 86_400
    with pytest.raises(ValueError, match="supply_window"):
        SupplyMonitor.parse("often")


def test_tail_is_empirical_or_lognormal() -> None:
    x = np.arange(1, 101, dtype=float)
    assert tail(x, 0.95) == pytest.approx(np.quantile(x, 0.95))
    few = np.array([100.0, 100.0 * math.e])  # log-mean 0.5, log-sd 0.5 (population)
    assert tail(few, 0.95) == pytest.approx(100 * math.exp(0.5 + 1.6448536 * 0.5))


def _profile(n: int = 400) -> Profile:
    rng = np.random.default_rng(0)
    slow = rng.lognormal(0, 0.5, n)
    return Profile(1 / slow, 120 * slow * rng.lognormal(0, 0.15, n))


def test_tier_matching_condition() -> None:
    matcher = TierMatcher(MatcherConfig(tiers=2))
    th, g, t0 = matcher.speedups(_profile())
    assert t0 == pytest.approx(280, rel=0.1)  # the untiered p95
    assert g[0] > 1 > g[1] and g[1] == pytest.approx(0.45, abs=0.08)  # fast tier ~0.45
    profile = _profile()
    small = req(1, 0, 5, round_idx=3, profile=profile)
    rng = np.random.default_rng(1)
    tiers = {matcher.decide(small, 1.0, profile, rng) for _ in range(40)}
    assert (th[0], math.inf) in tiers  # plenty of supply: the fast tier is taken...
    assert (-math.inf, th[0]) not in tiers  # ...the slow one (g > 1) never
    starved = [matcher.decide(small, 0.01, profile, rng) for _ in range(20)]  # c small
    assert starved == [None] * 20
    first = req(2, 0, 5, round_idx=0, profile=profile)  # never served: profile first
    assert matcher.decide(first, 1.0, profile, rng) is None
    queued = [matcher.decide(small, 1.0, profile, rng, backlog=500) for _ in range(20)]
    assert queued == [None] * 20  # a long queue behind the head: no tier (group scope)
    literal = TierMatcher(MatcherConfig(tiers=2, schedule_scope="request"))
    assert any(literal.decide(small, 1.0, profile, rng, backlog=500) for _ in range(20))


def test_manager_enforces_tiers_and_leftovers_flow_on() -> None:
    mgr = ResourceManager(make_policy("venn"), [ANY], StaticSupply({1: 1.0}))
    for job in ("a", "b"):
        mgr.register_job(job, ANY, 0.0)
        mgr.submit_request(job, 3, 0.0)
    mgr.replan(0.0)
    rid = next(iter(mgr.plan.heads({1: 1.0})))
    mgr._requests[rid].tier, mgr._requests[rid].tier_decided = (2.0, math.inf), True
    head = mgr._requests[rid].job.job_id
    other = "b" if head == "a" else "a"
    assert mgr.checkin(1.0, 1, capability=1.0) == other  # too slow for the head's tier
    assert mgr.checkin(2.0, 1, capability=3.0) == head


def test_checkin_passes_over_the_jobs_it_is_told_to_skip() -> None:
    mgr = ResourceManager(make_policy("fifo"), [ANY], StaticSupply({1: 1.0}))
    for name in ("first", "second"):
        mgr.register_job(name, ANY, 0.0)
        mgr.submit_request(name, 1, 0.0)
    assert mgr.checkin(1.0, 1, skip={"first"}) == "second"
    assert mgr.checkin(2.0, 1, skip={"first"}) is None  # first still waits for another device
    assert mgr.checkin(3.0, 1) == "first"
    assert mgr.stats.checkins == 3 and mgr.stats.assigned == 2
