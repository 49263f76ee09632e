"""The driver's loop on small hand-made cases: the grow barrier of spec 3.5, preemption at
iteration boundaries, FIFO's strictness, leaving while an iteration runs, bad input."""

from __future__ import annotations

import itertools

import pytest

from kairos.salus.driver import Driver
from kairos.salus.policies import make_policy
from kairos.salus.policy import JobStatus
from kairos.salus.profile import Profile
from kairos.salus.simulator import SimWorker
from kairos.sim import EventLoop, SimClock


def run(
    policy: str,
    jobs: list[tuple[float, int, int, int]],
    addresses: bool = False,
    capacity: int = 100,
    t_iters: tuple[float, ...] = (),
) -> Driver:
    """Jobs as (arrival, P, E, iterations), t_iter 1 s unless `t_iters` says, u = 1, no
    switch cost."""
    loop = EventLoop()
    clock = SimClock(loop)
    driver = Driver(
        clock,
        SimWorker(clock, 0.0),
        make_policy(policy),
        capacity,
        addresses=addresses,
        verify=True,
        record=True,
    )
    for i, (at, p, e, n) in enumerate(jobs):
        prof = Profile(f"w{i}", p, e, t_iters[i] if i < len(t_iters) else 1.0)
        loop.call_at(
            at,
            lambda i=i, prof=prof, n=n: driver.arrive(
                f"j{i}", prof, expected=n * prof.t_iter, iterations=n, ready=n, job_id=i
            ),
        )
    loop.run()
    return driver


@pytest.mark.parametrize("addresses", [False, True])
def test_a_grow_does_not_wait_for_the_lanes_in_its_way_to_empty(addresses: bool) -> None:
    """PACK lanes A [70,100), B [40,70), D [10,40) (C = 100) run back to back. Job 3 (P 5,
    E 35) can only grow A to 35 (base 95: no new lane; 95 - 30 + 35 = 100), and A's target
    [65,100) overlaps B, whose job runs 1000 iterations; B's own target [35,65) overlaps D.
    The barrier: B stops at its next boundary (which frees A's target: job 3 starts then,
    not after B's 1000 iterations) and waits there until D has moved at its own boundary."""
    jobs = [(0.0, 0, 30, 10), (0.0, 0, 30, 1000), (0.0, 0, 30, 1000), (2.5, 5, 35, 5)]
    d = run("pack", jobs, addresses, t_iters=(1.0, 0.73, 1.5, 1.0))  # boundaries differ
    j3 = d.jobs[3]
    tl = d.timeline or []

    def first_end_after(job: int, t: float) -> float:
        return min(r.end for r in tl if r.job == job and r.end > t)

    a_free, b_stop = first_end_after(0, 2.5), first_end_after(1, 2.5)
    assert a_free < b_stop < first_end_after(2, 2.5)  # the case: A, then B, then D
    # byte budgets grow at once; ranges wait for B to clear A's target
    assert j3.first_start == pytest.approx(b_stop if addresses else a_free)
    assert j3.finish is not None and j3.finish < 60
    b_runs = [r for r in tl if r.job == 1]
    paused = [(a.end, b.start) for a, b in itertools.pairwise(b_runs) if b.start > a.end + 1e-9]
    if addresses:  # B stopped at its boundary after 2.5, until D's next boundary moved D
        assert paused and paused[0][0] == pytest.approx(b_stop)
        assert paused[0][1] == pytest.approx(first_end_after(2, b_stop))
    else:  # byte budgets: resizing is immediate, nobody pauses
        assert not paused


def test_srtf_preempts_at_the_next_iteration_boundary_only() -> None:
    d = run("srtf", [(0, 1, 10, 100), (10.5, 1, 10, 3)])
    short = d.jobs[1]
    assert short.first_start == 11.0  # not 10.5: the running iteration is never interrupted
    assert short.finish == 14.0
    assert d.jobs[0].finish == 103.0


def test_fifo_runs_each_job_to_completion_in_arrival_order() -> None:
    d = run("fifo", [(0, 1, 10, 5), (1, 1, 10, 1), (2, 1, 10, 1)])
    assert [d.jobs[i].finish for i in range(3)] == [5.0, 6.0, 7.0]
    assert d.switches == 2


def test_fifo_does_not_backfill_past_a_blocked_head() -> None:
    # job 1 cannot fit beside job 0; job 2 could, but FIFO keeps it behind job 1
    d = run("fifo", [(0, 50, 40, 5), (1, 50, 40, 1), (2, 1, 1, 1)])
    assert d.jobs[2].admitted_at is not None and d.jobs[2].admitted_at >= 5.0
    d = run("fair", [(0, 50, 40, 5), (1, 50, 40, 1), (2, 1, 1, 1)])
    assert d.jobs[2].admitted_at == 2.0  # backfilled


def test_leave_while_running_ends_at_the_boundary() -> None:
    loop = EventLoop()
    clock = SimClock(loop)
    d = Driver(clock, SimWorker(clock, 0.0), make_policy("pack"), 100, verify=True)
    job = d.arrive("j", Profile("w", 10, 10, 1.0), iterations=10, ready=10)
    loop.call_at(2.5, d.leave, job.id)
    loop.run()
    assert job.status is JobStatus.CANCELLED and job.finish == 3.0 and job.done == 3
    assert d.manager.layout.committed() == 0


def test_a_job_larger_than_the_device_is_refused_by_name() -> None:
    loop = EventLoop()
    clock = SimClock(loop)
    d = Driver(clock, SimWorker(clock), make_policy("fifo"), 100)
    with pytest.raises(ValueError, match="'big' needs P \\+ E = 101"):
        d.arrive("big", Profile("w", 1, 100, 1.0))


def test_processor_sharing_is_capped_by_busy_fractions() -> None:
    """Two lanes at u = 0.5 run side by side at full speed; at u = 1 each at half speed."""
    for busy, expected in ((0.5, 10.0), (1.0, 20.0)):
        loop = EventLoop()
        clock = SimClock(loop)
        d = Driver(clock, SimWorker(clock, 0.0), make_policy("pack"), 100)
        a = d.arrive("a", Profile("w", 0, 10, 1.0, busy), iterations=10, ready=10)
        b = d.arrive("b", Profile("w", 0, 10, 1.0, busy), iterations=10, ready=10)
        loop.run()
        assert a.finish == pytest.approx(expected) and b.finish == pytest.approx(expected)


def test_switch_cost_is_charged_only_on_a_switch() -> None:
    loop = EventLoop()
    clock = SimClock(loop)
    d = Driver(clock, SimWorker(clock, 0.25), make_policy("fair"), 100)
    a = d.arrive("a", Profile("w", 1, 10, 1.0), iterations=2, ready=2)
    b = d.arrive("b", Profile("w", 1, 10, 1.0), iterations=2, ready=2)
    loop.run()
    # a, b, a, b: three switches of 0.25 s
    assert d.switches == 3 and b.finish == pytest.approx(4.75) and a.finish == pytest.approx(3.5)


def _srtf_with_aux(aux_at: float, aux_cost: float = 0.25) -> tuple[Driver, EventLoop]:
    loop = EventLoop()
    clock = SimClock(loop)
    d = Driver(clock, SimWorker(clock, 0.0, aux_cost=aux_cost), make_policy("srtf"), 100,
               verify=True, record=True)  # fmt: skip
    d.arrive("short", Profile("w", 10, 10, 1.0), expected=2.0, iterations=2, ready=2, job_id=1)
    d.arrive("long", Profile("w", 10, 10, 1.0), expected=10.0, iterations=10, ready=10, job_id=0)
    loop.call_at(aux_at, d.aux, 0)
    return d, loop


def test_an_auxiliary_call_runs_at_the_next_boundary_outside_the_policy() -> None:
    """Spec 3.7's aux calls: the long job (not the one SRTF runs) gets its call at the next
    boundary, ahead of the short job's next iteration; it is not charged to S, not a switch,
    and SRTF's order is otherwise unchanged."""
    d, loop = _srtf_with_aux(0.5)
    loop.run()
    long, short = d.jobs[0], d.jobs[1]
    assert short.finish == 2.25  # its second iteration waited for the 0.25 s call
    assert long.service == 10.0 and long.done == 10 and long.aux == 0
    assert [r.job for r in d.timeline or []] == [1, 1] + [0] * 10  # the call is no iteration
    assert d.switches == 1  # short -> long once; the call switched nothing


def test_an_auxiliary_call_of_a_queued_job_waits_for_its_lane_and_ends_with_it() -> None:
    loop = EventLoop()
    clock = SimClock(loop)
    d = Driver(clock, SimWorker(clock, 0.0, aux_cost=0.5), make_policy("fifo"), 100)
    first = d.arrive("a", Profile("w", 50, 40, 1.0), iterations=3, ready=3)
    queued = d.arrive("b", Profile("w", 50, 40, 1.0), iterations=1, ready=1)
    d.aux(queued.id)
    loop.run()
    assert queued.admitted_at == 3.0 and queued.first_start == 3.5  # the call ran first
    assert first.finish == 3.0 and queued.finish == 4.5
    ended = d.arrive("c", Profile("w", 50, 40, 1.0), iterations=1, ready=1)
    loop.run()
    with pytest.raises(ValueError, match="has ended"):
        d.aux(ended.id)
