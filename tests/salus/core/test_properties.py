"""Property tests (hypothesis) of the acceptance checklist, spec 6.10 item 1.

Random arrivals, cancellations and iterations of random sizes run through the real driver on
simulated time, under every policy, with and without the address-range model; after every
single event:
* Eq. 2.1 holds, recomputed from scratch (and each lane covers its jobs' ephemeral peaks);
* in the address model, persistent blocks and current lane ranges never overlap, and no lane
  crosses into the persistent region;
* no queued job that Algorithm 2.1 could place is left waiting: with backfill none fits, and
  without it (FIFO) the head of the policy's order does not fit.
At the end every job has finished or been cancelled and all memory is back.
"""

from __future__ import annotations

from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kairos.salus.driver import Driver
from kairos.salus.lane_finder import LaneManager
from kairos.salus.layout import LaneMode
from kairos.salus.policies import make_policy
from kairos.salus.policy import JobStatus
from kairos.salus.profile import Profile
from kairos.salus.simulator import SimWorker
from kairos.sim import EventLoop, SimClock

C = 100


@dataclass(frozen=True)
class Spec:
    arrival: float
    p: int
    e: int
    t_iter: float
    iterations: int
    busy: float
    cancel_after: float | None


@st.composite
def specs(draw: st.DrawFn) -> Spec:
    p = draw(st.integers(0, 40))
    return Spec(
        arrival=draw(st.floats(0, 30, allow_nan=False)),
        p=p,
        e=draw(st.integers(0, C - p)),
        t_iter=draw(st.sampled_from([0.5, 1.0, 1.7, 3.0])),
        iterations=draw(st.integers(1, 6)),
        busy=draw(st.sampled_from([0.2, 0.5, 1.0])),
        cancel_after=draw(st.none() | st.floats(0, 20, allow_nan=False)),
    )


def check_queue(driver: Driver) -> None:
    waiting = driver.queue.ordered()
    if not waiting:
        return
    fits = [driver.manager.fits(j.profile.persistent, j.profile.ephemeral) for j in waiting]
    if driver.policy.backfill:
        assert not any(fits), "a queued job fits but was left waiting (backfill on)"
    else:
        assert not fits[0], "the head of the queue fits but was left waiting"


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    jobs=st.lists(specs(), min_size=1, max_size=14),
    policy=st.sampled_from(["fifo", "pack", "srtf", "fair"]),
    addresses=st.booleans(),
    switch_cost=st.sampled_from([0.0, 0.1]),
)
def test_invariants_hold_after_every_event(
    jobs: list[Spec], policy: str, addresses: bool, switch_cost: float
) -> None:
    loop = EventLoop()
    clock = SimClock(loop)
    driver = Driver(
        clock,
        SimWorker(clock, switch_cost),
        make_policy(policy),
        C,
        addresses=addresses,
        verify=True,
    )

    def cancel(jid: int) -> None:
        if driver.jobs[jid].status in (JobStatus.QUEUED, JobStatus.ADMITTED):
            driver.leave(jid)

    for i, s in enumerate(jobs):
        prof = Profile(f"w{i}", s.p, s.e, s.t_iter, s.busy)
        loop.call_at(
            s.arrival,
            lambda i=i, prof=prof, s=s: driver.arrive(
                f"j{i}",
                prof,
                expected=s.iterations * s.t_iter,
                iterations=s.iterations,
                ready=s.iterations,
                job_id=i,
            ),
        )
        if s.cancel_after is not None:
            loop.call_at(s.arrival + s.cancel_after, cancel, i)
    steps = 0
    while loop.step():
        steps += 1
        assert steps < 20_000, "the run does not end"
        driver.manager.verify()
        check_queue(driver)
    assert all(j.status in (JobStatus.DONE, JobStatus.CANCELLED) for j in driver.jobs.values())
    assert driver.manager.layout.committed() == 0 and not driver.manager.lanes
    done = [j for j in driver.jobs.values() if j.status is JobStatus.DONE]
    assert all(j.done == j.iterations for j in done)


@settings(max_examples=150, deadline=None)
@given(
    ops=st.lists(
        st.tuples(
            st.sampled_from(["admit", "leave", "start", "end"]),
            st.integers(0, 40),
            st.integers(0, 60),
        ),
        min_size=1,
        max_size=60,
    ),
    mode=st.sampled_from(list(LaneMode)),
)
def test_address_ranges_never_overlap_nor_cross_the_persistent_region(
    ops: list[tuple[str, int, int]], mode: LaneMode
) -> None:
    """The lane manager alone, driven by arbitrary admissions, exits, iteration starts and
    ends (lanes go busy and idle in any order), with the address model on."""
    m = LaneManager(C, mode, addresses=True)
    admitted: list[int] = []
    next_id = 0
    for op, a, b in ops:
        space = m.layout.space
        assert space is not None
        if op == "admit":
            if m.admit(next_id, a, min(b, C - a)) is not None:
                admitted.append(next_id)
            next_id += 1
        elif op == "leave" and admitted:
            job = admitted[a % len(admitted)]
            if m.lane_of(job).busy != job:
                m.leave(job)
                admitted.remove(job)
        elif op == "start" and m.lanes:
            lane = m.lanes[a % len(m.lanes)]
            if lane.jobs and m.runnable(lane):
                lane.busy = lane.jobs[b % len(lane.jobs)]
        elif op == "end" and m.lanes:
            lane = m.lanes[a % len(m.lanes)]
            if lane.busy is not None:
                lane.busy = None
                m.boundary()
        m.verify()
    for lane in m.lanes:  # drain: every lane ends its iteration, then all settle
        lane.busy = None
    m.boundary()
    space = m.layout.space
    assert space is not None
    assert all(not space.pending(lane) for lane in m.lanes), "an idle layout left a lane unplaced"
    m.verify()
