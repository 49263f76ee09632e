"""The Clockwork baseline against Clockwork's public `infer5` scheduler.

What is checked here is the source's arithmetic, on scripted inputs with hand-computed
answers: the exec deadline (`RequestImpl::set_slo`), the worker's expected free time
(`WorkerTracker::available`, with its `future` and `lag`), and the action window
(`InferAction::set_expectations`) enforced by the worker (`ExecTask::run` rejects an action
that cannot start by `latest`). The action trace (`ClockworkPolicy(trace=True)`) shows a batch
overrunning its estimate and the actions planned behind it being rejected; on a dynamic
workload every rejection is explained by a batch that overran its estimate.
"""

from __future__ import annotations

import math

import pytest

from kairos.orloj.batchdist import BatchLatencyModel
from kairos.orloj.experiments.point import SimPoint, point_recording
from kairos.orloj.policies import ClockworkPolicy
from kairos.orloj.policy import Outcome, Request
from kairos.orloj.simulator import SimConfig, simulate
from kairos.orloj.workloads import get_workload
from kairos.sim import RngStreams

MODEL = BatchLatencyModel()  # g_k(l) = 0.5 + (0.9 + 0.1 k) l
SIZES = (1, 2, 4, 8, 16)


def req(i: int, release: float, solo: float, slo: float = 1000.0) -> Request:
    return Request(request_id=i, app="a", release=release, slo=slo, solo_ms=solo)


def test_exec_deadline_aims_buffer_before_the_slo_but_not_below_schedule_ahead() -> None:
    policy = ClockworkPolicy(MODEL, SIZES)  # buffer 5 ms, schedule ahead 10 ms
    assert policy.exec_deadline(req(0, 100.0, 1.0, slo=300.0)) == pytest.approx(395.0)
    # a 12-ms SLO: slo - buffer = 7 < schedule_ahead + buffer = 15, so it aims 15 ms out
    assert policy.exec_deadline(req(1, 100.0, 1.0, slo=12.0)) == pytest.approx(115.0)


def test_free_time_is_at_least_now_plus_future_and_an_overdue_action_counts_as_lag_late() -> None:
    policy = ClockworkPolicy(MODEL, SIZES, initial_estimates=dict.fromkeys(SIZES, 15.0))
    assert policy.free_at(0.0) == pytest.approx(1.0)  # idle: now + future (1 ms)
    policy.on_arrival(req(0, 0.0, 1.0), 0.0)
    first, _ = policy.next_batch(0.0)
    assert first is not None
    assert policy.free_at(5.0) == pytest.approx(15.0)  # began at 0, estimate 15
    assert policy.free_at(24.0) == pytest.approx(25.0)  # overdue, within lag: now + future
    # 30 ms after it began (15 past its estimate > lag 10): taken to have begun at 30 - 10 - 15
    policy.on_arrival(req(1, 30.0, 1.0), 30.0)
    second, _ = policy.next_batch(30.0)
    assert second is not None
    assert policy.free_at(30.0) == pytest.approx(30.0 - 10.0 - 15.0 + 30.0)


def test_action_trace_shows_a_batch_overrunning_and_the_actions_behind_it_rejected() -> None:
    # every estimate says 15 ms; request 0 really runs g_1(60) = 60.5 ms
    policy = ClockworkPolicy(MODEL, SIZES, initial_estimates=dict.fromkeys(SIZES, 15.0), trace=True)
    reqs = [req(0, 0.0, 60.0), req(1, 12.0, 1.0), req(2, 40.0, 1.0), req(3, 70.0, 1.0)]
    res = simulate(policy, reqs, SimConfig(profile_sample_rate=0.0))
    trace = policy.actions
    assert trace is not None
    for a in trace:
        print(a)
    a, b, c, d = trace
    # A: sent to the idle worker at 0, expected to start at 0 + future, window [0, 11]
    assert (a.decided, a.expected_start, a.latest) == pytest.approx((0.0, 1.0, 11.0))
    assert a.measured == pytest.approx(60.5) and not a.rejected
    assert a.measured - a.estimate > policy.latest_delta_ms  # overran by more than the window
    # B: planned at 12 behind A (free at 15 < 12 + 10), startable until max(23, 25) = 25
    assert (b.decided, b.expected_start, b.latest) == pytest.approx((12.0, 15.0, 25.0))
    # C: at 40 A is 25 ms past its estimate (> lag): Clockwork assumes it began at 15 and plans
    # behind B, at 15 + 15 + 15 = 45 < 40 + 10, startable until 55, still before A ends
    assert (c.decided, c.expected_start, c.latest) == pytest.approx((40.0, 45.0, 55.0))
    for late in (b, c):
        assert late.rejected and math.isnan(late.measured)
        assert late.latest < a.done == late.done  # rejected when the worker reached it
    assert not d.rejected and d.decided == pytest.approx(70.0)
    assert [r.outcome for r in reqs] == [
        Outcome.OK,
        Outcome.TIMED_OUT,
        Outcome.TIMED_OUT,
        Outcome.OK,
    ]
    assert res.summary()["rejected_batches"] == 2


def test_on_a_dynamic_workload_every_rejection_follows_an_overrun() -> None:
    point = SimPoint(workload="three-modal", slo_mult=2.0, seed=0, n_requests=1500)
    w = get_workload(point.workload)
    rec = point_recording(point)
    policy = ClockworkPolicy(MODEL, SIZES, trace=True)
    offline = w.offline_profile(1000, RngStreams(0).stream("offline"))
    simulate(policy, rec.requests(2.0 * w.p99_ms), SimConfig(seed=0), offline)
    trace = policy.actions
    assert trace is not None
    ran = [a for a in trace if not a.rejected]
    rejected = [a for a in trace if a.rejected]
    print(f"\n{len(trace)} actions, {len(rejected)} rejected")
    assert rejected, "three-modal's variance makes batches overrun their estimates"
    for a in ran:  # the worker honours every window it accepts
        assert a.done - a.measured <= a.latest + 1e-9
    for a in rejected:
        assert a.done > a.latest  # rejected only past its window
        # the batch the worker was running at `latest` took longer than its estimate
        running = [r for r in ran if r.done - r.measured <= a.latest < r.done]
        assert len(running) == 1 and running[0].measured > running[0].estimate
