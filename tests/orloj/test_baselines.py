"""Mechanics of the baselines (spec 6.4 item 7), on scripted inputs with hand-computed answers."""

from __future__ import annotations

import math

import pytest

from kairos.orloj.batchdist import BatchLatencyModel
from kairos.orloj.policies import (
    ClipperPolicy,
    ClockworkPolicy,
    EDFPolicy,
    NexusPolicy,
    TimeoutBatcher,
    plan_batch_size,
)
from kairos.orloj.policy import Outcome, ProfileSnapshot, Request
from kairos.orloj.simulator import SimConfig, simulate
from kairos.orloj.systems import SYSTEM_NAMES, make_system

MODEL = BatchLatencyModel()  # g_k(l) = 0.5 + (0.9 + 0.1 k) l
SIZES = (1, 2, 4, 8, 16)
NO_PROFILER = SimConfig(profile_sample_rate=0.0)


def req(i: int, release: float, solo: float, slo: float = 1000.0, app: str = "a") -> Request:
    return Request(request_id=i, app=app, release=release, slo=slo, solo_ms=solo)


# -- Clockwork -----------------------------------------------------------------------------------
def test_clockwork_worker_rejects_an_action_that_cannot_start_by_latest() -> None:
    # the estimate says 10 ms, the first batch really takes g_1(100) = 100.5 ms; the second
    # action is scheduled ahead at t=1 (free_at = 10 < 1 + 10) with latest = max(12, 20) = 20
    policy = ClockworkPolicy(MODEL, SIZES, initial_estimates={bs: 10.0 for bs in SIZES})
    reqs = [req(0, 0.0, 100.0), req(1, 1.0, 1.0)]
    res = simulate(policy, reqs, NO_PROFILER)
    assert reqs[0].outcome is Outcome.OK and reqs[0].finish == pytest.approx(100.5)
    assert reqs[1].outcome is Outcome.TIMED_OUT and reqs[1].finish == pytest.approx(100.5)
    rejected = [b for b in res.batches if b.rejected]
    assert [b.ids for b in rejected] == [(1,)]
    assert rejected[0].decided == 1.0  # it was decided while the worker was busy
    assert res.summary()["rejected"] == 1 and res.stranded == 0


def test_clockwork_action_window_is_max_of_now_and_expected_start() -> None:
    policy = ClockworkPolicy(MODEL, SIZES, initial_estimates={bs: 10.0 for bs in SIZES})
    policy.on_arrival(req(0, 0.0, 1.0), 0.0)
    first, _ = policy.next_batch(0.0)
    assert first is not None and first.latest_start == pytest.approx(11.0)  # now + 1 + 10
    policy.on_arrival(req(1, 1.0, 1.0), 1.0)
    assert policy.next_wakeup(1.0) == 1.0  # free_at 10 is within the 10 ms schedule-ahead
    second, _ = policy.next_batch(1.0)
    assert second is not None and second.latest_start == pytest.approx(20.0)  # free_at + 10
    policy.on_arrival(req(2, 2.0, 1.0), 2.0)
    third, _ = policy.next_batch(2.0)  # free_at = 20 >= 2 + 10: not yet
    assert third is None
    assert policy.next_wakeup(2.0) == pytest.approx(10.0)


def test_clockwork_accepts_an_action_that_starts_exactly_at_latest() -> None:
    policy = ClockworkPolicy(MODEL, SIZES, initial_estimates={bs: 1.0 for bs in SIZES})
    reqs = [req(0, 0.0, 10.5), req(1, 0.0, 1.0)]
    # both arrive at 0: the first is decided alone (the worker is idle at its arrival) and runs
    # g_1(10.5) = 11 ms; the second is scheduled ahead at 0 with latest = max(0 + 1 + 10,
    # expected start 1 + 10) = 11, and the worker frees exactly then
    res = simulate(policy, reqs, NO_PROFILER)
    assert res.batches[1].start == pytest.approx(11.0) and not res.batches[1].rejected
    assert reqs[1].outcome is Outcome.OK


def test_clockwork_takes_the_largest_fillable_batch_and_drops_hopeless_fronts() -> None:
    policy = ClockworkPolicy(MODEL, SIZES, initial_estimates={bs: 10.0 * bs for bs in SIZES})
    hopeless = req(0, 0.0, 1.0, slo=15.0)  # deadline 15 < 0 + est(2..16): only viable at bs 1
    policy.on_arrival(hopeless, 0.0)
    for i in range(1, 6):
        policy.on_arrival(req(i, 0.0, 1.0, slo=1000.0), 0.0)
    batch, dropped = policy.next_batch(0.0)
    # strategy order: bs 1 first (15 - 10 = 5 is the smallest priority); the largest fillable
    # size is 4 (queue 4 holds the 5 viable requests, queue 8 only 5 < 8)
    assert batch is not None and [r.request_id for r in batch.requests] == [1, 2, 3, 4]
    # catch-up: queue 1 skips past request 4, so the hopeless request 0 is dropped
    assert [r.request_id for r in dropped] == [0]
    assert policy.pending() == 1


def test_clockwork_estimate_is_p99_of_the_last_ten_measurements() -> None:
    policy = ClockworkPolicy(MODEL, SIZES)
    policy.on_profile(ProfileSnapshot({"a": [10.0, 30.0]}))  # offline: g_b at the mean 20
    assert policy.estimate(4) == pytest.approx(float(MODEL.g(4, 20.0)))
    policy.on_arrival(req(0, 0.0, 1.0), 0.0)
    batch, _ = policy.next_batch(0.0)
    assert batch is not None
    for v in [99.0, 1, 2, 3, 4, 5, 6, 7, 8, 9]:
        policy.on_batch_done(batch, 0.0, v)
    # Clockwork's SlidingWindow::get_percentile: rank 0.99 x 9 = 8.91, linear between the
    # 9th and 10th sorted values: 9 + 0.91 (99 - 9), effectively the maximum
    assert policy.estimate(1) == pytest.approx(90.9)
    policy.on_batch_done(batch, 0.0, 10.0)  # the 99 leaves the 10-long window
    assert policy.estimate(1) == pytest.approx(9.91)
    policy.on_batch_done(batch, 0.0, math.nan)  # a rejected action measures nothing
    assert policy.estimate(1) == pytest.approx(9.91)


# -- Clipper ------------------------------------------------------------------------------------
def test_clipper_aimd_trajectory_on_a_scripted_latency_sequence() -> None:
    policy = ClipperPolicy(slo_ms=100.0)
    for measured in [50, 50, 50, 150, 50, 150, 150, 150, 150]:
        policy.adapt(measured)
    # +1, +1, +1, x0.9 -> floor(3.6)=3, +1, floor(3.6)=3, floor(2.7)=2, floor(1.8)=1, max(0, 1)
    assert policy.history == [1, 2, 3, 4, 3, 4, 3, 2, 1, 1]
    for _ in range(30):
        policy.adapt(1.0)
    assert policy.max_batch == 16  # capped


def test_clipper_batches_up_to_its_current_maximum_and_late_requests_still_run() -> None:
    policy = ClipperPolicy(slo_ms=50.0)
    reqs = [req(i, 0.0, 40.0, slo=50.0) for i in range(4)]
    res = simulate(policy, reqs, NO_PROFILER)
    # 1 batch of 1 (40.5 ms <= 50: max -> 2), then a batch of 2 ending at 40.5 + 44.5 = 85
    assert [b.size for b in res.batches] == [1, 2, 1]
    assert [r.outcome for r in reqs] == [Outcome.OK, Outcome.LATE, Outcome.LATE, Outcome.LATE]
    drop = ClipperPolicy(slo_ms=50.0, drop_expired=True)
    reqs = [req(i, 0.0, 40.0, slo=50.0) for i in range(4)]
    simulate(drop, reqs, NO_PROFILER)
    assert [r.outcome for r in reqs][-1] is Outcome.TIMED_OUT  # expired before its turn


# -- Nexus --------------------------------------------------------------------------------------
def test_nexus_plan_for_known_rate_slo_and_batch_latency() -> None:
    ell = [float(MODEL.g(b, 10.0)) for b in SIZES]  # 9.5 + b: 10.5, 11.5, 13.5, 17.5, 25.5
    # lambda = 0.2/ms: b/lambda = 5b; b=8: 40 + 17.5 > 50; b=4: 20 + 13.5 <= 50, 13.5 <= 20
    assert plan_batch_size(SIZES, ell, 50.0, 0.2) == 4
    # lambda = 0.5/ms: no b keeps up (l(b) > 2b): overload -> largest b with 2 l(b) <= 50
    assert plan_batch_size(SIZES, ell, 50.0, 0.5) == 8
    assert plan_batch_size(SIZES, ell, 20.0, 0.5) == 1  # nothing fits: floor at 1
    assert plan_batch_size(SIZES, ell, 1e4, 0.05) == 16


def test_nexus_replans_from_the_measured_rate_every_ten_seconds() -> None:
    policy = NexusPolicy(MODEL, 50.0, SIZES, rate_per_ms=0.2)
    policy.on_profile(ProfileSnapshot({"a": [10.0]}))
    assert policy.plan == 4
    for i in range(5000):  # 0.5 requests/ms for 10 s, each served at once
        policy.on_arrival(req(i, 2.0 * i, 1.0), 2.0 * i)
        batch, _ = policy.next_batch(2.0 * i)
        assert batch is not None
        policy.on_batch_done(batch, 2.0 * i, 1.0)
    assert policy.plans[-1] == (0.0, 4)
    policy.on_arrival(req(5000, 10_000.0, 1.0), 10_000.0)
    assert policy.plans[-1] == (10_000.0, 8)
    assert policy.rate_per_ms == pytest.approx(0.5)


def test_nexus_drops_early_the_head_requests_that_cannot_finish() -> None:
    policy = NexusPolicy(MODEL, 50.0, SIZES, rate_per_ms=0.2, mean_ms=10.0)  # plan 4, l = 13.5
    policy.on_arrival(req(0, 0.0, 1.0, slo=10.0), 0.0)  # 5 + 13.5 > 10
    policy.on_arrival(req(1, 0.0, 1.0, slo=50.0), 0.0)
    batch, dropped = policy.next_batch(5.0)
    assert [r.request_id for r in dropped] == [0]
    assert batch is not None and [r.request_id for r in batch.requests] == [1]


# -- EDF and the timeout batcher ----------------------------------------------------------------
def test_edf_runs_earliest_deadlines_in_the_largest_batch_that_still_meets_the_first() -> None:
    policy = EDFPolicy(MODEL, SIZES, mean_ms=10.0)  # estimates 9.5 + b
    for i, slo in enumerate([100.0, 12.0, 200.0, 300.0, 14.0]):
        policy.on_arrival(req(i, 0.0, 1.0, slo=slo), 0.0)
    batch, dropped = policy.next_batch(0.0)
    # earliest deadline 12: 9.5 + 2 = 11.5 fits, 9.5 + 4 = 13.5 does not -> batch of 2
    assert not dropped
    assert batch is not None and [r.request_id for r in batch.requests] == [1, 4]


def test_timeout_batcher_fires_on_its_timer() -> None:
    policy = TimeoutBatcher(max_batch_size=4, max_queue_delay_ms=5.0)
    reqs = [req(0, 0.0, 1.0), req(1, 2.0, 1.0)]
    res = simulate(policy, reqs, NO_PROFILER)
    assert [b.start for b in res.batches] == [5.0]  # the oldest waited 5 ms
    assert res.batches[0].ids == (0, 1)
    full = [req(i, 0.0, 1.0) for i in range(4)] + [req(4, 1.0, 1.0)]
    res = simulate(TimeoutBatcher(max_batch_size=4, max_queue_delay_ms=5.0), full, NO_PROFILER)
    assert res.batches[0].start == 0.0 and res.batches[0].size == 4  # full: no waiting
    assert res.batches[1].start == pytest.approx(6.0)  # request 4 waits its 5 ms


def test_every_named_system_builds_and_bad_options_are_named() -> None:
    for name in SYSTEM_NAMES:
        if name == "orloj":
            continue  # built in test_trends / test_simulator once the scheduler is present
        policy = make_system(name, model=MODEL, slo_ms=100.0, rate_per_ms=0.1)
        assert policy.name == name
    with pytest.raises(ValueError, match="bad options for clockwork"):
        make_system("clockwork", model=MODEL, slo_ms=100.0, options={"nope": 1})
    with pytest.raises(ValueError, match="unknown system"):
        make_system("triton", model=MODEL, slo_ms=100.0)
