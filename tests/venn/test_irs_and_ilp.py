"""IRS building blocks, plan invariants (hypothesis), and the ILP oracle vs brute force."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kairos.venn.ilp import solve_irs_ilp
from kairos.venn.irs import affected_len, intra_key, intra_order, irs_plan
from kairos.venn.manager import ResourceManager
from kairos.venn.policies import make_policy
from kairos.venn.policies.venn import VennConfig
from kairos.venn.supply import StaticSupply
from kairos.venn.view import ManagerView, RequestView


def req(rid: int, group: int, remaining: int, arrival: float = 0.0, **kw: object) -> RequestView:
    fields: dict[str, object] = dict(
        request_id=rid,
        job_id=f"j{rid}",
        group=group,
        arrival=arrival,
        submitted=arrival,
        demand=remaining,
        remaining=remaining,
        round_idx=0,
        rounds=None,
        served=0,
        attained_s=0.0,
        deadline_s=600.0,
    )
    fields.update(kw)
    return RequestView(**fields)  # type: ignore[arg-type]


def test_intra_order_is_smallest_remaining_then_arrival() -> None:
    rs = [req(0, 0, 5, 3.0), req(1, 0, 2, 9.0), req(2, 0, 5, 1.0)]
    assert [r.request_id for r in intra_order(rs, intra_key)] == [1, 2, 0]
    told = req(3, 0, 4, rounds=10, round_idx=7, demand=10)
    assert intra_key(told, "total") == 2 * 10 + 4 and intra_key(told) == 4


def test_affected_len_counts_jobs_done_before_the_other_queue_drains() -> None:
    assert affected_len([(2, 1.0), (2, 1.0)], [(10, 1.0)]) == 2  # j drains first: all count
    assert affected_len([(4, 1.0), (4, 1.0), (4, 1.0)], [(6, 1.0)]) == 1  # one done before 6
    assert affected_len([(10, 1.0)], [(2, 1.0)]) == 0
    assert affected_len([(1, 0.0), (3, 1.0)], [(2, 1.0)]) == 1  # a zero rate is skipped


def test_abundant_group_takes_scarce_share_only_when_its_queue_per_supply_is_longer() -> None:
    # atom 0b01: A only (rate 0.5), atom 0b11: A and B (rate 0.5)
    rates = {0b01: 0.5, 0b11: 0.5}
    few_a = {0: [req(0, 0, 3)], 1: [req(1, 1, 4), req(2, 1, 4)]}
    plan = irs_plan(few_a, rates, queue_len_mode="group")
    assert plan.owner == {0b01: 0, 0b11: 1}  # 1/0.5 < 2/0.5: B keeps its share
    many_a = {0: [req(i, 0, 3) for i in range(5)], 1: [req(9, 1, 4)]}
    plan = irs_plan(many_a, rates, queue_len_mode="group")
    assert plan.owner == {0b01: 0, 0b11: 0} and plan.alloc_rate == {0: 1.0, 1: 0.0}


@st.composite
def views(draw: st.DrawFn) -> ManagerView:
    groups = draw(st.integers(1, 5))
    atoms = draw(st.lists(st.integers(1, 2**groups - 1), min_size=1, max_size=8, unique=True))
    rates = {a: draw(st.floats(0.01, 2.0)) for a in atoms}
    n = draw(st.integers(1, 12))
    reqs = tuple(
        req(i, draw(st.integers(0, groups - 1)), draw(st.integers(1, 50)), float(i))
        for i in range(n)
    )
    return ManagerView(now=100.0, requests=reqs, rates=rates, jobs_in_system=n)


@settings(max_examples=60, deadline=None)
@given(views(), st.sampled_from(["affected", "group"]))
def test_irs_plan_invariants(view: ManagerView, mode: str) -> None:
    plan = irs_plan(view.groups(), view.rates, queue_len_mode=mode)  # type: ignore[arg-type]
    active = set(view.groups())
    for atom, g in plan.owner.items():
        assert g in active and atom >> g & 1  # an owner can use every atom it owns
    for atom in view.rates:
        if any(atom >> g & 1 for g in active):
            assert atom in plan.owner  # every usable atom is owned by someone
    for g in active:
        owned = sum(r for a, r in view.rates.items() if plan.owner.get(a) == g)
        assert plan.alloc_rate[g] == pytest.approx(owned)
        assert sorted(r.remaining for r in plan.order[g]) == [r.remaining for r in plan.order[g]]
    again = irs_plan(view.groups(), view.rates, queue_len_mode=mode)  # type: ignore[arg-type]
    assert again.owner == plan.owner  # deterministic


@settings(max_examples=30, deadline=None)
@given(views(), st.integers(0, 2**32 - 1))
def test_policies_are_pure_functions_of_view_and_generator(view: ManagerView, seed: int) -> None:
    for name in ("venn", "srsf", "fifo", "random"):
        a = make_policy(name, np.random.default_rng(seed)).plan(view)
        b = make_policy(name, np.random.default_rng(seed)).plan(view)
        for atom in view.rates:
            assert list(a.candidates(atom)) == list(b.candidates(atom))
            for rid in a.candidates(atom):  # only eligible requests are offered
                group = next(r.group for r in view.requests if r.request_id == rid)
                assert atom >> group & 1
        assert a.memos == b.memos and a.tiers == b.tiers


def brute_force(times: list[float], elig: np.ndarray, demand: list[int]) -> float:
    """Minimum mean completion over every assignment of devices to jobs (or to none)."""
    q, m = elig.shape
    best = math.inf
    for choice in itertools.product(range(-1, m), repeat=q):
        got = [0] * m
        last = [0.0] * m
        ok = True
        for i, j in enumerate(choice):
            if j < 0:
                continue
            if not elig[i, j]:
                ok = False
                break
            got[j] += 1
            last[j] = max(last[j], times[i])
        if ok and got == demand:
            best = min(best, sum(last) / m)
    return best


@pytest.mark.parametrize("seed", range(10))
def test_ilp_agrees_with_brute_force_on_tiny_instances(seed: int) -> None:
    rng = np.random.default_rng(seed)
    q, m = int(rng.integers(4, 8)), int(rng.integers(1, 4))
    times = sorted(rng.uniform(0, 10, size=q).round(2).tolist())
    elig = rng.random((q, m)) < 0.6
    demand = [int(rng.integers(1, 3)) for _ in range(m)]
    exact = brute_force(times, elig, demand)
    res = solve_irs_ilp(times, elig, demand)
    if math.isinf(exact):
        assert not res.feasible and np.all(res.served <= demand)
    else:
        assert res.feasible and res.mean_delay == pytest.approx(exact)
        for i, j in enumerate(res.assignment):  # the schedule itself is valid
            assert j < 0 or elig[i, j]


def test_ilp_respects_arrivals_and_unsorted_devices() -> None:
    times = [5.0, 1.0, 3.0, 2.0]  # device order does not matter
    elig = np.ones((4, 2), dtype=bool)
    res = solve_irs_ilp(times, elig, [1, 1], arrival=[0.0, 2.5])
    assert res.feasible and res.completion.tolist() == [1.0, 3.0]  # job 1 cannot use t<2.5
    assert res.mean_delay == pytest.approx((1.0 + 0.5) / 2)


def test_artifact_readings_idle_groups_and_full_request_sizes() -> None:
    # three nested groups: A (all atoms), B (0b011, 0b111), C (0b101, 0b111)
    rates = {0b001: 0.4, 0b011: 0.2, 0b101: 0.2, 0b111: 0.2}
    only_a = {0: [req(0, 0, 3)]}
    # kairos: an idle group does not exist; A owns every atom it can use
    assert irs_plan(only_a, rates).owner == dict.fromkeys(rates, 0)
    # the artifact: idle groups hold their atoms until A's loop reaches them; with no other
    # queue A takes every one of them, unasked
    art = irs_plan(only_a, rates, idle_groups="artifact", n_groups=3)
    assert art.owner == dict.fromkeys(rates, 0)
    # but behind a refusal, an idle group's atoms stay unowned (devices lost, as there)
    busy_b = {0: [req(0, 0, 3)], 1: [req(1, 1, 2), req(2, 1, 2), req(3, 1, 2)]}
    kairos = irs_plan(busy_b, rates, queue_len_mode="group")
    art = irs_plan(busy_b, rates, queue_len_mode="group", idle_groups="artifact", n_groups=3)
    assert kairos.owner[0b101] == 0 and 0b101 not in art.owner
    assert set(art.owner.values()) <= {0, 1}  # an idle group never owns an atom
    # line 12 on full request sizes: a half-dispatched big request counts as big
    j = {0: [req(0, 0, 1, demand=9), req(1, 0, 1, demand=9)], 1: [req(2, 1, 4)]}
    two = {0b01: 0.5, 0b11: 0.5}
    assert irs_plan(j, two).owner[0b11] == 0  # remaining 1+1 drains before B's 4: both count
    assert irs_plan(j, two, affected_key="request").owner[0b11] == 1  # 9 > 4: none counts


def test_artifact_takeover_hands_devices_to_jobs_that_do_not_qualify() -> None:
    """The artifact's takeover moves a scarcer group's whole share (`irs.py:106-118`) and its
    `VennReqScheduler` serves the owner's jobs without an eligibility check, so a device can go
    to a job it does not qualify for. `takeover="whole"` reproduces that; kairos does not."""
    # groups: 0 G (all atoms), 1 C (0b011, 0b111), 2 M (0b101, 0b111); C is scarcer than M
    rates = {0b001: 0.1, 0b011: 0.2, 0b101: 0.3, 0b111: 0.4}
    view = ManagerView(
        now=0.0,
        requests=(*(req(i, 2, 3) for i in range(5)), req(9, 1, 3)),
        rates=rates,
        jobs_in_system=6,
    )
    art = {"queue_len_mode": "group", "idle_groups": "artifact", "work_conserving": False}
    # M's queue per supply (5 / 0.3) beats C's (1 / 0.6): M takes C's share
    usable = irs_plan(view.groups(), rates, queue_len_mode="group")
    whole = irs_plan(view.groups(), rates, queue_len_mode="group", takeover="whole")
    assert usable.owner == {0b101: 2, 0b111: 2, 0b011: 1}  # only what M can use
    assert whole.owner == {0b101: 2, 0b111: 2, 0b011: 2}  # C-only devices too
    assert whole.alloc_rate[2] == pytest.approx(0.9) and whole.alloc_rate[1] == 0.0
    # a device of 0b011 checking in goes to one of M's jobs, which it does not qualify for
    for takeover, served in (("usable", "j9"), ("whole", "j0")):
        pol = make_policy("venn-nomatch", np.random.default_rng(0), **art, takeover=takeover)
        m = ResourceManager(pol, supply=StaticSupply(rates))
        for r in view.requests:
            m.register_job(r.job_id, r.group, 0.0)
            m.submit_request(r.job_id, r.remaining, 0.0)
        assert m.checkin(1.0, 0b011) == served
    assert VennConfig().takeover == "usable"  # never in the default mode
