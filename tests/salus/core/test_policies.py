"""The picks and queue orders of spec 3.8, on lanes built by hand."""

from __future__ import annotations

from kairos.salus.admission import AdmissionQueue
from kairos.salus.lanes import Lane, LaneMode
from kairos.salus.policies import Fair, Pack, Srtf, make_policy
from kairos.salus.policy import JobState
from kairos.salus.profile import Profile

PROF = Profile("w", 1, 1, 1.0)


def job(i: int, arrival: float = 0.0, t: float | None = None, ready: int = 1) -> JobState:
    return JobState(i, f"j{i}", PROF, arrival, expected=t, ready=ready)


def test_default_modes_and_backfill() -> None:
    modes = {
        n: (make_policy(n).lane_mode, make_policy(n).backfill)
        for n in ("fifo", "pack", "srtf", "fair")
    }
    assert modes == {
        "fifo": (LaneMode.SINGLE, False),
        "pack": (LaneMode.MULTI, True),
        "srtf": (LaneMode.SINGLE, True),
        "fair": (LaneMode.SINGLE, True),
    }


def test_pack_round_robin_in_admission_order_over_ready_jobs() -> None:
    lane, pol = Lane(0, 1, [0, 1, 2]), Pack()
    jobs = [job(0), job(1, ready=0), job(2)]
    picked = []
    for _ in range(4):
        j = pol.pick(lane, jobs)
        assert j is not None
        picked.append(j.id)
        lane.last = j.id
    assert picked == [0, 2, 0, 2]


def test_srtf_strict_waits_for_the_shortest_and_breaks_ties_by_arrival() -> None:
    lane = Lane(0, 1, [0, 1, 2])
    jobs = [job(0, 0.0, 50.0), job(1, 1.0, 10.0, ready=0), job(2, 2.0, 10.0)]
    assert Srtf().pick(lane, jobs) is None  # job 1 is shortest but has nothing submitted
    got = Srtf(work_conserving=True).pick(lane, jobs)
    assert got is not None and got.id == 2
    jobs[1].ready = 1
    got = Srtf().pick(lane, jobs)
    assert got is not None and got.id == 1  # tie with job 2 at R = 10: earlier arrival


def test_fair_newcomer_starts_at_the_lanes_least_service() -> None:
    lane, pol = Lane(0, 1, [0, 1]), Fair()
    a, b = job(0), job(1)
    pol.on_join(lane, [], a)
    a.service = 30.0  # a ran alone for 30 s
    pol.on_join(lane, [a], b)
    assert pol.virtual(b) == 30.0  # level with a, not 0
    c = job(2)
    pol.on_join(lane, [a, b], c)
    picked = pol.pick(lane, [a, b, c])
    assert picked is not None and picked.id == 0  # all level at 30: earliest arrival
    zero = Fair(reset="zero")
    a.service, b.service = 30.0, 20.0
    zero.on_join(lane, [], a)
    zero.on_join(lane, [a], b)
    assert zero.virtual(a) == zero.virtual(b) == 0.0


def test_queue_order_and_backfill() -> None:
    srtf_q = AdmissionQueue(Srtf())
    for j in (job(0, 0.0, 30.0), job(1, 1.0, 5.0), job(2, 2.0, 10.0)):
        srtf_q.push(j)
    assert [j.id for j in srtf_q.ordered()] == [1, 2, 0]  # shortest T first
    fifo_q = AdmissionQueue(make_policy("fifo"))
    for j in (job(0), job(1, 1.0), job(2, 2.0)):
        fifo_q.push(j)
    lane = Lane(0, 1)
    fits = {1, 2}
    assert fifo_q.admit(lambda j: lane if j.id in fits else None) == []  # head blocks
    fair_q = AdmissionQueue(make_policy("fair"))
    for j in (job(0), job(1, 1.0), job(2, 2.0)):
        fair_q.push(j)
    got = fair_q.admit(lambda j: lane if j.id in fits else None)
    assert [j.id for j, _ in got] == [1, 2] and len(fair_q) == 1
